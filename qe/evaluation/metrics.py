"""WMT12 QE metrics: MAE, RMSE, DeltaAvg (official definition), Spearman, Pearson, bootstrap tests.

Every metric qe reports is one :class:`Metric` record in :data:`METRICS`; the report, ``qe evaluate``,
``qe compare``, the experiment, the ablation and the learners' ``scoring`` read their lists from it.
scipy and scikit-learn are imported on use, so a command's ``--help`` can name the metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

ArrayLike = np.ndarray | list[float]


def _pair(gold: ArrayLike, pred: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    gold = np.asarray(gold, dtype=np.float64).ravel()
    pred = np.asarray(pred, dtype=np.float64).ravel()
    if gold.shape != pred.shape:
        raise ValueError(f"gold has {gold.size} values but predictions have {pred.size}")
    if gold.size == 0:
        raise ValueError("no values to score")
    return gold, pred


def _errors(gold: np.ndarray, pred: np.ndarray, round_errors: bool) -> np.ndarray:
    errors = np.abs(pred - gold)
    if round_errors:
        # evaluateWMTQP2012.pl formats each error with "%.2f" before summing.
        errors = np.array([float(f"{e:.2f}") for e in errors])
    return errors


def mae(gold: ArrayLike, pred: ArrayLike, round_errors: bool = False) -> float:
    """Mean absolute error; ``round_errors`` rounds each error to 2 decimals as the official scorer."""
    gold, pred = _pair(gold, pred)
    return float(np.mean(_errors(gold, pred, round_errors)))


def rmse(gold: ArrayLike, pred: ArrayLike, round_errors: bool = False) -> float:
    """Root mean squared error; ``round_errors`` as in :func:`mae`."""
    gold, pred = _pair(gold, pred)
    return float(np.sqrt(np.mean(_errors(gold, pred, round_errors) ** 2)))


def ranking_order(pred: ArrayLike) -> np.ndarray:
    """Indices from best to worst: predicted score descending, ties broken by input order."""
    pred = np.asarray(pred, dtype=np.float64).ravel()
    return np.argsort(-pred, kind="stable")


def ranks_from_scores(pred: ArrayLike) -> np.ndarray:
    """Rank 1 = best (highest score), no ties, as in the official submission format."""
    order = ranking_order(pred)
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(1, order.size + 1)
    return ranks


def delta_avg_from_order(gold: ArrayLike, order: np.ndarray) -> float:
    """DeltaAvg of gold values visited in ``order`` (best first), as evaluateWMTQP2012.pl computes it.

    For n = 2 .. floor(N/2) quantiles of size q = floor(N/n), DeltaAvg[n] is the mean over the
    heads of size q, 2q, .., (n-1)q of (mean gold of the head - mean gold of all); the result is
    the mean of DeltaAvg[n] over n.
    """
    ordered = np.asarray(gold, dtype=np.float64).ravel()[np.asarray(order)]
    n_items = ordered.size
    if n_items < 4:
        raise ValueError("DeltaAvg needs at least 4 items")
    overall = ordered.mean()
    prefix = np.cumsum(ordered)
    values = []
    for n in range(2, n_items // 2 + 1):
        q = n_items // n
        heads = q * np.arange(1, n)
        values.append(np.mean(prefix[heads - 1] / heads) - overall)
    return float(np.mean(values))


def delta_avg(gold: ArrayLike, pred: ArrayLike) -> float:
    """DeltaAvg of a predicted score (higher = better translation) against gold effort scores."""
    gold, pred = _pair(gold, pred)
    return delta_avg_from_order(gold, ranking_order(pred))


def spearman(gold: ArrayLike, pred: ArrayLike) -> float:
    """Spearman's rank correlation with average ranks for ties."""
    gold, pred = _pair(gold, pred)
    if np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return 0.0
    from scipy import stats

    return float(stats.spearmanr(gold, pred).statistic)


def spearman_official(gold: ArrayLike, pred: ArrayLike) -> float:
    """Spearman as evaluateWMTQP2012.pl computes it: 1 - 6 sum d^2 / (n (n^2 - 1)).

    d compares the submitted ranks (from the predicted scores, no ties, tie-break by input order)
    with the reference ranks of the gold scores (average ranks for tied gold values).
    """
    from scipy import stats

    gold, pred = _pair(gold, pred)
    n = gold.size
    d = ranks_from_scores(pred) - stats.rankdata(-gold)
    return float(1.0 - 6.0 * np.sum(d**2) / (n * (n * n - 1)))


def pearson(gold: ArrayLike, pred: ArrayLike) -> float:
    """Pearson's linear correlation (0 when either side is constant)."""
    gold, pred = _pair(gold, pred)
    if np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return 0.0
    from scipy import stats

    return float(stats.pearsonr(gold, pred).statistic)


