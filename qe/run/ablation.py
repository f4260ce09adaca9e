"""Ablations: for every feature family, the system without it and the family alone, vs the full system."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from qe.config.experiment import ExperimentConfig
from qe.config.rules import is_count
from qe.evaluation.metrics import HEADLINE_METRICS, paired_bootstrap
from qe.evaluation.published import summary_columns
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, write_text_atomic
from qe.infra.outputs import staged_dir
from qe.infra.workers import exit_with_parent_everywhere
from qe.learners.factory import describe
from qe.run.config import dump_config
from qe.run.context import RunContext
from qe.run.evaluate import fit_and_evaluate
from qe.run.extraction import SplitData, build_split
from qe.run.persist import config_inputs, signature

BOOTSTRAP_METRICS = HEADLINE_METRICS
# p-values come in steps of 1 / samples: with fewer than 20 none could fall below 0.05.
MIN_BOOTSTRAP_SAMPLES = 20
MAX_BOOTSTRAP_SAMPLES = 1_000_000  # beyond this the test runs for hours to move the fourth decimal


def family_groups(columns: list[str]) -> dict[str, list[str]]:
    """Columns grouped by family: the part of ``family.feature`` before the first dot."""
    groups: dict[str, list[str]] = {}
    for column in columns:
        groups.setdefault(column.split(".", 1)[0], []).append(column)
    return groups


def _restrict(split: SplitData, columns: list[str]) -> SplitData:
    return SplitData(dataset=split.dataset, features=split.features[columns])


def ablation_variants(groups: dict[str, list[str]]) -> dict[str, list[str]]:
    """System name -> columns: ``full``, then ``without:F`` and ``only:F`` for each family F."""
    every = [c for cols in groups.values() for c in cols]
    variants = {"full": every}
    if len(groups) > 1:
        for name, cols in groups.items():
            variants[f"without:{name}"] = [c for c in every if c not in set(cols)]
            variants[f"only:{name}"] = list(cols)
    return variants


def chosen_variants(variants: dict[str, list[str]], systems: Iterable[str] | None) -> dict[str, list[str]]:
    """``full`` and the asked-for ``systems`` of ``variants`` (all of them without a choice)."""
    if systems is None:
        return variants
    unknown = [name for name in systems if name not in variants]
    if unknown:
        raise QEInputError(
            f"--systems: no system {unknown[0]!r} in this ablation (systems: {', '.join(variants)})"
        )
    return {name: columns for name, columns in variants.items() if name == "full" or name in systems}


def variant_signature(ctx: RunContext, name: str, estimator: Any, train: SplitData, test: SplitData) -> str:
    """The signature ``qe run`` writes for the run's config (``qe.run.persist.signature``, with the learner
    as fitted on this variant), and ``variant:<name>`` after its features: what one row measured."""
    tables = {
        split: data.table_sha256 for split, data in (("train", train), ("test", test)) if data.table_sha256
    }
    parts = signature(ctx, describe(estimator), tables=tables).split("|")
    at = next(k for k, part in enumerate(parts) if part.startswith("features:"))
    return "|".join([*parts[: at + 1], f"variant:{name}", *parts[at + 1 :]])


def check_bootstrap_samples(bootstrap_samples: int) -> None:
    """Refuse a number of bootstrap resamples outside 20 to 1,000,000 (one line naming the option)."""
    if not (
        is_count(bootstrap_samples, MIN_BOOTSTRAP_SAMPLES) and bootstrap_samples <= MAX_BOOTSTRAP_SAMPLES
    ):
        raise QEInputError(
            f"--bootstrap-samples must be an integer from {MIN_BOOTSTRAP_SAMPLES} to "
            f"{MAX_BOOTSTRAP_SAMPLES:,} (p-values come in steps of 1/samples; 1000 is usual), "
            f"got {bootstrap_samples!r}"
        )


def run_ablation(
    config: ExperimentConfig,
    output_dir: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = True,
    bootstrap_samples: int = 1000,
    inputs: Iterable[str | Path] = (),
    systems: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Fit every variant (hyperparameters by CV on train), test each against the full system. The
    variants share one run context: the splits, bundle, families and learner are made once.

    ``inputs`` are further files the ablation reads (e.g. the config file): the output never holds one.
    ``systems``: only these variants (and the full one), e.g. to measure one row again. Each system
    keeps its run signature (:func:`variant_signature`).
    """
    check_bootstrap_samples(bootstrap_samples)
    unsupported = [
        what
        for what, given in (("[selection]", config.selection), ("a dev split", config.data.has_dev))
        if given
    ]
    if unsupported:
        raise QEInputError(
            f"qe ablate fits every variant by CV on train with all its features: it does not apply "
            f"{' or '.join(unsupported)}; remove it from the config (qe run applies it)",
            config.config_file,
        )
    exit_with_parent_everywhere()
    protected = [*inputs, *config_inputs(config)]
    with staged_dir(output_dir, "ablation", overwrite=overwrite, inputs=protected) as staging:
        ctx = RunContext(config, progress)
        train, test = build_split(ctx, "train"), build_split(ctx, "test")
        groups = family_groups(list(train.features.columns))
        if len(groups) < 2:
            raise QEInputError(
                f"nothing to ablate: every feature belongs to one family ({next(iter(groups))}); "
                "an ablation leaves out and keeps one family at a time, so it needs two or more",
                config.config_file,
            )
        variants = chosen_variants(ablation_variants(groups), systems)
        results: dict[str, Any] = {}
        predictions: dict[str, np.ndarray] = {}
        fitted_by_columns: dict[tuple[str, ...], Any] = {}
        for name, columns in variants.items():
            key = tuple(sorted(columns))
            if key not in fitted_by_columns:  # with two families, without:A is only:B
                if progress:
                    print(f"ablation: {name} ({len(columns)} features)", flush=True)
                fitted_by_columns[key] = fit_and_evaluate(
                    ctx, _restrict(train, columns), _restrict(test, columns)
                )
            fitted = fitted_by_columns[key]
            predictions[name] = fitted.test_pred
            results[name] = {"n_features": len(columns), **fitted.metrics}
            results[name]["signature"] = variant_signature(ctx, name, fitted.estimator, train, test)
        gold = test.dataset.labels
        if gold is not None:
            for name in variants:
                if name == "full":
                    continue
                results[name]["bootstrap_vs_full"] = {
                    metric: paired_bootstrap(
                        gold, predictions[name], predictions["full"], metric, n_samples=bootstrap_samples
                    ).as_dict()
                    for metric in BOOTSTRAP_METRICS
                }
        result = {"config": config.name, "dataset": config.data.dataset, "systems": results}
        write_text_atomic(staging / "config.toml", dump_config(config))
        write_text_atomic(staging / "ablation.json", json.dumps(result, indent=2) + "\n")
        write_text_atomic(staging / "ablation.md", ablation_table(result) + "\n")
        save_ablation_chart(result, staging / "ablation.png")
    return result


