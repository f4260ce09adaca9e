"""Correlation-based feature selection (CFS, Hall 1999) with Weka's BestFirst / GreedyStepwise search.

Merit of a subset S of k features: k * mean|r_cf| / sqrt(k + k(k-1) mean|r_ff|), Pearson
correlations on standardized features (a constant feature correlates 0 with everything).
Weka's CfsSubsetEval weights each numeric feature by its standard deviation instead, so it
computes this merit only on standardized data: on z-scored input it selects the same subsets
as this module (checked in tests/test_selection.py against weka 3.6.14).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from qe.selection import SelectorRecord, register_selector
from qe.selection.base import PathSelector

SEARCHES = ("best_first", "greedy")
# Weka's BestFirst counts an expansion as improving only if the merit rises by more than this.
MIN_IMPROVEMENT = 1e-5


def cfs_correlations(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|r| of each feature with the label and |r| between features (diagonal 1; constants 0)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = X.shape[0]
    std = X.std(axis=0)
    constant = std == 0
    Z = np.zeros_like(X)
    Z[:, ~constant] = (X[:, ~constant] - X[:, ~constant].mean(axis=0)) / std[~constant]
    y_std = y.std()
    if y_std == 0:
        raise ValueError("the label is constant: no feature can correlate with it")
    zy = (y - y.mean()) / y_std
    r_cf = np.clip(np.abs(Z.T @ zy) / n, 0.0, 1.0)
    r_ff = np.clip(np.abs(Z.T @ Z) / n, 0.0, 1.0)
    np.fill_diagonal(r_ff, 1.0)
    return r_cf, r_ff


def hall_merit(r_cf: np.ndarray, r_ff: np.ndarray, subset: list[int] | tuple[int, ...]) -> float:
    """Hall's merit of ``subset`` from precomputed |r| values (0 for the empty subset)."""
    idx = np.asarray(sorted(subset), dtype=np.int64)
    k = idx.size
    if k == 0:
        return 0.0
    numerator = float(r_cf[idx].sum())
    block = r_ff[np.ix_(idx, idx)]
    denominator = k + float(block.sum() - np.trace(block))
    return numerator / np.sqrt(denominator)


