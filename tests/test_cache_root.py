"""Every cache lives under one root: ``$QE_CACHE_DIR`` when set and not empty, else ``~/.cache/qe``."""

from __future__ import annotations

from pathlib import Path

import pytest

from qe.embeddings.cache import default_cache_dir as embeddings_dir
from qe.features.cache import default_cache_dir as features_dir
from qe.infra.io import cache_root
from qe.resources.mt2 import default_cache_dir as mt2_dir
from qe.text.fastmoses import _spec_path
from qe.text.processing import default_cache_dir as tokens_dir


@pytest.mark.parametrize("value", [None, ""])
def test_unset_or_empty_means_the_home_cache(monkeypatch, tmp_path, value):
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("QE_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("QE_CACHE_DIR", value)
    assert cache_root() == tmp_path / ".cache" / "qe"


def test_every_cache_is_a_folder_of_the_root(monkeypatch, tmp_path):
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "c"))
    root = tmp_path / "c"
    assert [features_dir(), mt2_dir(), embeddings_dir(), tokens_dir()] == [
        root / "features",
        root / "mt2",
        root / "embeddings",
        root / "tokens",
    ]
    spec = _spec_path("en")
    assert spec is not None and spec.parent == root / "moses" and spec.name.startswith("en-")
    assert _spec_path("../en") is None  # a language code is never a path
    assert isinstance(spec, Path)
