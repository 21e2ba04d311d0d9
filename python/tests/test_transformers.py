"""The transformers against exact kernels, closed forms and the CLI."""

import math
import pickle
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

import kapprox
from kapprox import (
    EOF,
    TEFM,
    Fastfood,
    Nystroem,
    OrthogonalRandomFeatures,
    QuasiMonteCarloFeatures,
    RandomBinning,
    RandomFourierFeatures,
)


def gaussian(x, y, sigma):
    d2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


def laplacian(x, y, sigma):
    return np.exp(-np.abs(x[:, None, :] - y[None, :, :]).sum(-1) / sigma)


def cauchy(x, y, sigma):
    return np.prod(1.0 / (1.0 + (x[:, None, :] - y[None, :, :]) ** 2 / sigma**2), axis=-1)


EXACT = {"gaussian": gaussian, "laplacian": laplacian, "cauchy": cauchy}


@pytest.fixture(scope="module")
def rows():
    return np.random.default_rng(0).normal(size=(300, 6))


def dense(z):
    return z.toarray() if sp.issparse(z) else z


def kernel_error(transformer, x, kernel, sigma):
    z = dense(transformer.fit_transform(x))
    return np.abs(z @ z.T - EXACT[kernel](x, x, sigma)).max()


# Random features: z(x)ᵀz(y) − k(x, y) is an average of T independent
# bounded terms (T = l/2 frequency pairs; P grids for binning), so its max
# over 300² pairs is O(sqrt(log(pairs)/T)); 5/sqrt(T) bounds it with a wide
# margin, and l = 16 must be clearly worse than l = 4096.
@pytest.mark.parametrize(
    "make, kernel",
    [
        (lambda l: RandomFourierFeatures(l, sigma=3.0, random_state=1), "gaussian"),
        (lambda l: RandomFourierFeatures(l, kernel="laplacian", sigma=3.0, random_state=1), "laplacian"),
        (lambda l: RandomFourierFeatures(l, kernel="cauchy", sigma=3.0, form="phase", random_state=1), "cauchy"),
        (lambda l: OrthogonalRandomFeatures(l, sigma=3.0, random_state=1), "gaussian"),
        (lambda l: OrthogonalRandomFeatures(l, sigma=3.0, structured=True, random_state=1), "gaussian"),
        (lambda l: Fastfood(l, sigma=3.0, random_state=1), "gaussian"),
        (lambda l: QuasiMonteCarloFeatures(l, sigma=3.0, random_state=1), "gaussian"),
        (lambda l: RandomBinning(l, sigma=3.0, n_grids=l // 16, random_state=1), "laplacian"),
    ],
)
def test_random_features_approach_the_exact_kernel(rows, make, kernel):
    big_map = make(4096)
    terms = big_map.n_grids if isinstance(big_map, RandomBinning) else 4096 / 2
    big = kernel_error(big_map, rows, kernel, 3.0)
    small = kernel_error(make(16), rows, kernel, 3.0)
    assert big < 5 / math.sqrt(terms), big
    assert small > 2 * big, (small, big)


def test_gamma_is_the_sklearn_bandwidth(rows):
    a = RandomFourierFeatures(64, gamma=0.125, random_state=0).fit(rows)
    b = RandomFourierFeatures(64, sigma=2.0, random_state=0).fit(rows)
    assert a.sigma_ == 2.0
    np.testing.assert_array_equal(a.transform(rows), b.transform(rows))
    assert RandomBinning(gamma=0.5).fit(rows).sigma_ == 2.0
    with pytest.raises(ValueError, match="gamma maps"):
        RandomFourierFeatures(kernel="cauchy", gamma=1.0).fit(rows)
    with pytest.raises(ValueError, match="not both"):
        RandomFourierFeatures(sigma=1.0, gamma=1.0).fit(rows)


def test_the_map_is_a_function_of_the_seed(rows):
    a = RandomFourierFeatures(64, random_state=5).fit(rows[:10]).transform(rows)
    b = RandomFourierFeatures(64, random_state=5).fit(rows).transform(rows)
    c = RandomFourierFeatures(64, random_state=6).fit(rows).transform(rows)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 0.1
    spec = RandomFourierFeatures(64, sigma=2.0, random_state=5).fit(rows).map_.spec_json
    assert spec == (
        '{"map":"rff","kernel":{"kind":"gaussian","sigma":2.0},"form":"pairs","n_input":6,'
        '"n_components":64,"seed":5}'
    )


def test_float32_in_float32_out(rows):
    for t in [RandomFourierFeatures(64, random_state=0), RandomBinning(256, n_grids=8, random_state=0)]:
        z64 = dense(t.fit_transform(rows))
        z32 = t.transform(rows.astype(np.float32))
        assert z32.dtype == np.float32
        assert np.abs(dense(z32) - z64).max() < 1e-5


def test_nystroem_with_every_row_a_landmark_is_exact(rows):
    for kernel in ["gaussian", "laplacian"]:
        t = Nystroem(len(rows), kernel=kernel, sigma=3.0, random_state=0).fit(rows)
        z = t.transform(rows)
        assert np.abs(z @ z.T - EXACT[kernel](rows, rows, 3.0)).max() < 1e-8
        assert sorted(t.component_indices_) == list(range(len(rows)))


def test_nystroem_landmarks_are_rows_and_fewer_rows_warn(rows):
    t = Nystroem(50, sigma=2.0, random_state=3).fit(rows)
    np.testing.assert_array_equal(t.components_, rows[t.component_indices_])
    assert list(t.component_indices_) == sorted(t.component_indices_)
    with pytest.warns(UserWarning, match="every row is a landmark"):
        Nystroem(50, random_state=0).fit(rows[:10])


def test_tefm_spans_the_dominant_subspace_of_its_base(rows):
    # With l equal to the base's d, Q is a rotation: the kernel of G = FQ
    # is the base map's kernel exactly.
    t = TEFM(64, sketch_features=64, sigma=3.0, random_state=0).fit(rows)
    base = RandomFourierFeatures(64, sigma=3.0, random_state=0).fit(rows)
    g, f = t.transform(rows), base.transform(rows)
    assert np.abs(g @ g.T - f @ f.T).max() < 1e-10
    np.testing.assert_allclose(t.q_.T @ t.q_, np.eye(64), atol=1e-12)
    # Compressing to l < d keeps most of the kernel: better than RFF with l.
    err_tefm = kernel_error(TEFM(32, sketch_features=512, sigma=3.0, random_state=0), rows, "gaussian", 3.0)
    err_rff = kernel_error(RandomFourierFeatures(32, sigma=3.0, random_state=0), rows, "gaussian", 3.0)
    assert err_tefm < err_rff, (err_tefm, err_rff)
    for sketch in ["srht", "count-sketch"]:
        assert TEFM(16, sketch=sketch, random_state=0).fit_transform(rows).shape == (300, 16)
    assert TEFM(16, base="nystrom", sketch_features=64, random_state=0).fit_transform(rows).shape == (300, 16)


def test_eof_converges_to_the_laplacian_kernel_on_scaled_inputs():
    x = np.random.default_rng(1).uniform(-2, 5, size=(200, 2))
    scaled = (x - x.min(0)) / (x.max(0) - x.min(0))
    exact = laplacian(scaled, scaled, 0.5)
    coarse = EOF(level=2, sigma=0.5).fit(x)
    fine = EOF(level=9, sigma=0.5).fit(x)
    err_coarse = np.abs(dense(coarse.transform(x)) @ dense(coarse.transform(x)).T - exact).max()
    err_fine = np.abs(dense(fine.transform(x)) @ dense(fine.transform(x)).T - exact).max()
    assert err_fine < 0.02 and err_fine < err_coarse / 4, (err_fine, err_coarse)
    z = fine.transform(x)
    assert sp.isspmatrix_csr(z) and z.has_canonical_format


def test_sparse_output_is_canonical_csr(rows):
    z = RandomBinning(64, n_grids=32, random_state=0).fit_transform(rows)
    assert sp.isspmatrix_csr(z) and z.has_canonical_format
    # Each of the P grids adds ±1/sqrt(P) to one bucket; collisions sum up.
    assert np.all(np.diff(z.indptr) <= 32) and z.nnz > 300
    units = z.data * math.sqrt(32)
    np.testing.assert_allclose(units, np.round(units), atol=1e-12)
    assert np.all(np.round(units) != 0)


@pytest.mark.parametrize(
    "t",
    [
        RandomFourierFeatures(32, random_state=0),
        OrthogonalRandomFeatures(32, random_state=0),
        Fastfood(32, random_state=0),
        QuasiMonteCarloFeatures(32, random_state=0),
        RandomBinning(64, n_grids=4, random_state=0),
        Nystroem(20, random_state=0),
        TEFM(8, random_state=0),
        TEFM(8, base="nystrom", sketch_features=30, random_state=0),
        EOF(50, random_state=0),
    ],
    ids=lambda t: type(t).__name__,
)
def test_pickling_keeps_the_map(rows, t):
    t.fit(rows)
    back = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(dense(back.transform(rows)), dense(t.transform(rows)))
    assert back.map_.spec_json == t.map_.spec_json


def test_bad_input_is_refused_with_a_message(rows):
    t = RandomFourierFeatures(32, random_state=0).fit(rows)
    with pytest.raises(ValueError, match="6 features"):
        t.transform(rows[:, :3])
    with pytest.raises(ValueError, match="even"):
        RandomFourierFeatures(33, form="pairs").fit(rows)
    assert RandomFourierFeatures(33).fit(rows).map_.spec_json.count('"form":"phase"') == 1
    with pytest.raises(ValueError, match="does not support the laplacian"):
        Fastfood(kernel="laplacian").fit(rows)
    with pytest.raises(ValueError, match="unknown kernel"):
        RandomFourierFeatures(kernel="poly").fit(rows)
    with pytest.raises(ValueError, match="NaN"):
        t.transform(np.full((2, 6), np.nan))
    with pytest.raises(ValueError, match="random_state"):
        RandomFourierFeatures(random_state=-1).fit(rows)


@pytest.mark.parametrize(
    "map_args, transformer",
    [
        (["--map", "rff"], RandomFourierFeatures(64, sigma=1.5, random_state=3)),
        (["--map", "rff", "--form", "phase", "--kernel", "laplacian"],
         RandomFourierFeatures(64, kernel="laplacian", form="phase", sigma=1.5, random_state=3)),
        (["--map", "orf"], OrthogonalRandomFeatures(64, sigma=1.5, random_state=3)),
        (["--map", "sorf"], OrthogonalRandomFeatures(64, sigma=1.5, structured=True, random_state=3)),
        (["--map", "fastfood"], Fastfood(64, sigma=1.5, random_state=3)),
        (["--map", "qmc"], QuasiMonteCarloFeatures(64, sigma=1.5, random_state=3)),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_features_equal_the_cli_featurize(cli, tmp_path, rows, map_args, transformer):
    """Same MapSpec, same map: the CLI's features of the same rows."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({f"x{j}": rows[:, j] for j in range(rows.shape[1])}), data / "part-0.parquet")
    out = tmp_path / "features"
    cmd = [cli, "--quiet", "featurize", "--data", str(data), "--out", str(out), "--features", "64",
           "--sigma", "1.5", "--seed", "3", "--scale", "none", *map_args]
    subprocess.run(cmd, check=True, capture_output=True)
    table = pq.read_table(sorted(out.glob("*.parquet"))[0])
    names = [n for n in table.schema.names if n.startswith("z")]
    cli_z = np.column_stack([table.column(n).to_numpy() for n in names])
    z = transformer.fit(rows).transform(rows)
    assert cli_z.shape == z.shape
    np.testing.assert_array_equal(z, cli_z)  # bitwise: the same MapSpec builds the same map


def test_package_exports():
    for name in kapprox.__all__:
        assert hasattr(kapprox, name), name
    with pytest.raises(ValueError, match="model.safetensors"):
        kapprox.load("model.safetensors")