def share_errors_ge_1(gold: ArrayLike, pred: ArrayLike) -> float:
    """Share of sentences whose absolute error is 1 or more."""
    gold, pred = _pair(gold, pred)
    return float(np.mean(np.abs(pred - gold) >= 1.0))


def share_errors_le_01(gold: ArrayLike, pred: ArrayLike) -> float:
    """Share of sentences whose absolute error is 0.1 or less."""
    gold, pred = _pair(gold, pred)
    return float(np.mean(np.abs(pred - gold) <= 0.1))


def prediction_min(gold: ArrayLike, pred: ArrayLike) -> float:
    """The lowest prediction."""
    return float(_pair(gold, pred)[1].min())


def prediction_max(gold: ArrayLike, pred: ArrayLike) -> float:
    """The highest prediction."""
    return float(_pair(gold, pred)[1].max())


def count(gold: ArrayLike, pred: ArrayLike) -> int:
    """The number of sentences scored."""
    return int(_pair(gold, pred)[0].size)


# --------------------------------------------------------------------------- the metric records

WMT12_TABLE = "wmt12"
"""The summary table of WMT12 runs: the official scorer's values, beside the published systems."""
SUMMARY_TABLE = "summary"
"""The summary table of every other dataset: exact MAE / RMSE and scipy's Spearman."""
HEADLINE = "headline"
"""What ``qe run`` prints for CV and the ablation tabulates, tests and plots against the full system."""


@dataclass(frozen=True)
class Metric:
    """One metric: how it is computed, which way is better, and where qe reports it.

    ``function(gold, pred)`` is its value (in metrics.json and ``qe evaluate``, under ``name``, in the
    order of :data:`METRICS`) unless ``official`` gives the WMT12 scorer's variant. ``higher_is_better``
    is None for what describes the predictions without judging them. ``ranking``: still meaningful for a
    ranks-only submission. ``scorer``: scikit-learn's scorer name, or a score function qe wraps, when the
    metric can choose hyperparameters (a learner's ``scoring``). ``bootstrap``: paired-bootstrap tested.
    ``column``: the summary column it fills (the order of first appearance orders every table);
    ``tables``: (table, column title) for each table that shows it.
    """

    name: str
    function: Callable[[ArrayLike, ArrayLike], float]
    higher_is_better: bool | None = None
    ranking: bool = False
    scorer: str | Callable[[ArrayLike, ArrayLike], float] | None = None
    official: Callable[[ArrayLike, ArrayLike], float] | None = None
    bootstrap: bool = False
    column: str = ""
    tables: tuple[tuple[str, str], ...] = ()

    def sklearn_scorer(self) -> Any:
        """What scikit-learn's ``scoring`` takes for this metric (a scorer name or a scorer object)."""
        if self.scorer is None or isinstance(self.scorer, str):
            return self.scorer
        from sklearn.metrics import make_scorer

        return make_scorer(self.scorer, greater_is_better=bool(self.higher_is_better))

    def title(self, table: str) -> str | None:
        """The column title in ``table``, or None when the table does not show this metric."""
        return dict(self.tables).get(table)


def _register(*metrics: Metric) -> dict[str, Metric]:
    names = [metric.name for metric in metrics]
    if len(set(names)) != len(names):
        raise ValueError(f"two metrics of one name in {names}")
    return {metric.name: metric for metric in metrics}


METRICS: dict[str, Metric] = _register(
    Metric(
        "MAE",
        mae,
        higher_is_better=False,
        scorer="neg_mean_absolute_error",
        official=partial(mae, round_errors=True),
        bootstrap=True,
        column="MAE",
        tables=((WMT12_TABLE, "MAE"), (HEADLINE, "MAE")),
    ),
    Metric(
        "RMSE",
        rmse,
        higher_is_better=False,
        scorer="neg_root_mean_squared_error",
        official=partial(rmse, round_errors=True),
        bootstrap=True,
        column="RMSE",
        tables=((WMT12_TABLE, "RMSE"),),
    ),
    Metric(
        "DeltaAvg",
        delta_avg,
        higher_is_better=True,
        ranking=True,
        scorer=delta_avg,
        bootstrap=True,
        column="DeltaAvg",
        tables=((WMT12_TABLE, "DeltaAvg"), (SUMMARY_TABLE, "DeltaAvg"), (HEADLINE, "DeltaAvg")),
    ),
    Metric(
        "Spearman",
        spearman_official,
        higher_is_better=True,
        ranking=True,
        scorer=spearman,  # grid search ranks by scipy's average-rank Spearman
        bootstrap=True,
        column="Spearman",
        tables=((WMT12_TABLE, "Spearman (WMT12)"),),
    ),
    Metric(
        "Pearson",
        pearson,
        higher_is_better=True,
        scorer=pearson,  # what MLQE-PE and later WMT tasks rank systems by
        bootstrap=True,
        column="Pearson",
        tables=((WMT12_TABLE, "Pearson"), (SUMMARY_TABLE, "Pearson")),
    ),
    Metric("MAE_exact", mae, higher_is_better=False, column="MAE", tables=((SUMMARY_TABLE, "MAE"),)),
    Metric("RMSE_exact", rmse, higher_is_better=False, column="RMSE", tables=((SUMMARY_TABLE, "RMSE"),)),
    Metric(
        "Spearman_scipy",
        spearman,
        higher_is_better=True,
        ranking=True,
        bootstrap=True,
        column="Spearman",
        tables=((WMT12_TABLE, "Spearman (scipy)"), (SUMMARY_TABLE, "Spearman")),
    ),
    Metric("share_errors_ge_1", share_errors_ge_1),
    Metric("share_errors_le_0.1", share_errors_le_01),
    Metric("prediction_min", prediction_min),
    Metric("prediction_max", prediction_max),
    Metric("n", count, ranking=True),
)
"""Every metric qe reports, by name, in the order of metrics.json and ``qe evaluate``."""


