"""The Dask recipe: shards -> partial statistics on worker processes -> merge
in shard order -> solve, on a LocalCluster bound to 127.0.0.1."""

import os
from pathlib import Path

import numpy as np
import pytest

from kapprox import KapproxRegressor, merge

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def shards():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 6))
    y = np.cos(x[:, 0]) + x[:, 1] ** 2 + 0.1 * rng.normal(size=2000)
    bounds = [0, 450, 1000, 1600, 2000]
    return x, y, [(x[a:b], y[a:b], a) for a, b in zip(bounds[:-1], bounds[1:])]


def estimator():
    return KapproxRegressor(n_components=256, sigma=[1.0, 2.0, 4.0], scale="none", random_state=0)


def local_model(shards):
    est = estimator()
    return merge([est.partial_statistics(xs, ys, row_offset=a) for xs, ys, a in shards]).solve()


def test_four_shards_on_two_workers_give_the_model_of_one_process(client, shards):
    x, y, parts = shards
    est = estimator()
    futures = [client.submit(est.partial_statistics, xs, ys, row_offset=a, pure=False) for xs, ys, a in parts]
    # Reduce in shard order, whatever order the workers finish in.
    model = merge(client.gather(futures)).solve()
    local = local_model(parts)
    np.testing.assert_array_equal(model.coef_, local.coef_)
    assert (model.sigma_, model.alpha_, model.intercept_) == (local.sigma_, local.alpha_, local.intercept_)
    # One pass over all rows: the same model to rounding.
    one = estimator().fit(x, y)
    np.testing.assert_allclose(model.predict(x), one.predict(x), atol=1e-9)


def _statistics_dying_once(est, xs, ys, row_offset, marker):
    """Kills its worker process the first time it runs."""
    marker = Path(marker)
    if not marker.exists():
        marker.write_text("killed once")
        os._exit(1)
    return est.partial_statistics(xs, ys, row_offset=row_offset)


def test_a_worker_killed_mid_task_is_retried_and_the_model_is_the_same(client, shards, tmp_path):
    _, _, parts = shards
    est = estimator()
    marker = tmp_path / "killed"
    futures = [client.submit(est.partial_statistics, xs, ys, row_offset=a, pure=False) for xs, ys, a in parts[:2]]
    xs, ys, a = parts[2]
    futures.append(client.submit(_statistics_dying_once, est, xs, ys, a, str(marker), pure=False, retries=1))
    futures += [client.submit(est.partial_statistics, xs, ys, row_offset=a, pure=False) for xs, ys, a in parts[3:]]
    model = merge(client.gather(futures)).solve()
    assert marker.read_text() == "killed once"
    np.testing.assert_array_equal(model.coef_, local_model(parts).coef_)
