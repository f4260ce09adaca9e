"""How often a token type (a word, or the word beside a gap) was BAD in the training tags, smoothed
towards the overall BAD rate: ``(bad + s * prior) / (seen + s)`` with strength ``s``.

The rate is a target encoding, so a training row must not see its own tag: :func:`out_of_fold` gives
each training row the rate counted on the other folds only (cross-fitting), while dev and test rows
get :class:`TypeRates` fitted on all of the training set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qe.infra.errors import QEInputError


@dataclass(frozen=True)
class TypeRates:
    """Per key: times seen and times BAD in training; ``prior`` is the overall BAD rate."""

    seen: dict[str, int]
    bad: dict[str, int]
    prior: float
    strength: float = 2.0

    @classmethod
    def fit(cls, keys: list[str], bad: np.ndarray, strength: float = 2.0) -> TypeRates:
        """Count ``keys`` (one per training row) and how many of their rows are BAD."""
        bad = np.asarray(bad, dtype=bool)
        if len(keys) != len(bad):
            raise QEInputError(f"{len(keys)} keys but {len(bad)} tags to count")
        types, inverse = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
        seen = np.bincount(inverse, minlength=len(types))
        n_bad = np.bincount(inverse, weights=bad, minlength=len(types)).astype(np.int64)
        prior = float(bad.mean()) if len(bad) else 0.0
        names = types.tolist()
        return cls(
            dict(zip(names, seen.tolist(), strict=True)),
            dict(zip(names, n_bad.tolist(), strict=True)),
            prior,
            strength,
        )

    def rates(self, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(smoothed BAD rate, times seen) of each key; an unseen key has the prior and 0."""
        seen = np.array([self.seen.get(k, 0) for k in keys], dtype=np.float64)
        bad = np.array([self.bad.get(k, 0) for k in keys], dtype=np.float64)
        return _smooth(bad, seen, self.prior, self.strength), seen


def out_of_fold(
    keys: list[str], bad: np.ndarray, folds: np.ndarray, strength: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """(smoothed BAD rate, times seen) of each training row counted on the rows of the other folds
    (``folds[r]`` is row r's fold; the prior too comes from the other folds)."""
    bad = np.asarray(bad, dtype=bool)
    folds = np.asarray(folds, dtype=np.int64)
    if not len(keys) == len(bad) == len(folds):
        raise QEInputError(f"{len(keys)} keys, {len(bad)} tags and {len(folds)} folds must be as many")
    if len(keys) == 0:
        return np.zeros(0), np.zeros(0)
    _, key_id = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
    n_folds, n_types = int(folds.max()) + 1, int(key_id.max()) + 1
    cell = folds * n_types + key_id
    seen_fold = np.bincount(cell, minlength=n_folds * n_types).reshape(n_folds, n_types)
    bad_fold = np.bincount(cell, weights=bad, minlength=n_folds * n_types).reshape(n_folds, n_types)
    seen = seen_fold.sum(axis=0)[key_id] - seen_fold[folds, key_id]
    n_bad = bad_fold.sum(axis=0)[key_id] - bad_fold[folds, key_id]
    rows_fold = np.bincount(folds, minlength=n_folds)
    bad_in_fold = np.bincount(folds, weights=bad, minlength=n_folds)
    others = np.maximum(len(bad) - rows_fold[folds], 1)
    prior = (bad.sum() - bad_in_fold[folds]) / others
    return _smooth(n_bad, seen.astype(np.float64), prior, strength), seen.astype(np.float64)


def _smooth(bad: np.ndarray, seen: np.ndarray, prior: float | np.ndarray, strength: float) -> np.ndarray:
    return (bad + strength * prior) / (seen + strength)
