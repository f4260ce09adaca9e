"""Plain helpers shared by the test modules (no tests, no fixtures: those live in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import tomli_w

REPO = Path(__file__).resolve().parents[2]
FUZZ_EXAMPLES = "fuzz examples"  # the user property a fuzz test's example counts go under (tests/fuzz)


def write_lines(path: Path, lines: list[str] | bytes) -> Path:
    """Write test input: a list of lines (newline-terminated) or raw bytes."""
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def write_config(path: Path, data: dict) -> Path:
    """A config dictionary written as TOML."""
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path
