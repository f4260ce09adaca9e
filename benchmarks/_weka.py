"""Helpers to run Weka 3.6 (Debian's weka.jar) from Python: write ARFF files, run a classifier, parse output.

Used by the M5P peer-comparison benchmark. Values are written with Python's shortest round-trip
``repr`` so Weka parses exactly the same doubles as numpy holds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

WEKA_JAR = Path(os.environ.get("WEKA_JAR", "/usr/share/java/weka.jar"))
M5P_CLASS = "weka.classifiers.trees.M5P"


def weka_available() -> bool:
    """True when ``java`` is on the PATH and the Weka jar exists."""
    return shutil.which("java") is not None and WEKA_JAR.is_file()


def write_arff(
    path: str | Path,
    X: np.ndarray,
    y: np.ndarray,
    feature_names: Sequence[str] | None = None,
    target_name: str = "y",
    relation: str = "qe",
) -> Path:
    """Write numeric features and a numeric target (the last attribute, Weka's default class)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if feature_names is None:
        feature_names = [f"x{i}" for i in range(X.shape[1])]
    lines = [f"@relation {relation}"]
    lines += [f"@attribute {name} numeric" for name in [*feature_names, target_name]]
    lines.append("@data")
    for row, target in zip(X, y, strict=True):
        values = ["?" if np.isnan(v) else repr(float(v)) for v in row]
        lines.append(",".join([*values, repr(float(target))]))
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


def run_weka(
    classifier: str, options: Sequence[str], train: str | Path, test: str | Path, *, predictions: bool = False
) -> str:
    """Train ``classifier`` on ``train`` and evaluate on ``test``; return Weka's standard output.

    With ``predictions`` Weka prints only the test predictions (``-p 0``), otherwise the model,
    the build time and the error statistics.
    """
    cmd = ["java", "-cp", str(WEKA_JAR), classifier, *options, "-t", str(train), "-T", str(test)]
    if predictions:
        cmd += ["-p", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"weka failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout


def parse_predictions(output: str) -> np.ndarray:
    """Predicted values from ``-p 0`` output (Weka prints them with 3 decimals)."""
    rows = re.findall(r"^\s*\d+\s+\S+\s+(-?[\d.]+(?:[eE][-+]?\d+)?)\s", output, flags=re.MULTILINE)
    if not rows:
        raise ValueError("no predictions found in Weka output")
    return np.array([float(value) for value in rows])


def parse_build_seconds(output: str) -> float:
    """Weka's own "Time taken to build model" (wall clock inside the JVM, 2 decimals)."""
    match = re.search(r"Time taken to build model:\s*([\d.]+)\s*seconds", output)
    if match is None:
        raise ValueError("no build time found in Weka output")
    return float(match.group(1))


def parse_num_rules(output: str) -> int:
    """M5's "Number of Rules" (= number of linear models / leaves)."""
    match = re.search(r"Number of Rules\s*:\s*(\d+)", output)
    if match is None:
        raise ValueError("no rule count found in Weka output")
    return int(match.group(1))
