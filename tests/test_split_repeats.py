"""Repeated sentences across the splits of one QE dataset are the data, not leakage (issue 24, item 1).

A bundle built from the training split itself (a cross-fitted QE corpus and ``[edits]`` from the
same files) whose sentences the test split repeats builds, reporting the count and the share, with
no --allow-overlap; ``drop_overlap`` leaves those pairs out of every member, ``[edits]`` included.
On ba3d5b8 the build stopped with ``corpus shares 2 sentence(s) and 1 near-duplicate(s)``, and
with ``drop_overlap`` with ``[edits] src: corpus shares ...``. Resources that hold evaluation
sentences are still refused: tests/hostile/test_leaked_evaluation_data.py.
"""

from __future__ import annotations

import json

import pytest

from qe.cli import main
from qe.resources.crossfit import MEMBER
from tests.helpers.manual import REPEATED, build, bundle_config, bundle_toml


def test_the_training_split_builds_reporting_its_repeats(tmp_path, manual_data, capsys):
    path = bundle_toml(tmp_path, bundle_config())
    argv = ["resources", "build", str(path), "--data-dir", str(manual_data), "--output", str(tmp_path / "b")]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("the training split ([corpora.train], [edits]) repeats evaluation sentences")
    # 3 of the 24 training lines repeat 3 of the 20 test lines, on each side of the pairs
    assert out[1:4] == [
        f"  {side} train.{ext}: 3 of 24 lines (12.50%; 2 same, 1 near-duplicate(s)) repeat 3 of the 20 "
        f"sentences of test.{ext} (15.0%)"
        for side, ext in (("src", "src"), ("mt", "mt"), ("post_edits", "pe"))
    ]
    leakage = json.loads((tmp_path / "b" / "manifest.json").read_text())["leakage"]
    assert leakage["overlaps"] == [] and leakage["dropped"] == {} and leakage["allowed"] is False
    [src, _, _] = leakage["repeats"]
    assert (src["first_lines"], src["eval_share"], src["dropped"]) == (REPEATED, 0.15, False)
    assert [e["eval"] for e in src["examples"]] == [
        f"{manual_data / 'test.src'}:{line}" for line in (4, 9, 15)
    ]


def test_the_repeats_stay_in_every_member_unless_dropped(tmp_path, manual_data):
    bundle = build(tmp_path, manual_data, bundle_config())
    assert bundle.get("ngrams.src").count("midnight") == 1  # a training line that is not repeated
    assert bundle.get("ngrams.src").count("cable") == 2  # training lines 11 and 12 (repeated)
    edits = bundle.get("edits")
    assert edits.info["pairs"] == 24 and "left_out" not in edits.info
    assert "network" in edits.full.mt_words


def test_drop_overlap_leaves_the_repeated_pairs_out_of_every_member_edits_included(
    tmp_path, manual_data, capsys
):
    path = bundle_toml(tmp_path, bundle_config(drop_overlap=True))
    argv = ["resources", "build", str(path), "--data-dir", str(manual_data), "--output", str(tmp_path / "b")]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "dropped lines shared with the evaluation data: 3 from [edits], 3 from train" in out
    assert "repeats evaluation sentences" not in out
    from qe.bundle import ResourceBundle

    bundle = ResourceBundle(tmp_path / "b")
    src = bundle.get("ngrams.src")
    assert (src.count("midnight"), src.count("cable"), src.count("minutes"), src.count("save")) == (
        1,
        1,
        0,
        0,
    )
    edits = bundle.get("edits")
    assert (edits.info["pairs"], edits.info["left_out"]) == (21, 3)
    assert "network" not in edits.full.mt_words and "midnight" in edits.full.mt_words
    # the folds are still dealt over all 24 pairs: the same as the cross-fitted corpus's
    assert edits.fold_of == bundle.get(MEMBER).fold_of and len(edits.fold_of) == 24
    dropped = bundle.manifest["leakage"]["dropped"]
    assert {name: (d["lines"], d["kept"]) for name, d in dropped.items()} == {
        "train": (3, 21),
        "[edits]": (3, 21),
    }
    assert [f["first_lines"] for f in dropped["[edits]"]["files"]] == [REPEATED] * 3
    assert all(entry["dropped"] for entry in bundle.manifest["leakage"]["repeats"])


@pytest.mark.data
def test_a_registered_training_split_is_not_compared_with_its_own_files(tmp_path, data_dir):
    """WMT12's config lists the training files as evaluation files (no external corpus may hold a
    training sentence): the training split itself is only compared with the test files."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "wmt12-qe").symlink_to(data_dir / "wmt12-qe")
    config = {
        "languages": {"src": "en", "tgt": "es"},
        "text": {"style": "moses", "case": "lower"},
        "leakage": {"eval_files": ["wmt12-qe/training_set/source.eng", "wmt12-qe/test_set/source.eng"]},
        "corpora": {"qe": {"dataset": "wmt12-en-es", "cross_fit": 2}},
        "ngrams": {"src": {"side": "src", "max_order": 1}},
    }
    bundle = build(tmp_path, tmp_path / "data", config)
    leakage = bundle.manifest["leakage"]
    assert leakage["overlaps"] == [] and leakage["repeats"] == [] and leakage["eval_sentences"] == 2254
    assert bundle.info("ngrams.src")["folds"]
