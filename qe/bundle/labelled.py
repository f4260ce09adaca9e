"""What the members that learn from QE labels (``[finetuned]``, ``[crossencoder]``) share: their table's
corpus and labels checked, the labelled corpus read once, and each model's seeded held-out share of its
own training pairs (early stopping and the choice among settings use it, never the dev or test split)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qe.bundle.members import BuildContext, ConfigTable
from qe.bundle.sections import BundleConfig
from qe.infra.errors import QEInputError

Pairs = tuple[list[str], list[str], np.ndarray]
"""Sources, MT and labels, in the corpus's order."""


def labelled_corpus_table(
    section: str, config: BundleConfig, given: ConfigTable, config_path: Path, defaults: dict[str, Any]
) -> dict[str, Any]:
    """A member table that learns from labels: its corpus is the cross-fitted QE training corpus (the
    first one by default), a ``labels`` file only with a corpus from files; ``defaults`` filled and the
    corpus's folds, which the models follow, added."""
    corpora = config.corpora
    fitted = [name for name, corpus in corpora.items() if corpus.is_qe and corpus.cross_fit]
    table = dict(given)
    name = table.setdefault("corpus", fitted[0] if fitted else "")
    if name not in fitted:
        raise QEInputError(
            f"[{section}] learns from the cross-fitted QE training corpus (a [corpora.NAME] with "
            f"dataset = ... or src / mt files, and cross_fit), not {name or 'none'!r}: a model that "
            "saw a training pair's label must not score it",
            config_path,
        )
    if ("labels" in table) == bool(corpora[name].dataset_names):
        raise QEInputError(
            f"[{section}] labels = FILE goes with a QE corpus from files (one label per line); "
            f"a registered dataset brings its own (corpus {name!r})",
            config_path,
        )
    for field, default in defaults.items():
        table.setdefault(field, default)
    table["folds"] = corpora[name].cross_fit
    return table


@dataclass(frozen=True)
class LabelledCorpus:
    """The cross-fitted QE corpus a labelled member learns from: its name, data, one finite label per
    pair, the training rows it keeps, and each row's fold mask (bit ``f`` set: fold ``f`` leaves it out)."""

    name: str
    data: Any
    labels: np.ndarray
    rows: np.ndarray
    masks: np.ndarray

    @property
    def pairs(self) -> Pairs:
        """Every pair of the corpus with its label."""
        return self.data.src, self.data.mt, self.labels

    def fingerprints(self) -> dict[str, str]:
        """What a manifest entry says of the data its models learnt from: the corpus's and the labels'."""
        return {
            "data_fingerprint": self.data.fingerprint(),
            "labels_sha256": hashlib.sha256(self.labels.tobytes()).hexdigest(),
        }


def labelled_corpus(context: BuildContext, table: ConfigTable, section: str) -> LabelledCorpus:
    """The table's corpus with its labels (its dataset's, or the ``labels`` file's: one per pair, each
    a finite number)."""
    from qe.data import read_labels

    name = table["corpus"]
    corpus = context.corpora[name]
    data = corpus.qe
    if "labels" in table:
        path = context.path(table["labels"])
        labels = read_labels(path)
        if len(labels) != len(data):
            raise QEInputError(f"{len(labels)} labels for the {len(data)} pairs of the QE corpus", path)
    else:
        labels = np.asarray(data.labels, dtype=np.float64)
    if not np.isfinite(labels).all():
        raise QEInputError(f"[{section}]: the labels of corpus {name!r} are not all finite numbers")
    rows = corpus.rows if corpus.rows is not None else np.arange(len(data))
    assert corpus.masks is not None  # planned for the cross-fitted corpus before members are built
    return LabelledCorpus(name, data, labels, rows, corpus.masks)


def label_files(table: ConfigTable) -> list[str]:
    """The input files a labelled member's table names: its ``labels`` file, if any."""
    return [table["labels"]] if "labels" in table else []


def held_out_split(
    rows: np.ndarray, table: ConfigTable, section: str, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """The training pairs ``rows`` split, seeded by the table's ``seed``, into those a model learns from
    and its ``holdout`` share (at least two of each), both in row order."""
    order = np.random.default_rng(table["seed"]).permutation(rows)
    held = max(2, round(table["holdout"] * len(rows)))
    if len(rows) - held < 2:
        raise QEInputError(f"[{section}] {what}: {len(rows)} training pairs are too few")
    return np.sort(order[held:]), np.sort(order[:held])


def pair_subset(pairs: Pairs, index: np.ndarray) -> Pairs:
    """The pairs ``index`` of ``pairs``, with their labels."""
    return [pairs[0][i] for i in index], [pairs[1][i] for i in index], pairs[2][index]
