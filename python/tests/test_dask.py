"""The Dask recipe: shards -> partial statistics on worker processes -> merge
in shard order -> solve, on a LocalCluster bound to 127.0.0.1."""

import os
from pathlib import Path

import numpy as np
import pytest

import kapprox
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


@pytest.fixture(scope="module")
def parquet_shards(tmp_path_factory, shards):
    """The same rows as 4 Parquet shards (columns a..f and y)."""
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("dask-parquet")
    for i, (xs, ys, _) in enumerate(shards[2]):
        cols = {name: xs[:, j] for j, name in enumerate("abcdef")}
        pq.write_table(pa.table({**cols, "y": ys}), path / f"part-{i}.parquet")
    return path


def _part_dying_once(state, shards, marker):
    """Kills its worker process the first time it runs."""
    marker = Path(marker)
    if not marker.exists():
        marker.write_text("killed once")
        os._exit(1)
    return kapprox.run_part(state, shards)


def test_parquet_shards_on_two_workers_give_the_fit_parquet_model(client, parquet_shards, tmp_path):
    """Every pass (prepare: column statistics and the σ sample; fit) runs as
    one task per shard on the workers; a worker killed mid-task is retried,
    and the merged model is bitwise the model of the same parts merged in
    one process (and the one-pass fit_parquet model to rounding)."""
    params = dict(n_components=128, random_state=0)
    job = kapprox.ParquetFit(KapproxRegressor(**params), parquet_shards, label="y")
    assert job.n_shards == 4 and job.passes == ["prepare", "fit"]
    marker = tmp_path / "killed"
    while not job.done:
        state = job.state()  # small: the scaler, bandwidths and maps' seeds (no rows)
        tasks = [client.submit(kapprox.run_part, state, [s], pure=False) for s in (0, 1, 3)]
        tasks.append(client.submit(_part_dying_once, state, [2], str(marker), pure=False, retries=1))
        job.reduce(client.gather(tasks))
    assert marker.read_text() == "killed once"
    local = kapprox.ParquetFit(KapproxRegressor(**params), parquet_shards, label="y")
    while not local.done:
        local.reduce([local.run_part([s]) for s in range(4)])
    np.testing.assert_array_equal(job.estimator_.coef_, local.estimator_.coef_)
    single = KapproxRegressor(**params).fit_parquet(parquet_shards, label="y")
    assert (job.estimator_.sigma_, job.estimator_.alpha_) == (single.sigma_, single.alpha_)
    # The numpy fit of the same rows: the same model to rounding (the scaling is computed the same way).
    import pyarrow.parquet as pq

    table = pq.read_table(parquet_shards)
    x = np.column_stack([table.column(c).to_numpy() for c in "abcdef"])
    y = table.column("y").to_numpy()
    one = KapproxRegressor(**params).fit(x, y)
    assert one.sigma_ == pytest.approx(single.sigma_, rel=1e-12)
    np.testing.assert_allclose(job.estimator_.predict(x), single.predict(x), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(single.predict(x), one.predict(x), rtol=1e-9, atol=1e-9)
