"""Combinations of diverse learners: weighted averaging (score or rank) and cross-fitted stacking.

Members are estimators built from learner specs ``{name, params, grid, scale}`` (the keys of
``[learner]``) by :func:`qe.learners.factory.build_members`, so any registered learner, tuned or
not, can take part. A 2-D target (label + aux targets, see :mod:`qe.learners.aux`) is handed whole to
members that accept it (``AuxTargetStack``) and as its first column to the others.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats
from scipy.optimize import nnls
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import KFold
from sklearn.utils.validation import check_is_fitted

from qe.learners import progress


def accepts_aux(estimator: BaseEstimator) -> bool:
    """Whether ``estimator`` (possibly inside a Pipeline or a GridSearchCV) takes a 2-D label+aux target."""
    inner = estimator
    while True:
        if getattr(inner, "accepts_aux_targets", False):
            return True
        if hasattr(inner, "steps"):
            inner = inner.steps[-1][1]
        elif hasattr(inner, "estimator") and isinstance(inner.estimator, BaseEstimator):
            inner = inner.estimator
        else:
            return False


def fit_member(estimator: BaseEstimator, X: np.ndarray, y: np.ndarray) -> BaseEstimator:
    """Fit a clone of ``estimator`` on the whole target if it accepts aux targets, else on the label."""
    target = y if (y.ndim == 2 and accepts_aux(estimator)) else (y[:, 0] if y.ndim == 2 else y)
    return clone(estimator).fit(X, target)


def rank_average(predictions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Order the rows by the weighted mean of each member's (average) ranks, keeping the score scale.

    The values handed out are the sorted weighted-mean scores, so the predictions keep the
    calibration (and MAE behaviour) of plain averaging while their order follows the rank vote.
    """
    ranks = np.column_stack([stats.rankdata(column) for column in predictions.T])
    vote = ranks @ weights
    scores = np.sort(predictions @ weights)
    out = np.empty_like(vote)
    out[np.argsort(vote, kind="stable")] = scores
    return out


class AveragingRegressor(RegressorMixin, BaseEstimator):
    """Weighted mean of several regressors' predictions (``combine="mean"``) or of their ranks
    mapped back onto the mean scores (``combine="rank"``, see :func:`rank_average`)."""

    accepts_aux_targets = True

    def __init__(
        self, estimators: list[BaseEstimator], weights: list[float] | None = None, combine: str = "mean"
    ) -> None:
        self.estimators = estimators
        self.weights = weights
        self.combine = combine

    def _weights(self) -> np.ndarray:
        n = len(self.estimators)
        w = np.ones(n) if self.weights is None else np.asarray(self.weights, dtype=np.float64)
        if w.shape != (n,) or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"weights must be {n} non-negative numbers, not all zero")
        return w / w.sum()

    def fit(self, X: Any, y: Any) -> AveragingRegressor:
        """Fit every member on all rows."""
        if self.combine not in ("mean", "rank"):
            raise ValueError(f"combine must be 'mean' or 'rank', not {self.combine!r}")
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        self.weights_ = self._weights()
        self.estimators_ = [fit_member(est, X, y) for est in self.estimators]
        self.n_features_in_ = X.shape[1]
        return self

    def member_predictions(self, X: Any) -> np.ndarray:
        """``(n, members)`` predictions of the fitted members."""
        check_is_fitted(self, "estimators_")
        X = np.asarray(X, dtype=np.float64)
        return np.column_stack([est.predict(X) for est in self.estimators_])

    def predict(self, X: Any) -> np.ndarray:
        """The combined prediction."""
        predictions = self.member_predictions(X)
        if self.combine == "rank":
            return rank_average(predictions, self.weights_)
        return predictions @ self.weights_


class StackedRegressor(RegressorMixin, BaseEstimator):
    """Members' out-of-fold predictions combined by non-negative least squares (plus an intercept).

    The combination weights are learnt on ``cv`` shuffled folds of the training rows, so a member
    that merely memorises the training data gets no credit; the members are then refitted on all
    rows. Non-negative weights keep the blend an interpretable, hard-to-overfit convex-like mix.
    """

    accepts_aux_targets = True

    def __init__(self, estimators: list[BaseEstimator], cv: int = 5, random_state: int | None = 0) -> None:
        self.estimators = estimators
        self.cv = cv
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> StackedRegressor:
        """Cross-fit the members, learn the blend, refit the members on all rows."""
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        label = y[:, 0] if y.ndim == 2 else y
        oof = np.zeros((X.shape[0], len(self.estimators)))
        folds = KFold(self.cv, shuffle=True, random_state=self.random_state).split(X)
        counter = progress.Progress(f"stack ({len(self.estimators)} members)", self.cv, "folds")
        for done, (train_idx, held_idx) in enumerate(folds, start=1):
            for j, est in enumerate(self.estimators):
                oof[held_idx, j] = fit_member(est, X[train_idx], y[train_idx]).predict(X[held_idx])
            counter.step(done)
        center = oof.mean(axis=0)
        coef, _ = nnls(oof - center, label - label.mean())
        self.coef_ = coef
        self.intercept_ = float(label.mean() - center @ coef)
        self.estimators_ = [fit_member(est, X, y) for est in self.estimators]
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The blend of the refitted members' predictions."""
        check_is_fitted(self, "estimators_")
        X = np.asarray(X, dtype=np.float64)
        predictions = np.column_stack([est.predict(X) for est in self.estimators_])
        return predictions @ self.coef_ + self.intercept_
