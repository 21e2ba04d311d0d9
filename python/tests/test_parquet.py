"""The engine from Python: fit_parquet is `kapprox fit`, model files go both
ways, predict_parquet is `kapprox predict`, and the engine's part states
(ParquetFit / run_part) merge into the one-process model and are the
command line's part files."""

import json
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kapprox
from kapprox import KapproxClassifier, KapproxRegressor, ParquetFit, ParquetPart

pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")

DATA = Path(__file__).resolve().parents[2] / "data"


def run(cli, *args):
    return subprocess.run([cli, "--quiet", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def cpu(cli, tmp_path_factory):
    """The CPU data as Parquet: training rows in 4 shards, test rows."""
    tmp = tmp_path_factory.mktemp("cpu")
    run(cli, "convert", str(DATA / "cpu_rks_train.tsv.gz"), "--out", str(tmp / "train"), "--rows-per-shard", "1700")
    run(cli, "convert", str(DATA / "cpu_rks_test.tsv.gz"), "--out", str(tmp / "test"))
    test = np.loadtxt(DATA / "cpu_rks_test.tsv.gz", skiprows=1)
    return tmp, test


def read_predictions(out: Path) -> np.ndarray:
    tables = [pq.read_table(p) for p in sorted(out.glob("*.parquet"))]
    return np.concatenate([t.column("prediction").to_numpy() for t in tables])


def cli_fit(cli, train, model, *flags):
    return json.loads(run(cli, "fit", "--train", str(train), "--out", str(model), "--json", *flags))["report"]


def test_fit_parquet_is_the_cli_fit_and_predicts_like_it(cli, cpu):
    tmp, test = cpu
    report = cli_fit(cli, tmp / "train", tmp / "cli.safetensors", "--map", "rff", "--features", "256", "--seed", "3")
    est = KapproxRegressor(n_components=256, random_state=3).fit_parquet(tmp / "train")
    cli_model = kapprox.load(tmp / "cli.safetensors")
    # The same streaming fit: bitwise the same choice and weights.
    assert (est.sigma_, est.alpha_) == (report["sigma"], report["alpha"])
    np.testing.assert_array_equal(est.coef_, cli_model.coef_)
    assert est.intercept_ == cli_model.intercept_
    assert est.n_rows_ == 6554
    # predict on numpy rows and predict_parquet agree with `kapprox predict`.
    run(cli, "predict", "--model", str(tmp / "cli.safetensors"), "--data", str(tmp / "test"), "--out",
        str(tmp / "cli-pred"))
    expected = read_predictions(tmp / "cli-pred")
    np.testing.assert_allclose(est.predict(test[:, :-1]), expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(cli_model.predict(test[:, :-1]), expected, rtol=1e-12, atol=0)
    written = est.predict_parquet(tmp / "test", tmp / "py-pred")
    assert written["rows"] == len(test)
    np.testing.assert_array_equal(read_predictions(tmp / "py-pred"), expected)
    # An independent check of the numbers: far better than predicting the mean.
    rmse = float(np.sqrt(np.mean((expected - test[:, -1]) ** 2)))
    assert rmse < 0.3 * np.std(test[:, -1])


def test_a_python_model_file_is_read_by_the_cli(cli, cpu):
    tmp, test = cpu
    train = np.loadtxt(DATA / "cpu_rks_train.tsv.gz", skiprows=1)
    for est, name in [
        (KapproxRegressor(n_components=128, random_state=0).fit(train[:, :-1], train[:, -1]), "numpy"),
        (KapproxRegressor(map="nystrom", n_components=64, sigma=4.0, random_state=1).fit_parquet(tmp / "train"),
         "parquet"),
    ]:
        model = tmp / f"{name}.safetensors"
        est.save(model)
        # The CLI needs the model's column names: the numpy fit's are x0, x1, ...
        data = tmp / "test" if name == "parquet" else write_unnamed(tmp / "test-unnamed", test[:, :-1])
        run(cli, "predict", "--model", str(model), "--data", str(data), "--out", str(tmp / f"{name}-pred"))
        np.testing.assert_allclose(read_predictions(tmp / f"{name}-pred"), est.predict(test[:, :-1]), rtol=1e-12,
                                   atol=1e-12)
        again = kapprox.load(model)
        np.testing.assert_allclose(again.predict(test[:, :-1]), est.predict(test[:, :-1]), rtol=1e-12, atol=1e-12)


def write_unnamed(path: Path, x: np.ndarray) -> Path:
    import pyarrow as pa

    path.mkdir(exist_ok=True)
    pq.write_table(pa.table({f"x{i}": x[:, i] for i in range(x.shape[1])}), path / "part-0.parquet")
    return path


def test_classifier_on_parquet_matches_the_cli(cli, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(900, 3))
    labels = np.where(x[:, 0] + 0.5 * x[:, 1] ** 2 > 0.5, 2.0, np.where(x[:, 2] > 0.8, 7.0, 0.0))
    src = tmp_path / "cls.csv"
    np.savetxt(src, np.column_stack([x, labels]), delimiter=",", header="a,b,c,label", comments="")
    run(cli, "convert", str(src), "--out", str(tmp_path / "train"), "--rows-per-shard", "300")
    cli_fit(cli, tmp_path / "train", tmp_path / "m.safetensors", "--task", "classification", "--features", "128",
            "--seed", "2")
    est = KapproxClassifier(n_components=128, random_state=2).fit_parquet(tmp_path / "train")
    np.testing.assert_array_equal(est.classes_, [0.0, 2.0, 7.0])
    cli_model = kapprox.load(tmp_path / "m.safetensors")
    assert isinstance(cli_model, KapproxClassifier)
    np.testing.assert_array_equal(est.coef_, cli_model.coef_)
    accuracy = np.mean(est.predict(x) == labels)
    assert accuracy > 0.8


def test_engine_parts_merge_into_the_one_process_model(cli, cpu, tmp_path):
    """One part per shard, merged in shard order, is bitwise `kapprox fit
    --part I/4` + `kapprox reduce` (the same partition), and the one-pass
    fit to rounding (Gram blocks restart at part boundaries)."""
    tmp, test = cpu
    flags = ("--map", "rff", "--features", "128", "--seed", "4")
    for i in range(1, 5):
        run(cli, "fit", "--train", str(tmp / "train"), "--out", str(tmp_path / f"{i}.kpart"), "--part", f"{i}/4",
            *flags)
    run(cli, "reduce", "--parts-dir", str(tmp_path), "--out", str(tmp_path / "pass1.kresult"))
    for i in range(1, 5):
        run(cli, "fit", "--train", str(tmp / "train"), "--out", str(tmp_path / f"fit-{i}.kpart"), "--part", f"{i}/4",
            "--after", str(tmp_path / "pass1.kresult"), *flags)
    run(cli, "reduce", *(str(tmp_path / f"fit-{i}.kpart") for i in range(1, 5)), "--out",
        str(tmp_path / "cli.safetensors"))
    cli_model = kapprox.load(tmp_path / "cli.safetensors")

    est = KapproxRegressor(n_components=128, random_state=4)
    job = ParquetFit(est, tmp / "train")
    assert job.n_shards == 4 and job.passes == ["prepare", "fit"]
    while not job.done:
        state = job.state()
        # Parts pickle (as their bytes) and are computed from the state alone, in any order.
        parts = [pickle.loads(pickle.dumps(kapprox.run_part(state, [s]))) for s in (3, 1, 0, 2)]
        assert sorted(p.rows for p in parts) == sorted(job.shard_rows)
        job.reduce(parts)
    model = job.estimator_
    np.testing.assert_array_equal(model.coef_, cli_model.coef_)
    assert (model.sigma_, model.alpha_, model.intercept_) == (cli_model.sigma_, cli_model.alpha_,
                                                              cli_model.intercept_)
    single = KapproxRegressor(n_components=128, random_state=4).fit_parquet(tmp / "train")
    assert (model.sigma_, model.alpha_) == (single.sigma_, single.alpha_)
    np.testing.assert_allclose(model.predict(test[:, :-1]), single.predict(test[:, :-1]), rtol=1e-9)


def test_parts_add_check_and_are_the_cli_part_files(cli, cpu, tmp_path):
    tmp, _ = cpu
    est = KapproxRegressor(n_components=64, sigma=[2.0, 4.0], random_state=0)
    job = ParquetFit(est, tmp / "train")
    assert job.passes == ["fit"]  # convert stored the column statistics; numeric σ: one pass
    a, b, c, d = (job.run_part([s]) for s in range(4))
    with pytest.raises(ValueError, match="shard 1"):
        (a + b) + b
    with pytest.raises(ValueError, match=r"shards? 3 .*covered by none"):
        job.reduce([a, b, c])
    merged = (d + c) + (b + a)
    assert merged.shards == [0, 1, 2, 3] and merged.rows == 6554
    grouped = job.reduce([merged])
    with pytest.raises(ValueError, match="done"):
        job.run_part([0])
    in_order = ParquetFit(est, tmp / "train").reduce([d, b, a, c])
    # The parts are `kapprox fit --part` files: `kapprox reduce` merges them into the same bits.
    for i, p in enumerate((a, b, c, d)):
        p.write(tmp_path / f"{i}.kpart")
    run(cli, "reduce", "--parts-dir", str(tmp_path), "--out", str(tmp_path / "reduced.safetensors"))
    np.testing.assert_array_equal(kapprox.load(tmp_path / "reduced.safetensors").coef_, in_order.coef_)
    # Another grouping than shard order: the same model to rounding.
    x = np.loadtxt(DATA / "cpu_rks_test.tsv.gz", skiprows=1)[:, :-1]
    np.testing.assert_allclose(grouped.predict(x), in_order.predict(x), rtol=1e-9)


def test_parts_of_other_fits_are_refused(cpu):
    tmp, _ = cpu
    one = ParquetFit(KapproxRegressor(n_components=64, sigma=2.0, random_state=0), tmp / "train")
    other = ParquetFit(KapproxRegressor(n_components=64, sigma=2.0, random_state=1), tmp / "train")
    with pytest.raises(ValueError, match="seed"):
        one.reduce([other.run_part(range(4))])
    with pytest.raises(ValueError, match="seed"):
        one.run_part([0]) + other.run_part([1])
    with pytest.raises(ValueError, match="shard 9 does not exist"):
        one.run_part([9])


def test_bad_input_names_the_problem(cpu, tmp_path):
    tmp, _ = cpu
    with pytest.raises(ValueError, match="nope"):
        KapproxRegressor().fit_parquet(tmp_path / "nope")
    with pytest.raises(ValueError, match="missing_column.*not found"):
        KapproxRegressor(n_components=8).fit_parquet(tmp / "train", label="missing_column")
    with pytest.raises(ValueError, match="nan"):
        KapproxRegressor(n_components=8).fit_parquet(tmp / "train", nan="maybe")
    with pytest.raises(ValueError, match="not a kapprox model|safetensors|cannot"):
        (tmp_path / "junk.safetensors").write_bytes(b"not a model")
        kapprox.load(tmp_path / "junk.safetensors")
    with pytest.raises(ValueError, match="numeric class labels"):
        x = np.random.default_rng(0).normal(size=(60, 2))
        KapproxClassifier(n_components=8, random_state=0).fit(x, np.where(x[:, 0] > 0, "a", "b")).save(
            tmp_path / "c.safetensors")


def test_a_parquet_fit_pickles(cpu):
    tmp, test = cpu
    est = KapproxRegressor(n_components=64, sigma=3.0, random_state=0).fit_parquet(tmp / "train")
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(test[:, :-1]), est.predict(test[:, :-1]))
    # A numpy fit afterwards replaces the engine model.
    est.fit(test[:, :-1], test[:, -1])
    assert not hasattr(est, "model_")


def listing(root: Path) -> list:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_predict_parquet_never_loses_or_leaves_partial_data(cpu, tmp_path):
    """predict_parquet writes through the engine's staging, like `kapprox
    predict`: an output that is or lies inside the data, or exists without
    overwrite, is refused with the data and the old output untouched; a
    model with a NaN weight is refused naming the cause; a run that fails in
    its last Hive shard leaves nothing, not even empty key=value/ folders."""
    import pyarrow as pa

    tmp, test = cpu
    est = KapproxRegressor(n_components=64, sigma=4.0, random_state=0).fit_parquet(tmp / "train")
    data = tmp / "test"
    before = listing(data)
    for out in (data, data / "pred"):
        with pytest.raises(ValueError, match="destroy the input"):
            est.predict_parquet(data, out)
        assert listing(data) == before

    out = tmp_path / "pred"
    out.mkdir()
    (out / "old.txt").write_text("an earlier run")
    with pytest.raises(ValueError, match="overwrite=True"):
        est.predict_parquet(data, out)
    assert listing(out) == ["old.txt"]
    est.predict_parquet(data, out, overwrite=True)
    assert "old.txt" not in listing(out)
    np.testing.assert_allclose(read_predictions(out), est.predict(test[:, :-1]), rtol=1e-12, atol=1e-12)

    # Unnamed columns (x0, x1, ...) for a numpy-fitted model; the last Hive
    # shard holds a NaN input, found after the first shards were written.
    names = [f"x{i}" for i in range(test.shape[1] - 1)]
    hive = tmp_path / "hive"
    for key, rows in (("a", test[:100]), ("b", test[100:200]), ("c", test[200:300].copy())):
        if key == "c":
            rows[50, 2] = np.nan
        (hive / f"k={key}").mkdir(parents=True)
        pq.write_table(pa.table({n: rows[:, i] for i, n in enumerate(names)}), hive / f"k={key}" / "part-0.parquet")
    numpy_est = KapproxRegressor(n_components=64, sigma=4.0, random_state=0).fit(test[:, :-1], test[:, -1])
    top = listing(tmp_path)
    with pytest.raises(ValueError, match="k=c"):
        numpy_est.predict_parquet(hive, tmp_path / "hive-pred")
    assert listing(tmp_path) == top

    numpy_est.coef_[5] = np.nan
    with pytest.raises(ValueError, match="prediction is NaN.*damaged or degenerate"):
        numpy_est.predict_parquet(hive / "k=a", tmp_path / "nan-pred")
    assert listing(tmp_path) == top
