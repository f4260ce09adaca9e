"""The WMT12 systems of the result tables (docs/results-wmt12.md, the README's demo table): their test
and CV numbers and run signatures.

Reads the run directory ``qe run`` wrote for each system (``<runs>/wmt12-<system>``; a missing one
is run first, as ``make demo`` runs them) and prints JSON: ``{"commit", "systems": {"<system>":
{"config", "test": {MAE, RMSE, DeltaAvg, Spearman}, "cv": {MAE}, "signature"}}}``, the record
``docs/wmt12-table.json`` keeps. ``scripts/update_readme.py`` writes those rows from it and
``benchmarks/reproduce_row.py --table wmt12 --row <system>`` rebuilds one from a clean cache.

    python benchmarks/wmt12_table.py [--runs runs] > docs/wmt12-table.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from mlqe_table import git_commit  # noqa: E402

SYSTEMS = ("official-svr", "official-m5p", "extracted-svr", "best", "best-rawtext")
TEST_METRICS = ("MAE", "RMSE", "DeltaAvg", "Spearman")


def record(system: str, runs: Path) -> dict:
    """One system's entry, from its run directory (run first when missing)."""
    config = f"configs/wmt12-{system}.toml"
    out = runs / f"wmt12-{system}"
    if not (out / "metrics.json").is_file():
        command = [sys.executable, "-m", "qe", "run", config, "--output-dir", str(out), "--quiet"]
        subprocess.run(command, cwd=REPO, check=True, stdout=sys.stderr)  # stdout is the record
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return {
        "config": config,
        "test": {name: round(metrics["test"][name], 6) for name in TEST_METRICS},
        "cv": {"MAE": round(metrics["cv"]["MAE"], 6)},
        "signature": (out / "signature.txt").read_text(encoding="utf-8").strip(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=REPO / "runs", help="folder of the run directories")
    args = parser.parse_args()
    table = {"commit": git_commit(), "systems": {system: record(system, args.runs) for system in SYSTEMS}}
    print(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
