"""Out-of-core fits on Parquet through kapprox's engine, model files, and the
engine's part statistics for distributed fits.

- ``estimator.fit_parquet(path)`` streams a Parquet file or directory of
  shards exactly as ``kapprox fit`` does (same settings and seed: bitwise
  the same model); memory does not grow with the number of rows.
- ``estimator.predict_parquet(path, out)`` writes prediction shards as
  ``kapprox predict`` does; ``estimator.save(path)`` writes a model file
  the command line reads; :func:`load` reads one.
- :class:`ParquetFit` runs the engine's passes over shard subsets anywhere:
  each pass, workers compute :class:`ParquetPart` objects (the bytes of
  ``kapprox fit --part`` files) from :meth:`ParquetFit.state`, and
  :meth:`ParquetFit.reduce` merges them in shard order — bitwise the model
  of one process.

Dask recipe (one task per shard, any number of workers)::

    job = kapprox.ParquetFit(KapproxRegressor(random_state=0), "train/")
    while not job.done:
        state = job.state()
        tasks = [client.submit(kapprox.run_part, state, [s], pure=False) for s in range(job.n_shards)]
        job.reduce(client.gather(tasks))
    estimator = job.estimator_
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

import numpy as np

from . import _native
from ._params import alpha_grid, form_for, parse_sigmas, seed_from

__all__ = ["ParquetFit", "ParquetPart", "run_part", "load", "DEFAULT_CHUNK_ROWS"]

#: Rows per chunk when streaming Parquet (the command line's ``--chunk-rows``
#: default); bounds memory, never changes a result.
DEFAULT_CHUNK_ROWS = 8192


def _sigma_text(sigma) -> str:
    parts = []
    for kind, v in parse_sigmas(sigma):
        parts.append(("auto" if v == 1.0 else f"auto*{v!r}") if kind == "auto" else repr(float(v)))
    return ",".join(parts)


def settings(estimator, path, *, label="auto", chunk_rows=DEFAULT_CHUNK_ROWS, nan="refuse", max_memory=None) -> str:
    """The engine settings (JSON, the ``kapprox fit`` flags) of ``estimator``
    fitted on the Parquet data at ``path``."""
    est = estimator
    eof = str(est.map).lower() == "eof"
    if nan not in ("refuse", "skip"):
        raise ValueError(f"nan must be 'refuse' or 'skip', got {nan!r}")
    if est.scale is not None and str(est.scale).lower() not in ("standard", "minmax", "none"):
        raise ValueError(f"scale must be 'standard', 'minmax', 'none' or None, got {est.scale!r}")
    doc = {
        "train": os.fspath(path),
        "map": str(est.map).lower(),
        "kernel": str(est.kernel).lower(),
        "nu": float(est.nu),
        "form": form_for(est.form, est.n_components),
        "n_components": int(est.n_components),
        "grids": est.n_grids,
        "inner": est.n_inner,
        "base": str(est.base),
        "sketch_features": est.sketch_features,
        "power": int(est.power),
        "tefm_strategy": "auto",
        "rel_tol": float(est.rel_tol),
        "level": est.level,
        # The estimator's EOF defaults are the engine's; stated only for EOF, which refuses them elsewhere.
        "eof_basis": est.eof_basis if eof else None,
        "eof_subset": est.eof_subset if eof else None,
        "sigma": _sigma_text(est.sigma),
        "alpha": alpha_grid(est.alpha),
        "task": "classification" if est._classifier else "regression",
        "scale": None if est.scale is None else str(est.scale).lower(),
        "label": str(label),
        "chunk_rows": int(chunk_rows),
        "nan": nan,
        "validation": float(est.validation),
        "folds": None if est.folds is None else int(est.folds),
        "seed": seed_from(est.random_state),
        "max_memory": None if max_memory is None else int(max_memory),
    }
    return json.dumps(doc)


def adopt(estimator, model, report: dict | None):
    """Sets ``estimator``'s fitted attributes from an engine model."""
    doc = json.loads(model.doc_json())
    classifier = doc["task"] == "classification"
    if classifier != estimator._classifier:
        raise ValueError(
            f"the model is a {doc['task']} model; use {'KapproxClassifier' if classifier else 'KapproxRegressor'}"
        )
    for stale in ("statistics_", "setup_", "cv_results_", "sigmas_", "feature_columns_"):
        if hasattr(estimator, stale):
            delattr(estimator, stale)
    estimator.model_ = model
    estimator.model_doc_ = doc
    estimator.map_ = model.map()
    estimator.seed_ = doc["map"]["seed"] if "seed" in doc["map"] else None
    estimator.sigma_ = estimator.map_.sigma
    estimator.alpha_ = float(doc["alpha"])
    estimator.scaler_ = doc["scaler"]
    estimator.n_features_in_ = len(doc["feature_columns"])
    # The Parquet columns, in the order `predict` takes them; not scikit-learn's feature_names_in_, which
    # would make every numpy `predict` warn about missing names.
    estimator.feature_columns_ = list(doc["feature_columns"])
    if hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    estimator.training_ = doc["training"] if report is None else report
    if "rows" in estimator.training_:
        estimator.n_rows_ = estimator.training_["rows"]
    coef, intercept = model.coef(), model.intercept()
    if classifier:
        estimator.classes_ = np.asarray(doc["classes"], dtype=np.float64)
        estimator.coef_ = coef.T.copy()
        estimator.intercept_ = intercept
    else:
        estimator.coef_ = coef[:, 0].copy()
        estimator.intercept_ = float(intercept[0])
    return estimator


