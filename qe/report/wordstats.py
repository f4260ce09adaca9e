"""What a word-level report derives from a split's predictions: each kind's confusion counts, and the word
types most often BAD in gold with how often the model tags them BAD."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from qe.evaluation.wordmetrics import sentence_counts
from qe.words.predictions import SentencePredictions
from qe.words.tags import BAD

TOP_WORDS = 20
"""How many word types the report lists per split and side."""
MIN_OCCURRENCES = 5
"""A word type must occur this often in the split to be listed, so that words seen once or twice (BAD
every time by chance) do not fill the list."""


@dataclass(frozen=True)
class Confusion:
    """One kind's tag counts, BAD the positive class: gold BAD predicted BAD (``tp``), gold OK predicted
    BAD (``fp``), gold BAD predicted OK (``fn``), gold OK predicted OK (``tn``)."""

    tp: int
    fp: int
    fn: int
    tn: int


def confusion(sentences: Sequence[SentencePredictions], kind: str) -> Confusion:
    """The confusion counts of ``kind`` over every tag of the split (``qe.evaluation.wordmetrics``' count)."""
    counts = sentence_counts([s.gold[kind] for s in sentences], [s.tags[kind] for s in sentences])
    tp, fp, fn, tn = (int(v) for v in counts.sum(axis=0).tolist())
    return Confusion(tp, fp, fn, tn)


@dataclass(frozen=True)
class WordCounts:
    """One word type of a split: how often it occurs, is BAD in gold, is predicted BAD, and both."""

    word: str
    occurrences: int
    gold_bad: int
    predicted_bad: int
    both_bad: int


def word_counts(sentences: Sequence[SentencePredictions], kind: str) -> dict[str, WordCounts]:
    """Per word type of one side (``target``: MT words, ``source``: source words), its counts."""
    seen: Counter[str] = Counter()
    gold: Counter[str] = Counter()
    predicted: Counter[str] = Counter()
    both: Counter[str] = Counter()
    for sentence in sentences:
        tokens = sentence.mt if kind == "target" else sentence.src
        for word, g, p in zip(tokens, sentence.gold[kind], sentence.tags[kind], strict=True):
            seen[word] += 1
            gold[word] += g == BAD
            predicted[word] += p == BAD
            both[word] += g == BAD and p == BAD
    return {w: WordCounts(w, n, gold[w], predicted[w], both[w]) for w, n in seen.items()}


def most_often_bad(
    sentences: Sequence[SentencePredictions],
    kind: str,
    *,
    top: int = TOP_WORDS,
    min_occurrences: int = MIN_OCCURRENCES,
) -> list[WordCounts]:
    """The ``top`` word types of one side seen at least ``min_occurrences`` times and BAD in gold at least
    once, the highest share of gold BAD first (ties: more gold BAD first, then the word)."""
    counts = [
        c for c in word_counts(sentences, kind).values() if c.occurrences >= min_occurrences and c.gold_bad
    ]
    counts.sort(key=lambda c: (-c.gold_bad / c.occurrences, -c.gold_bad, c.word))
    return counts[:top]
