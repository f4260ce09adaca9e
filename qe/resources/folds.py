"""Training pairs dealt into folds: the key a raw pair is recognised by and the seeded fold of each key.

Shared by the edit model (``qe.resources.edits``) and cross-fitted bundle members
(``qe.resources.crossfit``), which must agree on both for the same folds and seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


def pair_key(src: str, mt: str) -> str:
    """A short stable key of a raw sentence pair (how training pairs are recognised again)."""
    return hashlib.sha256(f"{src}\t{mt}".encode()).hexdigest()[:20]


def assign_folds(keys: Sequence[str], folds: int, seed: int) -> dict[str, int]:
    """Pair key -> fold: the distinct keys, sorted, in a seeded random order, dealt round-robin."""
    unique = sorted(set(keys))
    order = np.random.default_rng(seed).permutation(len(unique))
    return {unique[i]: int(rank % folds) for rank, i in enumerate(order)}
