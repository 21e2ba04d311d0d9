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

Conventions: Gaussian ``exp(-||x-y||²/(2σ²))`` (scikit-learn
``gamma = 1/(2σ²)``), Laplacian ``exp(-||x-y||₁/σ)`` (``gamma = 1/σ``);
ridge ``||Zw + b - y||² + α||w||²``. An int ``random_state`` is kapprox's
seed: the same seed and inputs give the map the command line builds.
"""

from .estimators import DEFAULT_SIGMA, KapproxClassifier, KapproxRegressor
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
    "DEFAULT_SIGMA",
]


def load(path):
    """Returns a fitted estimator from a ``kapprox fit`` model file.

    Not in this build: model files are read by kapprox's engine library,
    which these bindings do not include yet.
    """
    raise NotImplementedError(
        "kapprox.load needs kapprox's engine library (model files), which this build does not bind yet"
    )
