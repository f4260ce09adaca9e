"""The 1-best trace (``-t`` / ``-report-segmentation``): each target phrase followed by ``|i-j|``.

One line per input sentence, in input order, so the 0-based line index is the Moses sentence id;
an empty line is a sentence Moses translated to nothing. :func:`summarize_trace` streams the file
once and keeps per-sentence phrase statistics plus the line's byte offset, so a sentence's phrases
can be re-read later (:func:`read_trace_phrases`) without holding the file in memory.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from qe.decoder import (
    LogIndex,
    Truncated,
    TruncatedPolicy,
    check_truncated_policy,
    decode_line,
    open_log,
    truncated_error,
)
from qe.infra.errors import QEInputError

KIND = "trace"


@dataclass(frozen=True, slots=True)
class TracePhrase:
    """One phrase of the 1-best: the source span it translates (inclusive) and its target words."""

    src_start: int
    src_end: int
    words: tuple[str, ...]

    @property
    def src_len(self) -> int:
        """Number of source words the phrase translates."""
        return self.src_end - self.src_start + 1


def _mark_span(token: str) -> tuple[int, int] | None:
    """The span of a ``|i-j|`` mark, ``None`` for an ordinary word; ``ValueError`` if malformed."""
    if len(token) < 3 or token[0] != "|" or token[-1] != "|":
        return None
    start, dash, end = token[1:-1].partition("-")
    if not (dash and start.isdigit() and end.isdigit()) or int(end) < int(start):
        raise ValueError(f"malformed segmentation mark {token!r} (expected |i-j| with i <= j)")
    return int(start), int(end)


def parse_trace_line(text: str) -> list[TracePhrase]:
    """Parse one trace line into its phrases (``[]`` for an empty line).

    Raises ``ValueError`` for a non-empty line without marks (Moses was not run with ``-t``), target
    words after the last mark (a cut line), a malformed mark, or two phrases covering one word.
    """
    phrases: list[TracePhrase] = []
    pending: list[str] = []
    for token in text.split():
        span = _mark_span(token)
        if span is None:
            pending.append(token)
        else:
            phrases.append(TracePhrase(span[0], span[1], tuple(pending)))
            pending = []
    if pending and not phrases:
        raise ValueError(
            "no segmentation marks |i-j| in a non-empty trace line: was Moses run with -t "
            "(-report-segmentation)?"
        )
    if pending:
        raise ValueError(f"target words after the last segmentation mark: {' '.join(pending)!r}")
    covered: set[int] = set()
    for phrase in phrases:
        span = set(range(phrase.src_start, phrase.src_end + 1))
        if covered & span:
            raise ValueError(f"source word {min(covered & span)} is covered by two phrases")
        covered |= span
    return phrases


def _plain(word: str) -> str:
    """A word compared across Moses and raw text: first factor, unescaped, case-folded."""
    return html.unescape(word.split("|", 1)[0]).casefold()


def count_untranslated(
    phrases: Sequence[TracePhrase],
    source_tokens: Sequence[str] | None = None,
    unknown_prefix: str | None = None,
) -> int:
    """Number of source words Moses passed through untranslated.

    With ``unknown_prefix`` (Moses ``-mark-unknown``, e.g. ``"UNK"``): the source words of phrases
    whose target words all carry the prefix. Otherwise: one-word phrases whose single target word
    equals the source word (after unescaping and case-folding) and contains a letter, which is how
    Moses copies unknown words (numbers and punctuation copied by the phrase table are not
    counted). ``source_tokens`` must be the tokenized sentence Moses translated: ``ValueError`` when
    its length differs from the span the trace covers.
    """
    if unknown_prefix:
        return sum(
            p.src_len for p in phrases if p.words and all(w.startswith(unknown_prefix) for w in p.words)
        )
    if source_tokens is None:
        raise ValueError("counting untranslated words needs the source tokens or an unknown-word prefix")
    covered = max((p.src_end + 1 for p in phrases), default=0)
    if covered != len(source_tokens):
        raise ValueError(
            f"the trace covers {covered} source words but the source sentence has {len(source_tokens)} "
            "tokens: give the tokenized text Moses translated (decoder setting moses_input)"
        )
    count = 0
    for p in phrases:
        if p.src_len == 1 and len(p.words) == 1:
            target = _plain(p.words[0])
            if target == _plain(source_tokens[p.src_start]) and any(c.isalpha() for c in target):
                count += 1
    return count


@dataclass(slots=True)
class TraceStats:
    """Per-sentence trace statistics; means are NaN for an empty translation.

    ``untranslated`` is ``None`` when it could not be counted while reading (no unknown-word
    prefix and no Moses input given): the caller then counts it from the re-read phrases.
    """

    sent_id: int
    line: int
    offset: int
    phrases: int
    src_words: int
    tgt_words: int
    src_phrase_len: float
    tgt_phrase_len: float
    untranslated: int | None


def _stats(sent_id: int, line: int, offset: int, phrases: list[TracePhrase], untranslated: int | None):
    n = len(phrases)
    src = sum(p.src_len for p in phrases)
    tgt = sum(len(p.words) for p in phrases)
    return TraceStats(
        sent_id,
        line,
        offset,
        n,
        src,
        tgt,
        src / n if n else math.nan,
        tgt / n if n else math.nan,
        untranslated,
    )


def iter_trace(
    path: str | Path, *, truncated: TruncatedPolicy = "error"
) -> Iterator[tuple[int, list[TracePhrase]]]:
    """Stream ``(sentence id, phrases)`` for every trace line (id = 0-based line index)."""
    for sent_id, _offset, phrases in _iter_lines(Path(path), truncated):
        yield sent_id, phrases


def _iter_lines(path: Path, truncated: str) -> Iterator[tuple[int, int, list[TracePhrase]]]:
    check_truncated_policy(truncated)
    with open_log(path, KIND) as handle:
        offset = handle.tell()  # after a leading BOM
        for number, raw in enumerate(handle, 1):
            complete = raw.endswith(b"\n")
            try:
                if not complete:
                    raise Truncated(number)
                phrases = parse_trace_line(decode_line(raw, path, number))
            except Truncated:
                if truncated == "drop":
                    return
                raise truncated_error(path, number, KIND) from None
            except ValueError as exc:
                raise QEInputError(str(exc), path, number) from None
            yield number - 1, offset, phrases
            offset += len(raw)


def summarize_trace(
    path: str | Path,
    *,
    unknown_prefix: str | None = None,
    moses_input: str | Path | None = None,
    truncated: TruncatedPolicy = "error",
) -> LogIndex[TraceStats]:
    """One streaming pass over a trace, returning :class:`TraceStats` per sentence id.

    ``moses_input`` (the tokenized file Moses translated, line-aligned with the trace) or
    ``unknown_prefix`` let untranslated words be counted during the pass. A truncated last line
    raises, or with ``truncated="drop"`` that sentence is left out (``LogIndex.dropped``).
    """
    path = Path(path)
    index: LogIndex[TraceStats] = LogIndex(path, KIND)
    source = open_log(moses_input, "Moses input") if moses_input and not unknown_prefix else None
    try:
        lines = _iter_lines(path, truncated)
        for sent_id, offset, phrases in lines:
            untranslated = None
            if unknown_prefix:
                untranslated = count_untranslated(phrases, unknown_prefix=unknown_prefix)
            elif source is not None:
                raw_source = source.readline()
                if not raw_source:
                    raise QEInputError(f"Moses input has fewer lines than the trace {path}", moses_input)
                tokens = decode_line(raw_source, Path(str(moses_input)), sent_id + 1).split()
                try:
                    untranslated = count_untranslated(phrases, tokens)
                except ValueError as exc:
                    raise QEInputError(str(exc), path, sent_id + 1) from None
            index.stats[sent_id] = _stats(sent_id, sent_id + 1, offset, phrases, untranslated)
    finally:
        if source is not None:
            source.close()
    last = max(index.stats, default=-1)
    # A dropped (truncated) last line is the sentence right after the last complete one.
    if truncated == "drop" and _ends_unfinished(path):
        index.dropped.add(last + 1)
    index.max_id = max([last, *index.dropped])
    return index


def _ends_unfinished(path: Path) -> bool:
    """True when the file's last byte is not a newline."""
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) != b"\n"


def read_trace_phrases(path: str | Path, offset: int) -> list[TracePhrase]:
    """Re-read and parse the trace line that starts at byte ``offset`` (from :class:`TraceStats`)."""
    path = Path(path)
    with path.open("rb") as handle:
        handle.seek(offset)
        raw = handle.readline()
    try:
        return parse_trace_line(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise QEInputError(str(exc), path) from None


__all__ = [
    "TracePhrase",
    "TraceStats",
    "count_untranslated",
    "iter_trace",
    "parse_trace_line",
    "read_trace_phrases",
    "summarize_trace",
]
