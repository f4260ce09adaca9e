"""Run reports: the metrics beside the published WMT12 systems, plots and tables, as Markdown and HTML.

``write_report(run_dir)`` reads what ``qe run`` (and optionally ``qe ablate``) wrote and produces
``report.md``, ``report.html`` and PNG figures in ``report_files/``. Figures are drawn on
``matplotlib.figure.Figure`` objects with the Agg canvas, so the global pyplot backend is never
touched; the ``plot_*`` helpers take an ``Axes`` and can be reused in notebooks.
"""

from __future__ import annotations

import html
import io
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qe.errors import QEInputError
from qe.io import atomic_write, read_lines, write_text_atomic
from qe.published import METRICS_SHOWN, PUBLISHED, bootstrap_key, summary_columns

FIGURES_DIR = "report_files"
FIGURE_NAMES = ("scatter", "residual_bands", "selection_path", "importances", "ablation")
TOP_IMPORTANCES = 20
DETAIL_METRICS = (
    "MAE",
    "RMSE",
    "DeltaAvg",
    "Spearman",
    "Pearson",
    "MAE_exact",
    "RMSE_exact",
    "Spearman_scipy",
    "share_errors_ge_1",
    "share_errors_le_0.1",
    "prediction_min",
    "prediction_max",
    "n",
)

# --------------------------------------------------------------------------- document blocks


@dataclass(frozen=True)
class Code:
    """Inline text taken from the run (names, parameters): code-formatted and always escaped."""

    text: str


Inline = str | Code


@dataclass
class Heading:
    """A section title (level 1-3)."""

    text: str
    level: int = 2


@dataclass
class Para:
    """A paragraph of plain text and code spans."""

    parts: list[Inline]


@dataclass
class Table:
    """A table of text cells; rows in ``bold_rows`` are ours (highlighted)."""

    header: list[str]
    rows: list[list[str]]
    bold_rows: set[int] = field(default_factory=set)


@dataclass
class Image:
    """A figure in ``report_files/``."""

    file: str  # relative to the run directory
    alt: str


@dataclass
class Pre:
    """Preformatted text (signature, model tree)."""

    text: str


Block = Heading | Para | Table | Image | Pre


# --------------------------------------------------------------------------- reading a run


@dataclass
class RunDir:
    """What a run (or ablation) directory holds; absent parts are None."""

    path: Path
    config: dict[str, Any] | None
    metrics: dict[str, Any] | None
    predictions: tuple[list[str], np.ndarray] | None
    selection: dict[str, Any] | None
    model_text: str | None
    ablation: dict[str, Any] | None


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise QEInputError(f"corrupt {what}: {exc}", path) from None
    if not isinstance(value, dict):
        raise QEInputError(f"corrupt {what}: expected a JSON object", path)
    return value


def read_predictions(path: Path) -> tuple[list[str], np.ndarray]:
    """Read ``predictions.tsv`` (header ``id<TAB>score``) as ids and scores."""
    lines = read_lines(path)
    if lines[0] != "id\tscore":
        raise QEInputError("expected the header 'id<TAB>score'", path, 1)
    ids, scores = [], []
    for number, text in enumerate(lines[1:], start=2):
        fields = text.split("\t")
        if len(fields) != 2:
            raise QEInputError(f"expected 2 tab-separated fields, found {len(fields)}", path, number)
        try:
            score = float(fields[1])
        except ValueError:
            raise QEInputError(f"score {fields[1]!r} is not a number", path, number) from None
        if not np.isfinite(score):
            raise QEInputError(f"score {fields[1]!r} is not a finite number", path, number)
        ids.append(fields[0])
        scores.append(score)
    return ids, np.array(scores)


