"""Regenerate the parts of README.md and of the docs pages (docs/*.md) written from the code and from the
results' records: the feature catalogue (``qe features --list``), the MLQE-PE table
(``docs/mlqe-table.json``), issue 23's and issue 34's steps tables (``docs/mlqe-steps-*.json`` and
``docs/mlqe-cross-run-*.json``, the saved runs of ``benchmarks/mlqe_table.py --steps``), the table of
what ``make demo`` prints and our rows of the WMT12 tables (``docs/wmt12-table.json``), the family-gain
table (``docs/family-gain-table.json``), the ablation table (``docs/ablation-table.json``) and what ``qe
init`` gives (``docs/init-table.json``), whose runs' signatures those records keep.

A generated section stands between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in whichever of
those files holds it (every name of ``SECTIONS`` in exactly one file); our WMT12 rows (``WMT12_ROWS``)
are found by their first cell, wherever they stand (each in exactly one file). Moving a section or a
row to another page needs no change here.

    python scripts/update_readme.py [--check]   # --check: exit 1 naming every stale file
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MLQE_TABLE = REPO / "docs" / "mlqe-table.json"
WMT12_TABLE = REPO / "docs" / "wmt12-table.json"
FAMILY_GAIN_TABLE = REPO / "docs" / "family-gain-table.json"
ABLATION_TABLE = REPO / "docs" / "ablation-table.json"
INIT_TABLE = REPO / "docs" / "init-table.json"
MLQE_STEPS_TABLES = (REPO / "docs" / "mlqe-steps-da.json", REPO / "docs" / "mlqe-steps-hter.json")
MLQE_CROSS_TABLES = (REPO / "docs" / "mlqe-cross-run-da.json", REPO / "docs" / "mlqe-cross-run-hter.json")
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))  # this checkout's qe, also when another one is installed


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of a generated section."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


CATALOGUE = markers("catalogue")
MLQE = markers("mlqe-table")
FAMILY_GAIN = markers("family-gain-table")
ABLATION = markers("ablation-table")
DEMO = markers("demo-table")
MARKER = re.compile(r"<!-- ([a-z0-9-]+):(begin|end) -->")
SCORES = ("test.MAE", "test.RMSE", "test.DeltaAvg", "test.Spearman")
BEST = ("cv.MAE", *(f"**{cell}**" for cell in SCORES))
# Our rows of the WMT12 tables (docs/results-wmt12.md): (system in docs/wmt12-table.json, first cell,
# value cells; a cell "part.metric" is that number, "**part.metric**" the same in bold).
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
# The runs `make demo` hands to `qe compare`, in its order: (the run's name as `qe compare` prints it,
# the config it ran; the ready-made models' configs are their qe.model.catalog records').
DEMO_RUNS = (
    ("wmt12-official-svr", "configs/wmt12-official-svr.toml"),
    ("wmt12-official-m5p", "configs/wmt12-official-m5p.toml"),
    ("wmt12-en-es-fast", "configs/wmt12-extracted-svr.toml"),
    ("wmt12-en-es", "configs/wmt12-best-rawtext.toml"),
)


def generated_files() -> list[Path]:
    """Every file a generated section or row may stand in: README.md, then docs/*.md by name."""
    return [README, *sorted(DOCS.glob("*.md"))]


def where(path: Path) -> str:
    """A file's path as the messages give it (relative to the checkout)."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def section_names(text: str) -> list[str]:
    """The generated sections a text holds (by their begin markers), in order."""
    return [name for name, edge in MARKER.findall(text) if edge == "begin"]


def replace_section(text: str, name: str, body: str, path: Path = README) -> str:
    """``text`` with what stands between the section's two markers replaced by ``body``."""
    begin, end = markers(name)
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    count = len(pattern.findall(text))
    if count != 1:
        raise SystemExit(f"{where(path)}: expected one {begin} ... {end}, found {count}")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def wmt12_row(system: dict, label: str, cells: tuple[str, ...]) -> str:
    """One table row: the label, then each cell's recorded number to 3 decimals (bold as asked)."""
    values = []
    for cell in cells:
        part, metric = cell.strip("*").split(".")
        number = f"{system[part][metric]:.3f}"
        values.append(f"**{number}**" if cell.startswith("**") else number)
    return f"| {label} | " + " | ".join(values) + " |"


def wmt12_rows_in(text: str) -> list[str]:
    """The first cells of WMT12_ROWS that start a line of ``text`` (one entry per line found)."""
    lines = text.split("\n")
    return [label for _, label, _ in WMT12_ROWS for line in lines if line.startswith(f"| {label} |")]


def render_wmt12(text: str, table: dict, path: Path = README) -> str:
    """``text`` with each of our WMT12 rows it holds (found by its first cell) written from ``table``;
    a row found twice in one text is refused."""
    lines = text.split("\n")
    for system, label, cells in WMT12_ROWS:
        found = [k for k, line in enumerate(lines) if line.startswith(f"| {label} |")]
        if len(found) > 1:
            raise SystemExit(
                f"{where(path)}: expected one WMT12 row starting '| {label} |', found {len(found)}"
            )
        if found:
            lines[found[0]] = wmt12_row(table["systems"][system], label, cells)
    return "\n".join(lines)


def demo_table(table: dict) -> str:
    """What ``make demo`` ends with, ``qe compare`` on its four runs beside the published WMT12
    systems, as ``qe compare`` writes it (``qe.evaluation.published``), in the columns the record keeps: each
    run's numbers are those recorded for its config in ``docs/wmt12-table.json``."""
    from qe.evaluation.published import WMT12_COLUMNS, WMT12_PUBLISHED

    by_config = {system["config"]: system for system in table["systems"].values()}
    kept = set.intersection(*(set(by_config[config]["test"]) for _, config in DEMO_RUNS))
    columns = [(title, key) for title, key in WMT12_COLUMNS if key in kept]
    lines = [
        "| system | " + " | ".join(title for title, _ in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for name, config in DEMO_RUNS:
        test = by_config[config]["test"]
        lines.append(f"| **{name}** | " + " | ".join(f"{test[key]:.3f}" for _, key in columns) + " |")
    for name, metrics in WMT12_PUBLISHED.items():
        cells = [f"{metrics[key]:.2f}" if metrics.get(key) is not None else "n/a" for _, key in columns]
        lines.append(f"| {name} (published) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def read(record: Path) -> dict:
    """A results record of docs/."""
    return json.loads(record.read_text(encoding="utf-8"))


def _catalogue() -> str:
    from qe.commands.features import catalogue

    return catalogue(markdown=True)


def _mlqe() -> str:
    from mlqe_table import readme_table

    return readme_table(read(MLQE_TABLE))


def _steps(records: tuple[Path, ...]) -> str:
    """The steps table of saved runs (one per label) merged."""
    from mlqe_table import merge_tables, steps_markdown

    return steps_markdown(functools.reduce(merge_tables, map(read, records)))


def _family_gain() -> str:
    from family_gain import markdown

    return markdown(read(FAMILY_GAIN_TABLE))


def _init_table() -> str:
    from init_table import markdown

    return markdown(read(INIT_TABLE))


def _ablation() -> str:
    from qe.run.ablation import ablation_table

    return ablation_table(read(ABLATION_TABLE))


# Each generated section: what writes it.
SECTIONS: dict[str, Callable[[], str]] = {
    "catalogue": _catalogue,
    "mlqe-table": _mlqe,
    "mlqe-steps": lambda: _steps(MLQE_STEPS_TABLES),
    "mlqe-cross-steps": lambda: _steps(MLQE_CROSS_TABLES),
    "family-gain-table": _family_gain,
    "ablation-table": _ablation,
    "init-table": _init_table,
    "demo-table": lambda: demo_table(read(WMT12_TABLE)),
}


@functools.cache
def section_body(name: str) -> str:
    """A generated section's text, as its source gives it now."""
    return SECTIONS[name]()


def render(text: str, path: Path = README) -> str:
    """``text`` (of ``path``) with every generated section and WMT12 row it holds as the sources say."""
    for name in section_names(text):
        if name not in SECTIONS:
            raise SystemExit(
                f"{where(path)}: unknown generated section {name!r} (known: {', '.join(SECTIONS)})"
            )
        text = replace_section(text, name, section_body(name), path)
    return render_wmt12(text, read(WMT12_TABLE), path)


def render_files(files: list[Path] | None = None) -> dict[Path, tuple[str, str]]:
    """Each file's (current, rendered) text; every section and WMT12 row must stand in exactly one of
    the files."""
    files = generated_files() if files is None else files
    texts = {path: path.read_text(encoding="utf-8") for path in files}
    for kind, wanted, found_in in (
        ("section", list(SECTIONS), section_names),
        ("WMT12 row", [label for _, label, _ in WMT12_ROWS], wmt12_rows_in),
    ):
        for item in wanted:
            holders = [where(path) for path, text in texts.items() if item in found_in(text)]
            if len(holders) != 1:
                raise SystemExit(
                    f"{kind} {item!r}: expected in exactly one file, found in {holders or 'none'}"
                )
    return {path: (text, render(text, path)) for path, text in texts.items()}


def main(argv: list[str]) -> int | str:
    """Write the files whose generated parts changed; with ``--check`` only name them (exit 1)."""
    stale = {path: updated for path, (current, updated) in render_files().items() if updated != current}
    if "--check" in argv:
        if stale:
            names = ", ".join(map(where, stale))
            return f"{names} {'is' if len(stale) == 1 else 'are'} stale: run python scripts/update_readme.py"
        return 0
    for path, updated in stale.items():
        path.write_text(updated, encoding="utf-8")
        print(f"updated {where(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
