"""Univariate ranking of features by |Pearson| or |Spearman| correlation with the label.

Also holds :class:`PathSelector`, the small base the other selectors share: input checks,
feature labels (names when fitted on a DataFrame) and the empty-selection rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from qe.errors import QEInputError

METHODS = ("pearson", "spearman")


class PathSelector(SelectorMixin, BaseEstimator):
    """Base of the qe selectors: a boolean ``support_`` mask plus the selection ``path_``.

    ``path_`` is a list of ``{"step", "feature", "score"}`` dicts in the order the search took
    its steps; ``feature`` is the column name when fitted on a DataFrame, else the column index.
    """

    allow_empty: bool

    def _check_input(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        try:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        except ValueError as exc:
            raise QEInputError(f"bad input for {type(self).__name__}: {exc}") from None
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1:
            raise QEInputError(f"{type(self).__name__} needs one label per row (got shape {y.shape})")
        if X.shape[0] < 3:
            raise QEInputError(f"{type(self).__name__} needs at least 3 rows (got {X.shape[0]})")
        return X, y

    def _label(self, index: int) -> str | int:
        """How a column is named in ``path_``: its DataFrame name, else its index."""
        names = getattr(self, "feature_names_in_", None)
        return str(names[index]) if names is not None else int(index)

    def _set_support(self, selected: list[int] | np.ndarray, what: str) -> None:
        """Store the selected columns; refuse an empty selection unless ``allow_empty``."""
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[np.asarray(list(selected), dtype=np.int64)] = True
        if not mask.any() and not self.allow_empty:
            raise QEInputError(
                f"selection would select nothing: {what} (set allow_empty=True to accept an empty selection)"
            )
        self.support_ = mask

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "support_")
        return self.support_

    def selected_features(self) -> list[str | int]:
        """The selected columns in path order (names when fitted on a DataFrame)."""
        check_is_fitted(self, "support_")
        chosen = [self._label(i) for i in np.flatnonzero(self.support_)]
        seen = [step["feature"] for step in self.path_ if step["feature"] in chosen]
        ordered = list(dict.fromkeys(seen))
        return ordered + [f for f in chosen if f not in ordered]


def correlations(X: np.ndarray, y: np.ndarray, method: str = "pearson") -> np.ndarray:
    """Signed correlation of each column of ``X`` with ``y``; 0 for constant columns.

    Spearman is Pearson on average ranks (ties share their mean rank), as scipy computes it.
    """
    if method not in METHODS:
        raise QEInputError(f"unknown correlation method {method!r} (known: {', '.join(METHODS)})")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if method == "spearman":
        X = stats.rankdata(X, axis=0)
        y = stats.rankdata(y)
    xc = X - X.mean(axis=0)
    yc = y - y.mean()
    x_norm = np.sqrt(np.sum(xc * xc, axis=0))
    y_norm = np.sqrt(np.sum(yc * yc))
    if y_norm == 0:
        raise QEInputError("the label is constant: no feature can correlate with it")
    out = np.zeros(X.shape[1])
    ok = x_norm > 0
    out[ok] = (xc[:, ok].T @ yc) / (x_norm[ok] * y_norm)
    return np.clip(out, -1.0, 1.0)


class CorrelationSelector(PathSelector):
    """Keep the features most correlated (in absolute value) with the label.

    Features are ranked by |r| (ties: lower column index first); the top ``k`` are kept (all when
    ``k`` is None), dropping any whose |r| is not above ``threshold``. Constant features have
    r = 0 and so are never kept with the default threshold 0.

    Fitted attributes: ``correlations_`` (signed r), ``scores_`` (|r|), ``ranking_`` (column
    indices best first), ``path_`` (kept features in rank order with their |r|).
    """

    def __init__(
        self,
        method: str = "pearson",
        k: int | None = None,
        threshold: float = 0.0,
        allow_empty: bool = False,
    ):
        self.method = method
        self.k = k
        self.threshold = threshold
        self.allow_empty = allow_empty

    def fit(self, X: Any, y: Any) -> CorrelationSelector:
        """Rank the columns of ``X`` by their absolute correlation with ``y``."""
        if self.k is not None and (not isinstance(self.k, int | np.integer) or self.k < 0):
            raise QEInputError(f"k must be a non-negative integer or None (got {self.k!r})")
        X, y = self._check_input(X, y)
        self.correlations_ = correlations(X, y, self.method)
        self.scores_ = np.abs(self.correlations_)
        self.ranking_ = np.argsort(-self.scores_, kind="stable")
        top = self.ranking_ if self.k is None else self.ranking_[: self.k]
        kept = [int(i) for i in top if self.scores_[i] > self.threshold]
        self.path_ = [
            {"step": n, "feature": self._label(i), "score": float(self.scores_[i])}
            for n, i in enumerate(kept, start=1)
        ]
        self._set_support(
            kept, f"no feature has |{self.method} r| above {self.threshold:g} among the top {self.k}"
        )
        return self
