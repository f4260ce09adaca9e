"""Rebuild one row of a README results table from a clean cache and check it against its record.

The row's config runs through ``qe run`` (a subprocess, as a user runs it) with ``QE_CACHE_DIR``
set to a new empty folder, so no feature, sentence-vector or tokenizer cache of an earlier run
takes part; a missing resource bundle is built first from its ``configs/**/resources-*.toml``.
Every recorded metric must agree to 1e-3 and the run's ``signature.txt`` must equal the recorded
signature character for character (a different signature means different data, code versions,
resources or settings: the numbers are then not comparable, and the differing parts are printed).

Records: ``docs/mlqe-table.json`` (``benchmarks/mlqe_table.py``; rows ``<da|hter>-<pair>``, the
``best`` system unless ``--system``) and ``docs/wmt12-table.json`` (rows named by ``systems``).
Exit 0 when the row reproduces, 1 when it does not, 2 on a bad argument.

    python benchmarks/reproduce_row.py --table mlqe --row da-en-de [--system best]
    python benchmarks/reproduce_row.py --table wmt12 --row official-svr
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLES = {"mlqe": REPO / "docs" / "mlqe-table.json", "wmt12": REPO / "docs" / "wmt12-table.json"}
TOLERANCE = 1e-3
MLQE_LABELS = {"da": "da", "hter": "pe"}  # row label -> config prefix (as benchmarks/mlqe_table.py)
MLQE_SYSTEMS = ("baseline", "nmt", "best")
MLQE_METRICS = {"pearson": "Pearson", "spearman": "Spearman_scipy", "mae": "MAE_exact", "rmse": "RMSE_exact"}


def mlqe_row(table: dict, row: str, system: str) -> tuple[Path, dict[str, dict[str, float]], str]:
    """The config, the recorded ``{"test": {metric: value}}`` and the signature of an MLQE-PE row."""
    label, _, pair = row.partition("-")
    if label not in MLQE_LABELS or system not in MLQE_SYSTEMS:
        raise ValueError(f"row {row!r} / system {system!r}: expected e.g. --row da-en-de --system best")
    block = table if system == "best" else table.get(system, {})
    recorded = block.get(pair, {}).get(label)
    if not isinstance(recorded, dict) or "signature" not in recorded:
        raise ValueError(f"docs/mlqe-table.json has no signed {system} row for {row}")
    test = {MLQE_METRICS[key]: value for key, value in recorded.items() if key in MLQE_METRICS}
    config = REPO / "configs" / "mlqe" / f"{MLQE_LABELS[label]}-{pair}-{system}.toml"
    return config, {"test": test}, recorded["signature"]


def wmt12_row(table: dict, row: str) -> tuple[Path, dict[str, dict[str, float]], str]:
    """The config, the recorded ``{"test": ..., "cv": ...}`` metrics and the signature of a WMT12 row."""
    systems = table.get("systems", {})
    if row not in systems:
        raise ValueError(f"docs/wmt12-table.json has no row {row!r} (rows: {', '.join(systems)})")
    entry = systems[row]
    return (
        REPO / entry["config"],
        {part: entry[part] for part in ("test", "cv") if part in entry},
        entry["signature"],
    )


def bundle_config(resources: str) -> Path:
    """The ``resources-*.toml`` under configs/ whose bundle is named like the folder ``resources``."""
    name = Path(resources).name
    for path in sorted((REPO / "configs").rglob("resources-*.toml")):
        if tomllib.loads(path.read_text(encoding="utf-8")).get("name") == name:
            return path
    raise ValueError(f"no configs/**/resources-*.toml builds the bundle {name!r}")


def run(args: list[str], env: dict[str, str]) -> None:
    """``python -m qe ARGS`` in the repository (its report is not shown, its errors are)."""
    command = [sys.executable, "-m", "qe", *args]
    done = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, timeout=4 * 3600)
    if done.returncode != 0:
        raise SystemExit(f"qe {' '.join(args[:2])} failed (exit {done.returncode})")


def compare(recorded: dict[str, dict[str, float]], measured: dict, signature: str, ours: str) -> list[str]:
    """Lines saying what differs: a metric by more than TOLERANCE, or the signature."""
    problems = []
    for part, metrics in recorded.items():
        for name, value in metrics.items():
            now = measured[part][name]
            ok = abs(now - value) <= TOLERANCE
            print(f"{part} {name}: recorded {value:.4f}, now {now:.4f} ({'ok' if ok else 'DIFFERS'})")
            if not ok:
                problems.append(f"{part} {name} differs by {now - value:+.4f}")
    if ours != signature:
        theirs, mine = signature.split("|"), ours.split("|")
        differing = [p for p in mine if p not in theirs] + [f"recorded: {p}" for p in theirs if p not in mine]
        problems.append("signature differs: " + "; ".join(differing))
    else:
        print("signature: identical")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=sorted(TABLES), required=True)
    parser.add_argument(
        "--row", required=True, help="mlqe: da-en-de, hter-en-zh ...; wmt12: official-svr ..."
    )
    parser.add_argument("--system", default="best", help="mlqe only: baseline, nmt or best")
    args = parser.parse_args(argv)
    table = json.loads(TABLES[args.table].read_text(encoding="utf-8"))
    try:
        if args.table == "mlqe":
            config, recorded, signature = mlqe_row(table, args.row, args.system)
        else:
            config, recorded, signature = wmt12_row(table, args.row)
        resources = tomllib.loads(config.read_text(encoding="utf-8")).get("features", {}).get("resources")
        build = resources and not (REPO / resources / "manifest.json").is_file()
        built_from = bundle_config(resources) if build else None
    except ValueError as error:
        parser.error(str(error))
    with tempfile.TemporaryDirectory(prefix="qe-reproduce-") as folder:
        env = {**os.environ, "QE_CACHE_DIR": str(Path(folder, "cache"))}  # clean: nothing cached
        if built_from is not None:
            run(["resources", "build", str(built_from), "--output", resources, "--quiet"], env)
        output = Path(folder, "run")
        run(["run", str(config), "--output-dir", str(output), "--quiet"], env)
        measured = json.loads((output / "metrics.json").read_text(encoding="utf-8"))
        ours = (output / "signature.txt").read_text(encoding="utf-8").strip()
    print(f"{args.table} {args.row}: {config.relative_to(REPO)} from a clean cache")
    problems = compare(recorded, measured, signature, ours)
    for problem in problems:
        print(f"NOT REPRODUCED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
