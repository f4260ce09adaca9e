"""A QE dataset: sentence pairs with their labels, post-edits and per-pair family inputs, by position."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qe.data.digest import TextDigest, text_digest


@dataclass
class QEDataset:
    """Sentence pairs with optional labels and supervision aligned by position.

    ``labels`` is a float array (post-editing effort, HTER, ...) or None for unlabelled data;
    ``annotator_scores`` is an ``(n, k)`` array of the individual judgements when known; ``pairs``
    names each row's dataset when several are pooled (``qe.data.pooled``), else it is None.
    """

    ids: list[str]
    src: list[str]
    mt: list[str]
    labels: np.ndarray | None = None
    post_edits: list[str] | None = None
    references: list[str] | None = None
    annotator_scores: np.ndarray | None = None
    name: str = "dataset"
    files: dict[str, str] = field(default_factory=dict)
    # Per-pair inputs of feature families that came with the dataset (e.g. MLQE-PE's NMT
    # log-probabilities), by input name, and where each (and src, mt) was read: (file, line of the
    # first pair), so that errors name the file and line.
    inputs: dict[str, list[str]] = field(default_factory=dict)
    input_origins: dict[str, tuple[str, int]] = field(default_factory=dict)
    pairs: list[str] | None = None
    # The digest of the columns, with the input names and the column objects it was taken of (digest()).
    _digest: tuple[list[str], list[Any], TextDigest] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __len__(self) -> int:
        return len(self.src)

    def subset(self, indices: np.ndarray | list[int]) -> QEDataset:
        """A new dataset holding only the given rows (for cross-validation folds and samples)."""
        idx = list(map(int, indices))

        def pick(values):
            if values is None:
                return None
            if isinstance(values, np.ndarray):
                return values[idx]
            return [values[i] for i in idx]

        return QEDataset(
            ids=pick(self.ids),
            src=pick(self.src),
            mt=pick(self.mt),
            labels=pick(self.labels),
            post_edits=pick(self.post_edits),
            references=pick(self.references),
            annotator_scores=pick(self.annotator_scores),
            name=f"{self.name}[subset]",
            files=dict(self.files),
            inputs={key: pick(values) for key, values in self.inputs.items()},
            pairs=pick(self.pairs),
        )

    def digest(self) -> TextDigest:
        """The digests of the ids, sentence pairs and per-pair inputs (``qe.data.digest``), each column
        hashed once: taken on first use and kept while the dataset holds the same column objects (a
        column replaced is hashed again; one edited in place is not noticed)."""
        columns = [self.ids, self.src, self.mt, *self.inputs.values()]
        if self._digest is not None:
            names, kept, digest = self._digest
            if names == list(self.inputs) and all(a is b for a, b in zip(kept, columns, strict=True)):
                return digest
        digest = text_digest(self.ids, self.src, self.mt, self.inputs)
        self._digest = (list(self.inputs), columns, digest)
        return digest

    def fingerprint(self) -> str:
        """A short hash of the sentences and labels, recorded in signatures and model manifests."""
        return self.digest().fingerprint(self.labels)
