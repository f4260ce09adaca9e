"""The evaluate stage: a fitted system's CV, dev and test metrics (``qe.evaluation.metrics.evaluate``) and
what its grid search chose, as ``metrics.json`` records them."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV

from qe.evaluation.metrics import evaluate
from qe.infra.errors import QEInputError
from qe.learners.factory import AUTO, auto_choice
from qe.learners.progress import reporting
from qe.run.context import RunContext
from qe.run.extraction import SplitData
from qe.run.fit import FittedSystem, fit


def system_metrics(
    ctx: RunContext, fitted: FittedSystem, train: SplitData, test: SplitData
) -> dict[str, Any]:
    """CV metrics on train (with the grid's choice), dev metrics, and test metrics when test has labels."""
    learner = ctx.config.learner
    n_rows, n_features = train.features.shape
    metrics: dict[str, Any] = {"cv": evaluate(train.dataset.labels, fitted.cv_pred)}
    metrics["cv"]["folds"] = ctx.config.cv.folds
    if learner.name == AUTO:
        chose = auto_choice(n_rows, learner.fast_above)
        metrics["learner"] = {"name": AUTO, "chosen": chose, "training_rows": n_rows}
    estimator = fitted.estimator
    if isinstance(estimator, GridSearchCV):
        best = {k.removeprefix("model__"): v for k, v in estimator.best_params_.items()}
        metrics["cv"]["grid_best_params"] = best
        metrics["cv"]["grid_best_score"] = float(estimator.best_score_)
        metrics["cv"]["grid_chosen_on"] = "dev" if fitted.dev is not None else "cv"
        if getattr(estimator, "units", None):  # a default grid, resolved from the training data
            metrics["cv"]["grid_scaled_to"] = {"label_sd": estimator.label_sd_, "n_features": n_features}
    if fitted.dev is not None:
        metrics["dev"] = evaluate(fitted.dev.dataset.labels, fitted.dev_pred)
    if fitted.fit_on is not None:
        metrics["fit_on"] = fitted.fit_on
    if test.dataset.labels is not None:
        metrics["test"] = evaluate(test.dataset.labels, fitted.test_pred)
        if test.dataset.pairs is not None:  # pooled datasets: each one's test scored on its own too
            pairs = np.asarray(test.dataset.pairs)
            metrics["test_by_dataset"] = {
                name: evaluate(test.dataset.labels[pairs == name], fitted.test_pred[pairs == name])
                for name in dict.fromkeys(test.dataset.pairs)
            }
    return metrics


def fit_and_evaluate(
    ctx: RunContext, train: SplitData, test: SplitData, dev: SplitData | None = None
) -> FittedSystem:
    """:func:`qe.run.fit.fit`, then :func:`system_metrics` into ``fitted.metrics``. With
    ``ctx.progress``, lines on stderr during the grid search and the CV predictions
    (:mod:`qe.learners.progress`)."""
    config = ctx.config
    with reporting(ctx.progress):
        try:
            fitted = fit(ctx, train, test, dev)
            fitted.metrics = system_metrics(ctx, fitted, train, test)
        except (ValueError, TypeError, ArithmeticError) as exc:
            # parameters the config check cannot judge alone (scikit-learn checks them against the
            # data: cv larger than a fold, kernel = "precomputed", weights of the wrong length ...)
            reason = " ".join(str(exc).split())[:300]
            raise QEInputError(
                f"[learner] cannot be fitted with these parameters: {type(exc).__name__}: {reason}",
                config.config_file,
            ) from None
    for what, values in (("CV", fitted.cv_pred), ("test", fitted.test_pred)):
        if not np.isfinite(values).all():
            raise QEInputError(
                f"[learner] predicted NaN or infinite {what} scores with these parameters "
                "(e.g. an empty alphas list)",
                config.config_file,
            )
    return fitted
