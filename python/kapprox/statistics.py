"""Partial statistics: the sufficient statistics of a kapprox fit over a
subset of rows, which merge into the statistics of the union and solve
into the fitted estimator.

A :class:`PartialStatistics` holds, per bandwidth candidate and part of the
validation split, the augmented Gram ``[z, 1, y]ᵀ[z, 1, y]`` of its rows
(``(l + 1 + k)²`` doubles, whatever the number of rows), plus the row-id
ranges it covers. Rows are identified by their global index
(``row_offset`` + position), which decides their validation part, so
statistics computed on any processes merge into the statistics of one
pass:

- ``a + b`` or :func:`merge` ``([a, b, c])`` (left to right) refuse
  statistics of different estimators or setups and overlapping rows;
- for the same partition into parts, merging in the same order gives
  bitwise the same statistics and model; another grouping agrees to
  rounding (about 1e-13 relative);
- they pickle (the Grams exactly), so they travel between processes
  (Dask, Ray, multiprocessing).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["PartialStatistics", "merge"]


class PartialStatistics:
    """Mergeable ridge statistics of a :class:`~kapprox.KapproxRegressor` or
    :class:`~kapprox.KapproxClassifier` over some rows.

    Made by ``estimator.partial_statistics(X, y, row_offset=...)`` (or kept by
    ``partial_fit`` as ``statistics_``); not constructed directly.
    """

    def __init__(self, estimator, setup, native):
        self._estimator_class = type(estimator)
        self._params = estimator.get_params(deep=False)
        self._setup = setup
        self._native = native

    @property
    def n_rows(self) -> int:
        """Rows accumulated."""
        return self._native.n_rows

    @property
    def row_ranges(self) -> list[tuple[int, int]]:
        """The global row ranges ``[start, end)`` covered, sorted and coalesced."""
        return self._native.row_ranges

    @property
    def next_row(self) -> int:
        """The first row id after every range covered."""
        return self._native.next_row

    @property
    def statistics_bytes(self) -> int:
        """Bytes of the Grams held (independent of the number of rows)."""
        return self._native.statistics_bytes

    def update(self, X, y, *, row_offset=None) -> None:
        """Adds rows (as global rows ``row_offset .. row_offset + len(X)``;
        default: right after the last range covered), in place."""
        est = self._estimator_class(**self._params)
        x, codes = est._prepare_rows(X, y, self._setup)
        start = self.next_row if row_offset is None else int(row_offset)
        self._native.update(x, codes, start)

    def _check_compatible(self, other):
        if not isinstance(other, PartialStatistics):
            raise TypeError(f"cannot merge PartialStatistics with {type(other).__name__}")
        if self._estimator_class is not other._estimator_class:
            raise ValueError(
                f"cannot merge statistics of {self._estimator_class.__name__} and {other._estimator_class.__name__}"
            )
        for name, value in self._params.items():
            # The seed drawn from random_state is part of the setup, compared below.
            if name != "random_state" and not _same(value, other._params.get(name)):
                raise ValueError(
                    f"cannot merge statistics of estimators whose {name} differs: {value!r} vs "
                    f"{other._params.get(name)!r}"
                )
        if not self._setup.same_as(other._setup):
            raise ValueError(
                "cannot merge statistics with different scaling, bandwidths or classes: compute every part "
                "with the same fitted estimator (or a setup that does not depend on the data)"
            )

    def __add__(self, other: PartialStatistics) -> PartialStatistics:
        """The statistics of both row sets (``self`` first)."""
        self._check_compatible(other)
        out = PartialStatistics.__new__(PartialStatistics)
        out._estimator_class = self._estimator_class
        out._params = dict(self._params)
        out._setup = self._setup
        out._native = self._native.merged(other._native)
        return out

    def solve(self):
        """Selects σ and α from the statistics and solves ridge on all rows.

        Returns
        -------
        estimator : KapproxRegressor or KapproxClassifier
            A fitted estimator with the parameters the statistics were
            computed with (the same model as ``fit`` on the same rows).
        """
        est = self._estimator_class(**self._params)
        est._set_solution(self._setup, self._native)
        return est

    def __repr__(self) -> str:
        return (
            f"PartialStatistics({self._estimator_class.__name__}, rows={self.n_rows}, "
            f"ranges={self.row_ranges}, candidates={len(self._setup.sigmas)})"
        )


def merge(statistics: Iterable[PartialStatistics]) -> PartialStatistics:
    """Merges statistics left to right: ``((s0 + s1) + s2) + ...``.

    Merging the same parts in the same order gives bitwise the same result.
    """
    items = list(statistics)
    if not items:
        raise ValueError("merge needs at least one PartialStatistics")
    total = items[0]
    for s in items[1:]:
        total = total + s
    return total


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple, np.ndarray)) or isinstance(b, (list, tuple, np.ndarray)):
        try:
            return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
        except Exception:
            return False
    try:
        return bool(a == b)
    except Exception:
        return a is b
