"""The estimators against scikit-learn's ridge, and the algebra of statistics."""

import json
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import kapprox
from kapprox import KapproxClassifier, KapproxRegressor, merge
from kapprox import _native


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1500, 5))
    y = np.sin(2 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.1 * rng.normal(size=1500)
    return x, y


def independent(**kw):
    """An estimator whose setup does not depend on the rows."""
    params = dict(n_components=128, sigma=[1.5, 3.0], scale="none", random_state=7)
    params.update(kw)
    return KapproxRegressor(**params)


def test_the_solve_is_sklearn_ridge_on_the_features(data):
    x, y = data
    est = KapproxRegressor(n_components=128, sigma=2.0, alpha=0.5, scale="none", random_state=1).fit(x, y)
    z = est.map_.transform(x)
    ref = Ridge(alpha=0.5).fit(z, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-8, atol=1e-10)
    assert abs(est.intercept_ - ref.intercept_) < 1e-9
    np.testing.assert_allclose(est.predict(x), ref.predict(z), atol=1e-9)


def test_the_validation_curve_is_sklearn_ridge_on_held_out_rows(data):
    x, y = data
    alphas = [0.01, 1.0, 100.0]
    est = KapproxRegressor(n_components=64, sigma=2.0, alpha=alphas, scale="none", validation=0.3,
                           random_state=3).fit(x, y)
    parts = np.array(_native.split_parts(json.dumps({"holdout": 0.3}), 3, 0, len(x)))
    assert 0.25 < parts.mean() < 0.35
    z = est.map_.transform(x)
    train, val = parts == 0, parts == 1
    want = [np.mean((Ridge(alpha=a).fit(z[train], y[train]).predict(z[val]) - y[val]) ** 2) for a in alphas]
    np.testing.assert_allclose(est.cv_results_[0]["mse"], want, rtol=1e-8)
    assert est.alpha_ == alphas[int(np.argmin(want))]


def test_folds_average_the_held_out_fold_errors(data):
    x, y = data
    est = KapproxRegressor(n_components=64, sigma=2.0, alpha=[0.1, 10.0], scale="none", folds=3,
                           random_state=3).fit(x, y)
    parts = np.array(_native.split_parts(json.dumps({"folds": 3}), 3, 0, len(x)))
    z = est.map_.transform(x)
    want = []
    for a in [0.1, 10.0]:
        errs = [np.mean((Ridge(alpha=a).fit(z[parts != f], y[parts != f]).predict(z[parts == f]) - y[parts == f]) ** 2)
                for f in range(3)]
        want.append(np.mean(errs))
    np.testing.assert_allclose(est.cv_results_[0]["mse"], want, rtol=1e-8)


def test_selection_prefers_a_sensible_bandwidth(data):
    x, y = data
    est = KapproxRegressor(n_components=256, sigma=[0.01, 2.0, 1000.0], random_state=0).fit(x[:1000], y[:1000])
    assert est.sigma_ == 2.0
    assert est.score(x[1000:], y[1000:]) > 0.8
    # The default: multiples of the median rule, and the default α grid.
    auto = KapproxRegressor(n_components=256, random_state=0).fit(x[:1000], y[:1000])
    assert len(auto.sigmas_) == 4 and auto.score(x[1000:], y[1000:]) > 0.8
    assert len(auto.cv_results_[0]["alphas"]) == 17


def test_partial_fit_is_fit_bitwise(data):
    x, y = data
    full = independent().fit(x, y)
    inc = independent()
    for a, b in [(0, 100), (100, 137), (137, 1000), (1000, 1500)]:
        inc.partial_fit(x[a:b], y[a:b])
    assert inc.statistics_.row_ranges == [(0, 1500)]
    np.testing.assert_array_equal(inc.coef_, full.coef_)
    assert (inc.intercept_, inc.alpha_, inc.sigma_) == (full.intercept_, full.alpha_, full.sigma_)
    # A setup learned from the rows: the first batch fixes it.
    learned = KapproxRegressor(n_components=64, random_state=0)
    np.testing.assert_array_equal(learned.partial_fit(x, y).coef_, KapproxRegressor(n_components=64,
                                  random_state=0).fit(x, y).coef_)


def shards(x, y, bounds):
    return [(x[a:b], y[a:b], a) for a, b in zip(bounds[:-1], bounds[1:])]


def test_merged_statistics_give_the_model_of_one_pass(data):
    x, y = data
    est = independent()
    parts = [est.partial_statistics(xs, ys, row_offset=a) for xs, ys, a in shards(x, y, [0, 400, 700, 1100, 1500])]
    left = merge(parts).solve()
    again = merge([pickle.loads(pickle.dumps(p)) for p in parts]).solve()
    np.testing.assert_array_equal(left.coef_, again.coef_)  # same partition, same order: bitwise
    grouped = ((parts[0] + parts[1]) + (parts[2] + parts[3])).solve()
    one = est.fit(x, y)
    for other in [grouped, one]:
        assert other.alpha_ == left.alpha_ and other.sigma_ == left.sigma_
        np.testing.assert_allclose(other.coef_, left.coef_, rtol=1e-9, atol=1e-9 * np.abs(left.coef_).max())
    np.testing.assert_allclose(left.predict(x), one.predict(x), atol=1e-9)
    total = merge(parts)
    assert total.n_rows == 1500 and total.row_ranges == [(0, 1500)]


def test_merging_refuses_what_does_not_add_up(data):
    x, y = data
    est = independent()
    a = est.partial_statistics(x[:100], y[:100], row_offset=0)
    with pytest.raises(ValueError, match="overlap"):
        a + est.partial_statistics(x[50:150], y[50:150], row_offset=50)
    with pytest.raises(ValueError, match="n_components differs"):
        a + independent(n_components=64).partial_statistics(x[100:200], y[100:200], row_offset=100)
    with pytest.raises(ValueError, match="different scaling, bandwidths"):
        a + independent(random_state=8).partial_statistics(x[100:200], y[100:200], row_offset=100)
    with pytest.raises(ValueError, match="does not depend on the rows"):
        KapproxRegressor().partial_statistics(x, y)
    with pytest.raises(TypeError):
        a + 1


def test_a_fitted_estimator_lends_its_setup_to_partial_statistics(data):
    x, y = data
    est = KapproxRegressor(n_components=64, map="nystrom", random_state=0).fit(x[:300], y[:300])
    parts = [est.partial_statistics(xs, ys, row_offset=a) for xs, ys, a in shards(x, y, [0, 750, 1500])]
    model = merge(parts).solve()
    assert model.scaler_ == est.scaler_ and model.sigmas_ == est.sigmas_
    assert model.score(x, y) > 0.5


def test_classifier_learns_string_labels(data):
    x, _ = data
    labels = np.where(x[:, 0] + 0.5 * x[:, 1] ** 2 > 0.5, "yes", "no")
    clf = KapproxClassifier(n_components=256, random_state=0).fit(x[:1000], labels[:1000])
    assert list(clf.classes_) == ["no", "yes"]
    assert clf.score(x[1000:], labels[1000:]) > 0.9
    margin = clf.decision_function(x[1000:])
    np.testing.assert_array_equal(clf.predict(x[1000:]), np.where(margin > 0, "yes", "no"))
    inc = KapproxClassifier(n_components=256, sigma=2.0, scale="none", random_state=0)
    for a in range(0, 1000, 250):
        inc.partial_fit(x[a:a + 250], labels[a:a + 250], classes=["no", "yes"])
    assert inc.score(x[1000:], labels[1000:]) > 0.9
    with pytest.raises(ValueError, match="not among the classes"):
        inc.partial_fit(x[:5], ["maybe"] * 5)


def test_multiclass_one_vs_rest(data):
    x, _ = data
    labels = np.digitize(x[:, 0], [-0.5, 0.5])
    clf = KapproxClassifier(n_components=128, random_state=0).fit(x[:1000], labels[:1000])
    assert clf.decision_function(x[:3]).shape == (3, 3) and clf.coef_.shape == (3, 128)
    assert clf.score(x[1000:], labels[1000:]) > 0.9


@pytest.mark.parametrize(
    "params",
    [
        dict(map="orf"),
        dict(map="fastfood"),
        dict(map="qmc"),
        dict(map="binning", kernel="laplacian", n_grids=64),
        dict(map="comp"),
        dict(map="nystrom"),
        dict(map="tefm-g", sketch_features=512),
        dict(map="tefm-s", sketch_features=512),
        dict(map="tefm-c", sketch_features=512, base="nystrom", sigma=[1.0, 2.0]),
        dict(map="eof", kernel="laplacian", sigma=[0.5, 1.0]),
    ],
    ids=lambda p: p["map"],
)
def test_every_map_fits(data, params):
    x, y = data
    est = KapproxRegressor(n_components=128, random_state=0, **params).fit(x[:1000], y[:1000])
    assert est.score(x[1000:], y[1000:]) > 0.5, est.cv_results_
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(x[:50]), est.predict(x[:50]))


