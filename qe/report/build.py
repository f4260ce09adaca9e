"""The report's sections, built from a run directory as document blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from qe.evaluation.metrics import HEADLINE_METRICS, METRICS
from qe.evaluation.published import PUBLISHED, bootstrap_key, summary_columns
from qe.infra.errors import QEInputError
from qe.infra.outputs import REPORT_FIGURE_NAMES, REPORT_FIGURES
from qe.report.analyses import label_bands, model_importances, residuals_by_band
from qe.report.blocks import Block, Code, Heading, Image, Para, Pre, Report, Table
from qe.report.plots import (
    TOP_IMPORTANCES,
    figure_png,
    new_figure,
    path_label,
    plot_ablation,
    plot_importances,
    plot_residual_bands,
    plot_scatter,
    plot_selection_path,
    selection_score_name,
    subset_size,
)
from qe.report.rundir import RunDir, error_reason, gold_labels, load_run
from qe.report.wordbuild import build_word_report
from qe.report.wordrun import is_word_run

FIGURES_DIR = REPORT_FIGURES
FIGURE_NAMES = REPORT_FIGURE_NAMES
DETAIL_METRICS = tuple(METRICS)


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "n/a" if not np.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


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
        sizes = [subset_size(step) for step in path]
        has_n = any(size is not None for size in sizes)
        header = ["step", "feature", score_name] + (["features in the subset"] if has_n else [])
        rows = [
            [str(step.get("step", i)), path_label(step), _fmt(float(step["score"]), 4)]
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
    tested = [n for n, s in systems.items() if all(m in s.get("test", {}) for m in HEADLINE_METRICS)]
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
    """Read a run directory and build the report's blocks and figures (nothing is written); a
    word-level run's is :func:`~qe.report.wordbuild.build_word_report`."""
    if is_word_run(run_dir):
        if ablation_dir is not None:
            raise QEInputError("is a word-level run: qe ablate's results do not join its report", run_dir)
        return build_word_report(run_dir)
    run = load_run(run_dir, ablation_dir)
    try:
        return _build(run, data_dir)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # A run directory qe wrote never gets here; an edited or damaged one does: one line, no text
        # of its files (they may hold anything)
        files = "metrics.json, config.toml, predictions.tsv" + (" or ablation.json" if run.ablation else "")
        raise QEInputError(
            f"cannot build the report: {files} holds a value of the wrong type ({type(exc).__name__})",
            run.path,
        ) from None


def _build(run: RunDir, data_dir: str | Path | None) -> Report:
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
                reason = f"Gold labels could not be read, so no error analysis: {error_reason(exc)}"
                notes.append(f"Gold labels could not be read, so no error analysis: {exc}")
        blocks += _errors_section(run, gold, reason, figures)
    blocks += _selection_section(run, figures)
    blocks += _model_section(run, figures)
    blocks += _ablation_section(run, figures)
    return Report(title, blocks, figures, notes)
