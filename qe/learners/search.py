"""Grid search whose grid may be relative to the training data, with progress lines.

``ScaledGridSearchCV`` is scikit-learn's ``GridSearchCV`` with two additions:

* ``units`` marks grid keys whose values are given relative to a reference data set and are
  resolved from the ``(X, y)`` it is fitted on: ``"label_sd"`` values are multiplied by
  ``sd(y) / REFERENCE_LABEL_SD`` (an SVR's C and epsilon: multiplying the labels by ``s`` and C and
  epsilon by ``s`` multiplies the fitted function by ``s``), ``"per_feature"`` values by
  ``REFERENCE_FEATURES / n_features`` (an RBF gamma: squared distances between standardized rows
  grow with the number of features). The references are WMT12's (17 features, label sd 0.875 on
  the 1-5 scale), so a grid written for WMT12 reaches the same values there. ``best_params_`` and
  ``cv_results_`` hold the resolved values, and the refitted ``best_estimator_`` is a plain
  pipeline: a saved model holds nothing of the search.
* while :mod:`qe.learners.progress` is on, candidates are evaluated in batches that keep every
  worker busy (``lcm(n_jobs, folds)`` fits), with a line after each batch: candidates done, time,
  time left and the best score so far. Results are the same as one batch. The first line says how
  long the search is expected to take, extrapolated from a few timed fits of two candidates on
  samples of a fold (:func:`pilot_timings`, :func:`expected_seconds`), so that a search of hours is
  known as one before it starts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, ParameterGrid, check_cv
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_array

from qe.evaluation.metrics import METRICS
from qe.infra.expected import shown_duration
from qe.learners import progress

REFERENCE_LABEL_SD = 0.8750057070753468  # WMT12 en-es training labels (1-5 effort), population sd
REFERENCE_FEATURES = 17  # the WMT12 official baseline features
UNITS = ("label_sd", "per_feature")
# How scorers are shown in progress lines (negated losses as the positive loss).
SHOWN = {metric.scorer: name for name, metric in METRICS.items() if isinstance(metric.scorer, str)}


def label_spread(y: Any) -> float:
    """The population standard deviation of the labels (first column of a label+aux target); 1.0
    for constant labels, whose spread gives no scale."""
    y = np.asarray(y, dtype=np.float64)
    label = y[:, 0] if y.ndim == 2 else y
    spread = float(np.std(label)) if label.size else 0.0
    return spread if math.isfinite(spread) and spread > 0 else 1.0


def resolve_grid(
    grid: dict[str, list[Any]], units: dict[str, str], label_sd: float, n_features: int
) -> dict[str, list[Any]]:
    """``grid`` with each relative key's values scaled to data with these labels and features."""
    factors = {"label_sd": label_sd / REFERENCE_LABEL_SD, "per_feature": REFERENCE_FEATURES / n_features}
    return {
        key: [v * factors[units[key]] for v in values] if key in units else list(values)
        for key, values in grid.items()
    }


def shown_score(scoring: Any, value: float) -> str:
    """A grid-search score as a person reads it (``MAE 0.589``, not ``-0.589``)."""
    if isinstance(scoring, str) and scoring.startswith("neg_"):
        return f"{SHOWN.get(scoring, scoring[4:])} {-value:.4g}"
    name = getattr(getattr(scoring, "_score_func", None), "__name__", None) or str(scoring or "score")
    return f"{name} {value:.4g}"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


PILOT_MIN_FITS = 20
PILOT_MIN_ROWS = 2000
"""A search of fewer fits on fewer rows says no expected time: the pilot would cost a good share of it
(a few fits on thousands of rows, as a choice on dev makes, take far longer than the pilot)."""
PILOT_ROWS = 500
PILOT_SECONDS = 0.5
PILOT_FITS = 3
WARM_UP_ROWS = 100


@dataclass(frozen=True)
class PilotFit:
    """One timed fit: its rows, the CPU seconds this process spent and the wall-clock seconds."""

    rows: int
    cpu: float
    wall: float


def pilot_timings(estimator: Any, X: Any, y: Any, fold_rows: int) -> list[PilotFit]:
    """Fits of ``estimator`` on samples of ``X`` whose size doubles from :data:`PILOT_ROWS` rows until
    :data:`PILOT_FITS` fits are timed and the last took :data:`PILOT_SECONDS` of CPU, or the sample
    reaches ``fold_rows`` (after one untimed fit on a few rows: imports and first-call costs). The
    samples are drawn with their own generator, so nothing else's randomness moves."""
    order = np.random.default_rng(0).permutation(len(y))

    def fit(rows: int) -> PilotFit:
        sample = order[:rows]
        cpu, wall = time.process_time(), time.perf_counter()
        clone(estimator).fit(_safe_indexing(X, sample), _safe_indexing(y, sample))
        return PilotFit(rows, time.process_time() - cpu, time.perf_counter() - wall)

    fit(min(WARM_UP_ROWS, fold_rows))
    timings = [fit(min(PILOT_ROWS, fold_rows))]
    while timings[-1].rows < fold_rows and (timings[-1].cpu < PILOT_SECONDS or len(timings) < PILOT_FITS):
        timings.append(fit(min(2 * timings[-1].rows, fold_rows)))
    return timings


