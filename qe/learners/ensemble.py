"""Combinations of diverse learners: weighted averaging (score or rank) and cross-fitted stacking.

Members are estimators built from learner specs ``{name, params, grid, scale}`` (the keys of
``[learner]``) by :func:`qe.learners.factory.build_members`, so any registered learner, tuned or
not, can take part. A 2-D target (label + aux targets, see :mod:`qe.learners.aux`) is handed whole to
members that accept it (``AuxTargetStack``) and as its first column to the others.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import nnls
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import KFold
from sklearn.utils import Tags, get_tags
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from qe.learners import progress
from qe.predictors.rank_vote import rank_average


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


def allows_nan(estimators: list[BaseEstimator]) -> bool:
    """Whether every one of ``estimators`` takes missing values (so a combination of them may)."""
    return all(get_tags(estimator).input_tags.allow_nan for estimator in estimators)


def check_fit_input(
    estimator: BaseEstimator, X: Any, y: Any, allow_nan: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``X`` and a target of labels (1-D) or labels plus aux targets (2-D), checked as scikit-learn
    checks them (``n_features_in_`` recorded); a one-column 2-D target is the labels alone, with
    scikit-learn's ``DataConversionWarning``."""
    finite = "allow-nan" if allow_nan else True
    X, y = validate_data(
        estimator, X, y, dtype=np.float64, ensure_all_finite=finite, multi_output=True, y_numeric=True
    )
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)
    return X, np.asarray(y, dtype=np.float64)


def check_predict_input(estimator: BaseEstimator, X: Any, allow_nan: bool) -> np.ndarray:
    """New rows checked against what ``estimator`` was fitted on."""
    finite = "allow-nan" if allow_nan else True
    return validate_data(estimator, X, dtype=np.float64, ensure_all_finite=finite, reset=False)


class MembersMixin:
    """Tags of a learner made of others (``_members()``): it takes missing values when they all do."""

    def _members(self) -> list[BaseEstimator]:
        return self.estimators

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = allows_nan(self._members())
        return tags


def fit_member(estimator: BaseEstimator, X: np.ndarray, y: np.ndarray) -> BaseEstimator:
    """Fit a clone of ``estimator`` on the whole target if it accepts aux targets, else on the label."""
    target = y if (y.ndim == 2 and accepts_aux(estimator)) else (y[:, 0] if y.ndim == 2 else y)
    return clone(estimator).fit(X, target)


class AveragingRegressor(MembersMixin, RegressorMixin, BaseEstimator):
    """Weighted mean of several regressors' predictions (``combine="mean"``) or of their ranks
    mapped back onto the mean scores (``combine="rank"``, see
    :func:`qe.predictors.rank_vote.rank_average`)."""

    accepts_aux_targets = True
    _parameter_constraints: ClassVar[dict[str, list]] = {
        "estimators": [list],
        "weights": ["array-like", None],
        "combine": [StrOptions({"mean", "rank"})],
    }

    def __init__(
        self, estimators: list[BaseEstimator], weights: list[float] | None = None, combine: str = "mean"
    ) -> None:
        self.estimators = estimators
        self.weights = weights
        self.combine = combine

    def _weights(self) -> np.ndarray:
        n = len(self.estimators)
        w = np.ones(n) if self.weights is None else np.asarray(self.weights, dtype=np.float64)
        if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"weights must be {n} non-negative numbers, not all zero")
        return w / w.sum()

    def fit(self, X: Any, y: Any) -> AveragingRegressor:
        """Fit every member on all rows."""
        self._validate_params()
        X, y = check_fit_input(self, X, y, allows_nan(self._members()))
        self.weights_ = self._weights()
        self.estimators_ = [fit_member(est, X, y) for est in self.estimators]
        return self

    def member_predictions(self, X: Any) -> np.ndarray:
        """``(n, members)`` predictions of the fitted members."""
        check_is_fitted(self, "estimators_")
        X = check_predict_input(self, X, allows_nan(self._members()))
        return np.column_stack([est.predict(X) for est in self.estimators_])

    def predict(self, X: Any) -> np.ndarray:
        """The combined prediction."""
        predictions = self.member_predictions(X)
        if self.combine == "rank":
            return rank_average(predictions, self.weights_)
        return predictions @ self.weights_


class StackedRegressor(MembersMixin, RegressorMixin, BaseEstimator):
    """Members' out-of-fold predictions combined by non-negative least squares (plus an intercept).

    The combination weights are learnt on ``cv`` shuffled folds of the training rows, so a member
    that merely memorises the training data gets no credit; the members are then refitted on all
    rows. Non-negative weights keep the blend an interpretable, hard-to-overfit convex-like mix.
    """

    accepts_aux_targets = True
    _parameter_constraints: ClassVar[dict[str, list]] = {
        "estimators": [list],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimators: list[BaseEstimator], cv: int = 5, random_state: int | None = 0) -> None:
        self.estimators = estimators
        self.cv = cv
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> StackedRegressor:
        """Cross-fit the members, learn the blend, refit the members on all rows."""
        self._validate_params()
        X, y = check_fit_input(self, X, y, allows_nan(self._members()))
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
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The blend of the refitted members' predictions."""
        check_is_fitted(self, "estimators_")
        X = check_predict_input(self, X, allows_nan(self._members()))
        predictions = np.column_stack([est.predict(X) for est in self.estimators_])
        return predictions @ self.coef_ + self.intercept_
