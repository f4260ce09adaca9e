"""WMT12 QE metrics: MAE, RMSE, DeltaAvg (official definition), Spearman, Pearson, bootstrap tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats
from sklearn.metrics import make_scorer

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
    return float(stats.spearmanr(gold, pred).statistic)


def spearman_official(gold: ArrayLike, pred: ArrayLike) -> float:
    """Spearman as evaluateWMTQP2012.pl computes it: 1 - 6 sum d^2 / (n (n^2 - 1)).

    d compares the submitted ranks (from the predicted scores, no ties, tie-break by input order)
    with the reference ranks of the gold scores (average ranks for tied gold values).
    """
    gold, pred = _pair(gold, pred)
    n = gold.size
    d = ranks_from_scores(pred) - stats.rankdata(-gold)
    return float(1.0 - 6.0 * np.sum(d**2) / (n * (n * n - 1)))


def pearson(gold: ArrayLike, pred: ArrayLike) -> float:
    """Pearson's linear correlation (0 when either side is constant)."""
    gold, pred = _pair(gold, pred)
    if np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return 0.0
    return float(stats.pearsonr(gold, pred).statistic)


def evaluate(gold: ArrayLike, pred: ArrayLike, official_rounding: bool = True) -> dict[str, float]:
    """Every metric of the official scorer plus Pearson, in one dict.

    MAE / RMSE follow the official scorer (errors rounded to 2 decimals) unless
    ``official_rounding`` is False (exact values are kept as ``MAE_exact`` / ``RMSE_exact``);
    ``Spearman`` is the official scorer's rank-difference formula, ``Spearman_scipy`` the
    average-rank correlation that scipy computes.
    """
    gold, pred = _pair(gold, pred)
    errors = np.abs(pred - gold)
    return {
        "MAE": mae(gold, pred, round_errors=official_rounding),
        "RMSE": rmse(gold, pred, round_errors=official_rounding),
        "DeltaAvg": delta_avg(gold, pred),
        "Spearman": spearman_official(gold, pred),
        "Pearson": pearson(gold, pred),
        "MAE_exact": float(errors.mean()),
        "RMSE_exact": float(np.sqrt(np.mean(errors**2))),
        "Spearman_scipy": spearman(gold, pred),
        "share_errors_ge_1": float(np.mean(errors >= 1.0)),
        "share_errors_le_0.1": float(np.mean(errors <= 0.1)),
        "prediction_min": float(pred.min()),
        "prediction_max": float(pred.max()),
        "n": int(gold.size),
    }


# --------------------------------------------------------------------------- significance

HIGHER_IS_BETTER = {
    "MAE": False,
    "RMSE": False,
    "DeltaAvg": True,
    "Spearman": True,
    "Spearman_scipy": True,
    "Pearson": True,
}
METRIC_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "MAE": mae,
    "RMSE": rmse,
    "DeltaAvg": delta_avg,
    "Spearman": spearman_official,
    "Spearman_scipy": spearman,
    "Pearson": pearson,
}


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
    function = METRIC_FUNCTIONS[metric]
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
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


# --------------------------------------------------------------------------- scikit-learn scorers

delta_avg_scorer = make_scorer(delta_avg, greater_is_better=True)
spearman_scorer = make_scorer(spearman, greater_is_better=True)