def _check_metrics(metrics: dict[str, Any], path: Path) -> None:
    for split in ("test", "cv"):
        values = metrics.get(split)
        if values is None:
            continue
        if not isinstance(values, dict) or not all(
            isinstance(values.get(m), int | float) for m in METRICS_SHOWN
        ):
            raise QEInputError(
                f"corrupt metrics.json: {split!r} lacks numeric {', '.join(METRICS_SHOWN)}", path
            )
    if "cv" not in metrics and "test" not in metrics:
        raise QEInputError("corrupt metrics.json: neither 'test' nor 'cv' metrics", path)


def read_metrics(path: Path) -> dict[str, Any]:
    """A run's ``metrics.json``, refusing (one line naming it) anything but numeric test / CV metrics."""
    metrics = _read_json(path, "metrics.json")
    _check_metrics(metrics, path)
    return metrics


def _check_ablation(ablation: dict[str, Any], path: Path) -> None:
    systems = ablation.get("systems")
    if not isinstance(systems, dict) or not all(isinstance(s, dict) for s in systems.values()):
        raise QEInputError("corrupt ablation.json: 'systems' must map names to objects", path)


def _own_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` if it is a file of that folder, None if absent; a link leading out is refused."""
    path = folder / name
    if not path.is_file():
        return None
    if not path.resolve().is_relative_to(folder.resolve()):
        raise QEInputError(f"{name} is a link to a file outside {folder}, refusing to read it", path)
    return path


def load_run(run_dir: str | Path, ablation_dir: str | Path | None = None) -> RunDir:
    """Read a run directory (``metrics.json`` ...) and/or an ablation directory (``ablation.json``).

    ``ablation_dir`` names a separate ``qe ablate`` output whose results join the report; without
    it, an ``ablation.json`` inside ``run_dir`` is used when present.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise QEInputError("run directory not found", path)
    metrics_path = _own_file(path, "metrics.json")
    ablation_path = _own_file(path if ablation_dir is None else Path(ablation_dir), "ablation.json")
    if ablation_dir is not None and ablation_path is None:
        raise QEInputError("not an ablation directory (no ablation.json)", ablation_dir)
    if metrics_path is None and ablation_path is None:
        raise QEInputError("not a run directory (no metrics.json or ablation.json)", path)
    metrics = read_metrics(metrics_path) if metrics_path is not None else None
    ablation = None
    if ablation_path is not None:
        ablation = _read_json(ablation_path, "ablation.json")
        _check_ablation(ablation, ablation_path)
    config = None
    config_path = _own_file(path, "config.toml")
    if config_path is not None:
        try:
            config = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise QEInputError(f"corrupt config.toml: {exc}", config_path) from None
    predictions = None
    predictions_path = _own_file(path, "predictions.tsv")
    if metrics is not None and predictions_path is not None:
        predictions = read_predictions(predictions_path)
    selection = None
    if (selection_path := _own_file(path, "selection.json")) is not None:
        selection = _read_json(selection_path, "selection.json")
        if not isinstance(selection.get("path"), list):
            raise QEInputError("corrupt selection.json: no 'path' list", selection_path)
    model_text = None
    if (model_path := _own_file(path, "model.txt")) is not None:
        model_text = model_path.read_text(encoding="utf-8", errors="replace").rstrip("\n")
    return RunDir(path, config, metrics, predictions, selection, model_text, ablation)


def gold_labels(run: RunDir, data_dir: str | Path | None = None) -> np.ndarray | None:
    """The gold labels of the run's test split (from its config), aligned with ``predictions.tsv``.

    Returns None when the test split has no labels; raises ``QEInputError`` when the data cannot
    be read or does not match the predictions.
    """
    from qe.experiment import load_split_dataset

    if run.config is None or run.predictions is None:
        raise QEInputError("the run directory lacks config.toml or predictions.tsv", run.path)
    config = json.loads(json.dumps(run.config))  # a private copy
    if data_dir is not None:
        config.setdefault("data", {})["data_dir"] = str(data_dir)
    _check_data_paths(config, run.path, data_dir)
    try:
        dataset = load_split_dataset(config, "test")
    except KeyError as exc:
        raise QEInputError(
            f"config.toml lacks {exc} to find the test data", run.path / "config.toml"
        ) from None
    ids, _ = run.predictions
    if len(dataset) != len(ids):
        raise QEInputError(
            f"predictions.tsv has {len(ids)} rows but the test split has {len(dataset)}", run.path
        )
    if list(dataset.ids) != ids:
        raise QEInputError("predictions.tsv ids do not match the test split's ids", run.path)
    return None if dataset.labels is None else np.asarray(dataset.labels, dtype=np.float64)


def _check_data_paths(config: dict[str, Any], run_dir: Path, data_dir: str | Path | None) -> None:
    """Refuse test data named by config.toml outside the run directory and the data directory
    (``--data-dir``, else ``$QE_DATA_DIR``): an edited config.toml must not make a report read other files."""
    from qe.data import resolve_data_dir

    root = resolve_data_dir(data_dir)
    roots = (run_dir.resolve(), root.resolve())
    data = config.get("data", {}) if isinstance(config.get("data"), dict) else {}
    named = {f"data.test.{role}": value for role, value in (data.get("test") or {}).items()}
    if data_dir is None and "data_dir" in data:
        named["data.data_dir"] = data["data_dir"]
    for key, value in named.items():
        if not isinstance(value, str) or not any(Path(value).resolve().is_relative_to(r) for r in roots):
            raise QEInputError(
                f"config.toml names {key} = {value!r}, outside the run directory and the data "
                f"directory ({root}), so it is not read; pass --data-dir with the folder that holds it",
                run_dir / "config.toml",
            )


def _reason(exc: QEInputError) -> str:
    """An error as a report may show it: one pointing at a line of a file gives only the place (its
    message may quote that line, and a report is shared)."""
    if exc.line is None:
        return str(exc)
    return f"{exc.path}:{exc.line} could not be read (qe report printed why)"


# --------------------------------------------------------------------------- analyses


def label_bands(low: float, high: float, n: int = 4) -> list[tuple[float, float]]:
    """``n`` equal bands over ``[low, high]``: ``[1, 5]`` gives [1,2), [2,3), [3,4), [4,5]."""
    edges = np.linspace(low, high, n + 1)
    return [(float(a), float(b)) for a, b in itertools.pairwise(edges)]


def residuals_by_band(
    gold: np.ndarray, pred: np.ndarray, bands: list[tuple[float, float]]
) -> list[dict[str, Any]]:
    """Per gold-label band: count, mean residual (predicted - gold) and MAE; the last band is closed.

    Values of an empty band are NaN.
    """
    gold, pred = np.asarray(gold, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    rows = []
    for index, (low, high) in enumerate(bands):
        last = index == len(bands) - 1
        inside = (gold >= low) & ((gold <= high) if last else (gold < high))
        residual = pred[inside] - gold[inside]
        rows.append(
            {
                "band": f"[{low:g}, {high:g}{']' if last else ')'}",
                "low": low,
                "high": high,
                "n": int(inside.sum()),
                "mean_residual": float(residual.mean()) if residual.size else float("nan"),
                "MAE": float(np.abs(residual).mean()) if residual.size else float("nan"),
            }
        )
    return rows


def model_importances(run: RunDir) -> tuple[list[str], np.ndarray] | str:
    """``(feature names, importances)`` of a tree ensemble, else a sentence saying why there are none."""
    from qe.model import QEModel

    try:
        model_path = _own_file(run.path, "model.skops")
        if model_path is None:
            return "Feature importances are not available: the run directory has no model.skops."
        model = QEModel.load(model_path)
        built = model.estimator  # built by skops here (loading alone may read it as plain data)
    except QEInputError as exc:
        return f"Feature importances are not available: the model could not be loaded ({exc})."
    estimator = getattr(built, "best_estimator_", built)
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    values = getattr(final, "feature_importances_", None)
    if values is None or len(values) != len(model.feature_names):
        return (
            f"Feature importances are not available for {type(final).__name__}: it has no built-in "
            "importances, and permutation importance would need the feature table, which the run "
            "directory does not keep."
        )
    return list(model.feature_names), np.asarray(values, dtype=np.float64)


# --------------------------------------------------------------------------- plots (on given Axes)


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


def _path_label(step: dict[str, Any]) -> str:
    if step.get("feature") is None:
        return "(start)"
    return f"{step['feature']}{' (locally predictive)' if step.get('locally_predictive') else ''}"


def _subset_size(step: dict[str, Any]) -> int | None:
    if isinstance(step.get("n_features"), int):
        return step["n_features"]
    if isinstance(step.get("subset"), list):
        return len(step["subset"])
    return None


def selection_score_name(selection: dict[str, Any]) -> str:
    """What the ``score`` of a selection path step means for this selector."""
    selector = selection.get("selector", "")
    params = selection.get("params", {})
    if selector == "CFSSelector":
        return "CFS merit"
    if selector == "CorrelationSelector":
        return f"|{params.get('method', 'pearson')} r| with the label"
    if selector == "SequentialSelector":
        return f"CV {params.get('scoring', 'score')}"
    return "score"


def plot_selection_path(ax: Any, path: list[dict[str, Any]], score_name: str = "score") -> None:
    """The selector's score after each step, labelled with the feature added (or removed) there."""
    scores = [float(step["score"]) for step in path]
    x = np.arange(len(path))
    ax.plot(x, scores, marker="o", markersize=4, color="#4c72b0")
    labels = [f"{step.get('step', i)}. {_path_label(step)}" for i, step in enumerate(path)]
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
    axes: Any, systems: dict[str, dict[str, Any]], metrics: tuple[str, ...] = ("MAE", "DeltaAvg")
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
        better = "lower" if metric in ("MAE", "RMSE") else "higher"
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


# --------------------------------------------------------------------------- building the report


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "n/a" if not np.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


@dataclass
class Report:
    """A report before writing: its blocks and its figures (file name -> PNG bytes)."""

    title: str
    blocks: list[Block]
    figures: dict[str, bytes]
    notes: list[str]


def _name(run: RunDir) -> str:
    if run.config and isinstance(run.config.get("name"), str):
        return run.config["name"]
    if run.ablation and isinstance(run.ablation.get("config"), str):
        return run.ablation["config"]
    return run.path.name


def _overview(run: RunDir) -> list[Block]:
    blocks: list[Block] = []
    config = run.config or {}
    if config.get("description"):
        blocks.append(Para([str(config["description"])]))
    data = config.get("data", {})
    features = config.get("features", {})
    learner = config.get("learner", {})
    rows = []
    if data:
        rows.append(["data", data.get("dataset", "files named in config.toml")])
    if features:
        parts = list(features.get("sets", [])) + list(features.get("families", []))
        rows.append(["features", ", ".join(parts) or "data tables"])
    if config.get("selection"):
        rows.append(["selection", config["selection"].get("name", "?")])
    if learner:
        rows.append(["learner", learner.get("name", "?")])
    cv = (run.metrics or {}).get("cv", {})
    if "grid_best_params" in cv:
        best = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in cv["grid_best_params"].items()
        )
        rows.append(["hyperparameters (CV on train)", best])
    if "seconds" in (run.metrics or {}):
        rows.append(["run time (s)", _fmt(float(run.metrics["seconds"]), 1)])
    if rows:
        blocks.append(Table(["setting", "value"], rows))
    if run.metrics and run.metrics.get("signature"):
        blocks += [Para(["Signature:"]), Pre(str(run.metrics["signature"]))]
    return blocks


def _comparison(run: RunDir) -> list[Block]:
    metrics = run.metrics or {}
    name = _name(run)
    dataset = (run.config or {}).get("data", {}).get("dataset")
    columns = summary_columns(dataset)
    header = ["system", *(title for title, _ in columns)]

    def cells(values: dict[str, Any]) -> list[str]:
        return [_fmt(values.get(key)) if key in values else "n/a" for _, key in columns]

    rows, bold = [], set()
    if "test" in metrics:
        bold.add(len(rows))
        rows.append([f"{name} (ours, test)", *cells(metrics["test"])])
    if "cv" in metrics:
        folds = metrics["cv"].get("folds", "k")
        bold.add(len(rows))
        rows.append([f"{name} (ours, {folds}-fold CV on train)", *cells(metrics["cv"])])
    if "dev" in metrics:
        rows.append([f"{name} (ours, dev)", *cells(metrics["dev"])])
    against = metrics.get("against", {})
    for other, values in against.items():
        rows.append([f"{other} (ours, test)", *cells(values["test"])])
    published = (run.config or {}).get("report", {}).get("published", True) and dataset in PUBLISHED
    if published:
        for system, values in PUBLISHED[dataset].items():
            rows.append(
                [
                    f"{system} (published)",
                    *(_fmt(values[k], 2) if values.get(k) is not None else "n/a" for _, k in columns),
                ]
            )
    title = "Metrics beside the published WMT12 systems" if published else "Metrics"
    blocks: list[Block] = [Heading(title), Table(header, rows, bold)]
    if published:
        blocks.append(
            Para(
                [
                    "Published: WMT12 QE shared task, scoring sub-task (Callison-Burch et al. 2012). "
                    "MAE and RMSE follow the official scorer (errors rounded to two decimals); "
                    "Spearman (WMT12) is the official scorer's rank-difference formula."
                ]
            )
        )
    if against:
        tested = [
            bootstrap_key(k)
            for _, k in columns
            if all(bootstrap_key(k) in v["bootstrap"] for v in against.values())
        ]
        blocks += [
            Heading("Paired bootstrap against other systems", 3),
            Para(
                [
                    f"1,000 resamples of the test set; p = share of resamples in which {name} is not "
                    "better (p < 0.05: significantly better)."
                ]
            ),
            Table(
                ["against", *tested],
                [
                    [
                        other,
                        *(
                            f"{_fmt(t['a'])} vs {_fmt(t['b'])}, p {_fmt(t['p_value'])}"
                            for t in (values["bootstrap"][m] for m in tested)
                        ),
                    ]
                    for other, values in against.items()
                ],
            ),
        ]
    detail_rows = []
    for key in DETAIL_METRICS:
        values = [metrics.get(split, {}).get(key) for split in ("test", "cv")]
        if any(v is not None for v in values):
            detail_rows.append([key, *("-" if v is None else _fmt(v, 4) for v in values)])
    if detail_rows:
        blocks += [Heading("All metrics", 3), Table(["metric", "test", "CV on train"], detail_rows)]
    return blocks


def _errors_section(
    run: RunDir, gold: np.ndarray | None, reason: str | None, figures: dict[str, bytes]
) -> list[Block]:
    blocks: list[Block] = [Heading("Errors on the test set")]
    if gold is None or run.predictions is None:
        blocks.append(Para([reason or "No gold labels for the test set, so no error analysis."]))
        return blocks
    pred = run.predictions[1]
    bounds = _bounds(run, gold)
    figure, ax = new_figure(5.5, 5.5)
    plot_scatter(ax, gold, pred, bounds)
    figures["scatter.png"] = figure_png(figure)
    blocks.append(Image(f"{FIGURES_DIR}/scatter.png", "scatter plot of gold against predicted test scores"))
    rows = residuals_by_band(gold, pred, label_bands(*bounds))
    figure, ax = new_figure(6.5, 4.0)
    plot_residual_bands(ax, rows)
    figures["residual_bands.png"] = figure_png(figure)
    blocks += [
        Heading("Residuals by gold-label band", 3),
        Para(["Residual = predicted - gold: positive means the system over-estimates the score."]),
        Table(
            ["band", "n", "mean residual", "MAE"],
            [[r["band"], str(r["n"]), _fmt(r["mean_residual"]), _fmt(r["MAE"])] for r in rows],
        ),
        Image(f"{FIGURES_DIR}/residual_bands.png", "mean residual and MAE per gold-label band"),
    ]
    return blocks


def _bounds(run: RunDir, gold: np.ndarray) -> tuple[float, float]:
    data = (run.config or {}).get("data", {})
    if isinstance(data.get("label_range"), list) and len(data["label_range"]) == 2:
        return float(data["label_range"][0]), float(data["label_range"][1])
    from qe.data import DATASETS

    if data.get("dataset") in DATASETS:
        return DATASETS[data["dataset"]].label_range
    return float(gold.min()), float(gold.max())


def _selection_section(run: RunDir, figures: dict[str, bytes]) -> list[Block]:
    selection = run.selection
    if selection is None:
        return []
    path = selection["path"]
    score_name = selection_score_name(selection)
    params = ", ".join(f"{k}={v}" for k, v in sorted(selection.get("params", {}).items()))
    blocks: list[Block] = [
        Heading("Feature selection"),
        Para(
            [
                "Selector ",
                Code(str(selection.get("selector", "?"))),
                *([" with ", Code(params)] if params else []),
                f", fitted on the training data only: kept {selection.get('n_selected', '?')} of "
                f"{selection.get('n_features', '?')} features.",
            ]
        ),
    ]
    if path:
        sizes = [_subset_size(step) for step in path]
        has_n = any(size is not None for size in sizes)
        header = ["step", "feature", score_name] + (["features in the subset"] if has_n else [])
        rows = [
            [str(step.get("step", i)), _path_label(step), _fmt(float(step["score"]), 4)]
            + ([str(size) if size is not None else ""] if has_n else [])
            for i, (step, size) in enumerate(zip(path, sizes, strict=True))
        ]
        figure, ax = new_figure(min(16.0, 4.0 + 0.28 * len(path)), 4.8)
        plot_selection_path(ax, path, score_name)
        figures["selection_path.png"] = figure_png(figure)
        blocks += [Table(header, rows), Image(f"{FIGURES_DIR}/selection_path.png", "selection path")]
    selected = [str(name) for name in selection.get("selected", [])]
    if selected:
        blocks.append(Para(["Selected: ", Code(", ".join(selected))]))
    return blocks


def _model_section(run: RunDir, figures: dict[str, bytes]) -> list[Block]:
    if run.metrics is None:
        return []
    blocks: list[Block] = [Heading("Model")]
    if run.model_text is not None:
        blocks += [
            Para(["The M5P model tree (splits and the linear models at its leaves):"]),
            Pre(run.model_text),
        ]
        return blocks
    found = model_importances(run)
    if isinstance(found, str):
        blocks.append(Para([found]))
        return blocks
    names, values = found
    figure, ax = new_figure(7.0, 1.5 + 0.25 * min(TOP_IMPORTANCES, len(names)))
    plot_importances(ax, names, values)
    figures["importances.png"] = figure_png(figure)
    order = np.argsort(-values, kind="stable")[:TOP_IMPORTANCES]
    blocks += [
        Table(["feature", "importance"], [[names[i], _fmt(float(values[i]), 4)] for i in order]),
        Image(f"{FIGURES_DIR}/importances.png", "feature importances"),
    ]
    return blocks


def _ablation_section(run: RunDir, figures: dict[str, bytes]) -> list[Block]:
    if run.ablation is None:
        return []
    systems: dict[str, dict[str, Any]] = run.ablation["systems"]
    boot_metrics: list[str] = []
    for system in systems.values():
        for metric in system.get("bootstrap_vs_full", system.get("bootstrap", {})):
            if metric not in boot_metrics:
                boot_metrics.append(metric)
    columns = summary_columns((run.config or {}).get("data", {}).get("dataset"))
    header = ["system", "features", "CV MAE", *(f"test {title}" for title, _ in columns)]
    header += [f"p ({m} vs full)" for m in boot_metrics]
    rows = []
    for name, system in systems.items():
        cv, test = system.get("cv", {}), system.get("test", {})
        boot = system.get("bootstrap_vs_full", system.get("bootstrap", {}))
        row = [name, str(system.get("n_features", "?")), _fmt(cv["MAE"]) if "MAE" in cv else "n/a"]
        row += [_fmt(float(test[k])) if k in test else "n/a" for _, k in columns]
        row += [_fmt(float(boot[m]["p_value"])) if m in boot else "-" for m in boot_metrics]
        rows.append(row)
    blocks: list[Block] = [
        Heading("Ablation"),
        Para(
            [
                "Every feature family left out (without:F) and alone (only:F), each with hyperparameters "
                "chosen by CV on train. p is the paired-bootstrap share of resamples in which the system "
                "is not better than the full one."
            ]
        ),
        Table(header, rows, {i for i, n in enumerate(systems) if n == "full"}),
    ]
    tested = [n for n, s in systems.items() if all(m in s.get("test", {}) for m in ("MAE", "DeltaAvg"))]
    if tested:
        shown = {n: systems[n] for n in tested}
        figure, axes = new_figure(10.0, 1.5 + 0.4 * len(shown), ncols=2)
        plot_ablation(axes, shown)
        figures["ablation.png"] = figure_png(figure)
        blocks.append(Image(f"{FIGURES_DIR}/ablation.png", "test MAE and DeltaAvg of the ablation systems"))
    return blocks


def build_report(
    run_dir: str | Path, *, data_dir: str | Path | None = None, ablation_dir: str | Path | None = None
) -> Report:
    """Read a run directory and build the report's blocks and figures (nothing is written)."""
    run = load_run(run_dir, ablation_dir)
    figures: dict[str, bytes] = {}
    notes: list[str] = []
    title = f"Quality estimation run: {_name(run)}"
    blocks: list[Block] = [Heading(title, 1), *_overview(run)]
    if run.metrics is not None:
        blocks += _comparison(run)
        gold, reason = None, None
        if run.predictions is None:
            reason = "The run directory has no predictions.tsv, so no error analysis."
        else:
            try:
                gold = gold_labels(run, data_dir)
            except QEInputError as exc:
                reason = f"Gold labels could not be read, so no error analysis: {_reason(exc)}"
                notes.append(f"Gold labels could not be read, so no error analysis: {exc}")
        blocks += _errors_section(run, gold, reason, figures)
    blocks += _selection_section(run, figures)
    blocks += _model_section(run, figures)
    blocks += _ablation_section(run, figures)
    return Report(title, blocks, figures, notes)


# --------------------------------------------------------------------------- rendering


def _md_inline(parts: list[Inline]) -> str:
    out = []
    for part in parts:
        if isinstance(part, Code):
            ticks = "`"
            while ticks in part.text:
                ticks += "`"
            pad = " " if part.text.startswith("`") or part.text.endswith("`") else ""
            out.append(f"{ticks}{pad}{part.text}{pad}{ticks}")
        else:
            out.append(_md_text(part))
    return "".join(out)


MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\|<>*`"})


def _md_text(text: str) -> str:
    """Plain text for Markdown: characters that would start markup or HTML are backslash-escaped."""
    return text.translate(MD_SPECIAL)


def _md_cell(text: str) -> str:
    return _md_text(text).replace("\n", " ")


def render_markdown(blocks: list[Block]) -> str:
    """The report as GitHub-flavoured Markdown."""
    chunks = []
    for block in blocks:
        if isinstance(block, Heading):
            chunks.append(f"{'#' * block.level} {_md_text(block.text)}")
        elif isinstance(block, Para):
            chunks.append(_md_inline(block.parts))
        elif isinstance(block, Table):
            lines = ["| " + " | ".join(_md_cell(h) for h in block.header) + " |"]
            lines.append("|" + "---|" * len(block.header))
            for index, row in enumerate(block.rows):
                cells = [_md_cell(c) for c in row]
                if index in block.bold_rows:
                    cells[0] = f"**{cells[0]}**"
                lines.append("| " + " | ".join(cells) + " |")
            chunks.append("\n".join(lines))
        elif isinstance(block, Image):
            chunks.append(f"![{_md_cell(block.alt)}]({block.file})")
        elif isinstance(block, Pre):
            fence = "```"
            while fence in block.text:
                fence += "`"
            chunks.append(f"{fence}\n{block.text}\n{fence}")
    return "\n\n".join(chunks) + "\n"


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child, th:first-child { text-align: left; }
tr.ours td { font-weight: bold; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
img { max-width: 100%; }
"""


def _html_inline(parts: list[Inline]) -> str:
    return "".join(
        f"<code>{html.escape(p.text)}</code>" if isinstance(p, Code) else html.escape(p) for p in parts
    )


def render_html(blocks: list[Block], title: str) -> str:
    """The report as one HTML page (also well-formed XML); figures are linked relatively."""
    body = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            body.append(f"<p>{_html_inline(block.parts)}</p>")
        elif isinstance(block, Table):
            lines = ["<table>", "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in block.header)]
            lines.append("</tr></thead>")
            lines.append("<tbody>")
            for index, row in enumerate(block.rows):
                attribute = ' class="ours"' if index in block.bold_rows else ""
                cells = "".join(f"<td>{html.escape(c)}</td>" for c in row)
                lines.append(f"<tr{attribute}>{cells}</tr>")
            lines.append("</tbody></table>")
            body.append("\n".join(lines))
        elif isinstance(block, Image):
            src, alt = html.escape(block.file), html.escape(block.alt)
            body.append(f'<figure><img src="{src}" alt="{alt}" /></figure>')
        elif isinstance(block, Pre):
            body.append(f"<pre>{html.escape(block.text)}</pre>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def write_report(
    run_dir: str | Path,
    *,
    data_dir: str | Path | None = None,
    ablation_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Write ``report.md``, ``report.html`` and ``report_files/*.png`` into the run directory (or
    ``out_dir``).

    Returns ``{"markdown": path, "html": path, "figures": [paths], "notes": [...]}``; each file is
    written atomically, figures first so the pages never link a missing image.
    """
    run_dir = Path(run_dir)
    report = build_report(run_dir, data_dir=data_dir, ablation_dir=ablation_dir)
    target = run_dir if out_dir is None else Path(out_dir)
    try:
        return _write(report, target)
    except OSError as exc:
        raise QEInputError(
            f"cannot write the report here ({exc.strerror or type(exc).__name__}); "
            "pass --out DIR to write it elsewhere",
            target,
        ) from None


def _write(report: Report, run_dir: Path) -> dict[str, Any]:
    figures_dir = run_dir / FIGURES_DIR
    written = []
    for name, data in report.figures.items():
        with atomic_write(figures_dir / name, "wb") as handle:
            handle.write(data)
        written.append(figures_dir / name)
    for stale in FIGURE_NAMES:  # figures of an earlier report that this one no longer has
        path = figures_dir / f"{stale}.png"
        if f"{stale}.png" not in report.figures and path.is_file():
            path.unlink()
    write_text_atomic(run_dir / "report.md", render_markdown(report.blocks))
    write_text_atomic(run_dir / "report.html", render_html(report.blocks, report.title))
    return {
        "markdown": run_dir / "report.md",
        "html": run_dir / "report.html",
        "figures": written,
        "notes": report.notes,
    }
