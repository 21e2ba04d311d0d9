"""scikit-learn's estimator checks, pipelines and grid searches."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from kapprox import (
    EOF,
    TEFM,
    Fastfood,
    KapproxClassifier,
    KapproxRegressor,
    Nystroem,
    OrthogonalRandomFeatures,
    QuasiMonteCarloFeatures,
    RandomBinning,
    RandomFourierFeatures,
)

# Every estimator with default parameters, except for the estimators the
# feature count (the checks fit dozens of times on ~100 rows, and l = 1024
# makes each fit eigendecompose four 1024² Grams for nothing) and the seed:
# a few checks do not set random_state, and on 20 rows about one seed in a
# hundred holds out no validation row (refused, as the CLI refuses it).
ESTIMATORS = [
    RandomFourierFeatures(),
    OrthogonalRandomFeatures(),
    OrthogonalRandomFeatures(structured=True),
    Fastfood(),
    QuasiMonteCarloFeatures(),
    RandomBinning(),
    Nystroem(),
    TEFM(),
    EOF(),
    KapproxRegressor(n_components=64, random_state=0),
    KapproxClassifier(n_components=64, random_state=0),
]

# Checks that cannot pass, and why (see python/README.md).
EXPECTED_FAILED = {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED.get(type(est).__name__, {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_pipeline_and_grid_search_tune_sigma_and_alpha():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 4))
    y = np.sin(2 * x[:, 0]) + x[:, 1] ** 2 + 0.05 * rng.normal(size=600)
    pipe = make_pipeline(StandardScaler(), RandomFourierFeatures(256, random_state=0), Ridge())
    grid = {"randomfourierfeatures__sigma": [0.5, 1.0, 2.0, 30.0], "ridge__alpha": [1e-3, 1e-1]}
    search = GridSearchCV(pipe, grid, cv=3).fit(x[:400], y[:400])
    # A far too wide kernel is a near-linear model, which cannot fit sin + square.
    assert search.best_params_["randomfourierfeatures__sigma"] < 30.0
    assert search.score(x[400:], y[400:]) > 0.8
    wide = make_pipeline(StandardScaler(), RandomFourierFeatures(256, sigma=30.0, random_state=0), Ridge(1e-3))
    assert wide.fit(x[:400], y[:400]).score(x[400:], y[400:]) < 0.5
    est = GridSearchCV(KapproxRegressor(n_components=256, random_state=0), {"map": ["rff", "orf"]}, cv=3)
    assert est.fit(x[:400], y[:400]).score(x[400:], y[400:]) > 0.8


def test_sparse_maps_feed_linear_models_in_a_pipeline():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(500, 3))
    y = np.abs(x - 0.5).sum(1)
    for t in [RandomBinning(2048, sigma=1.0, n_grids=64, random_state=0), EOF(500, sigma=1.0)]:
        pipe = make_pipeline(t, Ridge(alpha=1e-3)).fit(x[:400], y[:400])
        assert pipe.score(x[400:], y[400:]) > 0.8, type(t).__name__
