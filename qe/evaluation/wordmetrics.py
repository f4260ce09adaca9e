"""Word-level QE metrics as the WMT20 task 2 scorer computes them: Matthews' correlation (MCC), the F1
of each class (OK, BAD) and F1-MULT = F1-OK x F1-BAD, over all tags of a set flattened (one kind at a
time: MT words, gaps or source words), with bootstrap confidence intervals that resample sentences.

Degenerate sets get defined, finite numbers, as scikit-learn's ``f1_score`` (default ``zero_division``)
and ``matthews_corrcoef`` give them: the F1 of a class absent from both gold and prediction is 0.0,
MCC is 0.0 when a row or column of the confusion matrix is empty (e.g. everything OK), and a set with
no tag at all scores 0.0 everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from qe.infra.errors import QEInputError

TagLines = Sequence[Sequence[str]]
"""One sequence of ``OK`` / ``BAD`` tags per sentence."""

METRIC_NAMES = ("mcc", "f1_ok", "f1_bad", "f1_mult")


@dataclass(frozen=True)
class WordScores:
    """The four WMT20 word-level figures of one tag kind; ``tags`` counts the tags scored."""

    mcc: float
    f1_ok: float
    f1_bad: float
    f1_mult: float
    tags: int

    def as_dict(self) -> dict[str, float]:
        """The figures by name (``tags`` too), for JSON."""
        return asdict(self)


def sentence_counts(gold: TagLines, pred: TagLines) -> np.ndarray:
    """Per sentence, the confusion counts (tp, fp, fn, tn) with BAD the positive class: an
    ``(n_sentences, 4)`` int array. Refuses (one ``QEInputError`` line) a different number of sentences,
    a sentence whose gold and predicted tags differ in number, or a tag other than OK / BAD."""
    if len(gold) != len(pred):
        raise QEInputError(f"gold has {len(gold)} sentences but the predictions have {len(pred)}")
    counts = np.zeros((len(gold), 4), dtype=np.int64)
    for k, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if len(g) != len(p):
            raise QEInputError(f"sentence {k + 1}: {len(g)} gold tags but {len(p)} predicted")
        g_bad, p_bad = _is_bad(g, "gold", k), _is_bad(p, "predicted", k)
        tp = int(np.sum(g_bad & p_bad))
        fp = int(np.sum(~g_bad & p_bad))
        fn = int(np.sum(g_bad & ~p_bad))
        counts[k] = (tp, fp, fn, len(g) - tp - fp - fn)
    return counts


def _is_bad(tags: Sequence[str], side: str, k: int) -> np.ndarray:
    array = np.asarray(tags, dtype=object)
    bad = array == "BAD"
    unknown = ~(bad | (array == "OK"))
    if unknown.any():
        tag = str(array[np.flatnonzero(unknown)[0]])[:40]
        raise QEInputError(f"sentence {k + 1}: unknown {side} tag {tag!r} (expected OK or BAD)")
    return bad.astype(bool)


def scores_from_counts(tp: float, fp: float, fn: float, tn: float) -> WordScores:
    """MCC, F1-OK, F1-BAD and F1-MULT of one confusion matrix (BAD positive), degenerate cases as in
    the module's docstring."""
    f1_bad = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    f1_ok = 2 * tn / (2 * tn + fn + fp) if tn + fn + fp else 0.0
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    mcc = (tp * tn - fp * fn) / denominator if denominator else 0.0
    return WordScores(float(mcc), float(f1_ok), float(f1_bad), float(f1_ok * f1_bad), int(tp + fp + fn + tn))


def word_scores(gold: TagLines, pred: TagLines) -> WordScores:
    """The WMT20 figures of one tag kind over every tag of the set, flattened."""
    return scores_from_counts(*sentence_counts(gold, pred).sum(axis=0).tolist())


def bootstrap_intervals(
    gold: TagLines, pred: TagLines, *, samples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict[str, tuple[float, float]]:
    """Percentile confidence intervals of each figure (``METRIC_NAMES``), resampling whole sentences
    with replacement ``samples`` times (seeded: the same call gives the same intervals), since the
    tags of one sentence are not independent. No sentence: every interval is (0.0, 0.0)."""
    if samples < 1 or not 0.0 < confidence < 1.0:
        raise QEInputError(
            f"bootstrap needs samples >= 1 and 0 < confidence < 1, not {samples}, {confidence}"
        )
    counts = sentence_counts(gold, pred)
    if len(counts) == 0:
        return dict.fromkeys(METRIC_NAMES, (0.0, 0.0))
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(counts), np.full(len(counts), 1.0 / len(counts)), size=samples)
    totals = weights @ counts  # (samples, 4): each resample's confusion counts
    figures = np.array(
        [[getattr(scores_from_counts(*row), m) for m in METRIC_NAMES] for row in totals.tolist()]
    )
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(figures, [tail, 100 - tail], axis=0)
    return {m: (float(lo), float(hi)) for m, lo, hi in zip(METRIC_NAMES, low, high, strict=True)}


CRITERIA = ("mcc", "f1_mult")
"""What a threshold may be chosen to maximise (the definitions above)."""


def best_threshold(bad: np.ndarray, probability: np.ndarray, criterion: str = "mcc") -> tuple[float, float]:
    """(threshold, criterion reached) maximising ``criterion`` (MCC or F1-MULT) when rows with
    probability >= threshold are tagged BAD; every distinct probability is tried (ties go the same
    way). No row, or one class only: (0.5, 0.0)."""
    if criterion not in CRITERIA:
        raise QEInputError(
            f"unknown threshold criterion {criterion!r} (expected one of {', '.join(CRITERIA)})"
        )
    bad = np.asarray(bad, dtype=bool)
    probability = np.asarray(probability, dtype=np.float64)
    if len(bad) != len(probability):
        raise QEInputError(f"{len(bad)} tags but {len(probability)} probabilities")
    if len(bad) == 0 or bad.all() or not bad.any():
        return 0.5, 0.0
    order = np.argsort(-probability, kind="stable")
    p, y = probability[order], bad[order]
    last_of_tie = np.r_[p[1:] != p[:-1], True]  # cut only between distinct probabilities
    tp = np.cumsum(y)[last_of_tie].astype(np.float64)
    fp = np.cumsum(~y)[last_of_tie].astype(np.float64)
    positives, negatives = float(y.sum()), float((~y).sum())
    fn, tn = positives - tp, negatives - fp
    if criterion == "mcc":
        denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        value = np.divide(tp * tn - fp * fn, denominator, out=np.zeros_like(tp), where=denominator > 0)
    else:
        f1_bad = 2 * tp / (2 * tp + fp + fn)  # > 0: both classes are present
        f1_ok = 2 * tn / (2 * tn + fn + fp)
        value = f1_ok * f1_bad
    best = int(np.argmax(value))
    return float(p[last_of_tie][best]), float(value[best])
