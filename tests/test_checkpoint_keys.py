"""The checkpoint key of a trained model (``qe.infra.checkpoints.checkpoint_key``) against the sha256
written out by hand: settings as sorted JSON, each pair ended by NULs, the labels as little-endian
float64."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from qe.infra.checkpoints import checkpoint_key


def test_the_key_is_the_sha256_of_the_settings_the_pairs_and_the_labels() -> None:
    by_hand = hashlib.sha256(
        b'{"a": 1, "b": [2]}'
        + b"one\0uno\0"
        + b"tw\xc3\xb6\0dos\0"  # o-umlaut in UTF-8
        + bytes.fromhex("000000000000e03f000000000000f03f")  # 0.5, 1.0
    ).hexdigest()
    key = checkpoint_key({"b": [2], "a": 1}, ["one", "tw\u00f6"], ["uno", "dos"], np.array([0.5, 1.0]))
    assert key == by_hand


def test_moving_a_word_across_the_pair_boundary_gives_another_key() -> None:
    labels = np.array([1.0])
    assert checkpoint_key({}, ["ab"], ["c"], labels) != checkpoint_key({}, ["a"], ["bc"], labels)
    assert checkpoint_key({}, ["a", "b"], ["c", "d"], np.array([1.0, 2.0])) != checkpoint_key(
        {}, ["a", "b"], ["c", "d"], np.array([2.0, 1.0])
    )


def test_sources_and_translations_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError):
        checkpoint_key({}, ["a", "b"], ["c"], np.array([1.0, 2.0]))
