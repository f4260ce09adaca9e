"""Evaluation data leaked into a bundle through a resource, beside a training split that repeats it.

Since the training split's repeats of the test split are reported and kept (issue 24 item 1, see
tests/test_split_repeats.py), every other way for evaluation sentences into a bundle must still be
refused, naming the member that leaks: a plain corpus, ``[edits]`` learned from pairs other than the
training split's, and a "training split" that is the test split, or holds it. On ba3d5b8 each of
these bundles was refused, but so was the same bundle without the leak (the training split's
repeats stopped it first), so the refusal never named the leak: each case fails there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qe.infra.errors import QEInputError
from tests.helpers import write_lines
from tests.helpers.manual import TEST_SRC, TRAIN_SRC, build, bundle_config, split_files, write_split


def with_corpus(config: dict, root: Path) -> Path:
    """An extra LM-style corpus holding one test sentence (at line 2)."""
    write_lines(root / "extra.en", ["Save often .", TEST_SRC[7], "Backups are kept for a year ."])
    config["corpora"]["extra"] = {"src": "extra.en"}
    return root / "extra.en"


def with_other_edits(config: dict, root: Path) -> Path:
    """[edits] learned from the training pairs plus one test pair (line 25), not the training split."""
    write_split(root, "more", [*TRAIN_SRC, TEST_SRC[0]])
    config["edits"] = {**split_files("more"), "labels": "more.hter", "folds": 2}
    return root / "more.src"


def with_test_edits(config: dict, root: Path) -> Path:
    """An [edits]-only bundle learned from the test split's own files."""
    write_lines(root / "test.hter", ["0.1"] * len(TEST_SRC))
    del config["corpora"], config["ngrams"]
    config["edits"] = {**split_files("test"), "labels": "test.hter", "folds": 2}
    return root / "test.src"


def with_test_appended(config: dict, root: Path) -> Path:
    """A training split of the training and the test pairs together."""
    write_split(root, "all", TRAIN_SRC + TEST_SRC)
    config["corpora"]["train"] = {**split_files("all"), "cross_fit": 2}
    config["edits"] = {**split_files("all"), "labels": "all.hter", "folds": 2}
    return root / "all.src"


@pytest.mark.parametrize(
    ("leak", "message", "line"),
    [
        (with_corpus, "corpus shares 1 sentence(s) with the evaluation data", 2),
        (with_other_edits, "[edits] src: corpus shares 3 sentence(s) and 1 near-duplicate(s)", 6),
        (with_test_edits, "[edits] src: corpus shares 20 sentence(s)", 1),
        (with_test_appended, "[corpora.train] / [edits] src: corpus shares 22 sentence(s)", 6),
    ],
)
def test_evaluation_data_in_a_resource_is_refused_naming_it(tmp_path, manual_data, leak, message, line):
    config = bundle_config()
    leaked = leak(config, manual_data)
    with pytest.raises(QEInputError) as info:
        build(tmp_path, manual_data, config)
    assert info.value.message.startswith(message)
    assert (info.value.path, info.value.line) == (str(leaked), line)
    if leak in (with_test_edits, with_test_appended):  # the test split as training split, or inside it
        assert (
            "of the 20 sentences of" in info.value.message
            and "it holds the evaluation data" in info.value.message
        )
    assert "pass --drop-overlap or --allow-overlap" in info.value.message
    assert not (tmp_path / "out").exists()
    # without the leak, the same bundle builds (the training split's repeats are reported, not refused)
    assert build(tmp_path, manual_data, bundle_config()).manifest["leakage"]["overlaps"] == []