def expected_seconds(
    timings: list[PilotFit], fold_rows: int, all_rows: int, fits: int, workers: int
) -> float:
    """Wall-clock seconds of ``fits`` fits on ``fold_rows`` rows spread over ``workers`` and the refit
    on ``all_rows`` (0: no refit), extrapolated from pilot fits: CPU time grows as rows to the power fitted
    to the timings on log-log axes (kept from 1 to 3; 2, libsvm's usual, from one timing), times the pilot's
    wall / CPU ratio (the machine's load as the pilot saw it)."""
    last = timings[-1]
    power = 2.0
    timed = [t for t in timings if t.cpu > 0]
    if len({t.rows for t in timed}) > 1:
        power = float(np.polyfit(np.log([t.rows for t in timed]), np.log([t.cpu for t in timed]), 1)[0])
    power = min(max(power, 1.0), 3.0)
    cpu = sum(t.cpu for t in timings)
    slowdown = sum(t.wall for t in timings) / cpu if cpu > 0 else 1.0

    def seconds(rows: int) -> float:
        return last.cpu * (rows / last.rows) ** power * slowdown

    return math.ceil(fits / workers) * seconds(fold_rows) + seconds(all_rows)


class ScaledGridSearchCV(GridSearchCV):
    """``GridSearchCV`` with a grid relative to the training data (``units``) and progress lines."""

    _parameter_constraints: ClassVar[dict] = {**GridSearchCV._parameter_constraints, "units": [dict, None]}

    def __init__(
        self,
        estimator: Any,
        param_grid: dict[str, list[Any]],
        *,
        units: dict[str, str] | None = None,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: bool = True,
        cv: Any = None,
        verbose: int = 0,
        pre_dispatch: str | int = "2*n_jobs",
        error_score: Any = np.nan,
        return_train_score: bool = False,
    ) -> None:
        super().__init__(
            estimator,
            param_grid,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.units = units

    def fit(self, X: Any, y: Any = None, **params: Any) -> ScaledGridSearchCV:
        """Resolve the grid from ``X`` and ``y`` (``resolved_grid_``), then search it."""
        self.label_sd_ = label_spread(y)
        self.resolved_grid_ = self.param_grid
        if self.units:
            grid = self.param_grid if isinstance(self.param_grid, dict) else {}
            bad = {key: unit for key, unit in self.units.items() if unit not in UNITS or key not in grid}
            if bad:
                raise ValueError(f"units must map keys of a dict param_grid to one of {UNITS}, not {bad}")
            n_features = check_array(X, accept_sparse=True, dtype=None, ensure_all_finite=False).shape[1]
            self.resolved_grid_ = resolve_grid(grid, self.units, self.label_sd_, n_features)
        self._rows = (X.shape if hasattr(X, "shape") else np.asarray(X).shape)[0]  # X: any array-like
        self._data = (X, y, params.get("groups"))  # for the timed pilot fits, while searching
        try:
            return super().fit(X, y, **params)
        finally:
            del self._data

    def _run_search(self, evaluate_candidates: Any) -> None:
        candidates = list(ParameterGrid(self.resolved_grid_))
        if not progress.active():
            evaluate_candidates(candidates)
            return
        folds, workers = self.n_splits_, effective_n_jobs(self.n_jobs)
        batch = math.lcm(workers, folds) // folds
        what = f"grid search ({folds} folds, {self._rows} rows, {workers} worker{'s' * (workers > 1)})"
        expected = (
            self._expected(candidates, folds, workers)
            if len(candidates) * folds >= PILOT_MIN_FITS or self._rows >= PILOT_MIN_ROWS
            else ""
        )
        progress.say(f"{what}: {len(candidates)} candidates{expected}")
        counter = progress.Progress(what, len(candidates), "candidates")
        for start in range(0, len(candidates), batch):
            results = evaluate_candidates(candidates[start : start + batch])
            counter.step(len(results["params"]), self._best_so_far(results))
        if self.refit:
            progress.say(f"{what}: refitting the best candidate on all {self._rows} rows")

    def _expected(self, candidates: list[dict[str, Any]], folds: int, workers: int) -> str:
        """``, expected to take about ...``: the mean of two estimates (:func:`expected_seconds`), from
        pilot fits of the grid's first and last candidates (fit times differ most between them) on
        samples of the first fold's training rows; empty when a candidate cannot be fitted alone (the
        search reports that itself)."""
        X, y, groups = self._data
        fold_rows = len(next(check_cv(self.cv, y).split(X, y, groups))[0])
        estimates = []
        for params in (candidates[0], candidates[-1]):
            try:
                timings = pilot_timings(clone(self.estimator).set_params(**params), X, y, fold_rows)
            except (ValueError, TypeError, ArithmeticError, np.linalg.LinAlgError):
                return ""
            fits = len(candidates) * folds
            refit_rows = self._rows if self.refit else 0
            estimates.append(expected_seconds(timings, fold_rows, refit_rows, fits, workers))
        largest = timings[-1].rows
        return (
            f", expected to take {shown_duration(sum(estimates) / len(estimates))} (extrapolated from "
            f"fits on up to {largest:,} of a fold's {fold_rows:,} rows)"
        )

    def _best_so_far(self, results: dict[str, Any]) -> str:
        scores = np.asarray(results.get("mean_test_score", []), dtype=np.float64)
        if not np.isfinite(scores).any():
            return "no candidate scored yet"
        best = int(np.nanargmax(scores))
        params = sorted(results["params"][best].items())
        chosen = ", ".join(f"{key.rsplit('__', 1)[-1]}={_short(value)}" for key, value in params)
        return f"best {shown_score(self.scoring, float(scores[best]))} at {chosen}"
