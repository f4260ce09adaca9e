"""Greedy forward selection / backward elimination with a learner in the loop.

Every step scores each candidate subset by K-fold cross-validation on the training data only
(MAE, DeltaAvg, ...), one joblib task per candidate, so the work spreads over local processes or
a Dask cluster (see :mod:`qe.infra.parallel`).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone
from sklearn.dummy import DummyRegressor
from sklearn.metrics import get_scorer
from sklearn.model_selection import KFold
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions

from qe.evaluation.metrics import METRICS
from qe.infra.errors import QEInputError
from qe.learners.factory import SCORINGS, make_learner
from qe.selection import SelectorRecord, register_selector
from qe.selection.base import PathSelector

DIRECTIONS = ("forward", "backward")


def cv_score(
    estimator: BaseEstimator,
    X: np.ndarray,
    y: np.ndarray,
    columns: list[int] | tuple[int, ...],
    folds: list[tuple[np.ndarray, np.ndarray]],
    scorer: Any,
) -> float:
    """Mean scorer value (greater is better) of ``estimator`` on ``columns`` over the given folds.

    An empty ``columns`` scores the constant training-mean predictor (the no-feature baseline).
    """
    columns = list(columns)
    model_template = estimator if columns else DummyRegressor(strategy="mean")
    values = []
    for train, test in folds:
        X_train = X[np.ix_(train, columns)] if columns else np.zeros((train.size, 1))
        X_test = X[np.ix_(test, columns)] if columns else np.zeros((test.size, 1))
        model = clone(model_template).fit(X_train, y[train])
        values.append(float(scorer(model, X_test, y[test])))
    return float(np.mean(values))


class SequentialSelector(PathSelector):
    """Greedy forward selection (``direction="forward"``) or backward elimination with CV scoring.

    Forward: start from no features; at each step add the candidate whose cross-validated score
    is best (ties: lowest column index) if it beats the current score by more than ``tol``;
    stop at ``max_features``. Backward: start from all features; at each step drop the feature
    whose removal leaves the best score, as long as the removal costs no more than ``tol``
    (while more than ``max_features`` remain, removals are forced). The no-feature subset scores
    the training-mean predictor; ending with it raises ``ValueError`` unless ``allow_empty``.

    ``estimator``: a scikit-learn regressor, a learner name for :func:`qe.learners.factory.make_learner`
    (with ``estimator_params``), or None for the default SVR pipeline (standardization + RBF SVR).
    ``scoring``: a name in ``qe.learners.factory.SCORINGS`` (MAE, RMSE, DeltaAvg, Spearman).
    Folds: ``cv`` shuffled KFold splits drawn once with ``random_state``.

    Fitted attributes: ``path_`` (step 0 = starting subset, then one entry per added / removed
    feature; ``score`` is the CV metric in its own units, e.g. MAE, after the step),
    ``score_`` (final CV metric), ``baseline_score_`` (no-feature CV metric), ``n_evaluations_``.
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **PathSelector._parameter_constraints,
        "estimator": [HasMethods(["fit", "predict"]), str, None],
        "direction": [StrOptions(set(DIRECTIONS))],
        "scoring": [StrOptions(set(SCORINGS))],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "tol": [Interval(Real, None, None, closed="neither")],
        "max_features": [Interval(Integral, 1, None, closed="left"), None],
        "n_jobs": [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1}), None],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "estimator_params": [dict, None],
    }

    def __init__(
        self,
        estimator: BaseEstimator | str | None = None,
        direction: str = "forward",
        scoring: str = "MAE",
        cv: int = 5,
        tol: float = 0.0,
        max_features: int | None = None,
        n_jobs: int | None = None,
        random_state: int = 42,
        allow_empty: bool = False,
        estimator_params: dict[str, Any] | None = None,
    ):
        self.estimator = estimator
        self.direction = direction
        self.scoring = scoring
        self.cv = cv
        self.tol = tol
        self.max_features = max_features
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.allow_empty = allow_empty
        self.estimator_params = estimator_params

    # ------------------------------------------------------------------ set-up

    def check_params(self) -> None:
        """The constraints, and a learner name and its parameters that :func:`make_learner` takes."""
        super().check_params()
        self._make_estimator()

    def _make_estimator(self) -> BaseEstimator:
        if self.estimator is None or isinstance(self.estimator, str):
            try:
                return make_learner(self.estimator or "svr", self.estimator_params)
            except QEInputError as exc:
                raise ValueError(f"estimator: {exc.message.removeprefix('learner.name: ')}") from None
        if self.estimator_params:
            raise ValueError("estimator_params only apply when estimator is a learner name")
        return self.estimator

    def _metric(self, score: float) -> float:
        """A greater-is-better scorer value in the metric's own units (MAE positive)."""
        return float(score if METRICS[self.scoring].higher_is_better else -score)

    # ------------------------------------------------------------------ search

    def fit(self, X: Any, y: Any) -> SequentialSelector:
        """Run the greedy search over the columns of ``X`` for label ``y``."""
        self._validate_params()
        X, y = self._check_input(X, y)
        if X.shape[0] < 2 * self.cv:
            raise ValueError(f"{X.shape[0]} rows are too few for {self.cv}-fold cross-validation")
        estimator = self._make_estimator()
        scorer = get_scorer(METRICS[self.scoring].sklearn_scorer())
        folds = list(KFold(self.cv, shuffle=True, random_state=self.random_state).split(X))
        self.n_evaluations_ = 0

        def evaluate(subsets: list[list[int]]) -> list[float]:
            self.n_evaluations_ += len(subsets)
            return Parallel(n_jobs=self.n_jobs)(
                delayed(cv_score)(estimator, X, y, subset, folds, scorer) for subset in subsets
            )

        baseline = cv_score(estimator, X, y, [], folds, scorer)
        self.baseline_score_ = self._metric(baseline)
        if self.direction == "forward":
            selected, score = self._forward(X.shape[1], baseline, evaluate)
        else:
            selected, score = self._backward(X.shape[1], evaluate)
        self.score_ = self._metric(score)
        self._set_support(
            selected,
            f"no feature improves the cross-validated {self.scoring} of the constant "
            f"(training-mean) predictor ({self.baseline_score_:.4f}) by more than tol={self.tol:g}",
        )
        return self

    def _step(self, feature: int | None, score: float, n_selected: int) -> dict[str, Any]:
        return {
            "step": len(self.path_),
            "feature": None if feature is None else self._label(feature),
            "score": self._metric(score),
            "n_features": n_selected,
        }

    def _forward(self, n_features: int, baseline: float, evaluate: Any) -> tuple[list[int], float]:
        selected: list[int] = []
        current = baseline
        self.path_ = []
        self.path_.append(self._step(None, current, 0))
        limit = n_features if self.max_features is None else min(self.max_features, n_features)
        while len(selected) < limit:
            remaining = [f for f in range(n_features) if f not in selected]
            scores = evaluate([[*selected, f] for f in remaining])
            best = int(np.argmax(scores))  # first maximum: lowest column index wins ties
            if scores[best] - current <= self.tol:
                break
            selected.append(remaining[best])
            current = scores[best]
            self.path_.append(self._step(remaining[best], current, len(selected)))
        return selected, current

    def _backward(self, n_features: int, evaluate: Any) -> tuple[list[int], float]:
        selected = list(range(n_features))
        current = evaluate([selected])[0]
        self.path_ = []
        self.path_.append(self._step(None, current, len(selected)))
        while selected:
            scores = evaluate([[f for f in selected if f != drop] for drop in selected])
            best = int(np.argmax(scores))  # first maximum: drop the lowest column index on ties
            forced = self.max_features is not None and len(selected) > self.max_features
            if not forced and scores[best] - current < -self.tol:
                break
            dropped = selected.pop(best)
            current = scores[best]
            self.path_.append(self._step(dropped, current, len(selected)))
        return selected, current


FROM_RUN = ("random_state", "cv", "n_jobs")
"""What both searches take from the run when the config leaves it unset: its seed, CV folds and jobs."""
CV_SCORE = "CV {scoring}"  # a path step's score: the subset's cross-validated score
register_selector(
    SelectorRecord(
        "forward", SequentialSelector, fixed={"direction": "forward"}, from_run=FROM_RUN, path_score=CV_SCORE
    )
)
register_selector(
    SelectorRecord(
        "backward",
        SequentialSelector,
        fixed={"direction": "backward"},
        from_run=FROM_RUN,
        path_score=CV_SCORE,
    )
)
