"""The fit stage: the configured learner on the training features, hyperparameters chosen by CV on train
(or on the dev split), cross-validated training predictions, then dev and test predictions."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_predict

from qe.config.experiment import ExperimentConfig
from qe.config.learner import LearnerConfig
from qe.config.rules import mistake
from qe.data import QEDataset
from qe.data.splits import label_range, repeated_pairs
from qe.evaluation.metrics import METRICS
from qe.infra.errors import QEInputError
from qe.infra.expected import shown_duration
from qe.learners.progress import say
from qe.run.context import RunContext
from qe.run.extraction import SplitData

MIN_SCORED = 4  # DeltaAvg needs at least 4 sentences
RANK_SCORINGS = tuple(name for name, metric in METRICS.items() if metric.ranking and metric.scorer)
"""Scorings that rank a fold's predictions: a fold of fewer than MIN_SCORED rows scores NaN."""


def check_folds(config: ExperimentConfig, n_rows: int) -> None:
    """Refuse more cross-validation folds than training rows (a config error, named with its file)."""
    folds = config.cv.folds
    if folds > n_rows:
        allowed = f"an integer from 2 to {n_rows} (the number of training rows)"
        raise QEInputError(mistake("cv.folds", folds, allowed), config.config_file)
    scoring = config.learner.scoring
    if config.learner.grid and scoring in RANK_SCORINGS and n_rows // folds < MIN_SCORED:
        allowed = (
            f"at most {n_rows // MIN_SCORED} folds, or another scoring: folds of {n_rows // folds} rows "
            f"cannot be scored by {scoring} (it needs {MIN_SCORED})"
        )
        raise QEInputError(mistake("cv.folds", folds, allowed), config.config_file)


@dataclass
class FittedSystem:
    """A learner fitted on training features: its predictions (CV on train, dev, test) and, once
    evaluated (``qe.run.evaluate``), its metrics."""

    estimator: Any  # as configured (a GridSearchCV when a grid is searched)
    chosen: Any  # the refitted best pipeline
    cv_pred: np.ndarray
    test_pred: np.ndarray
    dev: SplitData | None = None  # the split hyperparameters were chosen on, if not CV
    dev_pred: np.ndarray | None = None  # by the chosen configuration fitted on train
    fit_on: dict[str, Any] | None = None  # with [data] fit_on = "train+dev": what it was refitted on
    metrics: dict[str, Any] = field(default_factory=dict)


def fit(ctx: RunContext, train: SplitData, test: SplitData, dev: SplitData | None = None) -> FittedSystem:
    """Fit the context's learner, CV-predict train, predict dev and test. Hyperparameters (a grid) are
    chosen by CV on train, or with a ``dev`` split by fitting on train and scoring on dev; the chosen
    configuration is then fitted on train (and dev, with ``[data] fit_on = "train+dev"``, after dev
    has been predicted)."""
    config = ctx.config
    learner = config.learner
    seed, folds, n_jobs = config.seed, config.cv.folds, config.cv.n_jobs
    check_folds(config, len(train.dataset))
    x_train = train.features.to_numpy()
    for name, split, least in (("training", train, max(MIN_SCORED, folds)), ("dev", dev, MIN_SCORED)):
        if split is not None and len(split.dataset) < least:
            raise QEInputError(
                f"the {name} split has {len(split.dataset)} sentences; at least {least} are needed "
                f"({folds}-fold CV, and DeltaAvg needs {MIN_SCORED} scored sentences)"
            )
    if test.dataset.labels is not None and len(test.dataset) < MIN_SCORED:
        raise QEInputError(f"the test split has {len(test.dataset)} sentences; scoring needs {MIN_SCORED}")
    if dev is not None and dev.dataset.labels is None:
        raise QEInputError("the dev split has no labels, so it cannot choose hyperparameters")
    estimator = ctx.learner(len(x_train), len(dev.dataset) if dev is not None else None)
    y_fit = fit_target(learner, train.dataset, estimator)
    if isinstance(estimator, GridSearchCV) and dev is not None:
        estimator.set_params(refit=False)
        estimator.fit(np.vstack([x_train, dev.features.to_numpy()]), np.r_[y_fit, dev.dataset.labels])
        expect = _expected(estimator, len(x_train), 1, len(x_train), True)
        say(f"fitting the chosen parameters on train: {len(x_train)} rows{expect}")
        chosen = clone(estimator.estimator).set_params(**estimator.best_params_).fit(x_train, y_fit)
        estimator.best_estimator_ = chosen
    else:
        estimator.fit(x_train, y_fit)
        chosen = estimator.best_estimator_ if isinstance(estimator, GridSearchCV) else estimator
    bounds = label_range(config.data)

    def clip(pred: np.ndarray) -> np.ndarray:
        return np.clip(pred, *bounds) if bounds and learner.clip else pred

    # Cross-validated predictions on train with the chosen configuration (hyperparameters fixed).
    folds_split = KFold(folds, shuffle=True, random_state=seed)
    started = time.perf_counter()
    fold_rows = len(x_train) - len(x_train) // folds
    rounds = math.ceil(folds / effective_n_jobs(n_jobs))
    expect = _expected(estimator, fold_rows, rounds, len(x_train), dev is not None)
    say(f"CV predictions: {folds} folds of {len(x_train)} rows with the chosen parameters{expect}")
    cv_pred = clip(cross_val_predict(clone(chosen), x_train, y_fit, cv=folds_split, n_jobs=n_jobs))
    say(f"CV predictions: done in {time.perf_counter() - started:.0f} s")
    dev_pred = clip(chosen.predict(dev.features.to_numpy())) if dev is not None else None
    fit_on = None
    if dev is not None and config.data.fit_on == "train+dev":
        chosen, fit_on = refit_with_dev(learner, chosen, estimator, train, dev, y_fit)
    test_pred = clip(chosen.predict(test.features.to_numpy()))
    return FittedSystem(estimator, chosen, cv_pred, test_pred, dev, dev_pred, fit_on)


