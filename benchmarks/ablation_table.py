"""The ablation table of docs/results-wmt12.md: ``qe ablate``'s record of every system, with its run
signature.

Reads the ``ablation.json`` that ``qe ablate configs/ablation-wmt12.toml`` wrote to ``--run`` (a
missing one is measured first, about 9 minutes on 2 idle cores) and prints it with the commit and the
config's path: the record ``docs/ablation-table.json`` keeps. ``scripts/update_readme.py`` writes the
page's table from it (``qe.run.ablation.ablation_table``, what ``qe ablate`` prints) and
``benchmarks/reproduce_row.py --table ablation --row only:lm`` measures one row again from a clean cache.

    python benchmarks/ablation_table.py [--run runs/ablation-wmt12] > docs/ablation-table.json
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

CONFIG = "configs/ablation-wmt12.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", type=Path, default=REPO / "runs" / "ablation-wmt12", help="qe ablate's output"
    )
    args = parser.parse_args()
    if not (args.run / "ablation.json").is_file():
        command = [sys.executable, "-m", "qe", "ablate", CONFIG, "--output-dir", str(args.run), "--quiet"]
        subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    result = json.loads((args.run / "ablation.json").read_text(encoding="utf-8"))
    print(json.dumps({"commit": git_commit(), "config_file": CONFIG, **result}, indent=2))


if __name__ == "__main__":
    main()