def _numeric_classes(classes) -> list[float]:
    try:
        values = np.asarray(classes).astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"model files store numeric class labels; this classifier's classes are {list(classes)[:5]}"
        ) from None
    if not np.array_equal(values, np.asarray(classes)):
        raise ValueError(f"model files store numeric class labels; {list(classes)[:5]} are not numbers")
    return [float(v) for v in values]


def engine_model(estimator):
    """The engine model of a fitted estimator: the one it was fitted or
    loaded with, else one assembled from its numpy fit (feature names
    ``feature_names_in_`` or ``x0, x1, ...``)."""
    if hasattr(estimator, "model_"):
        return estimator.model_
    d = estimator.n_features_in_
    names = getattr(estimator, "feature_names_in_", None)
    columns = [str(c) for c in names] if names is not None else [f"x{i}" for i in range(d)]
    coef, intercept = estimator._coef_lk()
    doc = {
        "task": "classification" if estimator._classifier else "regression",
        "feature_columns": columns,
        "label_column": None,
        "scaler": estimator.scaler_,
        "map": json.loads(estimator.map_.spec_json),
        "classes": _numeric_classes(estimator.classes_) if estimator._classifier else None,
        "alpha": float(estimator.alpha_),
        "training": {"fitted_by": "kapprox Python (numpy rows)", "sigma": estimator.sigma_, "alpha": estimator.alpha_},
    }
    return _native.Model.from_parts(
        json.dumps(doc),
        estimator.map_,
        np.ascontiguousarray(coef, dtype=np.float64),
        np.ascontiguousarray(intercept, dtype=np.float64),
    )


def load(path):
    """A fitted :class:`~kapprox.KapproxRegressor` or
    :class:`~kapprox.KapproxClassifier` from a model file (``kapprox fit``'s
    output, or ``save``'s). Its predictions are ``kapprox predict``'s."""
    from .estimators import KapproxClassifier, KapproxRegressor

    model = _native.Model.load(os.fspath(path))
    doc = json.loads(model.doc_json())
    est = KapproxClassifier() if doc["task"] == "classification" else KapproxRegressor()
    spec = doc["map"]
    params = {}
    if isinstance(spec.get("seed"), int):
        params["random_state"] = spec["seed"]
    est.set_params(**params)
    return adopt(est, model, None)


