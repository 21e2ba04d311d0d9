"""The command line's model selection inside scikit-learn's searches.

``kapprox fit`` chooses σ and α on **one hold-out split**: a row validates
when a seeded hash of its row id (0, 1, ... in input order) falls below the
validation fraction (20 % by default), the other rows train, and the winner
is refitted on all rows. Its candidates are the median rule (the median
distance between 1000 hashed rows after standard scaling) times 0.5, 1, 2
and 4, and α = n · 10^(−9 … −1) in half decades (n = all rows).

``GridSearchCV(pipe, grid, cv=3)`` differs in every one of these: three
unshuffled folds of the rows in file order (sorted or grouped data make
folds that differ from each other), a grid of the user's choosing, and an
average over folds. With :func:`cli_split` and :func:`cli_param_grid` a
search makes the choice ``kapprox fit --map rff --features L --seed S``
makes::

    pipe = make_pipeline(StandardScaler(), RandomFourierFeatures(L, random_state=S), Ridge())
    search = GridSearchCV(pipe, cli_param_grid(X, random_state=S), cv=cli_split(len(X), random_state=S))

(the pipeline's scaler is fitted on the training part, the command line's
on all rows: the features differ in the last digits, which can only matter
between near-equal candidates).
"""

from __future__ import annotations

import json

import numpy as np

from . import _native
from ._params import apply_scaler, fit_scaler, seed_from

__all__ = ["CLI_SIGMA_FACTORS", "CLI_VALIDATION", "cli_alphas", "cli_param_grid", "cli_split"]

#: The multiples of the median rule that ``kapprox fit`` tries (its
#: ``--sigma auto*0.5,auto,auto*2,auto*4`` default).
CLI_SIGMA_FACTORS = (0.5, 1.0, 2.0, 4.0)

#: The hold-out fraction of ``kapprox fit`` (``--validation``).
CLI_VALIDATION = 0.2


def cli_split(n_rows, *, validation=CLI_VALIDATION, folds=None, random_state=0):
    """The split ``kapprox fit --seed random_state`` selects on, for
    ``GridSearchCV(cv=...)``: one hold-out split (``--validation``), or
    ``folds`` folds (``--folds``), by the seeded hash of the row index.

    Parameters
    ----------
    n_rows : int
        Rows of the data passed to the search, in the order of the file the
        command line reads.
    validation : float, default=0.2
        The held-out fraction, in (0, 1).
    folds : int, default=None
        k ≥ 2 folds instead of one hold-out split.
    random_state : int, default=0
        The command line's ``--seed``.

    Returns
    -------
    sklearn.model_selection.PredefinedSplit
    """
    from sklearn.model_selection import PredefinedSplit

    split = {"folds": int(folds)} if folds is not None else {"holdout": float(validation)}
    parts = np.asarray(_native.split_parts(json.dumps(split), seed_from(random_state), 0, int(n_rows)))
    # Hold-out part 1 validates and part 0 only trains (-1); fold j is held out in turn.
    test_fold = parts if folds is not None else np.where(parts == 1, 0, -1)
    return PredefinedSplit(test_fold)


def cli_alphas(n_rows) -> list:
    """The ridge penalties ``kapprox fit`` tries: ``n · 10^(−9 … −1)`` in
    half decades (17 values)."""
    return [float(n_rows) * 10.0 ** (-9.0 + 0.5 * i) for i in range(17)]


def cli_param_grid(X, *, map_step="randomfourierfeatures", ridge_step="ridge", random_state=0,
                   factors=CLI_SIGMA_FACTORS) -> dict:
    """The σ and α candidates of ``kapprox fit --seed random_state`` on the
    rows ``X``, as a ``GridSearchCV`` grid for a pipeline whose map step is
    ``map_step`` and whose ridge step is ``ridge_step`` (the names
    ``make_pipeline`` gives).

    σ: the median rule on the standard-scaled rows times ``factors``; α:
    :func:`cli_alphas` of ``len(X)``.
    """
    x = np.ascontiguousarray(X, dtype=np.float64)
    seed = seed_from(random_state)
    xs = np.ascontiguousarray(apply_scaler(fit_scaler("standard", x), x))
    median = _native.median_distance(xs, seed)
    return {
        f"{map_step}__sigma": [f * median for f in factors],
        f"{ridge_step}__alpha": cli_alphas(len(x)),
    }
