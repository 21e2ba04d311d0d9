"""Kernel feature maps as scikit-learn transformers.

Every transformer builds the map that kapprox's command line builds for
the same parameters: with ``random_state=SEED`` (an int) and the same
inputs, ``fit`` gives the map of ``kapprox fit --map KIND --seed SEED``
(the CLI scales inputs first, by default to zero mean and unit variance:
put a ``StandardScaler`` in front to match it). Random parameters are a
pure function of the seed, so a fitted data-independent map pickles as a
few lines of JSON.

Bandwidths: ``sigma`` in kapprox's conventions, or scikit-learn's
``gamma`` where it maps exactly (Gaussian ``gamma = 1/(2σ²)``, Laplacian
``gamma = 1/σ``); neither given means ``sigma = 1``.

Transforms take float64 or float32 arrays (float32 in, float32 out), run
on all cores (rayon) with the GIL released, and allocate only the output.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _native
from ._params import fit_scaler, form_for, kernel_name, nu_for, resolve_sigma, seed_from

__all__ = [
    "RandomFourierFeatures",
    "OrthogonalRandomFeatures",
    "Fastfood",
    "QuasiMonteCarloFeatures",
    "RandomBinning",
    "Nystroem",
    "TEFM",
    "EOF",
]

_FLOATS = [np.float64, np.float32]


def transform_with(feature_map, x: np.ndarray):
    """``z(x)`` by a native map: dense ndarray, or CSR for sparse maps; float32
    input gives float32 output."""
    single = x.dtype == np.float32
    if feature_map.is_sparse:
        data, indices, indptr = feature_map.transform_csr(np.asarray(x, dtype=np.float64), single)
        return sp.csr_matrix((data, indices, indptr), shape=(x.shape[0], feature_map.n_output))
    if single:
        return feature_map.transform_f32(x)
    return feature_map.transform(x)


class _MapTransformer(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Fit = build (or learn) the map; transform = apply it."""

    def fit(self, X, y=None):
        """Builds the map for ``X``'s number of columns (and, for maps that
        learn from data, from its rows).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X = validate_data(self, X, dtype=_FLOATS)
        self.seed_ = seed_from(self.random_state)
        self.map_ = self._build(np.asarray(X, dtype=np.float64), self.seed_)
        self.n_components_ = self.map_.n_output
        self._n_features_out = self.n_components_
        return self

    def transform(self, X):
        """Maps rows to features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_components_)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=_FLOATS, reset=False)
        return transform_with(self.map_, self._prepare(X))

    def _prepare(self, X):
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class _FourierTransformer(_MapTransformer):
    """Random Fourier-type maps sharing kernel, bandwidth and form (the
    parameters of :class:`RandomFourierFeatures`)."""

    _kind = "rff"

    def __init__(self, n_components=100, *, kernel="gaussian", sigma=None, gamma=None, nu=1.5, form=None,
                 random_state=None):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.gamma = gamma
        self.nu = nu
        self.form = form
        self.random_state = random_state

    def _build(self, X, seed):
        kernel = kernel_name(self.kernel)
        self.sigma_ = resolve_sigma(kernel, self.sigma, self.gamma)
        return _native.independent_map(
            self._kind,
            kernel,
            self.sigma_,
            X.shape[1],
            self.n_components,
            seed,
            nu=nu_for(kernel, self.nu),
            form=form_for(self.form, self.n_components),
        )


