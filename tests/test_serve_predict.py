"""Every model ``make demo`` builds into ``models/`` (e.g. the WMT12 en-es model), served: ``/v1/score``
and ``/v1/batch`` give the scores of ``qe predict`` on the same 120 WMT12 test pairs, to 1e-9 of the
model's own numbers and digit for digit as ``qe predict`` prints them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO
from tests.helpers.scoring import scored_at_once
from tests.helpers.serve import serving

MODELS = sorted((REPO / "models").glob("*.skops"))
N = 120
pytestmark = [pytest.mark.slow, pytest.mark.data]


@pytest.mark.skipif(not MODELS, reason="no model in models/ (make demo builds one)")
@pytest.mark.parametrize("model", MODELS, ids=[path.stem for path in MODELS])
def test_a_served_model_scores_as_qe_predict_does(model: Path, data_dir: Path, tmp_path: Path):

    test_set = data_dir / "wmt12-qe" / "test_set"
    src_file, mt_file = test_set / "source.eng", test_set / "target_system.spa"
    src = src_file.read_text(encoding="utf-8").split("\n")[:N]
    mt = mt_file.read_text(encoding="utf-8").split("\n")[:N]
    (tmp_path / "src").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp_path / "mt").write_text("\n".join(mt) + "\n", encoding="utf-8")
    printed = subprocess.run(
        [
            sys.executable,
            "-m",
            "qe",
            "predict",
            "--model",
            str(model),
            "--src",
            str(tmp_path / "src"),
            "--mt",
            str(tmp_path / "mt"),
            "--no-language-check",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    ).stdout.splitlines()[1:]
    expected = scored_at_once(model, src, mt)
    with serving([model], "--workers", "2") as server:
        pairs = [{"src": s, "mt": m} for s, m in zip(src, mt, strict=True)]
        status, body = server.score(model.stem, pairs)
        assert status == 200
        scores = [result["score"] for result in body["results"]]
        upload = "\n".join(json.dumps(pair) for pair in pairs).encode()
        status, _, lines = server.batch(model.stem, upload, "application/x-ndjson")
        assert status == 200 and lines[-1]["done"]
        streamed = [line["score"] for line in lines[:-1]]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(streamed, expected, rtol=0, atol=1e-9)
    assert [f"{k}\t{s:.6f}" for k, s in enumerate(scores)] == printed
