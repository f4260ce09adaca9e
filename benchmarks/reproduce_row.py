"""Rebuild one row of a results table (docs/results-wmt12.md, docs/mlqe.md) from a clean cache and
check it against its record.

The row's config runs through ``qe run`` (``qe ablate --systems ROW`` for an ablation row; a
subprocess, as a user runs it) with ``QE_CACHE_DIR`` set to a new empty folder, so no feature,
sentence-vector or tokenizer cache of an earlier run takes part; a missing resource bundle is built
first from its ``configs/**/resources-*.toml``. Every recorded metric must agree to 1e-3 and the
run's signature must equal the recorded signature character for character (a different signature
means different data, code versions, resources or settings: the numbers are then not comparable,
and the differing parts are printed).

Records: ``docs/mlqe-table.json`` (``benchmarks/mlqe_table.py``; rows ``<da|hter>-<pair>``, the
``best`` system unless ``--system``), ``docs/wmt12-table.json`` (rows named by ``systems``),
``docs/family-gain-table.json`` (``benchmarks/family_gain.py``; rows ``reference``,
``<family>:alone``, ``<family>:with_bf17``, each keeping its config) and
``docs/ablation-table.json`` (``benchmarks/ablation_table.py``; rows ``full``, ``without:<family>``,
``only:<family>``: CV and test metrics and the p-values against the full system, which is fitted too).
Exit 0 when the row reproduces, 1 when it does not, 2 on a bad argument.

    python benchmarks/reproduce_row.py --table mlqe --row da-en-de [--system best]
    python benchmarks/reproduce_row.py --table wmt12 --row official-svr
    python benchmarks/reproduce_row.py --table family-gain --row spelling:alone
    python benchmarks/reproduce_row.py --table ablation --row only:lm
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
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DOCS = REPO / "docs"
TABLES = {
    "mlqe": DOCS / "mlqe-table.json",
    "wmt12": DOCS / "wmt12-table.json",
    "family-gain": DOCS / "family-gain-table.json",
    "ablation": DOCS / "ablation-table.json",
}
TOLERANCE = 1e-3
MLQE_LABELS = {"da": "da", "hter": "pe"}  # row label -> config prefix (as benchmarks/mlqe_table.py)
MLQE_SYSTEMS = ("baseline", "nmt", "best")
MLQE_METRICS = {"pearson": "Pearson", "spearman": "Spearman_scipy", "mae": "MAE_exact", "rmse": "RMSE_exact"}
FAMILY_GAIN_PARTS = ("alone", "with_bf17")


class Row(NamedTuple):
    """A recorded row: its config (a file, or the config the record keeps), its recorded numbers
    ``{part: {metric: value}}`` and signature, and for an ablation row the system ``qe ablate`` fits."""

    config: Path | dict[str, Any]
    recorded: dict[str, dict[str, float]]
    signature: str
    ablation_system: str | None = None


def mlqe_row(table: dict, row: str, system: str) -> Row:
    """An MLQE-PE row: the config of its system, the recorded test metrics and the signature."""
    label, _, pair = row.partition("-")
    if label not in MLQE_LABELS or system not in MLQE_SYSTEMS:
        raise ValueError(f"row {row!r} / system {system!r}: expected e.g. --row da-en-de --system best")
    block = table if system == "best" else table.get(system, {})
    recorded = block.get(pair, {}).get(label)
    if not isinstance(recorded, dict) or "signature" not in recorded:
        raise ValueError(f"docs/mlqe-table.json has no signed {system} row for {row}")
    test = {MLQE_METRICS[key]: value for key, value in recorded.items() if key in MLQE_METRICS}
    config = REPO / "configs" / "mlqe" / f"{MLQE_LABELS[label]}-{pair}-{system}.toml"
    return Row(config, {"test": test}, recorded["signature"])


def wmt12_row(table: dict, row: str) -> Row:
    """A WMT12 row: its config, the recorded ``{"test": ..., "cv": ...}`` metrics and the signature."""
    systems = table.get("systems", {})
    if row not in systems:
        raise ValueError(f"docs/wmt12-table.json has no row {row!r} (rows: {', '.join(systems)})")
    entry = systems[row]
    return Row(
        REPO / entry["config"],
        {part: entry[part] for part in ("test", "cv") if part in entry},
        entry["signature"],
    )


def family_gain_row(table: dict, row: str) -> Row:
    """A family-gain row (``reference``, ``<family>:alone``, ``<family>:with_bf17``): the config the
    record keeps, its ``cv`` and ``test`` metrics and the signature."""
    family, _, part = row.partition(":")
    entry = table.get("reference") if row == "reference" else table["families"].get(family, {}).get(part)
    if not isinstance(entry, dict) or (row != "reference" and part not in FAMILY_GAIN_PARTS):
        names = [f"{name}:{part}" for name in table["families"] for part in FAMILY_GAIN_PARTS]
        raise ValueError(
            f"docs/family-gain-table.json has no row {row!r} (rows: reference, {', '.join(names)})"
        )
    return Row(entry["config"], {part: entry[part] for part in ("cv", "test")}, entry["signature"])


def ablation_numbers(system: dict, dataset: str | None) -> dict[str, dict[str, float]]:
    """What an ablation row of docs/results-wmt12.md shows: CV and test metrics, p-values against the
    full system."""
    from qe.evaluation.metrics import HEADLINE_METRICS
    from qe.evaluation.published import summary_columns
    from qe.run.ablation import BOOTSTRAP_METRICS

    boot = system.get("bootstrap_vs_full", {})
    return {
        "cv": {metric: system["cv"][metric] for metric in HEADLINE_METRICS},
        "test": {key: system["test"][key] for _, key in summary_columns(dataset)},
        **({"p": {metric: boot[metric]["p_value"] for metric in BOOTSTRAP_METRICS}} if boot else {}),
    }


def ablation_row(table: dict, row: str) -> Row:
    """An ablation row (``full``, ``without:<family>``, ``only:<family>``): the ablation's config, the
    row's numbers and signature."""
    systems = table.get("systems", {})
    if row not in systems:
        raise ValueError(f"docs/ablation-table.json has no row {row!r} (rows: {', '.join(systems)})")
    recorded = ablation_numbers(systems[row], table.get("dataset"))
    return Row(REPO / table["config_file"], recorded, systems[row]["signature"], ablation_system=row)


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


