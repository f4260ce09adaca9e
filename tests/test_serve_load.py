"""``benchmarks/serve_load.py`` at a twentieth of its counts: it starts the server, loads it from 8 and 2
clients, stops it with SIGTERM, and prints exactly the JSON of issue 21 with no error (the timings it
reports are docs/serve.md's business, not a test's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO

MODEL = REPO / "models" / "wmt12-en-es-fast.skops"
pytestmark = [pytest.mark.slow, pytest.mark.data]


@pytest.mark.skipif(not MODEL.is_file(), reason="models/wmt12-en-es-fast.skops is not built (make demo)")
def test_the_load_benchmark_prints_its_json_with_no_error(data_dir):
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "serve_load.py"), "--scale", "0.05"],
        capture_output=True,
        text=True,
        env={**os.environ, "QE_DATA_DIR": str(data_dir)},
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"single", "batch", "rss_growth_mb", "errors"}
    assert set(report["single"]) == {"p50_ms", "p99_ms", "requests_per_second"}
    assert set(report["batch"]) == {"pairs_per_second", "cli_pairs_per_second"}
    assert report["errors"] == 0
    assert 0 < report["single"]["p50_ms"] <= report["single"]["p99_ms"]
    assert "server exit code after SIGTERM: 0" in result.stderr
