"""The report's plots, drawn on a given matplotlib ``Axes`` (reusable in notebooks), and figures as
PNG bytes from the Agg canvas (the global pyplot backend is never touched)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from qe.evaluation.metrics import HEADLINE_METRICS, METRICS
from qe.infra.errors import QEInputError

TOP_IMPORTANCES = 20


def plot_scatter(
    ax: Any, gold: np.ndarray, pred: np.ndarray, bounds: tuple[float, float] | None = None
) -> None:
    """Gold (x) against predicted (y) scores with the diagonal of perfect prediction."""
    gold, pred = np.asarray(gold, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    low, high = bounds or (min(gold.min(), pred.min()), max(gold.max(), pred.max()))
    pad = 0.03 * (high - low or 1.0)
    ax.plot([low, high], [low, high], color="#888888", linewidth=1, linestyle="--", label="y = x")
    ax.scatter(gold, pred, s=10, alpha=0.45, color="#4c72b0", edgecolors="none", label="sentences")
    ax.set_xlim(low - pad, high + pad)
    ax.set_ylim(low - pad, high + pad)
    ax.set_aspect("equal")
    ax.set_xlabel("gold score")
    ax.set_ylabel("predicted score")
    ax.set_title(f"Test set: gold vs predicted (n = {gold.size})")
    ax.legend(loc="upper left", frameon=False)


def plot_residual_bands(ax: Any, rows: list[dict[str, Any]]) -> None:
    """Mean residual and MAE per gold-label band (bars), with the number of sentences above each."""
    x = np.arange(len(rows))
    mean = [r["mean_residual"] for r in rows]
    mae = [r["MAE"] for r in rows]
    width = 0.38
    ax.bar(x - width / 2, mean, width, color="#dd8452", label="mean residual (pred - gold)")
    ax.bar(x + width / 2, mae, width, color="#4c72b0", label="MAE")
    ax.axhline(0, color="#444444", linewidth=0.8)
    ax.set_xticks(x, [r["band"] for r in rows])
    ax.set_xlabel("gold-label band")
    ax.set_title("Residuals by gold-label band")
    top = max([abs(v) for v in mean + mae if np.isfinite(v)] or [1.0])
    for xi, row in zip(x, rows, strict=True):
        ax.annotate(f"n={row['n']}", (xi, top * 1.08), ha="center", fontsize=8, color="#444444")
    ax.set_ylim(min(0.0, *[v for v in mean if np.isfinite(v)]) - 0.1 * top, top * 1.25)
    ax.legend(loc="lower left", frameon=False, fontsize=8)


def path_label(step: dict[str, Any]) -> str:
    if step.get("feature") is None:
        return "(start)"
    return f"{step['feature']}{' (locally predictive)' if step.get('locally_predictive') else ''}"


def subset_size(step: dict[str, Any]) -> int | None:
    if isinstance(step.get("n_features"), int):
        return step["n_features"]
    if isinstance(step.get("subset"), list):
        return len(step["subset"])
    return None


def selection_score_name(selection: dict[str, Any]) -> str:
    """What the ``score`` of a selection path step means for this selector: its record's ``path_score``
    (a selector the registry does not know: "score")."""
    from qe.selection import registered_selectors

    params = selection.get("params", {})
    for record in registered_selectors().values():
        if record.cls.__name__ == selection.get("selector"):
            return record.score_name(params)
    return "score"


def plot_selection_path(ax: Any, path: list[dict[str, Any]], score_name: str = "score") -> None:
    """The selector's score after each step, labelled with the feature added (or removed) there."""
    scores = [float(step["score"]) for step in path]
    x = np.arange(len(path))
    ax.plot(x, scores, marker="o", markersize=4, color="#4c72b0")
    labels = [f"{step.get('step', i)}. {path_label(step)}" for i, step in enumerate(path)]
    ax.set_xticks(x, labels, rotation=90, fontsize=7)
    ax.set_xlabel("step (feature)")
    ax.set_ylabel(score_name)
    ax.set_title("Feature selection path")
    ax.grid(axis="y", alpha=0.3)


def plot_importances(ax: Any, names: list[str], values: np.ndarray, top: int = TOP_IMPORTANCES) -> None:
    """Horizontal bars of the ``top`` largest importances, largest first."""
    order = np.argsort(-np.asarray(values), kind="stable")[:top]
    ax.barh([names[i] for i in order], [values[i] for i in order], color="#4c72b0")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("impurity-based importance")
    ax.set_title(f"Feature importances (top {min(top, len(names))} of {len(names)})")


def plot_ablation(
    axes: Any, systems: dict[str, dict[str, Any]], metrics: tuple[str, ...] = HEADLINE_METRICS
) -> None:
    """One panel per metric: each system's test score as a dot, joined to the full system's score."""
    names = [name for name, system in systems.items() if "test" in system]
    y = np.arange(len(names))
    colours = ["#444444" if n == "full" else "#4c72b0" if n.startswith("only:") else "#dd8452" for n in names]
    for ax, metric in zip(axes, metrics, strict=True):
        values = [float(systems[n]["test"][metric]) for n in names]
        if "full" in names:
            reference = values[names.index("full")]
            ax.axvline(reference, color="#444444", linewidth=0.8, linestyle="--")
            ax.hlines(y, reference, values, color=colours, linewidth=2)
        ax.scatter(values, y, color=colours, zorder=3)
        ax.set_yticks(y, names)
        ax.invert_yaxis()
        better = "higher" if METRICS[metric].higher_is_better else "lower"
        ax.set_title(f"test {metric} ({better} is better)")
        ax.grid(axis="x", alpha=0.3)


# --------------------------------------------------------------------------- figures to PNG


def new_figure(width: float, height: float, ncols: int = 1) -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError:
        raise QEInputError("qe report needs matplotlib: pip install 'qe[report]'") from None
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, ncols, squeeze=True)
    return figure, axes


def figure_png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