def in_column_order(metrics: list[Metric]) -> list[Metric]:
    """``metrics`` sorted by their summary column (MAE, RMSE, DeltaAvg, Spearman, Pearson), stably."""
    columns = list(dict.fromkeys(metric.column or metric.name for metric in METRICS.values()))
    return sorted(metrics, key=lambda metric: columns.index(metric.column or metric.name))


def reported_in(table: str) -> tuple[tuple[str, str], ...]:
    """``(column title, metrics key)`` of each metric ``table`` shows, in column order."""
    shown = in_column_order([metric for metric in METRICS.values() if metric.title(table)])
    return tuple((str(metric.title(table)), metric.name) for metric in shown)


BOOTSTRAPPED = tuple(metric.name for metric in in_column_order([m for m in METRICS.values() if m.bootstrap]))
"""The metrics a paired bootstrap compares, in column order."""
HEADLINE_METRICS = tuple(name for _, name in reported_in(HEADLINE))
"""MAE and DeltaAvg: the CV line of ``qe run``, the ablation's columns, p-values and chart."""


def evaluate(gold: ArrayLike, pred: ArrayLike, official_rounding: bool = True) -> dict[str, float]:
    """Every metric of :data:`METRICS`, by name: the official scorer's plus Pearson and descriptions.

    MAE / RMSE follow the official scorer (errors rounded to 2 decimals) unless
    ``official_rounding`` is False (exact values are kept as ``MAE_exact`` / ``RMSE_exact``);
    ``Spearman`` is the official scorer's rank-difference formula, ``Spearman_scipy`` the
    average-rank correlation that scipy computes.
    """
    gold, pred = _pair(gold, pred)
    return {
        name: (metric.official if official_rounding and metric.official else metric.function)(gold, pred)
        for name, metric in METRICS.items()
    }


# --------------------------------------------------------------------------- significance


@dataclass(frozen=True)
class BootstrapResult:
    """Paired bootstrap comparison of system A against system B on one metric."""

    metric: str
    a: float
    b: float
    a_wins: float  # share of resamples where A is strictly better than B
    p_value: float  # share of resamples where A is not better (one-sided)

    def as_dict(self) -> dict[str, float | str]:
        return {
            "metric": self.metric,
            "a": self.a,
            "b": self.b,
            "a_wins": self.a_wins,
            "p_value": self.p_value,
        }


def paired_bootstrap(
    gold: ArrayLike,
    pred_a: ArrayLike,
    pred_b: ArrayLike,
    metric: str = "MAE",
    n_samples: int = 1000,
    seed: int = 12345,
) -> BootstrapResult:
    """Koehn-style paired bootstrap resampling (1000 samples as in the WMT12 findings)."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    gold, pred_a = _pair(gold, pred_a)
    _, pred_b = _pair(gold, pred_b)
    if metric not in BOOTSTRAPPED:
        raise ValueError(f"no paired bootstrap for {metric!r} (allowed: {', '.join(BOOTSTRAPPED)})")
    function = METRICS[metric].function
    sign = 1.0 if METRICS[metric].higher_is_better else -1.0
    rng = np.random.default_rng(seed)
    wins = 0
    for _ in range(n_samples):
        idx = rng.integers(0, gold.size, gold.size)
        if sign * (function(gold[idx], pred_a[idx]) - function(gold[idx], pred_b[idx])) > 0:
            wins += 1
    return BootstrapResult(
        metric=metric,
        a=function(gold, pred_a),
        b=function(gold, pred_b),
        a_wins=wins / n_samples,
        p_value=1.0 - wins / n_samples,
    )
