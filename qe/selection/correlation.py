"""Univariate ranking of features by |Pearson| or |Spearman| correlation with the label."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy import stats
from sklearn.utils._param_validation import Interval, StrOptions

from qe.selection import SelectorRecord, register_selector
from qe.selection.base import PathSelector

METHODS = ("pearson", "spearman")


def correlations(X: np.ndarray, y: np.ndarray, method: str = "pearson") -> np.ndarray:
    """Signed correlation of each column of ``X`` with ``y``; 0 for constant columns.

    Spearman is Pearson on average ranks (ties share their mean rank), as scipy computes it.
    """
    if method not in METHODS:
        raise ValueError(f"unknown correlation method {method!r} (known: {', '.join(METHODS)})")
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
        raise ValueError("the label is constant: no feature can correlate with it")
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

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **PathSelector._parameter_constraints,
        "method": [StrOptions(set(METHODS))],
        "k": [Interval(Integral, 0, None, closed="left"), None],
        "threshold": [Interval(Real, None, None, closed="neither")],
    }

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
        self.check_params()
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


register_selector(
    SelectorRecord("correlation", CorrelationSelector, path_score="|{method} r| with the label")
)