class ParquetPart:
    """The state of one pass of a :class:`ParquetFit` over some shards: the
    bytes of a ``kapprox fit --part`` file (``.kpart``), so it pickles as
    bytes, and ``kapprox reduce`` reads it once written to a file.

    ``a + b`` merges parts of disjoint shards (in shard order); a reduce
    does the same for all parts at once.
    """

    def __init__(self, data: bytes):
        self.data = bytes(data)
        self._info = json.loads(_native.part_info(self.data))

    @property
    def shards(self) -> list[int]:
        """Shard indices covered, ascending."""
        return list(self._info["shards"])

    @property
    def rows(self) -> int:
        """Rows read."""
        return int(self._info["rows"])

    @property
    def row_ranges(self) -> list[tuple[int, int]]:
        """Global row ranges ``[start, end)`` of the shards."""
        return [tuple(r) for r in self._info["row_ranges"]]

    @property
    def pass_name(self) -> str:
        """``prepare``, ``sketch 1``, ..., ``fit``."""
        return self._info["pass"]["name"]

    def write(self, path) -> None:
        """Writes the part file (for ``kapprox reduce``)."""
        with open(path, "wb") as f:
            f.write(self.data)

    def __add__(self, other: ParquetPart) -> ParquetPart:
        if not isinstance(other, ParquetPart):
            return NotImplemented
        return ParquetPart(_native.merge_parts([self.data, other.data]))

    def __reduce__(self):
        return (ParquetPart, (self.data,))

    def __repr__(self) -> str:
        return f"ParquetPart({self.pass_name!r}, shards={self.shards}, rows={self.rows})"


def run_part(state: bytes, shards: Iterable[int]) -> ParquetPart:
    """Runs the next pass of the fit whose :meth:`ParquetFit.state` is
    ``state`` over ``shards``; what a worker calls. The worker needs the
    training data at the path the fit was planned with."""
    return ParquetPart(_native.run_part(state, [int(s) for s in shards]))


class ParquetFit:
    """A fit of ``estimator``'s parameters on Parquet data as passes over
    shards (the engine's ``FitJob``): plan it here, run each pass's parts
    anywhere with :func:`run_part`, reduce them here.

    Parameters
    ----------
    estimator : KapproxRegressor or KapproxClassifier
        Its parameters (not fitted; cloned into :attr:`estimator_` at the end).
    path : str or PathLike
        A Parquet file or directory of shards (``kapprox convert``'s output).
    label, chunk_rows, nan, max_memory
        As :meth:`KapproxRegressor.fit_parquet`.
    """

    def __init__(self, estimator, path, *, label="auto", chunk_rows=DEFAULT_CHUNK_ROWS, nan="refuse",
                 max_memory=None):
        from sklearn.base import clone

        self._estimator = clone(estimator)
        self._job = _native.FitJob(
            settings(estimator, path, label=label, chunk_rows=chunk_rows, nan=nan, max_memory=max_memory)
        )

    @property
    def n_shards(self) -> int:
        """Shards of the training data."""
        return self._job.n_shards

    @property
    def shard_rows(self) -> list[int]:
        """Rows of each shard."""
        return self._job.shard_rows

    @property
    def passes(self) -> list[str]:
        """The passes of the plan (``prepare``, ``sketch 1``, ..., ``fit``)."""
        return self._job.passes

    @property
    def pass_index(self) -> int:
        """Passes reduced so far."""
        return self._job.pass_index

    @property
    def done(self) -> bool:
        """Whether the last pass is reduced (``estimator_`` is set)."""
        return self._job.done

    def state(self) -> bytes:
        """What workers need for the next pass (pass-result bytes, the
        format of ``kapprox reduce``'s output)."""
        return bytes(self._job.result_bytes())

    def run_part(self, shards: Iterable[int]) -> ParquetPart:
        """Runs the next pass over ``shards`` in this process."""
        return ParquetPart(self._job.run_part([int(s) for s in shards]))

    def reduce(self, parts: Iterable[ParquetPart]):
        """Merges the parts of the next pass (every shard exactly once, any
        order) in shard order and advances. After the last pass, sets and
        returns :attr:`estimator_`; before, returns None."""
        parts = list(parts)
        for p in parts:
            if not isinstance(p, ParquetPart):
                raise TypeError(f"reduce takes ParquetPart objects, got {type(p).__name__}")
        model = self._job.reduce([p.data for p in parts])
        if model is None:
            return None
        self.estimator_ = adopt(self._estimator, model, json.loads(self._job.report))
        return self.estimator_
