"""``qe compare RUN_DIR...``: test metrics of several runs (beside the published systems of their
dataset, when it has them: WMT12 en-es)."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

from qe.errors import QEInputError
from qe.published import comparison_table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="print the test metrics of runs beside the published table"
    )
    parser.add_argument("runs", nargs="+", type=Path, help="run directories written by `qe run`")
    parser.set_defaults(func=run)


def run_dataset(run_dir: Path) -> str | None:
    """The registered dataset a run used (from its resolved config.toml), None for files."""
    try:
        config = tomllib.loads((run_dir / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    dataset = config.get("data", {}).get("dataset") if isinstance(config.get("data"), dict) else None
    return dataset if isinstance(dataset, str) else None


def run(args: argparse.Namespace) -> int:
    ours = {}
    datasets = {run_dataset(run_dir) for run_dir in args.runs}
    for run_dir in args.runs:
        path = run_dir / "metrics.json"
        if not path.is_file():
            raise QEInputError("not a run directory (no metrics.json)", run_dir)
        try:
            metrics = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise QEInputError(f"corrupt metrics.json: {exc}", path) from None
        if "test" not in metrics:
            raise QEInputError("run has no test metrics", path)
        ours[run_dir.name] = metrics["test"]
    # one dataset: its columns and published systems; runs on different data: no published table
    print(comparison_table(ours, datasets.pop() if len(datasets) == 1 else None))
    return 0
