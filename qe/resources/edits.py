"""Word-level post-editing statistics learned from training post-edits, cross-fitted.

Which MT words do translators change? For every training pair, an MT token counts as *edited*
when it is not part of the longest matching blocks between the MT and its post-edit (difflib,
compared lower-cased after tokenization). The model keeps, per MT word and per MT bigram, how
often it was edited, and, per source word and per MT word, the mean sentence label of the
training pairs that contain it. The ``edits`` feature family turns these tables into sentence
features (mean / max edit probability, unseen words, label associations).

The tables see the training labels, so a training pair must never be scored with statistics that
include its own post-edit: the pairs are split into ``folds`` groups (identical pairs share a
group) and the model also stores one table set per fold built *without* that fold. A pair that
was in the training data is scored with the tables of its own fold's complement (cross-fitting);
any other pair (test, new text) with the tables of all training pairs.

Saved as gzip-compressed JSON (loading executes no code).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.infra.io import UNREADABLE_JSON, read_gzip_json, write_gzip_json
from qe.resources.folds import assign_folds, pair_key

FORMAT = "qe-edit-model/1"
SMOOTHING = 2.0
"""Pseudo-counts of the prior in every smoothed rate (a word seen once moves a third of the way)."""
BOS = "<s>"

N_FEATURES = 11


def edited_mask(mt_tokens: Sequence[str], post_edit_tokens: Sequence[str]) -> np.ndarray:
    """True for every MT token outside the matching blocks of the MT and its post-edit."""
    kept = np.zeros(len(mt_tokens), dtype=bool)
    matcher = difflib.SequenceMatcher(None, list(mt_tokens), list(post_edit_tokens), autojunk=False)
    for start, _, size in matcher.get_matching_blocks():
        kept[start : start + size] = True
    return ~kept


def _smoothed(table: dict[str, list[float]], key: str, prior: float) -> float:
    total, count = table.get(key, (0.0, 0))
    return (total + SMOOTHING * prior) / (count + SMOOTHING)


@dataclass
class EditStats:
    """Count tables from a set of training pairs: ``key -> [sum, count]``."""

    edit_rate: float  # share of edited MT tokens overall (prior of the word rates)
    label_mean: float  # mean label (prior of the label associations)
    mt_words: dict[str, list[float]]  # MT word -> [times edited, occurrences]
    mt_bigrams: dict[str, list[float]]  # "previous word" + " " + word -> [times edited, occurrences]
    src_labels: dict[str, list[float]]  # source word -> [sum of labels, pairs containing it]
    mt_labels: dict[str, list[float]]  # MT word -> [sum of labels, pairs containing it]

    @classmethod
    def count(
        cls,
        src: Sequence[Sequence[str]],
        mt: Sequence[Sequence[str]],
        edited: Sequence[np.ndarray],
        labels: np.ndarray,
    ) -> EditStats:
        """Tables of the given tokenized pairs, their edit masks and labels."""
        mt_words: dict[str, list[float]] = {}
        mt_bigrams: dict[str, list[float]] = {}
        src_labels: dict[str, list[float]] = {}
        mt_labels: dict[str, list[float]] = {}
        n_edited = n_tokens = 0
        for s, m, e, y in zip(src, mt, edited, labels, strict=True):
            for j, word in enumerate(m):
                for table, key in ((mt_words, word), (mt_bigrams, f"{m[j - 1] if j else BOS} {word}")):
                    entry = table.setdefault(key, [0.0, 0])
                    entry[0] += float(e[j])
                    entry[1] += 1
            n_edited += int(e.sum())
            n_tokens += len(m)
            for table, words in ((src_labels, set(s)), (mt_labels, set(m))):
                for word in words:
                    entry = table.setdefault(word, [0.0, 0])
                    entry[0] += float(y)
                    entry[1] += 1
        return cls(
            edit_rate=n_edited / n_tokens if n_tokens else 0.0,
            label_mean=float(np.mean(labels)) if len(labels) else 0.0,
            mt_words=mt_words,
            mt_bigrams=mt_bigrams,
            src_labels=src_labels,
            mt_labels=mt_labels,
        )

    def features(self, src: Sequence[str], mt: Sequence[str]) -> list[float]:
        """The 11 sentence features (see ``qe.features.edits``) of one tokenized pair."""
        if mt:
            word = np.array([_smoothed(self.mt_words, w, self.edit_rate) for w in mt])
            bigram = np.array(
                [
                    _smoothed(self.mt_bigrams, f"{mt[j - 1] if j else BOS} {w}", word[j])
                    for j, w in enumerate(mt)
                ]
            )
            unseen = float(np.mean([w not in self.mt_words for w in mt]))
            mt_label = np.array([_smoothed(self.mt_labels, w, self.label_mean) for w in mt])
        else:
            word = bigram = np.array([self.edit_rate])
            unseen = 0.0
            mt_label = np.array([self.label_mean])
        src_label = (
            np.array([_smoothed(self.src_labels, w, self.label_mean) for w in src])
            if src
            else np.array([self.label_mean])
        )
        return [
            word.mean(),
            word.max(),
            float((word > 0.5).mean()),
            bigram.mean(),
            bigram.max(),
            float((bigram > 0.5).mean()),
            unseen,
            src_label.mean(),
            src_label.min(),
            mt_label.mean(),
            mt_label.min(),
        ]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class EditModel:
    """Edit statistics of all training pairs plus one cross-fitting table set per fold."""

    def __init__(self, full: EditStats, folds: list[EditStats], fold_of: dict[str, int], info: dict) -> None:
        self.full = full
        self.folds = folds
        self.fold_of = fold_of  # pair_key -> fold of every training pair
        self.info = info

    @classmethod
    def build(
        cls,
        src: Sequence[Sequence[str]],
        mt: Sequence[Sequence[str]],
        post_edits: Sequence[Sequence[str]],
        labels: np.ndarray,
        keys: Sequence[str],
        folds: int = 5,
        seed: int = 0,
        keep: np.ndarray | None = None,
    ) -> EditModel:
        """Count the tables from tokenized training pairs; ``keys`` are their :func:`pair_key`.

        ``keep`` (a boolean mask, default all) picks the pairs counted: the folds are dealt over all
        keys, so they stay those of a cross-fitted corpus of the same pairs when some are left out
        (repeats of the evaluation data under ``drop_overlap``)."""
        labels = np.asarray(labels, dtype=np.float64)
        if not len(src) == len(mt) == len(post_edits) == len(labels) == len(keys):
            raise QEInputError("edit model: source, MT, post-edits, labels and keys differ in length")
        kept = np.arange(len(src)) if keep is None else np.flatnonzero(keep)
        if len(kept) < 2 * folds or folds < 2:
            left_out = f" ({len(src) - len(kept)} left out)" if len(kept) < len(src) else ""
            raise QEInputError(
                f"edit model: {len(kept)} training pairs{left_out} are too few for {folds} folds"
            )
        if not np.all(np.isfinite(labels)):
            raise QEInputError("edit model: the training labels hold a missing or non-finite value")
        edited = [edited_mask(m, p) for m, p in zip(mt, post_edits, strict=True)]
        fold_of = assign_folds(keys, folds, seed)
        row_fold = np.array([fold_of[k] for k in keys])

        def stats(rows: np.ndarray) -> EditStats:
            return EditStats.count(
                [src[i] for i in rows], [mt[i] for i in rows], [edited[i] for i in rows], labels[rows]
            )

        tokens = int(sum(len(mt[i]) for i in kept))
        info = {
            "pairs": len(kept),
            "folds": folds,
            "seed": seed,
            "mt_tokens": tokens,
            "edited_share": round(sum(int(edited[i].sum()) for i in kept) / tokens if tokens else 0.0, 6),
        }
        if len(kept) < len(src):
            info["left_out"] = len(src) - len(kept)
        full = stats(kept)
        return cls(full, [stats(kept[row_fold[kept] != k]) for k in range(folds)], fold_of, info)

    def stats_for(self, src: str, mt: str) -> EditStats:
        """The tables to score a raw pair with: its fold's complement if it was a training pair."""
        fold = self.fold_of.get(pair_key(src, mt))
        return self.full if fold is None else self.folds[fold]

    def save(self, path: str | Path) -> None:
        """Write gzip JSON (atomically)."""
        payload = {
            "format": FORMAT,
            "info": self.info,
            "full": self.full.to_dict(),
            "folds": [f.to_dict() for f in self.folds],
            "fold_of": self.fold_of,
        }
        write_gzip_json(path, payload)

    @classmethod
    def load(cls, path: str | Path) -> EditModel:
        """Read a saved model; a missing, truncated or foreign file raises QEInputError naming it."""
        path = Path(path)
        try:
            payload = read_gzip_json(path, FORMAT, "edit model")
            return cls(
                EditStats(**payload["full"]),
                [EditStats(**f) for f in payload["folds"]],
                {k: int(v) for k, v in payload["fold_of"].items()},
                payload["info"],
            )
        except UNREADABLE_JSON as exc:  # its text may quote the file: only its class is shown
            raise QEInputError(f"not a readable edit model ({exc.__class__.__name__})", path) from None
