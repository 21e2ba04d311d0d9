"""Kernel ridge regression and classification through explicit feature maps,
fitted from sufficient statistics as ``kapprox fit`` fits them.

A fit (1) scales the inputs (``scale``: standard by default, min-max for
EOF), (2) resolves the bandwidth candidates (``"auto"`` is the median
pairwise distance of 1000 rows chosen by ``hash(seed, row index)``), (3)
builds one feature map per candidate (learning landmarks or TEFM's basis
from the scaled rows where the map needs them), (4) accumulates for each
candidate and each part of the validation split the ridge statistics
``[z, 1, y]ᵀ[z, 1, y]`` (rows go to parts by a seeded hash of their row
index: hold-out or k folds), (5) scores every (σ, α) from the statistics of
the held-out parts (no second pass), and (6) solves ridge with the chosen
σ and α on all rows. Memory beyond the data: ``(l + 1 + k)²`` doubles per
candidate and part, plus one chunk of features.

Ridge minimises ``||Zw + b - y||² + α||w||²`` (scikit-learn's ``alpha``;
the intercept is not penalised). Classification is one-vs-rest ridge on
±1 targets, predicted class = argmax.

Incremental and distributed fits: ``partial_fit`` adds batches to kept
statistics; ``partial_statistics`` computes the statistics of any rows as
a :class:`~kapprox.PartialStatistics` that merges with others and solves.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_X_y
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _native, parquet
from ._params import alpha_grid, apply_scaler, fit_scaler, form_for, kernel_name, nu_for, parse_sigmas, seed_from
from .parquet import DEFAULT_CHUNK_ROWS
from .statistics import PartialStatistics
from .transformers import transform_with

__all__ = ["KapproxRegressor", "KapproxClassifier", "DEFAULT_SIGMA"]

#: The bandwidth candidates of ``kapprox fit`` (multiples of the median rule).
DEFAULT_SIGMA = "auto*0.5,auto,auto*2,auto*4"

_INDEPENDENT = ("rff", "orf", "sorf", "qmc", "fastfood", "binning", "comp")
_TEFM_SKETCH = {"tefm-g": "gaussian", "tefm-s": "srht", "tefm-c": "count-sketch"}
_SCALES = {"standard": "standard", "minmax": "minmax", "none": "none"}

#: Rows predicted at a time (bounds the feature buffer of ``predict``).
PREDICT_CHUNK_ROWS = 16384


@dataclass
class _Setup:
    """What a fit fixed before its statistics: seed, scaling, bandwidths,
    one fitted map per bandwidth, and the classes."""

    seed: int
    scaler: dict
    sigmas: list
    maps: list
    classes: np.ndarray | None = None
    median: float | None = None
    split: dict = field(default_factory=dict)

    def config_json(self) -> str:
        classes = None if self.classes is None else [float(i) for i in range(len(self.classes))]
        return json.dumps({"split": self.split, "seed": self.seed, "classes": classes})

    def same_as(self, other: _Setup) -> bool:
        same_classes = (self.classes is None and other.classes is None) or (
            self.classes is not None and other.classes is not None and np.array_equal(self.classes, other.classes)
        )
        return (
            self.seed == other.seed
            and self.scaler == other.scaler
            and self.sigmas == other.sigmas
            and self.split == other.split
            and same_classes
            and [m.spec_json for m in self.maps] == [m.spec_json for m in other.maps]
        )


class _KapproxModel(BaseEstimator):
    """Shared parameters, setup, statistics and prediction."""

    _classifier = False

    def __init__(self, map="rff", *, n_components=1024, kernel="gaussian", sigma=DEFAULT_SIGMA, alpha=None, nu=1.5,
                 form=None, scale=None, validation=0.2, folds=None, n_grids=None, n_inner=None, base="rff",
                 sketch_features=None, power=1, rel_tol=1e-10, level=None, eof_basis="centred",
                 eof_subset="nested", random_state=None):
        self.map = map
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.alpha = alpha
        self.nu = nu
        self.form = form
        self.scale = scale
        self.validation = validation
        self.folds = folds
        self.n_grids = n_grids
        self.n_inner = n_inner
        self.base = base
        self.sketch_features = sketch_features
        self.power = power
        self.rel_tol = rel_tol
        self.level = level
        self.eof_basis = eof_basis
        self.eof_subset = eof_subset
        self.random_state = random_state

    # ---- configuration -------------------------------------------------

    def _map_name(self) -> str:
        name = str(self.map).lower()
        if name not in _INDEPENDENT and name not in _TEFM_SKETCH and name not in ("nystrom", "eof"):
            raise ValueError(
                f"unknown map {self.map!r}: expected one of {', '.join(_INDEPENDENT)}, nystrom, tefm-g, tefm-s, "
                "tefm-c or eof"
            )
        return name

    def _scale_kind(self) -> str:
        if self.scale is None:
            return "minmax" if self._map_name() == "eof" else "standard"
        if str(self.scale).lower() not in _SCALES:
            raise ValueError(f"scale must be 'standard', 'minmax', 'none' or None, got {self.scale!r}")
        return _SCALES[str(self.scale).lower()]

    def _split(self) -> dict:
        if self.folds is not None:
            return {"folds": int(self.folds)}
        return {"holdout": float(self.validation)}

    def _data_dependence(self) -> list[str]:
        """Why the setup would depend on the rows (empty: it does not)."""
        reasons = []
        if self._scale_kind() != "none":
            reasons.append(f"scale={self._scale_kind()!r} learns column statistics")
        if any(kind == "auto" for kind, _ in parse_sigmas(self.sigma)):
            reasons.append("sigma 'auto' is the median rule over rows")
        if self._map_name() == "nystrom" or self._map_name() in _TEFM_SKETCH:
            reasons.append(f"map={self._map_name()!r} learns from the rows")
        return reasons

    def _make_setup(self, x: np.ndarray, classes, *, learn: bool) -> _Setup:
        reasons = self._data_dependence()
        if reasons and not learn:
            raise ValueError(
                f"{type(self).__name__}.partial_statistics on an unfitted estimator needs a setup that does not "
                f"depend on the rows, but {'; '.join(reasons)}. Fit (or partial_fit) the estimator on a sample "
                "first, whose scaling, bandwidths and maps the statistics then use, or use scale='none', numeric "
                "sigma values and a data-independent map"
            )
        seed = seed_from(self.random_state)
        kind = self._scale_kind()
        scaler = fit_scaler(kind, x) if kind != "none" else {"kind": "none"}
        xs = apply_scaler(scaler, x)
        specs = parse_sigmas(self.sigma)
        median = _native.median_distance(xs, seed) if any(k == "auto" for k, _ in specs) else None
        sigmas: list[float] = []
        for kind_, v in specs:
            s = v if kind_ == "value" else v * median
            if not sigmas or sigmas[-1] != s:
                sigmas.append(s)
        maps = [self._build_map(xs, s, seed) for s in sigmas]
        return _Setup(seed, scaler, sigmas, maps, classes, median, self._split())

    def _build_map(self, xs: np.ndarray, sigma: float, seed: int):
        name = self._map_name()
        n, d = xs.shape
        l = self.n_components
        if name == "eof":
            kernel = str(self.kernel).lower()
            if kernel not in ("laplacian", "laplace", "sobolev"):
                raise ValueError(f"map='eof' approximates the laplacian or sobolev kernel: pass kernel='laplacian' "
                                 f"(got {self.kernel!r})")
            size = {"level": self.level} if self.level is not None else {"n_components": l}
            return _native.eof_map(kernel, 1.0 / sigma, d, seed, basis=self.eof_basis, subset=self.eof_subset,
                                   **size)
        kernel = kernel_name(self.kernel)
        nu = nu_for(kernel, self.nu)
        if name in _INDEPENDENT:
            form = form_for(self.form, l) if name != "comp" else self.form
            return _native.independent_map(name, kernel, sigma, d, l, seed, nu=nu, form=form,
                                           n_grids=self.n_grids, n_inner=self.n_inner)
        if name == "nystrom":
            if n < l:
                raise ValueError(f"Nystrom needs {l} landmarks but the training data has only n_samples = {n} rows")
            feature_map, _ = _native.nystrom_map(kernel, sigma, xs, l, seed, nu=nu, rel_tol=float(self.rel_tol))
            return feature_map
        d_base = 4 * l if self.sketch_features is None else self.sketch_features
        return _native.tefm_map(self.base, _TEFM_SKETCH[name], kernel, sigma, xs, l, d_base, self.power, seed,
                                nu=nu, form=self.form)

    # ---- rows and targets ------------------------------------------------

    def _encode(self, y, setup: _Setup) -> np.ndarray:
        if not self._classifier:
            return np.asarray(y, dtype=np.float64)
        classes = setup.classes
        codes = np.searchsorted(classes, y)
        codes = np.clip(codes, 0, len(classes) - 1)
        unknown = classes[codes] != y
        if np.any(unknown):
            raise ValueError(f"y holds labels that are not among the classes {classes.tolist()}: "
                             f"{np.unique(np.asarray(y)[unknown])[:5].tolist()}")
        return codes.astype(np.float64)

    def _prepare_rows(self, X, y, setup: _Setup):
        """Checked, scaled rows and encoded targets (no change to ``self``)."""
        X, y = check_X_y(X, y, dtype=np.float64, y_numeric=not self._classifier)
        d = setup.maps[0].n_input
        if X.shape[1] != d:
            raise ValueError(f"X has {X.shape[1]} features, but these statistics take {d}")
        return apply_scaler(setup.scaler, X), self._encode(y, setup)

    def _classes_for(self, y, classes):
        if not self._classifier:
            return None
        check_classification_targets(y)
        found = np.unique(y if classes is None else classes)
        if len(found) < 2:
            raise ValueError(f"classification needs at least 2 classes, found {len(found)} class")
        return found

    # ---- fitting -------------------------------------------------------------

    def _new_native(self, setup: _Setup):
        return _native.Statistics(setup.config_json(), setup.maps)

    def _fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=not self._classifier)
        if X.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 rows, got n_samples = {X.shape[0]}")
        setup = self._make_setup(X, self._classes_for(y, None), learn=True)
        native = self._new_native(setup)
        native.update(apply_scaler(setup.scaler, X), self._encode(y, setup), 0)
        self._set_solution(setup, native)
        if hasattr(self, "statistics_"):
            del self.statistics_
        return self

    def _partial_fit(self, X, y, classes=None):
        first = not hasattr(self, "statistics_")
        X, y = validate_data(self, X, y, dtype=np.float64, reset=first, y_numeric=not self._classifier)
        if first:
            if self._classifier and classes is None:
                # As scikit-learn's partial_fit: a fitted classifier lends its classes.
                classes = getattr(self, "classes_", None)
            if self._classifier and classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            setup = self._make_setup(X, self._classes_for(y, classes), learn=True)
            stats = PartialStatistics(self, setup, self._new_native(setup))
        else:
            stats = self.statistics_
            setup = stats._setup
            if self._classifier and classes is not None and not np.array_equal(np.unique(classes), setup.classes):
                raise ValueError(f"classes {np.unique(classes).tolist()} differ from the first call's "
                                 f"{setup.classes.tolist()}")
        stats._native.update(apply_scaler(setup.scaler, X), self._encode(y, setup), stats.next_row)
        self._set_solution(setup, stats._native)
        self.statistics_ = stats
        return self

    def partial_statistics(self, X, y, *, row_offset=0, classes=None) -> PartialStatistics:
        """The statistics of rows ``X, y`` as global rows ``row_offset ..
        row_offset + len(X)``, to merge with other rows' statistics and solve.

        A fitted estimator lends its setup (scaling, bandwidths, maps,
        classes), so statistics from any process merge. An unfitted one
        needs a setup that does not depend on the rows (``scale='none'``,
        numeric ``sigma``, a data-independent map) and, for a classifier,
        ``classes``. Does not change the estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        row_offset : int, default=0
            The global index of the first row (e.g. the rows of the shards
            before this one); it decides each row's validation part.
        classes : array-like, default=None
            Classifier on an unfitted estimator: every label of the data.

        Returns
        -------
        PartialStatistics
        """
        if hasattr(self, "setup_"):
            setup = self.setup_
        else:
            X, y = check_X_y(X, y, dtype=np.float64, y_numeric=not self._classifier)
            if self._classifier and classes is None:
                raise ValueError("an unfitted classifier needs classes= (every label of the whole data)")
            setup = self._make_setup(X, self._classes_for(y, classes), learn=False)
        x, codes = self._prepare_rows(X, y, setup)
        native = self._new_native(setup)
        native.update(x, codes, int(row_offset))
        return PartialStatistics(self, setup, native)

    def _set_solution(self, setup: _Setup, native) -> None:
        sol = native.solve(alpha_grid(self.alpha))
        best = sol["best"]
        for engine_only in ("model_", "model_doc_", "training_"):
            if hasattr(self, engine_only):
                delattr(self, engine_only)
        self.setup_ = setup
        self.seed_ = setup.seed
        self.scaler_ = setup.scaler
        self.sigmas_ = list(setup.sigmas)
        self.sigma_ = setup.sigmas[best]
        self.alpha_ = sol["alpha"]
        self.map_ = setup.maps[best]
        self.n_features_in_ = setup.maps[0].n_input
        self.n_rows_ = native.n_rows
        self.cv_results_ = [
            {"sigma": s, **(c if c is not None else {})} for s, c in zip(setup.sigmas, sol["candidates"])
        ]
        self._set_coef(np.asarray(sol["coef"]), np.asarray(sol["intercept"]))

    # ---- prediction ------------------------------------------------------------

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if hasattr(self, "model_"):
            # Fitted on Parquet or loaded: the engine's scaling, map and scores (`kapprox predict`'s).
            return self.model_.scores(X)
        coef, intercept = self._coef_lk()
        out = np.empty((X.shape[0], coef.shape[1]))
        for start in range(0, X.shape[0], PREDICT_CHUNK_ROWS):
            rows = slice(start, start + PREDICT_CHUNK_ROWS)
            z = transform_with(self.map_, apply_scaler(self.scaler_, X[rows]))
            out[rows] = z @ coef + intercept
        return out

    # ---- Parquet and model files (the engine) ------------------------------

    def fit_parquet(self, path, *, label="auto", chunk_rows=DEFAULT_CHUNK_ROWS, nan="refuse", max_memory=None):
        """Fits on a Parquet file or directory of shards, streamed out of core
        exactly like ``kapprox fit`` (the same parameters and seed give
        bitwise the same model as the command line's).

        Memory does not grow with the number of rows: the statistics of
        every candidate and split part plus one chunk of features.

        Parameters
        ----------
        path : str or PathLike
            Parquet data, e.g. written by ``kapprox convert``.
        label : str, default="auto"
            The label column: a name, ``"last"``, or ``"auto"`` (the label
            recorded by ``kapprox convert``). The other numeric columns are
            the features.
        chunk_rows : int, default=8192
            Rows read at a time (bounds memory; never changes the model).
        nan : {"refuse", "skip"}, default="refuse"
            Rows with NaN or infinite values: an error naming file, row and
            column, or skipped (and counted).
        max_memory : int, default=None
            Refuse a fit whose statistics need more bytes than this.

        Returns
        -------
        self
        """
        settings = parquet.settings(self, path, label=label, chunk_rows=chunk_rows, nan=nan, max_memory=max_memory)
        model, report = _native.fit_parquet(settings)
        return parquet.adopt(self, model, json.loads(report))

    def predict_parquet(self, path, out, *, chunk_rows=DEFAULT_CHUNK_ROWS, nan="refuse", overwrite=False):
        """Writes predictions for the Parquet data ``path`` into the
        directory ``out`` (one shard per input shard, with row ids; the
        target beside them when the data holds the label), like ``kapprox
        predict``. Streams: memory does not grow with the rows.

        The directory is written under a hidden staging name beside ``out``
        and renamed into place only when complete: an error (or a killed
        process) leaves nothing at ``out``.

        Parameters
        ----------
        overwrite : bool, default=False
            Replace an existing ``out`` (whole, in one rename). Without it an
            existing non-empty ``out`` is refused.

        Raises
        ------
        ValueError
            ``out`` is, contains or lies inside ``path``; ``out`` exists and
            ``overwrite`` is False; a prediction is not finite (a damaged
            model: a NaN or infinite weight, a zero scale; or an extreme
            bandwidth), naming the file, the row and the cause.

        Returns
        -------
        dict
            ``rows``, ``skipped``, ``files``, ``seconds``.
        """
        check_is_fitted(self)
        model = parquet.engine_model(self)
        try:
            report = model.predict_parquet(os.fspath(path), os.fspath(out), chunk_rows, nan, bool(overwrite))
        except ValueError as e:
            # The engine's message names the command line's flag.
            raise ValueError(str(e).replace("pass --overwrite", "pass overwrite=True")) from None
        return json.loads(report)

    def save(self, path):
        """Writes a model file that ``kapprox predict`` (and :func:`kapprox.load`)
        reads. A numpy fit names its columns ``feature_names_in_`` (from a
        DataFrame) or ``x0, x1, ...``; a classifier needs numeric labels."""
        check_is_fitted(self)
        parquet.engine_model(self).save(os.fspath(path))

    def __getstate__(self):
        state = self.__dict__.copy()
        if "model_" in state:
            state["model_"] = bytes(state["model_"].to_bytes())
        return state

    def __setstate__(self, state):
        if isinstance(state.get("model_"), bytes):
            state["model_"] = _native.Model.from_bytes(state["model_"])
        self.__dict__.update(state)


class KapproxRegressor(RegressorMixin, _KapproxModel):
    """Kernel ridge regression through an explicit feature map, fitted from
    sufficient statistics like ``kapprox fit`` (see the module docs).

    Parameters
    ----------
    map : str, default="rff"
        rff, orf, sorf, qmc, fastfood, binning, comp (data-independent),
        nystrom (``n_components`` landmarks), tefm-g / tefm-s / tefm-c
        (TEFM with a Gaussian, block-SRHT or CountSketch Θ), eof.
    n_components : int, default=1024
        Output features ``l`` (nystrom: landmarks; eof: the budget).
    kernel : str, default="gaussian"
        gaussian (rbf), laplacian, cauchy, matern; eof: laplacian or sobolev.
    sigma : float, str or sequence, default="auto*0.5,auto,auto*2,auto*4"
        Bandwidth candidates: numbers, ``"auto"`` (median pairwise distance
        of 1000 sampled scaled rows) or ``"auto*F"``; a comma-separated
        string as the CLI's ``--sigma``. Chosen on the validation split.
    alpha : float or sequence, default=None
        Ridge penalties to choose from; None: ``n · 10^(-9..-1)``, 17 values.
    nu : float, default=1.5
        Matérn smoothness.
    form : {"pairs", "phase"}, default=None
        Fourier output form; None: pairs for an even ``n_components``, phase
        for an odd one.
    scale : {"standard", "minmax", "none"}, default=None
        Input scaling; None: standard (eof: minmax).
    validation : float, default=0.2
        Fraction of rows held out (by a seeded hash of the row index).
    folds : int, default=None
        k-fold cross-validation instead of one held-out part.
    n_grids, n_inner : int, default=None
        Random binning's grids; Comp's inner dimension.
    base : str, default="rff"
        TEFM's base map (or "nystrom").
    sketch_features : int, default=None
        TEFM's base features (default ``4 · n_components``).
    power : int, default=1
        TEFM's power iterations.
    rel_tol : float, default=1e-10
        Nyström's relative eigenvalue cut-off.
    level : int, default=None
        EOF: a sparse-grid level instead of the budget.
    eof_basis, eof_subset : str, default="centred", "nested"
        EOF's basis and budget subset.
    random_state : int, RandomState instance or None, default=None
        An int is kapprox's seed (maps, samples and split, as ``--seed``).

    Attributes
    ----------
    coef_ : ndarray of shape (l,)
    intercept_ : float
    map_ : kapprox._native.FeatureMap
        The chosen candidate's map.
    sigma_, alpha_ : float
        The chosen bandwidth and penalty.
    sigmas_ : list of float
        The candidates.
    cv_results_ : list of dict
        Per candidate: ``sigma``, ``best_alpha``, ``validation_mse``,
        ``alphas``, ``mse`` (absent when there was nothing to choose).
    scaler_ : dict
        The input scaling (as a model file stores it).
    seed_ : int
    n_rows_ : int
    setup_ : object
        Scaling, bandwidths and maps (what ``partial_statistics`` reuses).
    statistics_ : PartialStatistics
        Only after ``partial_fit``: the statistics so far.
    n_features_in_ : int
    """

    def fit(self, X, y):
        """Fits on all rows (one pass over ``X`` per bandwidth candidate).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def partial_fit(self, X, y):
        """Adds a batch to the statistics and re-solves.

        The first call fixes the scaling, the bandwidths and any landmarks
        from its batch (as ``fit`` does from all rows); later batches only
        add statistics, as rows continuing the first ones. So the batches of
        ``X`` give the model of ``fit(X, y)`` whenever that setup does not
        depend on the rows (``scale='none'``, numeric ``sigma``, a
        data-independent map): bitwise, whatever the batch sizes.

        Returns
        -------
        self
        """
        return self._partial_fit(X, y)

    def predict(self, X):
        """Predictions, ``(n_samples,)``."""
        return self._scores(X)[:, 0]

    def _set_coef(self, coef, intercept):
        self.coef_ = coef[:, 0]
        self.intercept_ = float(intercept[0])

    def _coef_lk(self):
        return self.coef_[:, None], np.array([self.intercept_])


class KapproxClassifier(ClassifierMixin, _KapproxModel):
    """One-vs-rest kernel ridge classification through an explicit feature
    map (±1 targets per class, predicted class = argmax), fitted from
    sufficient statistics like ``kapprox fit --task classification``.

    σ and α are chosen by the validation MSE of the ±1 targets, computed
    from the statistics. (The CLI chooses by the accuracy on sampled
    held-out rows; the engine-backed fit will.)

    Parameters are those of :class:`KapproxRegressor`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, l)
    intercept_ : ndarray of shape (n_classes,)
    map_, sigma_, alpha_, sigmas_, cv_results_, scaler_, seed_, n_rows_, setup_, statistics_, n_features_in_
        As :class:`KapproxRegressor`.
    """

    _classifier = True

    def fit(self, X, y):
        """Fits on all rows.

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def partial_fit(self, X, y, classes=None):
        """Adds a batch; ``classes`` (every label) is required on the first
        call. See :meth:`KapproxRegressor.partial_fit`.

        Returns
        -------
        self
        """
        return self._partial_fit(X, y, classes)

    def decision_function(self, X):
        """Scores, ``(n_samples, n_classes)``; for two classes the margin of
        the second class, ``(n_samples,)``."""
        scores = self._scores(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        """Predicted labels, ``(n_samples,)``."""
        scores = self._scores(X)
        return self.classes_[np.argmax(scores, axis=1)]

    def _set_coef(self, coef, intercept):
        self.classes_ = self.setup_.classes
        self.coef_ = coef.T.copy()
        self.intercept_ = intercept

    def _coef_lk(self):
        return self.coef_.T, self.intercept_

