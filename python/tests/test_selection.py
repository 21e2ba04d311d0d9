"""kapprox.cli_split and kapprox.cli_param_grid: GridSearchCV over a
Pipeline makes the choice of kapprox's own selection (the CLI's)."""

from pathlib import Path

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import kapprox

DATA = Path(__file__).resolve().parents[2] / "data"


def test_the_cli_split_and_grid_make_the_cli_choice():
    train = np.loadtxt(DATA / "cpu_rks_train.tsv.gz", skiprows=1)
    x, y = train[:, :-1], train[:, -1]
    split = kapprox.cli_split(len(x), random_state=3)
    held_out = np.mean(split.test_fold == 0)
    # 20 % of 6554 rows, binomial standard deviation 0.5 %.
    assert abs(held_out - 0.2) < 0.02, held_out
    assert split.get_n_splits() == 1
    est = kapprox.KapproxRegressor(n_components=256, random_state=3).fit(x, y)
    pipe = make_pipeline(StandardScaler(), kapprox.RandomFourierFeatures(256, random_state=3), Ridge())
    grid = kapprox.cli_param_grid(x, random_state=3)
    assert len(grid["randomfourierfeatures__sigma"]) == 4 and len(grid["ridge__alpha"]) == 17
    search = GridSearchCV(pipe, grid, cv=split, scoring="neg_mean_squared_error").fit(x, y)
    best = search.best_params_
    np.testing.assert_allclose(best["randomfourierfeatures__sigma"], est.sigma_, rtol=1e-12)
    np.testing.assert_allclose(best["ridge__alpha"], est.alpha_, rtol=1e-12)
    # Refitted on all rows like the estimator: the same predictions up to the scaler's rounding.
    np.testing.assert_allclose(search.predict(x[:100]), est.predict(x[:100]), rtol=1e-4, atol=1e-4)
