"""Published results to print beside ours, and the metric columns of each dataset's summary tables.

Only WMT12 en-es has a published table here (Callison-Burch et al. 2012, Tables 12-13); it is
shown beside WMT12 runs only. WMT12 summaries report the official scorer's rank-difference
Spearman (what the published table holds) next to scipy's average-rank Spearman; other datasets
report scipy's (the rank-difference formula runs high when many labels tie, e.g. HTER = 0) and
the exact MAE / RMSE (the WMT12 scorer rounds each error to 2 decimals).
"""

from __future__ import annotations

from qe.evaluation.metrics import METRICS, SUMMARY_TABLE, WMT12_TABLE, reported_in

# system -> {metric: value}; None where a system took part in only one of the two tasks.
WMT12_PUBLISHED: dict[str, dict[str, float | None]] = {
    "SDLLW_M5PbestDeltaAvg (winner)": {"MAE": 0.61, "RMSE": 0.75, "DeltaAvg": 0.63, "Spearman": 0.64},
    "UU_best": {"MAE": 0.64, "RMSE": 0.79, "DeltaAvg": 0.56, "Spearman": 0.62},
    "SDLLW_SVM": {"MAE": 0.64, "RMSE": 0.78, "DeltaAvg": 0.61, "Spearman": 0.60},
    "UEdin": {"MAE": 0.68, "RMSE": 0.82, "DeltaAvg": 0.54, "Spearman": 0.58},
    "Baseline (17FFs SVM)": {"MAE": 0.69, "RMSE": 0.82, "DeltaAvg": 0.55, "Spearman": 0.58},
}
PUBLISHED: dict[str, dict[str, dict[str, float | None]]] = {"wmt12-en-es": WMT12_PUBLISHED}

METRICS_SHOWN = tuple(next(iter(WMT12_PUBLISHED.values())))  # the published WMT12 columns

# (column title, metrics.json key), from the metric records (qe.evaluation.metrics.METRICS)
WMT12_COLUMNS = reported_in(WMT12_TABLE)
COLUMNS = reported_in(SUMMARY_TABLE)


def bootstrap_key(key: str) -> str:
    """The paired-bootstrap entry of a summary column: the bootstrapped metric of the same function
    (the bootstrap's MAE / RMSE are unrounded, so ``MAE_exact`` is tested as ``MAE``)."""
    metric = METRICS.get(key)
    if metric is None or metric.bootstrap:
        return key
    same = (other.name for other in METRICS.values() if other.bootstrap and other.function is metric.function)
    return next(same, key)


def summary_columns(dataset: str | None) -> tuple[tuple[str, str], ...]:
    """The (title, metrics key) columns of a dataset's summary tables (WMT12's keep its scorer)."""
    return WMT12_COLUMNS if dataset in PUBLISHED else COLUMNS


def _cell(value: object, digits: int) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "n/a"


def comparison_table(
    ours: dict[str, dict[str, float]], dataset: str | None = None, published: bool = True
) -> str:
    """A markdown table of our systems (name -> metrics), beside the dataset's published systems
    (only for a dataset that has them, and only with ``published``)."""
    columns = summary_columns(dataset)
    lines = ["| system | " + " | ".join(t for t, _ in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, metrics in ours.items():
        lines.append(f"| **{name}** | " + " | ".join(_cell(metrics.get(k), 3) for _, k in columns) + " |")
    if published and dataset in PUBLISHED:
        for name, metrics in PUBLISHED[dataset].items():
            cells = [_cell(metrics.get(k), 2) for _, k in columns]
            lines.append(f"| {name} (published) | " + " | ".join(cells) + " |")
    return "\n".join(lines)
