"""A tiny resource bundle config and its data (tests/test_bundle.py and the tests that build bundles)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from qe.bundle import build_bundle
from qe.infra.errors import QEInputError
from tests.helpers import REPO, write_config, write_lines

WMT12_CONFIG = REPO / "configs" / "resources-wmt12-en-es.toml"

SRC = ["The house is small .", "The house is big .", "A small cat .", "The cat is big ."]
TGT = ["La casa es pequeña .", "La casa es grande .", "Un gato pequeño .", "El gato es grande ."]


def has_kenlm_tools(*names: str) -> bool:
    """Whether KenLM's programs ``names`` (lmplz, build_binary) are built."""
    from qe.resources.lm import find_kenlm_binary

    try:
        for name in names:
            find_kenlm_binary(name)
    except QEInputError:
        return False
    return True


def _has_kenlm() -> bool:
    try:
        import kenlm  # noqa: F401
    except ImportError:
        return False
    return has_kenlm_tools("lmplz", "build_binary")


needs_kenlm = pytest.mark.skipif(not _has_kenlm(), reason="KenLM not installed: run scripts/install_kenlm.sh")


def write_small_data(root: Path) -> Path:
    """A data directory with one tiny parallel corpus, an evaluation file and a truecase model."""
    (root / "corpus").mkdir(parents=True)
    write_lines(root / "corpus" / "toy.en", SRC)
    write_lines(root / "corpus" / "toy.es", TGT)
    write_lines(root / "eval.en", ["Nothing like the corpus ."])
    write_lines(root / "truecase.en", ["the (7/9) The (2)", "house (4/4)", "small (3/3)"])
    return root


def small_config(with_lm: bool = False, **extra) -> dict:
    """The bundle config of the data write_small_data writes."""
    config = {
        "name": "toy",
        "languages": {"src": "en", "tgt": "es"},
        "text": {"style": "moses", "case": "lower"},
        "leakage": {"eval_files": ["eval.en"]},
        "corpora": {"toy": {"src": "corpus/toy.en", "tgt": "corpus/toy.es"}},
        "ngrams": {"src": {"side": "src", "max_order": 2}},
        "unigrams": {"src": {"side": "src", "truecase_model": "truecase.en"}},
        "ibm1": {"iterations": 3, "directions": ["s2t"], "min_prob": 0.0},
    }
    if with_lm:
        config["lm"] = {"src": {"side": "src", "order": 2}}
    config.update(extra)
    return config


def build(tmp_path, data_dir, config, **kw):
    """Build ``config`` over ``data_dir`` into tmp_path/out (token cache in tmp_path/tok)."""
    cfg = write_config(tmp_path / "bundle.toml", config)
    return build_bundle(
        cfg, tmp_path / "out", data_dir=data_dir, progress=False, token_cache_dir=tmp_path / "tok", **kw
    )


def restamp(bundle: Path, member: str) -> None:
    """Record a member file's current size and sha256 in the manifest (a corrupt file, built so)."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    entry = manifest["members"][member]
    data = (bundle / entry["file"]).read_bytes()
    entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (bundle / "manifest.json").write_text(json.dumps(manifest))
