"""What a dataset's columns hash to, each hashed in one pass: the fingerprint recorded in signatures and
model manifests and the feature cache's key are both derived from these digests, so a run hashes each
text once.

The fingerprint's definition is fixed (signatures in the docs' result tables and in saved models quote
it): sha256 of ``src \\t mt \\n`` for each pair in order, then the labels as float64 bytes. The pass
over the pairs is kept as an open sha256 state, so the labels are added to a copy and the text is not
hashed again. The same pass records each sentence's length in bytes, which makes the pair stream
unambiguous (a tab inside a sentence cannot pass for the separator) for the cache key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def column_digest(values: Sequence[Any]) -> str:
    """sha256 of one column of per-pair values (ids, a family's line input), in order."""
    text = json.dumps(list(values), default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TextDigest:
    """The digests of a dataset's ids, sentence pairs and per-pair inputs (:func:`text_digest`)."""

    pairs: Any = field(repr=False)  # the open sha256 state over ``src \t mt \n`` of every pair
    lengths: str  # sha256 of each source and translation's length in bytes, in order
    ids: str
    inputs: dict[str, str]  # by input name, the column_digest of the dataset's own per-pair inputs

    def fingerprint(self, labels: np.ndarray | None) -> str:
        """``QEDataset.fingerprint``: the pairs' digest continued with the labels, 16 hex digits."""
        digest = self.pairs.copy()
        if labels is not None:
            digest.update(np.asarray(labels, dtype=np.float64).tobytes())
        return digest.hexdigest()[:16]

    def cache_key(self, inputs: Mapping[str, str] | None = None) -> str:
        """The data part of the feature cache's key: the ids, the pairs and the per-pair inputs the
        families read (``inputs``: their column digests by name; default the dataset's own)."""
        payload = {
            "ids": self.ids,
            "pairs": self.pairs.hexdigest(),
            "lengths": self.lengths,
            "inputs": dict(sorted((self.inputs if inputs is None else inputs).items())),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def text_digest(
    ids: Sequence[Any],
    src: Sequence[str],
    mt: Sequence[str],
    inputs: Mapping[str, Sequence[Any]] | None = None,
) -> TextDigest:
    """Hash each column once: the sentence pairs in one pass (the fingerprint's stream, with each
    sentence's length in bytes), the ids and each per-pair input."""
    pairs = hashlib.sha256()
    lengths: list[int] = []
    for s, t in zip(src, mt, strict=True):
        source, target = s.encode(), t.encode()
        pairs.update(source)
        pairs.update(b"\t")
        pairs.update(target)
        pairs.update(b"\n")
        lengths += (len(source), len(target))
    return TextDigest(
        pairs=pairs,
        lengths=hashlib.sha256(np.asarray(lengths, dtype="<i8").tobytes()).hexdigest(),
        ids=column_digest(ids),
        inputs={name: column_digest(values) for name, values in (inputs or {}).items()},
    )
