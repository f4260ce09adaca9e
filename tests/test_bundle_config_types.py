"""The bundle config is read as a frozen ``BundleConfig`` (``qe.bundle.sections``): sections
with the reader's defaults filled in, member tables as read-only mappings, and ``to_document()`` giving
back the completed document the manifest records, nothing added and nothing lost."""

from __future__ import annotations

import dataclasses
import json

import pytest

from qe.bundle import BundleConfig, read_bundle_config
from qe.bundle.config import text_configs
from tests.helpers import write_config
from tests.helpers.manual import build, bundle_config

CONFIG = {
    "languages": {"src": "en", "tgt": "es"},
    "text": {"case": "lower", "tgt": {"case": "keep", "normalize": False}},
    "corpora": {
        "qe": {"dataset": "wmt12-en-es"},
        "news": {"src": "news.en", "tgt": "news.es", "cross_fit": True},
        "mono": {"tgt": "mono.es"},
    },
    "ngrams": {"src": {"max_order": 2, "corpora": ["qe", "news"]}},
    "edits": {"dataset": "wmt12-en-es"},
}


@pytest.fixture()
def config(tmp_path) -> BundleConfig:
    return read_bundle_config(write_config(tmp_path / "resources-typed.toml", CONFIG))


def test_sections_are_typed_with_the_readers_defaults(config):
    assert config.name == "typed"  # the file name without "resources-"
    assert (config.languages.src, config.languages.tgt, config.languages.pair) == ("en", "es", "en-es")
    qe, news, mono = (config.corpora[name] for name in ("qe", "news", "mono"))
    # a registered QE training split: its training split, 5 folds, seed 0; plain corpora as written
    assert (qe.is_qe, qe.dataset, qe.split, qe.cross_fit, qe.seed, qe.target) == (
        True,
        "wmt12-en-es",
        "train",
        5,
        0,
        None,  # resolved when the corpus is read
    )
    assert (news.is_qe, news.src, news.tgt, news.cross_fit) == (False, "news.en", "news.es", True)
    assert (mono.is_qe, mono.src, mono.tgt, mono.cross_fit) == (False, None, "mono.es", False)
    # no [leakage]: no evaluation file, the leakage module's threshold, nothing dropped
    assert (config.leakage.eval_files, config.leakage.near_duplicate_chrf) == ((), None)
    assert config.leakage.drop_overlap is False
    # a member table is its kind's: read-only, arrays as tuples, the kind's check filling defaults
    assert config.members["ngrams"]["src"]["corpora"] == ("qe", "news")
    assert dict(config.members["edits"]) == {
        "dataset": "wmt12-en-es",
        "folds": 5,
        "seed": 0,
        "split": "train",
    }


def test_text_settings_are_shared_then_overridden_per_side(config):
    assert config.text.side("src") == {"case": "lower"}
    assert config.text.side("tgt") == {"case": "keep", "normalize": False}
    src, tgt = text_configs(config, None).values()
    assert (src.lang, src.case, tgt.lang, tgt.case, tgt.normalize) == ("en", "lower", "es", "keep", False)


def test_the_config_cannot_be_changed(config):
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.corpora["qe"].cross_fit = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.corpora["x"] = config.corpora["qe"]  # type: ignore[index]
    with pytest.raises(TypeError):
        config.members["edits"]["folds"] = 2  # type: ignore[index]


def test_the_document_is_the_completed_config(config):
    assert config.to_document() == {
        "name": "typed",
        "languages": {"src": "en", "tgt": "es"},
        "text": {"case": "lower", "tgt": {"case": "keep", "normalize": False}},
        "corpora": {
            "qe": {"dataset": "wmt12-en-es", "split": "train", "cross_fit": 5, "seed": 0},
            "news": {"src": "news.en", "tgt": "news.es", "cross_fit": True},
            "mono": {"tgt": "mono.es"},
        },
        "ngrams": {"src": {"max_order": 2, "corpora": ["qe", "news"]}},
        "edits": {"dataset": "wmt12-en-es", "folds": 5, "seed": 0, "split": "train"},
    }


def test_the_manifest_records_the_completed_config(tmp_path, manual_data):
    bundle = build(tmp_path, manual_data, bundle_config())
    recorded = json.loads((bundle.path / "manifest.json").read_text(encoding="utf-8"))["config"]
    files = {"src": "train.src", "mt": "train.mt", "post_edits": "train.pe"}
    assert recorded == {
        "name": "manual",
        "languages": {"src": "en", "tgt": "de"},
        "text": {"style": "moses", "case": "lower"},
        "leakage": {"eval_files": ["test.src", "test.mt", "test.pe"]},
        # the QE corpus's seed filled in, its target side resolved when it was read
        "corpora": {"train": {**files, "cross_fit": 2, "seed": 0, "target": "post_edits"}},
        "ngrams": {"src": {"side": "src", "max_order": 1}, "tgt": {"side": "tgt", "max_order": 1}},
        "edits": {**files, "labels": "train.hter", "folds": 2, "seed": 0},
    }
