"""Streaming readers for NMT decoder outputs with per-token scores (the ``nmt`` feature family).

Each reader makes one pass over its file and yields one :class:`NMTRecord` per sentence: the
1-best hypothesis's tokens, its per-token log-probabilities (natural log, the last one for
``</s>``) and the model's sentence score. ``qe.nmt.fairseq`` reads ``fairseq-generate`` output
(``H-``/``P-`` lines), ``qe.nmt.marian`` reads Marian n-best lists decoded with ``--word-scores``.
Sentences are keyed by the decoder's 0-based sentence id; a sentence id that comes back after
another sentence's lines (two logs concatenated) is refused, naming both lines. Line-aligned
log-probabilities (MLQE-PE's ``word_probas`` files: one line of space-separated values per pair)
need no reader: :func:`parse_logprobs` checks one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qe.infra.io import plain_float

MIN_LOGPROB = -1e6
"""Below this a value is no token's log-probability (and its square would swamp the moments)."""

LN2 = math.log(2.0)


@dataclass(frozen=True)
class NMTRecord:
    """One sentence of a decoder log: its id, 1-best tokens, natural-log token scores (the last for
    ``</s>``), the model's sentence score (natural log) and the line holding the token scores."""

    sent_id: int
    tokens: list[str]
    logprobs: np.ndarray
    score: float
    line: int


def parse_logprobs(text: str, scale: float = 1.0) -> np.ndarray:
    """Space-separated log-probabilities as floats (times ``scale``, e.g. ln 2 for base-2 values).

    Raises ``ValueError`` naming the first value that is not a finite number <= 0 (a log-probability).
    """
    values = []
    for token in text.split():
        try:
            value = plain_float(token)
        except ValueError:
            raise ValueError(f"log-probability {token!r} is not a number") from None
        if not math.isfinite(value) or value > 1e-6:
            raise ValueError(f"log-probability {token!r} is not a finite number <= 0")
        if value < MIN_LOGPROB:
            raise ValueError(
                f"log-probability {token!r} is below {MIN_LOGPROB:g}: not a token's log-probability"
            )
        values.append(min(value, 0.0) * scale)
    return np.array(values, dtype=np.float64)


def parse_number(text: str, what: str) -> float:
    """One finite number, or ``ValueError`` naming ``what`` it should have been."""
    try:
        value = plain_float(text)
    except ValueError:
        raise ValueError(f"{what} {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} {text.strip()!r} is not a finite number")
    return value


def parse_sentence_id(text: str, kind: str) -> int:
    """A decoder's sentence id (a non-negative integer)."""
    if not text.strip().isdigit():
        raise ValueError(f"{kind} sentence id {text.strip()!r} is not a non-negative integer")
    return int(text)


class SeenIds:
    """Refuses a sentence id that comes back after another sentence's lines (logs concatenated)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.first_line: dict[int, int] = {}
        self.current: int | None = None

    def visit(self, sent_id: int, line: int) -> bool:
        """True on the first line of a sentence, False on its further (n-best) lines."""
        if sent_id == self.current:
            return False
        if sent_id in self.first_line:
            raise ValueError(
                f"{self.kind} sentence id {sent_id} appears again (first at line "
                f"{self.first_line[sent_id]}, other sentences between): two logs concatenated?"
            )
        self.first_line[sent_id] = line
        self.current = sent_id
        return True


__all__ = ["LN2", "NMTRecord", "SeenIds", "parse_logprobs", "parse_number", "parse_sentence_id"]
