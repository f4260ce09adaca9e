"""Cross-fitting of bundle members built from the QE training split itself.

A language model, n-gram table or IBM1 lexicon built from the training pairs' own sentences scores
those pairs in-sample: their features look far better in cross-validation than on new text. So
the training pairs are split into ``folds`` groups (by :func:`qe.resources.folds.pair_key`, identical
pairs together, the same assignment as ``[edits]`` for the same folds and seed) and such a member
is built once from all lines (for every other pair: test, new text) and once per fold from the
lines that share no sentence with that fold's pairs. At scoring time a training pair is recognised
by its key and scored with its fold's tables; every other pair with the full ones.

Which lines a fold must not see is decided by text, not by position: a corpus line is *masked* for
fold k when its source equals (lower-cased, whitespace collapsed) the source of a fold-k training
pair, or its target equals that pair's MT or post-edit. That covers the QE corpus itself, a pair
repeated in two folds, and an external corpus that happens to contain training sentences
(``cross_fit = true`` on a plain corpus).

The bundle keeps the pair key -> fold map in its ``cross_fit`` member (gzip JSON, no code). This
module holds that map and cuts a batch by fold at scoring time; the folds are planned and the members
rebuilt per fold while the bundle is built (``qe.bundle.crossfitting``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.infra.io import UNREADABLE_JSON, read_gzip_json, write_gzip_json
from qe.resources.folds import pair_key

FORMAT = "qe-cross-fit/1"
MEMBER = "cross_fit"
"""The bundle member holding the fold map."""


class FoldMap:
    """Which fold each training pair belongs to (by pair key); pairs not listed use the full tables."""

    def __init__(self, fold_of: dict[str, int], folds: int, info: dict[str, Any]) -> None:
        self.fold_of = fold_of
        self.folds = folds
        self.info = info

    def fold(self, src: str, mt: str) -> int | None:
        """The fold of a raw pair, or None when it is not a training pair."""
        return self.fold_of.get(pair_key(src, mt))

    def save(self, path: str | Path) -> None:
        """Write gzip JSON (atomically, reproducibly)."""
        write_gzip_json(
            path, {"format": FORMAT, "folds": self.folds, "info": self.info, "fold_of": self.fold_of}
        )

    @classmethod
    def load(cls, path: str | Path) -> FoldMap:
        """Read a saved map; a truncated or foreign file raises QEInputError naming it."""
        path = Path(path)
        try:
            payload = read_gzip_json(path, FORMAT, "cross-fitting fold map")
            folds = int(payload["folds"])
            fold_of = {str(k): int(v) for k, v in payload["fold_of"].items()}
            if folds < 2 or any(not 0 <= v < folds for v in fold_of.values()):
                raise ValueError("fold out of range")
            return cls(fold_of, folds, dict(payload.get("info", {})))
        except UNREADABLE_JSON as exc:
            raise QEInputError(f"not a readable fold map ({exc.__class__.__name__})", path) from None


# ====================================================================== scoring


def fold_groups(resources: Any, src: Sequence[str], mt: Sequence[str]) -> list[tuple[int | None, np.ndarray]]:
    """(fold or None, row indices) groups of a batch: training pairs by fold, the rest together."""
    fold_map = resources.get(MEMBER)
    folds = np.array([-1 if (f := fold_map.fold(s, m)) is None else f for s, m in zip(src, mt, strict=True)])
    return [(None if k < 0 else int(k), np.flatnonzero(folds == k)) for k in np.unique(folds)]


def is_cross_fitted(resources: Any) -> bool:
    """Whether a bundle holds cross-fitted members (and so a fold map)."""
    return resources is not None and hasattr(resources, "fold_view") and MEMBER in resources


def split_by_fold(batch: Any, resources: Any, reads_bundle: bool) -> list[tuple[np.ndarray | None, Any, Any]]:
    """``(rows, part, part_resources)`` pieces of ``batch`` for families that read bundle members:
    training pairs of a cross-fitted bundle are scored with their fold's tables, so the batch is cut
    by fold; otherwise one piece, the whole batch (``rows`` None) with the bundle as it is.
    """
    if not reads_bundle or not is_cross_fitted(resources):
        return [(None, batch, resources)]
    groups = fold_groups(resources, batch.src, batch.mt)
    if len(groups) == 1 and groups[0][0] is None:
        return [(None, batch, resources)]
    return [
        (
            rows,
            replace(  # a batch of the same class (qe.features.base.Pairs), its annotations made anew
                batch,
                ids=[batch.ids[i] for i in rows],
                src=[batch.src[i] for i in rows],
                mt=[batch.mt[i] for i in rows],
                extra={name: [values[i] for i in rows] for name, values in batch.extra.items()},
                origins=batch.origins,
                positions=[int(i) for i in rows],
            ),
            resources if fold is None else resources.fold_view(fold),
        )
        for fold, rows in groups
    ]