def test_errors_name_the_problem(data):
    x, y = data
    with pytest.raises(ValueError, match="unknown map"):
        KapproxRegressor(map="nope").fit(x, y)
    with pytest.raises(ValueError, match="laplacian or sobolev"):
        KapproxRegressor(map="eof").fit(x, y)
    with pytest.raises(ValueError, match="landmarks"):
        KapproxRegressor(map="nystrom", n_components=64).fit(x[:20], y[:20])
    with pytest.raises(ValueError, match="validation"):
        KapproxRegressor(validation=1.5).fit(x, y)
    # A seed whose hold-out split of 3 rows validates none of them.
    seed = next(s for s in range(100) if 1 not in _native.split_parts('{"holdout": 0.2}', s, 0, 3))
    with pytest.raises(ValueError, match="too few"):
        KapproxRegressor(n_components=8, random_state=seed).fit(x[:3], y[:3])
    assert kapprox.DEFAULT_SIGMA == "auto*0.5,auto,auto*2,auto*4"


def test_cpu_data_gives_the_cli_fit(cli, tmp_path):
    """The shipped CPU data: `kapprox fit --map rff` and the estimator choose
    the same σ and α and predict the test rows alike; a scikit-learn
    pipeline with the CLI's σ and α (StandardScaler, the same map, Ridge)
    reaches the CLI's test RMSE."""
    data = Path(__file__).resolve().parents[2] / "data"
    run = lambda *args: subprocess.run([cli, "--quiet", *args], check=True, capture_output=True, text=True).stdout
    run("convert", str(data / "cpu_rks_train.tsv.gz"), "--out", str(tmp_path / "train"))
    run("convert", str(data / "cpu_rks_test.tsv.gz"), "--out", str(tmp_path / "test"))
    fit = json.loads(run("fit", "--train", str(tmp_path / "train"), "--out", str(tmp_path / "m.safetensors"),
                         "--map", "rff", "--features", "512", "--seed", "0", "--json"))["report"]
    cli_rmse = json.loads(run("eval", "--model", str(tmp_path / "m.safetensors"), "--data", str(tmp_path / "test"),
                              "--json"))["rmse"]
    train = np.loadtxt(data / "cpu_rks_train.tsv.gz", skiprows=1)
    test = np.loadtxt(data / "cpu_rks_test.tsv.gz", skiprows=1)
    rmse = lambda m: float(np.sqrt(np.mean((m.predict(test[:, :-1]) - test[:, -1]) ** 2)))
    est = KapproxRegressor(n_components=512, random_state=0).fit(train[:, :-1], train[:, -1])
    assert (est.sigma_, est.alpha_) == pytest.approx((fit["sigma"], fit["alpha"]), rel=1e-12)
    assert rmse(est) == pytest.approx(cli_rmse, rel=1e-9)
    pipe = make_pipeline(StandardScaler(), kapprox.RandomFourierFeatures(512, sigma=fit["sigma"], random_state=0),
                         Ridge(alpha=fit["alpha"])).fit(train[:, :-1], train[:, -1])
    assert rmse(pipe) == pytest.approx(cli_rmse, rel=1e-6)
