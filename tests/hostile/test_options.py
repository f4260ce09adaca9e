"""Options of the streaming commands (main ba3d5b8): a Dask scheduler address that is not one
(``file:///etc/passwd``, ``::::``, ``tcp://[::1``) was a traceback that left the run's ``.partial``
state file behind; ``--backend dask --jobs -1`` ("all cores" in the help) asked Dask for -1 workers
and failed after 11 s with a three-line message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import write_lines

pytest.importorskip("distributed")

HANG = 180  # seconds: a generous guard (a local cluster starts in seconds)
SRC = ["the cat sat on the mat .", "a dog ran .", "good morning , she said ."]
MT = ["el gato se sentó en la alfombra .", "un perro corrió .", "buenos días , dijo ella ."]


def _features(folder: Path, *options: str) -> subprocess.CompletedProcess:
    write_lines(folder / "src.txt", SRC)
    write_lines(folder / "mt.txt", MT)
    argv = [sys.executable, "-m", "qe", "features", "--src", "src.txt", "--mt", "mt.txt"]
    argv += ["--families", "surface", "--quiet", *options]
    try:
        return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"qe features {' '.join(options)} still running after {HANG} s")


@pytest.mark.parametrize("address", ["file:///etc/passwd", "::::", "tcp://[::1"])
def test_a_scheduler_address_that_is_not_one_is_one_line_and_leaves_nothing(tmp_path, address):
    result = _features(tmp_path, "--out", "out.tsv", "--backend", "dask", "--scheduler", address)
    assert result.returncode == 2, result.stderr[-2000:]
    err = result.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err[-2000:]
    assert err.startswith(f"qe: error: {address!r} is not a Dask scheduler address ("), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mt.txt", "src.txt"]  # no .partial left


@pytest.mark.slow
def test_dask_on_all_cores_writes_what_one_process_writes(tmp_path):
    one = _features(tmp_path, "--out", "one.tsv")
    assert one.returncode == 0, one.stderr[-2000:]
    every = _features(tmp_path, "--out", "all.tsv", "--backend", "dask", "--jobs", "-1")
    assert every.returncode == 0, every.stderr[-2000:]
    assert (tmp_path / "all.tsv").read_bytes() == (tmp_path / "one.tsv").read_bytes()
    assert len((tmp_path / "all.tsv").read_text().splitlines()) == 1 + len(SRC)