def refit_with_dev(
    learner: LearnerConfig, chosen: Any, estimator: Any, train: SplitData, dev: SplitData, y_fit: np.ndarray
) -> tuple[Any, dict[str, Any]]:
    """The chosen configuration fitted again on train and dev (``[data] fit_on = "train+dev"``),
    once the dev split has done its job (choosing, scoring); dev pairs that repeat a training pair
    are left out. Returns the model and what it was fitted on."""
    repeats = set(repeated_pairs(train.dataset, dev.dataset))
    keep = [k for k in range(len(dev.dataset)) if k not in repeats]
    y_dev = fit_target(learner, dev.dataset.subset(keep), estimator)
    x_train = train.features.to_numpy()
    x_all = np.vstack([x_train, dev.features.to_numpy()[keep]])
    expect = _expected(estimator, len(x_all), 1, len(x_train), True)
    started = time.perf_counter()
    say(f"refitting on train and dev: {len(x_all)} rows{expect}")
    refitted = clone(chosen).fit(x_all, np.concatenate([y_fit, y_dev], axis=0))
    say(f"refitted on train and dev in {time.perf_counter() - started:.0f} s")
    info = {"splits": "train+dev", "rows": len(x_all), "dev_rows_left_out": len(dev.dataset) - len(keep)}
    return refitted, info


def _expected(estimator: Any, rows: int, rounds: int, train_rows: int, on_dev: bool) -> str:
    """``, expected to take about ...``: ``rounds`` fits on ``rows`` rows, from the time the grid search
    took to fit the chosen candidate (on the ``train_rows`` when it chose ``on_dev``, else on its folds'
    share of them), scaled by the rows squared (an SVR's usual growth, a bound for boosting and ridge);
    empty without a search."""
    if not isinstance(estimator, GridSearchCV) or not hasattr(estimator, "best_index_"):
        return ""
    seconds = float(estimator.cv_results_["mean_fit_time"][estimator.best_index_])
    searched = train_rows if on_dev else train_rows - train_rows // estimator.n_splits_
    if not math.isfinite(seconds) or searched < 1:
        return ""
    return f", expected to take {shown_duration(rounds * seconds * (rows / searched) ** 2)}"


def fit_target(learner: LearnerConfig, train: QEDataset, estimator: Any) -> np.ndarray:
    """The labels, or with ``aux_targets`` the labels plus the aux targets as extra columns."""
    names = learner.aux_targets
    if not names:
        return train.labels
    from qe.learners.aux import aux_target_matrix, stack_targets
    from qe.learners.ensemble import accepts_aux

    if isinstance(estimator, GridSearchCV) or not accepts_aux(estimator):
        raise QEInputError(
            f"[learner] aux_targets needs an aux-aware learner without a grid (e.g. aux_stack), "
            f"not {learner.name!r}" + (" with a grid" if isinstance(estimator, GridSearchCV) else "")
        )
    return stack_targets(train.labels, aux_target_matrix(train, list(names)))
