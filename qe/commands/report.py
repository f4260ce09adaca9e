"""``qe report RUN_DIR``: report.md and report.html with the metrics, published systems and figures (a
word-level run's: per-tag metrics, confusion tables, the words most often BAD)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qe.commands import Command, register_command


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe report``."""
    parser.add_argument(
        "run_dir", type=Path, help="run directory written by `qe run` (sentence or word level) or `qe ablate`"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="folder with the datasets (default: $QE_DATA_DIR); the report reads test data only from "
        "here and from the run directory (a word-level run's report reads only the run directory)",
    )
    parser.add_argument(
        "--ablation", type=Path, metavar="DIR", help="add the results of a `qe ablate` output directory"
    )
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="write the report into DIR instead of the run directory"
    )


COMMAND = register_command(
    Command(
        name="report",
        help="write report.md and report.html (metrics, published systems, figures) into a run directory",
        description="Read a run directory written by `qe run` (or `qe ablate`) and write report.md, "
        "report.html and PNG figures in report_files/ into it. A word-level run's report (a [words] config) "
        "has per-tag metrics, confusion tables and the words most often BAD, and no figures.",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def run(args: argparse.Namespace) -> int:
    from qe.report import write_report

    written = write_report(args.run_dir, data_dir=args.data_dir, ablation_dir=args.ablation, out_dir=args.out)
    for note in written["notes"]:
        print(f"qe: warning: {note}", file=sys.stderr)
    print(f"report: {written['markdown']}")
    print(f"report: {written['html']}")
    if written["figures"]:
        print(f"figures: {len(written['figures'])} in {written['markdown'].parent / 'report_files'}")
    return 0