def ablation_table(result: dict[str, Any]) -> str:
    """Markdown: CV and test metrics per system, and the bootstrap p-value against the full system."""
    shown = summary_columns(result.get("dataset"))
    head = "| system | features | " + " | ".join(f"CV {m}" for m in HEADLINE_METRICS) + " | "
    head += " | ".join(f"test {t}" for t, _ in shown)
    head += "".join(f" | p ({m} vs full)" for m in BOOTSTRAP_METRICS) + " |"
    lines = [head, "|---" * (2 + len(HEADLINE_METRICS) + len(shown) + len(BOOTSTRAP_METRICS)) + "|"]
    for name, system in result["systems"].items():
        cv, test = system["cv"], system.get("test", {})
        cells = [name, str(system["n_features"]), *(f"{cv[m]:.3f}" for m in HEADLINE_METRICS)]
        cells += [f"{test[k]:.3f}" if k in test else "n/a" for _, k in shown]
        boot = system.get("bootstrap_vs_full", {})
        # p_value: share of resamples where this system is not better than the full one.
        cells += [f"{boot[m]['p_value']:.3f}" if m in boot else "-" for m in BOOTSTRAP_METRICS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def save_ablation_chart(result: dict[str, Any], path: Path) -> None:
    """The ablation chart of ``qe.report`` (test MAE and DeltaAvg per system) as a PNG."""
    from qe.report import figure_png, new_figure, plot_ablation

    systems = {n: s for n, s in result["systems"].items() if "test" in s}
    if not systems:
        return
    figure, axes = new_figure(10, 0.45 * len(systems) + 1.5, ncols=2)
    plot_ablation(axes, systems)
    with atomic_write(path, "wb") as handle:
        handle.write(figure_png(figure))