class RandomFourierFeatures(_FourierTransformer):
    """Random Fourier features (Rahimi & Recht): ``z(x)ᵀz(y) ≈ k(x, y)``.

    Parameters
    ----------
    n_components : int, default=100
        Output features ``l`` (even for ``form="pairs"``).
    kernel : {"gaussian", "laplacian", "cauchy", "matern"}, default="gaussian"
        The shift-invariant kernel approximated ("rbf" means gaussian).
    sigma : float, default=None
        Bandwidth σ: Gaussian ``exp(-||x-y||²/(2σ²))``, Laplacian
        ``exp(-||x-y||₁/σ)``, Cauchy ``Π 1/(1 + (x_j-y_j)²/σ²)``, Matérn
        length scale. None (with gamma None): 1.
    gamma : float, default=None
        scikit-learn's gamma instead of sigma: Gaussian ``γ = 1/(2σ²)``,
        Laplacian ``γ = 1/σ``.
    nu : float, default=1.5
        Matérn smoothness ν (ignored by the other kernels).
    form : {"pairs", "phase"}, default=None
        ``pairs``: ``sqrt(2/l)[cos(Wx), sin(Wx)]`` with ``l/2`` frequencies
        (lower variance); ``phase``: ``sqrt(2/l) cos(Wx + b)``. None: pairs
        (the CLI's default) for an even ``n_components``, phase for an odd one.
    random_state : int, RandomState instance or None, default=None
        An int is the kapprox seed (the CLI's ``--seed``); otherwise a seed
        is drawn from it.

    Attributes
    ----------
    map_ : kapprox._native.FeatureMap
        The map (``map_.spec_json`` describes it).
    seed_ : int
    sigma_ : float
    n_components_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from kapprox import RandomFourierFeatures
    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> RandomFourierFeatures(n_components=64, random_state=0).fit_transform(X).shape
    (5, 64)
    """

    _kind = "rff"


class OrthogonalRandomFeatures(_FourierTransformer):
    """Orthogonal random features (Yu et al. 2016): frequency blocks with
    orthogonal rows, lower variance than i.i.d. ones; ``structured=True``
    gives structured ORF (``sqrt(d)/σ · H D₁ H D₂ H D₃``, O(l log d) per row).

    Gaussian and Matérn kernels only. Other parameters and attributes as
    :class:`RandomFourierFeatures`.
    """

    def __init__(self, n_components=100, *, kernel="gaussian", sigma=None, gamma=None, nu=1.5, form=None,
                 structured=False, random_state=None):
        super().__init__(n_components, kernel=kernel, sigma=sigma, gamma=gamma, nu=nu, form=form,
                         random_state=random_state)
        self.structured = structured

    @property
    def _kind(self):
        return "sorf" if self.structured else "orf"


class Fastfood(_FourierTransformer):
    """Fastfood (Le, Sarlós & Smola 2013): ``V = S H G Π H B / (σ sqrt(d))``
    per block, O(l log d) per row with O(l) parameters.

    Gaussian and Matérn kernels only. Parameters and attributes as
    :class:`RandomFourierFeatures`.
    """

    _kind = "fastfood"


class QuasiMonteCarloFeatures(_FourierTransformer):
    """Quasi-Monte Carlo features: scrambled low-discrepancy points mapped
    through the inverse CDF of the kernel's spectral distribution.

    Parameters and attributes as :class:`RandomFourierFeatures`.
    """

    _kind = "qmc"


