"""A dataset's digests (qe.data.digest): the fingerprint keeps its definition, each column is hashed once
per dataset, and the feature cache's key derived from the same pass tells apart what the fingerprint
cannot."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from qe.data import QEDataset
from tests.helpers.hashing import HashPasses

SRC = ["The house is red.", "Ünïcode — “quoted”"]
MT = ["La casa es roja.", "Unicode — «citado»"]
LABELS = np.array([4.5, 2.0])


def _expected_fingerprint(src: list[str], mt: list[str], labels: np.ndarray | None) -> str:
    """The definition the result tables' (docs/) and saved models' signatures quote: sha256 of
    ``src \\t mt \\n`` per pair, then the labels as float64 bytes; 16 hex digits."""
    text = "".join(f"{s}\t{t}\n" for s, t in zip(src, mt, strict=True)).encode("utf-8")
    tail = b"" if labels is None else np.asarray(labels, dtype="<f8").tobytes()
    return hashlib.sha256(text + tail).hexdigest()[:16]


@pytest.mark.parametrize("labels", [LABELS, None])
def test_the_fingerprint_keeps_its_definition(labels: np.ndarray | None) -> None:
    data = QEDataset(ids=["0", "1"], src=SRC, mt=MT, labels=labels)
    assert data.fingerprint() == _expected_fingerprint(SRC, MT, labels)


def test_each_text_is_hashed_once_per_dataset(monkeypatch: pytest.MonkeyPatch) -> None:
    data = QEDataset(ids=["0", "1"], src=list(SRC), mt=list(MT), labels=LABELS, inputs={"nmt": ["-1", "-2"]})
    relabelled = _expected_fingerprint(SRC, MT, np.array([1.0, 5.0]))
    hashed = HashPasses(monkeypatch, {"src": SRC[1], "mt": MT[1], "nmt": '"-2"'})
    first = data.fingerprint()
    key = data.digest().cache_key()
    data.labels = np.array([1.0, 5.0])  # labels are not text: the kept digest continues with them
    assert data.fingerprint() == relabelled != first
    assert data.digest().cache_key() == key  # nor are they part of the cache key
    assert hashed.counts() == {"mt": 1, "nmt": 1, "src": 1}
    data.mt = [MT[0], "otra"]  # a column replaced: the dataset is hashed again
    assert data.digest().cache_key() != key
    assert hashed.counts() == {"mt": 1, "nmt": 2, "src": 2}  # (the marked translation is gone)
    monkeypatch.undo()
    assert data.fingerprint() == _expected_fingerprint(SRC, data.mt, data.labels)


def test_the_cache_key_tells_apart_what_the_fingerprint_cannot() -> None:
    """A tab moved from the source into the translation leaves the fingerprint's stream as it was; the
    cache key, which also takes each sentence's length, differs (the features differ)."""
    one = QEDataset(ids=["0"], src=["one\ttwo"], mt=["x"])
    other = QEDataset(ids=["0"], src=["one"], mt=["two\tx"])
    assert one.fingerprint() == other.fingerprint()
    assert one.digest().cache_key() != other.digest().cache_key()


def test_the_cache_key_takes_ids_and_inputs() -> None:
    base = QEDataset(ids=["0", "1"], src=SRC, mt=MT, inputs={"nmt": ["-1", "-2"]})
    keys = {
        base.digest().cache_key(),
        QEDataset(ids=["a", "b"], src=SRC, mt=MT, inputs={"nmt": ["-1", "-2"]}).digest().cache_key(),
        QEDataset(ids=["0", "1"], src=SRC, mt=MT, inputs={"nmt": ["-1", "-3"]}).digest().cache_key(),
        QEDataset(ids=["0", "1"], src=SRC, mt=MT).digest().cache_key(),
    }
    assert len(keys) == 4
    digest = base.digest()
    assert digest.cache_key({"nmt": digest.inputs["nmt"]}) == digest.cache_key()
