"""Post-editing statistics (qe.resources.edits) and the edits family, against hand-computed values."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from qe.bundle import ResourceBundle, read_bundle_config
from qe.features.base import Pairs
from qe.features.edits import EditFeatures
from qe.infra.errors import QEInputError
from qe.resources.edits import EditModel, EditStats, edited_mask, pair_key
from qe.text.processing import TextConfig
from tests.helpers import write_config
from tests.helpers.bundles import build, small_config


@pytest.mark.parametrize(
    ("mt", "post_edit", "expected"),
    [
        ("the cat sat", "the dog sat", [False, True, False]),  # substitution
        ("a b c", "a c", [False, True, False]),  # deletion
        ("a c", "a b c", [False, False]),  # insertion: no MT word edited
        ("x y", "y x", [False, True]),  # a swap keeps one word (the earliest) in place
        ("", "new words", []),
    ],
)
def test_edited_mask_marks_mt_words_outside_the_matching_blocks(mt, post_edit, expected):
    assert edited_mask(mt.split(), post_edit.split()).tolist() == expected


def test_edit_stats_features_by_hand():
    # pair 1: MT "a b", "b" edited, label 2; pair 2: MT "a c", both edited, label 4.
    stats = EditStats.count(
        [["x"], ["x", "y"]],
        [["a", "b"], ["a", "c"]],
        [np.array([False, True]), np.array([True, True])],
        np.array([2.0, 4.0]),
    )
    assert stats.edit_rate == 0.75 and stats.label_mean == 3.0
    values = stats.features(["y"], ["a", "z"])
    # word rates: a = (1 + 2 * 0.75) / (2 + 2) = 0.625; unseen z = 0.75 (the prior)
    # bigram rates: "<s> a" seen twice, edited once -> (1 + 2 * 0.625) / 4 = 0.5625; "a z" unseen -> 0.75
    # source "y": one pair, label 4 -> (4 + 2 * 3) / 3; MT labels: a -> (6 + 6) / 4 = 3, z unseen -> 3
    expected = [0.6875, 0.75, 1.0, 0.65625, 0.75, 1.0, 0.5, 10 / 3, 10 / 3, 3.0, 3.0]
    assert values == pytest.approx(expected)
    empty = stats.features([], [])
    assert empty == pytest.approx([0.75, 0.75, 1.0, 0.75, 0.75, 1.0, 0.0, 3.0, 3.0, 3.0, 3.0])


def _toy_model(folds: int = 2) -> tuple[EditModel, list[str], list[str]]:
    src = [f"source {i}" for i in range(8)] + ["source 0"]
    mt = [f"common w{i}" for i in range(8)] + ["common w0"]  # the last pair repeats the first
    post_edits = [f"common w{i}" if i % 2 else f"common other{i}" for i in range(8)] + ["common w0"]
    labels = np.arange(9, dtype=float)
    model = EditModel.build(
        [s.split() for s in src],
        [m.split() for m in mt],
        [p.split() for p in post_edits],
        labels,
        [pair_key(s, m) for s, m in zip(src, mt, strict=True)],
        folds=folds,
    )
    return model, src, mt


def test_training_pairs_are_scored_without_their_own_fold():
    model, src, mt = _toy_model()
    # identical pairs share a fold, so the repeated pair cannot see its twin's post-edit
    assert model.fold_of[pair_key(src[0], mt[0])] == model.fold_of[pair_key(src[8], mt[8])]
    for i in range(8):
        stats = model.stats_for(src[i], mt[i])
        assert f"w{i}" not in stats.mt_words  # its own unique word is unseen for it
        assert f"w{i}" in model.full.mt_words
    new = model.stats_for("a new source", "common w3")
    assert new is model.full
    # w3 was kept once (pair 3 is odd: its post-edit equals the MT) -> (0 + 2 * rate) / (1 + 2)
    rate = model.full.edit_rate
    assert model.full.features([], ["w3"])[0] == pytest.approx(2 * rate / 3)


def test_edit_model_round_trip_and_corrupt_files(tmp_path):
    model, src, mt = _toy_model()
    path = tmp_path / "edits.json.gz"
    model.save(path)
    loaded = EditModel.load(path)
    for i in range(9):
        assert loaded.stats_for(src[i], mt[i]).features(["source"], mt[i].split()) == pytest.approx(
            model.stats_for(src[i], mt[i]).features(["source"], mt[i].split())
        )
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(QEInputError, match="not a readable edit model") as info:
        EditModel.load(path)
    assert info.value.path.endswith("edits.json.gz")
    with gzip.open(path, "wb") as handle:
        handle.write(b'{"format": "something-else"}')
    with pytest.raises(QEInputError, match="not a qe edit model") as info:
        EditModel.load(path)
    assert "something-else" not in str(info.value)  # the file's content is not echoed


def test_edit_model_refuses_bad_training_data():
    with pytest.raises(QEInputError, match="too few"):
        EditModel.build([["a"]] * 3, [["a"]] * 3, [["a"]] * 3, np.ones(3), ["k1", "k2", "k3"], folds=2)
    with pytest.raises(QEInputError, match="non-finite"):
        EditModel.build(
            [["a"]] * 4, [["a"]] * 4, [["a"]] * 4, np.array([1, np.nan, 2, 3]), list("abcd"), folds=2
        )


def test_edits_family_uses_the_bundle_tokenizer_and_cross_fitting():
    model, src, mt = _toy_model()
    text = {
        side: TextConfig(lang=lang, style="moses", case="lower")
        for side, lang in (("src", "en"), ("tgt", "es"))
    }
    bundle = ResourceBundle.in_memory({"edits": model}, text)
    family = EditFeatures()
    batch = Pairs(ids=["a", "b"], src=[src[1], "A new Source"], mt=[mt[1], "Common W1"])
    values = family.extract(batch, bundle)
    assert values.shape == (2, 11) and len(family.column_names()) == 11
    assert values[0].tolist() == pytest.approx(
        model.stats_for(src[1], mt[1]).features(["source", "1"], ["common", "w1"])
    )
    # a new pair (upper case is folded by the bundle's tokenizer) uses all training pairs: w1 is seen
    assert values[1, 6] == 0.0
    with pytest.raises(QEInputError, match="the member 'edits'"):
        family.extract(batch, ResourceBundle.in_memory({}, text))


def test_bundle_config_refuses_edits_from_the_test_split(tmp_path, small_data):
    config = small_config(edits={"dataset": "wmt12-en-es", "split": "test"})
    with pytest.raises(QEInputError, match=r"edits\.split = 'test': expected a training split"):
        read_bundle_config(write_config(tmp_path / "b.toml", config))
    with pytest.raises(QEInputError, match=r"edits\.folds = 1: expected an integer >= 2"):
        read_bundle_config(
            write_config(tmp_path / "b.toml", small_config(edits={"dataset": "wmt12-en-es", "folds": 1}))
        )
    with pytest.raises(
        QEInputError, match=r"edits\.dataset = null: expected a registered dataset with post-edits"
    ):
        read_bundle_config(write_config(tmp_path / "b.toml", small_config(edits={"split": "train"})))


@pytest.mark.data
@pytest.mark.slow  # all 1,832 WMT12 training pairs; the edit model is built and scored by hand above
def test_bundle_builds_edits_from_the_wmt12_training_post_edits(tmp_path, small_data, data_dir):
    # The toy corpora plus the real WMT12 training split (the data dir must hold both: link them).
    (small_data / "wmt12-qe").symlink_to(data_dir / "wmt12-qe")
    bundle = build(tmp_path, small_data, small_config(edits={"dataset": "wmt12-en-es", "folds": 5}))
    info = bundle.info("edits")
    assert info["summary"]["pairs"] == 1832 and info["settings"]["split"] == "train"
    # Post-editors changed some but far from all MT words (24.7 % with this tokenizer).
    assert 0.15 < info["summary"]["edited_share"] < 0.35
    model = bundle.get("edits")
    assert len(model.folds) == 5 and len(set(model.fold_of.values())) == 5
