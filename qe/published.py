"""Published WMT12 QE results (Callison-Burch et al. 2012, Tables 12-13) to print beside ours."""

from __future__ import annotations

# system -> {metric: value}; None where a system took part in only one of the two tasks.
WMT12_PUBLISHED: dict[str, dict[str, float | None]] = {
    "SDLLW_M5PbestDeltaAvg (winner)": {"MAE": 0.61, "RMSE": 0.75, "DeltaAvg": 0.63, "Spearman": 0.64},
    "UU_best": {"MAE": 0.64, "RMSE": 0.79, "DeltaAvg": 0.56, "Spearman": 0.62},
    "SDLLW_SVM": {"MAE": 0.64, "RMSE": 0.78, "DeltaAvg": 0.61, "Spearman": 0.60},
    "UEdin": {"MAE": 0.68, "RMSE": 0.82, "DeltaAvg": 0.54, "Spearman": 0.58},
    "Baseline (17FFs SVM)": {"MAE": 0.69, "RMSE": 0.82, "DeltaAvg": 0.55, "Spearman": 0.58},
}

METRICS_SHOWN = ("MAE", "RMSE", "DeltaAvg", "Spearman")


def comparison_table(ours: dict[str, dict[str, float]], published: bool = True) -> str:
    """A markdown table: our systems (name -> metrics) beside the published WMT12 systems."""
    lines = ["| system | " + " | ".join(METRICS_SHOWN) + " |", "|---" * (len(METRICS_SHOWN) + 1) + "|"]
    for name, metrics in ours.items():
        lines.append(f"| **{name}** | " + " | ".join(f"{metrics[m]:.3f}" for m in METRICS_SHOWN) + " |")
    if published:
        for name, metrics in WMT12_PUBLISHED.items():
            cells = ["n/a" if metrics[m] is None else f"{metrics[m]:.2f}" for m in METRICS_SHOWN]
            lines.append(f"| {name} (published) | " + " | ".join(cells) + " |")
    return "\n".join(lines)
