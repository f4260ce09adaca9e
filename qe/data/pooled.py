"""Several registered datasets pooled into one ``QEDataset`` (``[data] datasets = [...]``): one model for
many language pairs, each row naming its dataset (``QEDataset.pairs``).

Labels of different scales are put on one by z-scoring each dataset's labels with the mean and standard
deviation of *its own training labels* (``normalise = "pair"``); every split of that dataset (train, dev,
test) is scaled with the same two numbers, kept as a ``PairScale`` so that a prediction for the pair maps
back to its scale (``PairScale.restore``). A dataset outside the training pool (zero-shot) has no
training labels, so its labels are left as they are. ``normalise = "none"`` pools the labels unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qe.data.dataset import QEDataset
from qe.data.load import load_registered
from qe.data.registry import registered_dataset
from qe.infra.errors import QEInputError

NORMALISE = ("none", "pair")
"""How pooled labels are put on one scale: unchanged, or z-scored per dataset on its training labels."""


@dataclass(frozen=True)
class PairScale:
    """The mean and standard deviation of one dataset's training labels."""

    mean: float
    std: float

    def apply(self, labels: np.ndarray) -> np.ndarray:
        """Labels of this pair on the pooled scale (z-scores of its training labels)."""
        return (np.asarray(labels, dtype=np.float64) - self.mean) / self.std

    def restore(self, scores: np.ndarray) -> np.ndarray:
        """Pooled-scale predictions for this pair back on the pair's own label scale."""
        return np.asarray(scores, dtype=np.float64) * self.std + self.mean


def pair_scale(labels: np.ndarray, name: str) -> PairScale:
    """The scale of a dataset's training labels; constant labels cannot be z-scored (one clear line)."""
    labels = np.asarray(labels, dtype=np.float64)
    std = float(labels.std())
    if len(labels) < 2 or not std > 0:
        raise QEInputError(f'[data] normalise = "pair": the training labels of {name} do not vary')
    return PairScale(float(labels.mean()), std)


def pair_scales(
    names: Sequence[str], data_dir: str | Path | None, train_split: str = "train"
) -> dict[str, PairScale]:
    """Each dataset's scale from its training split."""
    scales = {}
    for name in names:
        labels = load_registered(name, train_split, data_dir).labels
        if labels is None:
            raise QEInputError(f'[data] normalise = "pair": {name} has no training labels')
        scales[name] = pair_scale(labels, name)
    return scales


def check_poolable(names: Sequence[str], normalise: str) -> None:
    """Datasets whose labels have different ranges (HTER's [0, 1] and DA z-scores) are pooled only when
    ``normalise = "pair"`` puts them on one scale."""
    ranges = {registered_dataset(name).label_range for name in names}
    if len(ranges) > 1 and normalise != "pair":
        raise QEInputError(
            f"[data] datasets {', '.join(names)} have labels of different ranges: pool them with "
            'normalise = "pair" (z-scores per dataset)'
        )


def pool(
    parts: Sequence[QEDataset], names: Sequence[str], scales: dict[str, PairScale] | None = None
) -> QEDataset:
    """One dataset of ``parts`` in order, its ids ``<dataset>:<id>``, each row's dataset in ``pairs``,
    the labels scaled per dataset by ``scales`` (a dataset without one: unchanged). Columns only some
    parts have (post-edits, family inputs) are dropped: a pooled column holds every row."""
    scales = scales or {}
    labelled = all(part.labels is not None for part in parts)
    labels = None
    if labelled:
        labels = np.concatenate(
            [
                scales[n].apply(p.labels) if n in scales else p.labels
                for p, n in zip(parts, names, strict=True)
            ]
        )

    def joined(column: str) -> list[str] | None:
        values = [getattr(part, column) for part in parts]
        return None if any(v is None for v in values) else [x for v in values for x in v]

    shared = [key for key in parts[0].inputs if all(key in part.inputs for part in parts)]
    return QEDataset(
        ids=[f"{name}:{i}" for part, name in zip(parts, names, strict=True) for i in part.ids],
        src=[s for part in parts for s in part.src],
        mt=[m for part in parts for m in part.mt],
        labels=labels,
        post_edits=joined("post_edits"),
        references=joined("references"),
        name="+".join(part.name for part in parts),
        files={
            f"{name}:{role}": path
            for part, name in zip(parts, names, strict=True)
            for role, path in part.files.items()
        },
        inputs={key: [x for part in parts for x in part.inputs[key]] for key in shared},
        pairs=[name for part, name in zip(parts, names, strict=True) for _ in range(len(part))],
    )


def load_pooled(
    names: Sequence[str],
    split: str,
    data_dir: str | Path | None = None,
    scales: dict[str, PairScale] | None = None,
) -> QEDataset:
    """The split ``split`` of every dataset ``names`` pooled (:func:`pool`), scaled by ``scales``."""
    return pool([load_registered(name, split, data_dir) for name in names], names, scales)


def stratified_sample(strata: Sequence[str], size: int, seed: int) -> np.ndarray:
    """The sorted positions of at most ``size`` of the rows whose strata (a pooled corpus's dataset per
    row, ``QEDataset.pairs``) are ``strata``: each stratum gives its share of ``size`` (largest
    remainders round, ties to the first stratum seen), drawn by a generator seeded with ``seed``, so a
    capped pool keeps its mix of pairs and the same call gives the same rows; all rows when they are
    no more than ``size``."""
    if len(strata) <= size:
        return np.arange(len(strata))
    index = {name: k for k, name in enumerate(dict.fromkeys(strata))}
    which = np.array([index[name] for name in strata])
    counts = np.bincount(which, minlength=len(index))
    quotas, remainders = np.divmod(size * counts, len(strata))  # integers: no rounding drift
    quotas[np.argsort(-remainders, kind="stable")[: size - int(quotas.sum())]] += 1
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(which == k), quotas[k], replace=False) for k in range(len(index))]
    return np.sort(np.concatenate(picked))
