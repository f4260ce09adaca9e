"""``qe compare RUN_DIR...``: test metrics of several runs (beside the published systems of their
dataset, when it has them: WMT12 en-es)."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from qe.commands import Command, register_command
from qe.evaluation.published import comparison_table
from qe.infra.errors import QEInputError
from qe.infra.io import parse_bounded


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe compare``."""
    parser.add_argument("runs", nargs="+", type=Path, help="run directories written by `qe run`")


COMMAND = register_command(
    Command(
        name="compare",
        help="print the test metrics of runs beside the published table",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def run_labels(runs: list[Path]) -> list[str]:
    """Names that tell the runs apart: each run's shortest trailing path that no other run shares
    (``runs/a/x`` and ``runs/b/x`` -> ``a/x`` and ``b/x``); a run given twice gets ``#2``."""
    parts = [run.resolve().parts for run in runs]
    labels = []
    for index, mine in enumerate(parts):
        others = [theirs for theirs in parts if theirs != mine]
        size = 1
        while size < len(mine) and any(theirs[-size:] == mine[-size:] for theirs in others):
            size += 1
        label = "/".join(mine[-size:]) or str(runs[index])
        repeat = parts[:index].count(mine)
        labels.append(f"{label} #{repeat + 1}" if repeat else label)
    return labels


def run_dataset(run_dir: Path) -> str | None:
    """The registered dataset a run used (from its resolved config.toml, never through a link out of
    the run), None for files."""
    from qe.report.rundir import own_file

    path = own_file(run_dir, "config.toml")
    if path is None:
        return None
    try:
        config = parse_bounded(tomllib.loads, path.read_text(encoding="utf-8"), path, "config.toml")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    dataset = config.get("data", {}).get("dataset") if isinstance(config.get("data"), dict) else None
    return dataset if isinstance(dataset, str) else None


def run(args: argparse.Namespace) -> int:
    from qe.report import read_metrics
    from qe.report.rundir import own_file

    ours = {}
    datasets = {run_dataset(run_dir) for run_dir in args.runs}
    for run_dir, label in zip(args.runs, run_labels(args.runs), strict=True):
        path = own_file(run_dir, "metrics.json")  # a link out of the run is refused
        if path is None:
            raise QEInputError("not a run directory (no metrics.json)", run_dir)
        metrics = read_metrics(path)
        if "test" not in metrics:
            raise QEInputError("run has no test metrics", path)
        ours[label] = metrics["test"]
    # one dataset: its columns and published systems; runs on different data: no published table
    print(comparison_table(ours, datasets.pop() if len(datasets) == 1 else None))
    return 0
