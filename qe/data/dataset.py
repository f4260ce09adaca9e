"""A QE dataset: sentence pairs with their labels, post-edits and per-pair family inputs, by position."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np


@dataclass
class QEDataset:
    """Sentence pairs with optional labels and supervision aligned by position.

    ``labels`` is a float array (post-editing effort, HTER, ...) or None for unlabelled data;
    ``annotator_scores`` is an ``(n, k)`` array of the individual judgements when known.
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
        )

    def fingerprint(self) -> str:
        """A short hash of the sentences and labels, recorded in signatures and model manifests."""
        digest = hashlib.sha256()
        for s, t in zip(self.src, self.mt, strict=True):
            digest.update(s.encode())
            digest.update(b"\t")
            digest.update(t.encode())
            digest.update(b"\n")
        if self.labels is not None:
            digest.update(np.asarray(self.labels, dtype=np.float64).tobytes())
        return digest.hexdigest()[:16]