def cfs_merit(X: Any, y: Any, subset: list[int]) -> float:
    """Hall's CFS merit of the columns ``subset`` of ``X`` for label ``y``."""
    r_cf, r_ff = cfs_correlations(np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return hall_merit(r_cf, r_ff, subset)


def _insert_bounded(
    open_list: list[tuple[float, frozenset]], node: tuple[float, frozenset], size: int
) -> None:
    """Weka's BestFirst open list: sorted by merit (ties keep arrival order), at most ``size`` nodes."""
    merit = node[0]
    position = next((i for i, (m, _) in enumerate(open_list) if merit > m), len(open_list))
    if position == len(open_list) and len(open_list) >= size:
        return
    open_list.insert(position, node)
    del open_list[size:]


class CFSSelector(PathSelector):
    """CFS subset selection: Weka's ``CfsSubsetEval`` with ``BestFirst -D 1 -N 5`` or ``GreedyStepwise``.

    ``search="best_first"``: forward from the empty set, always expanding the best open subset
    (the open list keeps at most ``max_stale`` subsets, as in Weka), stopping after
    ``max_stale`` consecutive expansions that do not raise the best merit by more than 1e-5.
    ``search="greedy"``: add the attribute that raises the merit most while it rises.
    ``locally_predictive`` (Weka's default) then adds, in order of |r_cf|, each remaining
    non-constant feature that correlates with the label more than with every selected feature.

    Fitted attributes: ``merit_`` (of the subset the search found), ``scores_`` (|r_cf|),
    ``n_evaluations_`` and ``path_``: one entry per improvement of the best subset
    (``feature`` = the attribute added, ``score`` = the new merit, ``subset`` = the new best
    subset), then one per locally predictive addition (``score`` = merit after adding it).
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **PathSelector._parameter_constraints,
        "search": [StrOptions(set(SEARCHES))],
        "max_stale": [Interval(Integral, 1, None, closed="left")],
        "locally_predictive": ["boolean"],
    }

    def __init__(
        self,
        search: str = "best_first",
        max_stale: int = 5,
        locally_predictive: bool = True,
        allow_empty: bool = False,
    ):
        self.search = search
        self.max_stale = max_stale
        self.locally_predictive = locally_predictive
        self.allow_empty = allow_empty

    def fit(self, X: Any, y: Any) -> CFSSelector:
        """Search the feature subsets of ``X`` for the one with the highest merit for ``y``."""
        self.check_params()
        X, y = self._check_input(X, y)
        r_cf, r_ff = cfs_correlations(X, y)
        self.scores_ = r_cf
        self._cache: dict[frozenset, float] = {}
        self.path_ = []
        if self.search == "best_first":
            best, merit = self._best_first(r_cf, r_ff)
        else:
            best, merit = self._greedy(r_cf, r_ff)
        self.merit_ = merit
        self.n_evaluations_ = len(self._cache)
        del self._cache
        selected = set(best)
        if self.locally_predictive:
            self._add_locally_predictive(selected, r_cf, r_ff, X.std(axis=0) > 0)
        self._set_support(sorted(selected), "no subset has a positive merit")
        return self

    def _merit(self, subset: frozenset, r_cf: np.ndarray, r_ff: np.ndarray) -> float:
        if subset not in self._cache:
            self._cache[subset] = hall_merit(r_cf, r_ff, tuple(subset))
        return self._cache[subset]

    def _record(self, feature: int, merit: float, subset: frozenset, **extra: Any) -> None:
        self.path_.append(
            {
                "step": len(self.path_) + 1,
                "feature": self._label(feature),
                "score": float(merit),
                "subset": [self._label(i) for i in sorted(subset)],
                **extra,
            }
        )

    def _best_first(self, r_cf: np.ndarray, r_ff: np.ndarray) -> tuple[frozenset, float]:
        n_features = r_cf.size
        best: frozenset = frozenset()
        best_merit = self._merit(best, r_cf, r_ff)
        open_list: list[tuple[float, frozenset]] = [(best_merit, best)]
        stale = 0
        while stale < self.max_stale and open_list:
            _, head = open_list.pop(0)
            improved = False
            for feature in range(n_features):
                if feature in head:
                    continue
                child = head | {feature}
                merit = self._merit(child, r_cf, r_ff)
                _insert_bounded(open_list, (merit, child), self.max_stale)
                if merit - best_merit > MIN_IMPROVEMENT:
                    improved = True
                    stale = 0
                    best, best_merit = child, merit
                    self._record(feature, merit, child)
            if not improved:
                stale += 1
        return best, best_merit

    def _greedy(self, r_cf: np.ndarray, r_ff: np.ndarray) -> tuple[frozenset, float]:
        current: frozenset = frozenset()
        current_merit = self._merit(current, r_cf, r_ff)
        while len(current) < r_cf.size:
            step_best, step_feature = current_merit, -1
            for feature in range(r_cf.size):
                if feature in current:
                    continue
                merit = self._merit(current | {feature}, r_cf, r_ff)
                if merit > step_best:
                    step_best, step_feature = merit, feature
            if step_feature < 0:
                break
            current = current | {step_feature}
            current_merit = step_best
            self._record(step_feature, step_best, current)
        return current, current_merit

    def _add_locally_predictive(
        self, selected: set[int], r_cf: np.ndarray, r_ff: np.ndarray, varies: np.ndarray
    ) -> None:
        """Weka's addLocallyPredictive: visit features by |r_cf|, keep those not better explained."""
        for feature in np.argsort(-r_cf, kind="stable"):
            feature = int(feature)
            if feature in selected or not varies[feature]:
                continue
            if all(r_ff[other, feature] <= r_cf[feature] for other in selected):
                selected.add(feature)
                merit = hall_merit(r_cf, r_ff, tuple(selected))
                self._record(feature, merit, frozenset(selected), locally_predictive=True)


register_selector(SelectorRecord("cfs", CFSSelector, path_score="CFS merit"))
