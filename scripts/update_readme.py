"""Regenerate the README parts written from the code and from the results' records: the feature
catalogue (``qe features --list``), the MLQE-PE table (``docs/mlqe-table.json``) and issue 23's steps
table (``docs/mlqe-steps-*.json``, the saved runs of ``benchmarks/mlqe_table.py --steps``), our rows of the
WMT12 tables (``docs/wmt12-table.json``), the family-gain table (``docs/family-gain-table.json``) and
the ablation table (``docs/ablation-table.json``), whose runs' signatures those records keep.

    python scripts/update_readme.py [--check]   # --check: exit 1 when README.md is stale
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MLQE_TABLE = REPO / "docs" / "mlqe-table.json"
WMT12_TABLE = REPO / "docs" / "wmt12-table.json"
FAMILY_GAIN_TABLE = REPO / "docs" / "family-gain-table.json"
ABLATION_TABLE = REPO / "docs" / "ablation-table.json"
MLQE_STEPS_TABLES = (REPO / "docs" / "mlqe-steps-da.json", REPO / "docs" / "mlqe-steps-hter.json")
sys.path.insert(0, str(REPO / "benchmarks"))

CATALOGUE = ("<!-- catalogue:begin -->", "<!-- catalogue:end -->")
MLQE = ("<!-- mlqe-table:begin -->", "<!-- mlqe-table:end -->")
MLQE_STEPS = ("<!-- mlqe-steps:begin -->", "<!-- mlqe-steps:end -->")
FAMILY_GAIN = ("<!-- family-gain-table:begin -->", "<!-- family-gain-table:end -->")
ABLATION = ("<!-- ablation-table:begin -->", "<!-- ablation-table:end -->")
SCORES = ("test.MAE", "test.RMSE", "test.DeltaAvg", "test.Spearman")
BEST = ("cv.MAE", *(f"**{cell}**" for cell in SCORES))
# Our rows of the README's WMT12 tables: (system in docs/wmt12-table.json, first cell, value cells;
# a cell "part.metric" is that number, "**part.metric**" the same in bold).
WMT12_ROWS = (
    ("official-svr", "**qe SVR, official 17 features** (C=3, gamma=0.01, epsilon=0.2 chosen by CV)", SCORES),
    ("official-m5p", "**qe M5P, official 17 features** (Weka defaults, 2 linear models)", SCORES),
    (
        "extracted-svr",
        "**qe SVR, baseline17 extracted by qe from raw text** (`configs/wmt12-extracted-svr.toml`)",
        SCORES,
    ),
    ("best", "**qe wmt12-best** (official 17 + all families)", BEST),
    ("best-rawtext", "**qe wmt12-best-rawtext** (raw text only; scores new text)", BEST),
    ("official-svr", "qe SVR, official 17 features (the baseline reproduced)", ("cv.MAE", *SCORES)),
)


def replace_section(text: str, markers: tuple[str, str], body: str) -> str:
    """``text`` with what stands between the two markers replaced by ``body``."""
    begin, end = markers
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{README}: markers {begin} / {end} not found")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def wmt12_row(system: dict, label: str, cells: tuple[str, ...]) -> str:
    """One README row: the label, then each cell's recorded number to 3 decimals (bold as asked)."""
    values = []
    for cell in cells:
        part, metric = cell.strip("*").split(".")
        number = f"{system[part][metric]:.3f}"
        values.append(f"**{number}**" if cell.startswith("**") else number)
    return f"| {label} | " + " | ".join(values) + " |"


def render_wmt12(text: str, table: dict) -> str:
    """``text`` with each of our WMT12 rows (found by its first cell) written from ``table``."""
    lines = text.split("\n")
    for system, label, cells in WMT12_ROWS:
        found = [k for k, line in enumerate(lines) if line.startswith(f"| {label} |")]
        if len(found) != 1:
            raise SystemExit(f"{README}: expected one WMT12 row starting '| {label} |', found {len(found)}")
        lines[found[0]] = wmt12_row(table["systems"][system], label, cells)
    return "\n".join(lines)


def read(record: Path) -> dict:
    """A results record of docs/."""
    return json.loads(record.read_text(encoding="utf-8"))


def render(text: str) -> str:
    """README text with the catalogue, the MLQE-PE, steps, family-gain and ablation tables and our
    WMT12 rows as the sources say."""
    from family_gain import markdown
    from mlqe_table import merge_tables, readme_table, steps_markdown

    from qe.commands.features import catalogue
    from qe.run.ablation import ablation_table

    text = replace_section(text, CATALOGUE, catalogue(markdown=True))
    text = replace_section(text, MLQE, readme_table(read(MLQE_TABLE)))
    steps = functools.reduce(merge_tables, map(read, MLQE_STEPS_TABLES))
    text = replace_section(text, MLQE_STEPS, steps_markdown(steps))
    text = replace_section(text, FAMILY_GAIN, markdown(read(FAMILY_GAIN_TABLE)))
    text = replace_section(text, ABLATION, ablation_table(read(ABLATION_TABLE)))
    return render_wmt12(text, read(WMT12_TABLE))


if __name__ == "__main__":
    current = README.read_text(encoding="utf-8")
    updated = render(current)
    if "--check" in sys.argv:
        sys.exit(0 if updated == current else "README.md is stale: run python scripts/update_readme.py")
    README.write_text(updated, encoding="utf-8")
