"""Shared fixtures: the data directory (QE_DATA_DIR) and small corpora written by the tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data directory; tests that need it are skipped when QE_DATA_DIR is unset."""
    value = os.environ.get("QE_DATA_DIR")
    if not value or not Path(value, "wmt12-qe").is_dir():
        pytest.skip("QE_DATA_DIR is not set to the shared data directory")
    return Path(value)


def write_lines(path: Path, lines: list[str] | bytes) -> Path:
    """Write test input: a list of lines (newline-terminated) or raw bytes."""
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path
