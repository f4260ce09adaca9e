"""``qe compare RUN_DIR...``: test metrics of several runs beside the published WMT12 systems."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qe.errors import QEInputError
from qe.published import comparison_table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="print the test metrics of runs beside the published table"
    )
    parser.add_argument("runs", nargs="+", type=Path, help="run directories written by `qe run`")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ours = {}
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
    print(comparison_table(ours))
    return 0
