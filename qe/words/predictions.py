"""A word-level run's predictions of one split (``word_predictions.dev.jsonl``, ``...test.jsonl``): one
JSON object a sentence, written by ``qe run`` with a ``[words]`` config and read back, checked, by
``qe report``, so the confusion tables and the words most often BAD come from the run's own tags.

Each line holds ``id`` (0-based line number), ``src_tokens`` and ``mt_tokens``, then for each kind
(``mt`` words, ``gap`` (N+1, not interleaved), ``src`` words) its ``*_gold_tags``, the predicted
``*_tags`` and ``*_bad_probability`` (rounded to ``DIGITS`` decimals; the tags were decided on the
unrounded value: BAD when it reaches the kind's threshold), the fields ``qe predict --words`` writes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, parse_bounded, read_lines
from qe.words.tags import TAGS

KIND_FIELDS = {"target": "mt", "gaps": "gap", "source": "src"}
"""Each kind of tag (the WMT20 names) and its prefix in a line's fields."""
KIND_NAMES = {"target": "MT words", "gaps": "gaps", "source": "source words"}
"""Each kind of tag as a table shows it."""
DIGITS = 6
FIELDS = (
    "id",
    "src_tokens",
    "mt_tokens",
    *(
        f"{prefix}_{part}"
        for prefix in KIND_FIELDS.values()
        for part in ("gold_tags", "tags", "bad_probability")
    ),
)
"""The fields of a line, in the order written."""


@dataclass(frozen=True)
class SentencePredictions:
    """One sentence: its tokens and, per kind (``KIND_FIELDS``' keys), gold tags, predicted tags and
    BAD probabilities."""

    src: tuple[str, ...]
    mt: tuple[str, ...]
    gold: dict[str, tuple[str, ...]]
    tags: dict[str, tuple[str, ...]]
    probability: dict[str, tuple[float, ...]]

    def size(self, kind: str) -> int:
        """How many tags of ``kind`` the sentence has: one per MT word, N+1 gaps, one per source word."""
        return {"target": len(self.mt), "gaps": len(self.mt) + 1, "source": len(self.src)}[kind]


def prediction_line(index: int, sentence: SentencePredictions) -> str:
    """The JSON line of sentence ``index`` (see the module docstring)."""
    row: dict[str, Any] = {"id": index, "src_tokens": list(sentence.src), "mt_tokens": list(sentence.mt)}
    for kind, prefix in KIND_FIELDS.items():
        row[f"{prefix}_gold_tags"] = list(sentence.gold[kind])
        row[f"{prefix}_tags"] = list(sentence.tags[kind])
        row[f"{prefix}_bad_probability"] = [round(float(p), DIGITS) for p in sentence.probability[kind]]
    return json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"


def write_word_predictions(path: str | Path, sentences: Iterable[SentencePredictions]) -> None:
    """Write a split's predictions file, atomically."""
    with atomic_write(path) as handle:
        for index, sentence in enumerate(sentences):
            handle.write(prediction_line(index, sentence))


def read_word_predictions(path: str | Path) -> list[SentencePredictions]:
    """Read and check a predictions file whole; the first fault is one ``QEInputError`` naming the file
    and line, never quoting it (a report is shared; the file may have been edited)."""
    path = Path(path)
    return [_sentence(text, index, path) for index, text in enumerate(read_lines(path))]


def _sentence(text: str, index: int, path: Path) -> SentencePredictions:
    """One line, checked: a JSON object with every field, its id, tokens, tags and probabilities."""
    number = index + 1
    try:
        row = parse_bounded(json.loads, text, path, "the line")
    except QEInputError as exc:
        raise QEInputError(exc.message, path, number) from None
    except json.JSONDecodeError as exc:
        raise QEInputError(f"not JSON ({exc.msg} at column {exc.colno})", path, number) from None
    except ValueError:  # an integer of thousands of digits
        raise QEInputError("not a line qe writes", path, number) from None
    if not isinstance(row, dict):
        raise QEInputError("expected a JSON object", path, number)
    missing = [name for name in FIELDS if name not in row]
    if missing:
        raise QEInputError(f"no {missing[0]!r} field", path, number)
    if type(row["id"]) is not int or row["id"] != index:
        raise QEInputError(f"id is not {index}, the 0-based line number", path, number)
    src, mt = (_tokens(row, f"{side}_tokens", path, number) for side in ("src", "mt"))
    sentence = SentencePredictions(src, mt, {}, {}, {})
    for kind, prefix in KIND_FIELDS.items():
        size = sentence.size(kind)
        sentence.gold[kind] = _tags(row, f"{prefix}_gold_tags", size, path, number)
        sentence.tags[kind] = _tags(row, f"{prefix}_tags", size, path, number)
        sentence.probability[kind] = _probabilities(row, f"{prefix}_bad_probability", size, path, number)
    return sentence


def _tokens(row: dict[str, Any], name: str, path: Path, number: int) -> tuple[str, ...]:
    """A non-empty list of tokens, none empty nor holding whitespace."""
    value = row[name]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(token, str) and token.split() == [token] for token in value)
    ):
        raise QEInputError(f"{name} is not a non-empty list of tokens", path, number)
    return tuple(value)


def _sized(row: dict[str, Any], name: str, size: int, path: Path, number: int) -> list[Any]:
    """A list of ``size`` items, as the sentence's tokens need."""
    value = row[name]
    if not isinstance(value, list):
        raise QEInputError(f"{name} is not a list", path, number)
    if len(value) != size:
        raise QEInputError(f"{name} has {len(value)} items where the tokens need {size}", path, number)
    return value


def _tags(row: dict[str, Any], name: str, size: int, path: Path, number: int) -> tuple[str, ...]:
    """``size`` tags, each OK or BAD."""
    value = _sized(row, name, size, path, number)
    if not all(isinstance(tag, str) and tag in TAGS for tag in value):
        raise QEInputError(f"{name} holds a tag other than OK and BAD", path, number)
    return tuple(value)


def _probabilities(row: dict[str, Any], name: str, size: int, path: Path, number: int) -> tuple[float, ...]:
    """``size`` probabilities, each a number in [0, 1]."""
    value = _sized(row, name, size, path, number)
    if not all(_is_probability(p) for p in value):
        raise QEInputError(f"{name} holds a value that is not a number in [0, 1]", path, number)
    return tuple(float(p) for p in value)


def _is_probability(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0.0 <= value <= 1.0
        and math.isfinite(value)
    )
