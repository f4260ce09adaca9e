"""Marian n-best lists decoded with ``--n-best --word-scores``: the 1-best and its word scores.

Layout, best hypothesis of each sentence first, fields separated by ``|||``::

    12 ||| hypothesis tokens [||| 0-0 1-1 ...] ||| WordScores= -0.91 -0.11 ... ||| F0= -5.6 ||| -0.43

The first field is the 0-based sentence id, the second the hypothesis, the last the total score
(length-normalised with ``--normalize``); ``WordScores=`` holds one natural-log probability per
target token, the last for ``</s>``. An alignment field may come before it; the feature-score
field (``F0= ...``) is skipped. With a SentencePiece vocabulary Marian prints the hypothesis
detokenized, so its words no longer match the word scores one to one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from qe.decoder import iter_parsed_lines
from qe.infra.errors import QEInputError
from qe.nmt import NMTRecord, SeenIds, parse_logprobs, parse_number, parse_sentence_id

KIND = "Marian n-best list"
WORD_SCORES = "WordScores="


def _parse_line(text: str, line: int) -> list[str]:
    fields = [field.strip() for field in text.split("|||")]
    if len(fields) < 4:
        raise ValueError(
            f"expected at least 4 fields separated by '|||' (id, hypothesis, word scores, total), "
            f"found {len(fields)}"
        )
    return fields


def iter_marian(path: str | Path) -> Iterator[NMTRecord]:
    """Yield the first (best) hypothesis of each sentence in file order, in one streaming pass.

    Errors name the file and line: too few fields, a bad id, no ``WordScores=`` field (decode
    with ``--word-scores``), a non-numeric score, an id that comes back after other sentences.
    """
    path = Path(path)
    seen = SeenIds(KIND)
    for line, fields in enumerate(iter_parsed_lines(path, KIND, _parse_line), 1):
        try:
            sent_id = parse_sentence_id(fields[0], KIND)
            if not seen.visit(sent_id, line):
                continue
            scores = [f for f in fields[2:-1] if f.startswith(WORD_SCORES)]
            if len(scores) != 1:
                raise ValueError(
                    f"the hypothesis has {len(scores)} {WORD_SCORES} fields, not 1 "
                    "(decode with marian --n-best --word-scores)"
                )
            logprobs = parse_logprobs(scores[0][len(WORD_SCORES) :])
            total = parse_number(fields[-1], "total score")
        except ValueError as exc:
            raise QEInputError(str(exc), path, line) from None
        yield NMTRecord(sent_id, fields[1].split(), logprobs, total, line)


__all__ = ["KIND", "WORD_SCORES", "iter_marian"]
