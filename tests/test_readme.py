"""The README keeps its two set-up commands, and its feature catalogue matches the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_has_the_two_setup_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text


def test_feature_catalogue_in_readme_is_current():
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "update_readme.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
