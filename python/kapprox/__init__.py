"""kapprox for Python: kernel feature maps as scikit-learn transformers, and
kernel ridge estimators fitted from mergeable sufficient statistics.

Transformers (``fit``/``transform``, scikit-learn conventions):
:class:`RandomFourierFeatures`, :class:`OrthogonalRandomFeatures`,
:class:`Fastfood`, :class:`QuasiMonteCarloFeatures`, :class:`RandomBinning`
(scipy.sparse output), :class:`Nystroem`, :class:`TEFM`, :class:`EOF`
(sparse output).

Estimators: :class:`KapproxRegressor`, :class:`KapproxClassifier` (map +
ridge, σ and α chosen from statistics, ``partial_fit``), and
:class:`PartialStatistics` (``a + b``, :func:`merge`, ``solve()``) to fit
over row subsets computed anywhere.

Parquet and model files (kapprox's engine): ``fit_parquet`` streams a
Parquet directory exactly like ``kapprox fit``; ``predict_parquet`` and
``save`` write what ``kapprox predict`` writes and reads; :func:`load`
reads a model file; :class:`ParquetFit` runs the fit's passes as
:class:`ParquetPart` states (``.kpart`` bytes) on any workers (Dask).

Model selection as ``kapprox fit`` makes it, inside ``GridSearchCV``:
:func:`cli_split` (its hold-out split) and :func:`cli_param_grid` (its σ
and α candidates); see :mod:`kapprox.selection`.

Conventions: Gaussian ``exp(-||x-y||²/(2σ²))`` (scikit-learn
``gamma = 1/(2σ²)``), Laplacian ``exp(-||x-y||₁/σ)`` (``gamma = 1/σ``);
ridge ``||Zw + b - y||² + α||w||²``. An int ``random_state`` is kapprox's
seed: the same seed and inputs give the map the command line builds.
"""

from .estimators import DEFAULT_SIGMA, KapproxClassifier, KapproxRegressor
from .parquet import ParquetFit, ParquetPart, load, run_part
from .selection import cli_param_grid, cli_split
from .statistics import PartialStatistics, merge
from .transformers import (
    EOF,
    TEFM,
    Fastfood,
    Nystroem,
    OrthogonalRandomFeatures,
    QuasiMonteCarloFeatures,
    RandomBinning,
    RandomFourierFeatures,
)

__all__ = [
    "RandomFourierFeatures",
    "OrthogonalRandomFeatures",
    "Fastfood",
    "QuasiMonteCarloFeatures",
    "RandomBinning",
    "Nystroem",
    "TEFM",
    "EOF",
    "KapproxRegressor",
    "KapproxClassifier",
    "PartialStatistics",
    "merge",
    "load",
    "ParquetFit",
    "ParquetPart",
    "run_part",
    "DEFAULT_SIGMA",
    "cli_split",
    "cli_param_grid",
]