def find_row(table_name: str, table: dict, row: str, system: str) -> Row:
    """The recorded row ``row`` of the table ``table_name`` (ValueError when there is none)."""
    if table_name == "mlqe":
        return mlqe_row(table, row, system)
    if table_name == "wmt12":
        return wmt12_row(table, row)
    if table_name == "family-gain":
        return family_gain_row(table, row)
    return ablation_row(table, row)


def measure(row: Row, config: Path, output: Path, env: dict[str, str]) -> tuple[dict, str]:
    """Run the row's config as a user would; its numbers (as recorded) and its signature."""
    if row.ablation_system is None:
        run(["run", str(config), "--output-dir", str(output), "--quiet"], env)
        measured = json.loads((output / "metrics.json").read_text(encoding="utf-8"))
        return measured, (output / "signature.txt").read_text(encoding="utf-8").strip()
    run(
        ["ablate", str(config), "--systems", row.ablation_system, "--output-dir", str(output), "--quiet"], env
    )
    result = json.loads((output / "ablation.json").read_text(encoding="utf-8"))
    system = result["systems"][row.ablation_system]
    return ablation_numbers(system, result.get("dataset")), system["signature"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=sorted(TABLES), required=True)
    parser.add_argument(
        "--row",
        required=True,
        help="mlqe: da-en-de, hter-en-zh ...; wmt12: official-svr ...; family-gain: reference, lm:alone, "
        "lm:with_bf17 ...; ablation: full, without:lm, only:lm ...",
    )
    parser.add_argument("--system", default="best", help="mlqe only: baseline, nmt or best")
    args = parser.parse_args(argv)
    table = json.loads(TABLES[args.table].read_text(encoding="utf-8"))
    try:
        row = find_row(args.table, table, args.row, args.system)
        if isinstance(row.config, Path):
            settings = tomllib.loads(row.config.read_text(encoding="utf-8"))
        else:
            settings = row.config
        resources = settings.get("features", {}).get("resources")
        build = resources and not (REPO / resources / "manifest.json").is_file()
        built_from = bundle_config(resources) if build else None
    except ValueError as error:
        parser.error(str(error))
    with tempfile.TemporaryDirectory(prefix="qe-reproduce-") as folder:
        env = {**os.environ, "QE_CACHE_DIR": str(Path(folder, "cache"))}  # clean: nothing cached
        if built_from is not None:
            run(["resources", "build", str(built_from), "--output", resources, "--quiet"], env)
        config = row.config
        if not isinstance(config, Path):  # a config the record keeps, written out as qe run reads it
            import tomli_w

            config = Path(folder, f"{settings['name']}.toml")
            config.write_text(tomli_w.dumps(settings), encoding="utf-8")
        measured, ours = measure(row, config, Path(folder, "run"), env)
        shown = config.relative_to(REPO) if config.is_relative_to(REPO) else "the recorded config"
    print(f"{args.table} {args.row}: {shown} from a clean cache")
    problems = compare(row.recorded, measured, row.signature, ours)
    for problem in problems:
        print(f"NOT REPRODUCED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