class RandomBinning(_MapTransformer):
    """Random binning features (Rahimi & Recht 2007) for the Laplacian kernel
    ``exp(-||x-y||₁/σ)``: per grid and dimension a pitch δ ~ Gamma(2, σ)
    and a shift; the feature is the hashed bin of the row. Sparse output:
    ``n_grids`` stored entries per row.

    Parameters
    ----------
    n_components : int, default=1024
        Hash buckets (output columns).
    sigma, gamma : float, default=None
        Bandwidth σ, or ``gamma = 1/σ``; neither: σ = 1.
    n_grids : int, default=256
        Random grids ``P`` (stored entries per row).
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    map_, seed_, sigma_, n_components_, n_features_in_
    """

    def __init__(self, n_components=1024, *, sigma=None, gamma=None, n_grids=256, random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.gamma = gamma
        self.n_grids = n_grids
        self.random_state = random_state

    def _build(self, X, seed):
        self.sigma_ = resolve_sigma("laplacian", self.sigma, self.gamma)
        return _native.independent_map(
            "binning", "laplacian", self.sigma_, X.shape[1], self.n_components, seed, n_grids=self.n_grids
        )


class Nystroem(_MapTransformer):
    """Nyström features (Williams & Seeger 2001): ``z(x) = Λ^(-1/2) Uᵀ k(x, L)``
    over landmarks ``L`` sampled from the rows, dropping eigenvalues of
    ``K_LL`` below ``rel_tol·λ_max``.

    The landmarks are the rows the CLI samples: the ``n_components`` rows
    with the smallest ``hash(seed, row index)``, in row order. With fewer
    rows than ``n_components`` all rows are landmarks (with a warning).

    Parameters
    ----------
    n_components : int, default=100
        Landmarks ``m`` (the output has at most ``m`` columns).
    kernel : {"gaussian", "laplacian", "cauchy", "matern"}, default="gaussian"
    sigma, gamma : float, default=None
        As :class:`RandomFourierFeatures`.
    nu : float, default=1.5
        Matérn smoothness.
    rel_tol : float, default=1e-10
        Relative eigenvalue cut-off, in [0, 1).
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    components_ : ndarray of shape (m, n_features_in_)
        The landmarks.
    component_indices_ : ndarray of shape (m,)
        Their row indices in the training data.
    normalization_ : ndarray of shape (m, n_components_)
        ``N`` with ``N Nᵀ = K_mm⁺``: ``L^(-T)`` from the Cholesky factor
        ``K_mm = L Lᵀ`` when no eigenvalue of ``K_mm`` is below
        ``rel_tol · λ_max`` (then ``n_components_ = m``), else
        ``U_r Λ_r^(-1/2)`` over the eigenvalues above it.
    map_, seed_, sigma_, n_components_, n_features_in_
    """

    def __init__(self, n_components=100, *, kernel="gaussian", sigma=None, gamma=None, nu=1.5, rel_tol=1e-10,
                 random_state=None):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.gamma = gamma
        self.nu = nu
        self.rel_tol = rel_tol
        self.random_state = random_state

    def _build(self, X, seed):
        kernel = kernel_name(self.kernel)
        self.sigma_ = resolve_sigma(kernel, self.sigma, self.gamma)
        m = self.n_components
        if m > X.shape[0]:
            warnings.warn(
                f"n_components ({m}) > n_samples ({X.shape[0]}): every row is a landmark", UserWarning, stacklevel=3
            )
        feature_map, ids = _native.nystrom_map(
            kernel, self.sigma_, X, m, seed, nu=nu_for(kernel, self.nu), rel_tol=float(self.rel_tol)
        )
        tensors = feature_map.tensors()
        self.components_ = tensors["landmarks"]
        self.component_indices_ = np.asarray(ids, dtype=np.intp)
        self.normalization_ = tensors["normalization"]
        return feature_map


class TEFM(_MapTransformer):
    """Training-efficient feature maps (Chen et al. 2015): a base map ``F`` with
    ``sketch_features`` outputs compressed to its dominant ``n_components``-
    dimensional subspace, ``x ↦ Qᵀ f(x)`` with ``Q`` an orthonormal basis of
    ``(FᵀF)^(power+1) Ω`` over the rows given to ``fit``, for a random test
    matrix ``Ω`` (d × n_components) of the sketch's kind.

    ``fit`` makes one pass over ``X`` accumulating ``FᵀF`` (``d²`` doubles),
    then multiplies by ``Ω`` and iterates in memory (the CLI's one-pass
    strategy). ``Ω`` is regenerated from the seed.

    Parameters
    ----------
    n_components : int, default=100
        Output features ``l`` (at most the base map's outputs).
    base : {"rff", "orf", "sorf", "qmc", "fastfood", "comp", "nystrom"}, default="rff"
        The base map (``nystrom``: ``sketch_features`` landmarks from ``X``).
    sketch : {"gaussian", "srht", "count-sketch"}, default="gaussian"
        Θ: Gaussian (TEFM-G), block SRHT (TEFM-S) or CountSketch (TEFM-C).
    power : int, default=1
        Power iterations ``q``.
    sketch_features : int, default=None
        Base map outputs ``d``; None: ``4 · n_components``.
    kernel, sigma, gamma, nu, form
        The base map's kernel, as :class:`RandomFourierFeatures`.
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    q_ : ndarray of shape (d, n_components_)
        The basis ``Q``.
    map_, seed_, sigma_, n_components_, n_features_in_
    """

    def __init__(self, n_components=100, *, base="rff", sketch="gaussian", power=1, sketch_features=None,
                 kernel="gaussian", sigma=None, gamma=None, nu=1.5, form=None, random_state=None):
        self.n_components = n_components
        self.base = base
        self.sketch = sketch
        self.power = power
        self.sketch_features = sketch_features
        self.kernel = kernel
        self.sigma = sigma
        self.gamma = gamma
        self.nu = nu
        self.form = form
        self.random_state = random_state

    def _build(self, X, seed):
        kernel = kernel_name(self.kernel)
        self.sigma_ = resolve_sigma(kernel, self.sigma, self.gamma)
        d = 4 * self.n_components if self.sketch_features is None else self.sketch_features
        feature_map = _native.tefm_map(
            self.base, self.sketch, kernel, self.sigma_, X, self.n_components, d, self.power, seed,
            nu=nu_for(kernel, self.nu), form=self.form,
        )
        self.q_ = feature_map.tensors()["q"]
        return feature_map


class EOF(_MapTransformer):
    """Entropic optimal features (Ding, Tuo & Shahrampour 2020): deterministic,
    sparse, orthonormal features of the Laplacian kernel
    ``exp(-||x-y||₁/σ)`` (or the Sobolev kernel ``Π(1 + ω min(x_j, y_j))``,
    ω = 1/σ) on the unit cube, from a sparse grid of hierarchical functions.

    Inputs are min-max scaled to [0, 1] with the training data's column
    range (``scale="minmax"``, what the CLI's ``--map eof`` does; values
    outside are clamped), so σ is in units of the scaled inputs. Sparse
    output.

    Parameters
    ----------
    n_components : int, default=1000
        Feature budget ``M`` (ignored when ``level`` is given).
    level : int, default=None
        Use all features of this sparse-grid level instead of a budget.
    kernel : {"laplacian", "sobolev"}, default="laplacian"
    sigma, gamma : float, default=None
        σ (ω = 1/σ), or the Laplacian's ``gamma = ω``; neither: σ = 1.
    basis : {"centred", "boundary", "paper"}, default="centred"
        The 1-D functions (see kapprox's EOF docs).
    subset : {"nested", "uniform"}, default="nested"
        Which ``M`` functions a budget keeps.
    scale : {"minmax", "none"}, default="minmax"
        ``none``: inputs are used as given (clamped to [0, 1]).
    random_state : int, RandomState instance or None, default=None
        Seeds a budget's random subset.

    Attributes
    ----------
    data_min_, data_range_ : ndarray of shape (n_features_in_,)
        The min-max scaling (``scale="minmax"``).
    map_, seed_, sigma_, n_components_, n_features_in_
    """

    def __init__(self, n_components=1000, *, level=None, kernel="laplacian", sigma=None, gamma=None,
                 basis="centred", subset="nested", scale="minmax", random_state=None):
        self.n_components = n_components
        self.level = level
        self.kernel = kernel
        self.sigma = sigma
        self.gamma = gamma
        self.basis = basis
        self.subset = subset
        self.scale = scale
        self.random_state = random_state

    def _build(self, X, seed):
        kernel = str(self.kernel).lower()
        if kernel == "sobolev":
            if self.gamma is not None:
                raise ValueError("the sobolev kernel takes sigma (omega = 1/sigma), not gamma")
            self.sigma_ = resolve_sigma("cauchy", self.sigma, None)
        else:
            self.sigma_ = resolve_sigma(kernel_name(kernel), self.sigma, self.gamma)
            if kernel_name(kernel) != "laplacian":
                raise ValueError(f"EOF approximates the laplacian or sobolev kernel, not {self.kernel!r}")
        if self.scale == "minmax":
            scaler = fit_scaler("minmax", X)
            self.data_min_ = np.asarray(scaler["min"])
            self.data_range_ = np.asarray(scaler["range"])
        elif self.scale != "none":
            raise ValueError(f"scale must be 'minmax' or 'none', got {self.scale!r}")
        size = {"level": self.level} if self.level is not None else {"n_components": self.n_components}
        return _native.eof_map(
            kernel, 1.0 / self.sigma_, X.shape[1], seed, basis=self.basis, subset=self.subset, **size
        )

    def _prepare(self, X):
        if self.scale != "minmax":
            return X
        scaled = np.clip((np.asarray(X, dtype=np.float64) - self.data_min_) / self.data_range_, 0.0, 1.0)
        return scaled.astype(X.dtype, copy=False)
