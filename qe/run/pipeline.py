"""``qe run``: the stages in order around one context, from a config to a run directory."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from qe.config.experiment import ExperimentConfig
from qe.data.splits import dev_repeats, pool_info
from qe.infra.errors import QEInputError
from qe.infra.io import write_text_atomic
from qe.infra.outputs import staged_dir
from qe.infra.workers import exit_with_parent_everywhere
from qe.learners.factory import describe
from qe.run.against import against_config, compared
from qe.run.context import RunContext
from qe.run.evaluate import fit_and_evaluate
from qe.run.extraction import SplitData, build_split, check_families
from qe.run.fit import FittedSystem
from qe.run.persist import config_inputs, signature, write_run
from qe.run.selection import select_features


def run_experiment(
    config: ExperimentConfig,
    output_dir: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = True,
    inputs: Iterable[str | Path] = (),
) -> dict[str, Any]:
    """Train on the training split (choices by CV), evaluate on test, write the run directory.

    ``inputs`` are further files the run reads (e.g. the config file): the output never holds one.
    """
    exit_with_parent_everywhere()
    protected = [*inputs, *config_inputs(config)]
    with staged_dir(output_dir, "run", overwrite=overwrite, inputs=protected) as staging:
        return _run(RunContext(config, progress), staging)


def _run(ctx: RunContext, out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    config = ctx.config
    train, test, fitted, selection = fit_system(ctx)
    if selection is not None:
        write_text_atomic(out / "selection.json", json.dumps(selection, indent=2) + "\n")
    metrics = fitted.metrics
    gold = test.dataset.labels
    if config.report.against and gold is not None:
        metrics["against"] = {}
        for entry in config.report.against:
            _, _, other, _ = fit_system(ctx.system(against_config(config, entry)))
            metrics["against"][entry.name] = compared(gold, fitted.test_pred, other)
    splits = (("train", train), ("dev", fitted.dev), ("test", test))
    tables = {name: split.table_sha256 for name, split in splits if split is not None and split.table_sha256}
    sig = signature(ctx, describe(fitted.estimator), tables)
    metrics["signature"] = sig
    if config.data.pooled:
        metrics["pooled"] = pool_info(config.data)
    metrics["seconds"] = round(time.perf_counter() - started, 3)
    metrics["extraction_seconds"] = {"train": train.extraction_seconds, "test": test.extraction_seconds}
    write_run(ctx, out, sig, train, test, fitted)
    return metrics


def fit_system(ctx: RunContext) -> tuple[SplitData, SplitData, FittedSystem, dict[str, Any] | None]:
    """One system through the stages: check the families' pieces, load the splits, make the learner,
    build the feature tables, select features (if configured), fit and evaluate. Returns
    ``(train, test, fitted, selection report)``."""
    config = ctx.config
    check_families(ctx)  # before any extraction, as the overlap and learner checks below
    dev_rows, repeats = None, []
    if config.data.has_dev:  # a dev split repeating many training pairs is refused at once
        repeats = dev_repeats(ctx.dataset("train"), ctx.dataset("dev"), config.data.allow_overlap)
        dev_rows = len(ctx.dataset("dev")) - len(repeats)
    ctx.learner(len(ctx.dataset("train")), dev_rows)  # made now: a bad parameter is refused before extraction
    if config.selection is not None:
        ctx.selector()  # the same
    train = build_split(ctx, "train")
    if train.dataset.labels is None:
        given = config.data.files("train")
        where = given.get("table") or given.get("features") or given.get("src") or config.config_file
        hint = (
            " (a table's labels are in its 'score' column, or the one label_column names)"
            if "table" in given
            else ""
        )
        raise QEInputError(f"the training split has no labels{hint}", where)
    dev = build_split(ctx, "dev") if config.data.has_dev else None
    if dev is not None and repeats:
        dev = dev.without(repeats)
    test = build_split(ctx, "test")
    _check_columns(config, train, dev, test)
    report = None
    if config.selection is not None:
        selected, report = select_features(ctx, train)
        for split in (train, dev, test):
            if split is not None:
                split.features = split.features[selected]
    return train, test, fit_and_evaluate(ctx, train, test, dev), report


def _check_columns(
    config: ExperimentConfig, train: SplitData, dev: SplitData | None, test: SplitData
) -> None:
    """Refuse a dev or test split whose feature columns are not the training split's, in order."""
    ours = list(train.features.columns)
    for name, other in (("dev", dev), ("test", test)):
        theirs = [] if other is None else list(other.features.columns)
        if other is not None and theirs != ours:
            at = next(
                (i for i, pair in enumerate(zip(theirs, ours, strict=False)) if pair[0] != pair[1]), None
            )
            first = (
                f"column {at + 1} is {theirs[at]!r} there and {ours[at]!r} in train"
                if at is not None
                else f"{len(theirs)} vs {len(ours)} columns"
            )
            raise QEInputError(
                f"the {name} split's feature columns differ from the training split's: {first} "
                "(do both name the same kind of feature table?)",
                config.data.files(name).get("features"),
            )
