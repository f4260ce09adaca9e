"""Regenerate the feature catalogue section of README.md from the code (``qe features --list``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from qe.commands.features import catalogue

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN, END = "<!-- catalogue:begin -->", "<!-- catalogue:end -->"


def render(text: str) -> str:
    """README text with the catalogue section replaced by the current catalogue."""
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{README}: markers {BEGIN} / {END} not found")
    return pattern.sub(lambda _: f"{BEGIN}\n{catalogue(markdown=True)}\n{END}", text)


if __name__ == "__main__":
    current = README.read_text(encoding="utf-8")
    updated = render(current)
    if "--check" in sys.argv:
        sys.exit(
            0 if updated == current else "README.md catalogue is stale: run python scripts/update_readme.py"
        )
    README.write_text(updated, encoding="utf-8")
