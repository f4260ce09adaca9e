"""In-sample against cross-fitted training-split resources on MLQE-PE en-de (HTER).

Builds ``configs/resources-mlqe-pe-en-de.toml`` twice, with ``cross_fit = false`` (LMs, n-grams and
IBM1 built from all 7,000 training pairs, which then score themselves) and as configured
(``cross_fit = 5``), runs ``configs/mlqe-pe-en-de-lm-ibm1.toml`` (baseline17 + lm + ibm1, SVR tuned
by 5-fold CV) on each, and prints CV and test20 Pearson / MAE as a markdown table. In-sample tables
make the training features look better than any new text's: CV high, test low; cross-fitted ones
keep the two honest.

    python benchmarks/crossfit_en_de.py [--data-dir DIR] [--work runs/crossfit-en-de]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import tomli_w

REPO = Path(__file__).resolve().parents[1]
BUNDLE_CONFIG = REPO / "configs" / "resources-mlqe-pe-en-de.toml"
RUN_CONFIG = REPO / "configs" / "mlqe-pe-en-de-lm-ibm1.toml"
VARIANTS = {"in-sample": False, "cross-fitted (5 folds)": 5}


def qe(*args: str, data_dir: str | None) -> None:
    """Run one ``qe`` command with this checkout first on the path."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    extra = ["--data-dir", data_dir] if data_dir else []
    subprocess.run([sys.executable, "-m", "qe", *args, *extra, "--quiet"], check=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--work", default=str(REPO / "runs" / "crossfit-en-de"))
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, folds in VARIANTS.items():
        tag = "in-sample" if folds is False else "cross-fitted"
        bundle_config = tomllib.loads(BUNDLE_CONFIG.read_text(encoding="utf-8"))
        bundle_config["name"] = f"mlqe-pe-en-de-{tag}"
        bundle_config["corpora"]["qe"]["cross_fit"] = folds
        (work / f"resources-{tag}.toml").write_text(tomli_w.dumps(bundle_config), encoding="utf-8")
        bundle = work / f"bundle-{tag}"
        qe("resources", "build", str(work / f"resources-{tag}.toml"), "--output", str(bundle), "--overwrite",
           data_dir=args.data_dir)  # fmt: skip
        run_config = tomllib.loads(RUN_CONFIG.read_text(encoding="utf-8"))
        run_config["name"] = f"{run_config['name']}-{tag}"
        run_config["features"]["resources"] = str(bundle)
        (work / f"run-{tag}.toml").write_text(tomli_w.dumps(run_config), encoding="utf-8")
        qe("run", str(work / f"run-{tag}.toml"), "--output-dir", str(work / f"run-{tag}"), "--overwrite",
           data_dir=args.data_dir)  # fmt: skip
        metrics = json.loads((work / f"run-{tag}" / "metrics.json").read_text())
        rows.append((label, metrics["cv"], metrics["test"]))
    print("| resources | CV Pearson | CV MAE | test20 Pearson | test20 MAE | test20 Spearman |")
    print("|---|---|---|---|---|---|")
    for label, cv, test in rows:
        print(
            f"| {label} | {cv['Pearson']:.3f} | {cv['MAE_exact']:.4f} | {test['Pearson']:.3f} | "
            f"{test['MAE_exact']:.4f} | {test['Spearman_scipy']:.3f} |"
        )


if __name__ == "__main__":
    main()
