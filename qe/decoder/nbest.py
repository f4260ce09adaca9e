"""Moses n-best lists (``-n-best-list``): a full line parser and a fast one-pass per-sentence summary.

Line layout: ``id ||| hypothesis ||| named scores ||| total [||| segmentation] [||| word alignment]``.
Named scores come in the old layout (``d: -2 lm: -18.4 w: -4 tm: ...``) or the Moses 2.1+ layout
(``Distortion0= -2 LM0= -42.4 ...``), possibly with sparse ``name= value`` pairs; a name is followed
by one or more values. :func:`summarize_nbest` streams the file once and keeps only per-sentence
statistics (1-best score vector, score / length moments, word posteriors), which is what the
``decoder`` feature family needs; :func:`iter_nbest` and :func:`iter_nbest_sentences` give every
hypothesis fully parsed, for other uses.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import mul, sub
from pathlib import Path

from qe.decoder import (
    LogIndex,
    Truncated,
    TruncatedPolicy,
    check_truncated_policy,
    decode_line,
    iter_parsed_lines,
    open_log,
    truncated_error,
)
from qe.infra.errors import QEInputError
from qe.infra.io import MAX_SCORE, is_score

KIND = "n-best list"

# SDLLW's eight Moses features, in order, and where each is found by default in the two layouts.
MF_SLOTS: tuple[str, ...] = (
    "mf1_distortion",
    "mf2_word_penalty",
    "mf3_lm",
    "mf4_phrase_st",
    "mf5_lex_st",
    "mf6_phrase_ts",
    "mf7_lex_ts",
    "mf8_phrase_penalty",
)
DEFAULT_FEATURE_MAP: dict[str, tuple[str, ...]] = {
    "mf1_distortion": ("Distortion0", "d"),
    "mf2_word_penalty": ("WordPenalty0", "w"),
    "mf3_lm": ("LM0", "lm"),
    "mf4_phrase_st": ("TranslationModel0[0]", "tm[0]"),
    "mf5_lex_st": ("TranslationModel0[1]", "tm[1]"),
    "mf6_phrase_ts": ("TranslationModel0[2]", "tm[2]"),
    "mf7_lex_ts": ("TranslationModel0[3]", "tm[3]"),
    "mf8_phrase_penalty": ("PhrasePenalty0", "tm[4]"),
}

# Characters removed from a score field to get its "skeleton" (labels and spacing): lines of one
# sentence with the same skeleton as its 1-best have the same labels and number of values, and
# values made only of number characters.
_NUMBER_CHARS = b"0123456789.+-eE"


# ---------------------------------------------------------------------------------------------
# Field parsers (shared by the full and the fast reader)


def parse_scores(text: str) -> dict[str, list[float]]:
    """Parse a named-scores field into ``{name: [values...]}`` (label marks ``:`` / ``=`` removed).

    A name repeated within the field gets its values appended in order. Raises ``ValueError`` on a
    value before any name, a name without values, a non-numeric value or an empty field.
    """
    scores: dict[str, list[float]] = {}
    values: list[float] | None = None
    name = ""
    for token in text.split():
        if token[-1] in "=:":
            if values is not None and not values:
                raise ValueError(f"feature {name!r} has no value")
            name = token[:-1]
            if not name:
                raise ValueError(f"empty feature name {token!r}")
            values = scores.setdefault(name, [])
            continue
        if values is None:
            raise ValueError(f"score {token!r} before any feature name")
        try:
            values.append(float(token))
        except ValueError:
            raise ValueError(f"non-numeric score {token!r} for feature {name!r}") from None
        if not is_score(values[-1]):
            raise ValueError(
                f"score {token!r} for feature {name!r} is not a finite number of at most {MAX_SCORE:g}"
            )
    if values is None:
        raise ValueError("no feature scores")
    if not values:
        raise ValueError(f"feature {name!r} has no value")
    return scores


def _span(text: str) -> tuple[int, int]:
    """``"3"`` -> (3, 3); ``"2-4"`` -> (2, 4)."""
    start, _, end = text.partition("-")
    first = int(start)
    last = int(end) if end else first
    if first < 0 or last < first:
        raise ValueError(f"bad span {text!r}")
    return first, last


def parse_segmentation(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Parse ``0-1=0-1 2=2`` into ``[((src_start, src_end), (tgt_start, tgt_end)), ...]``."""
    out = []
    for token in text.split():
        src, eq, tgt = token.partition("=")
        if not eq:
            raise ValueError(f"segmentation item {token!r} is not SRC=TGT")
        try:
            out.append((_span(src), _span(tgt)))
        except ValueError:
            raise ValueError(f"bad segmentation item {token!r}") from None
    return out


def parse_alignment(text: str) -> list[tuple[int, int]]:
    """Parse ``0-0 1-2`` into ``[(source, target), ...]`` word-position pairs."""
    out = []
    for token in text.split():
        src, dash, tgt = token.partition("-")
        try:
            if not dash:
                raise ValueError
            out.append((int(src), int(tgt)))
        except ValueError:
            raise ValueError(f"bad alignment pair {token!r}") from None
    return out


def is_segment_mark(token: str | bytes) -> bool:
    """True for a ``|i-j|`` phrase-boundary mark (as printed by ``-report-segmentation``)."""
    if isinstance(token, bytes):
        token = token.decode("utf-8", "replace")
    if len(token) < 5 or token[0] != "|" or token[-1] != "|":
        return False
    start, dash, end = token[1:-1].partition("-")
    return bool(dash) and start.isdigit() and end.isdigit()


# ---------------------------------------------------------------------------------------------
# MF1-MF8 mapping


@dataclass(frozen=True)
class _Ref:
    """One candidate location of a score: the sum of ``name[index]`` terms."""

    text: str
    terms: tuple[tuple[str, int], ...]

    @classmethod
    def parse(cls, text: str) -> _Ref:
        terms = []
        for part in text.split("+"):
            part = part.strip()
            name, bracket, rest = part.partition("[")
            name = name.strip().rstrip("=:")
            index = 0
            if bracket:
                if not rest.endswith("]") or not rest[:-1].strip().lstrip("-").isdigit():
                    raise ValueError(f"bad score reference {text!r}: write NAME or NAME[i]")
                index = int(rest[:-1])
            if not name:
                raise ValueError(f"bad score reference {text!r}: empty feature name")
            terms.append((name, index))
        return cls(text, tuple(terms))

    def value(self, scores: Mapping[str, Sequence[float]]) -> float | None:
        total = 0.0
        for name, index in self.terms:
            values = scores.get(name)
            if values is None or not -len(values) <= index < len(values):
                return None
            total += values[index]
        return total


class FeatureMap:
    """Where SDLLW's MF1-MF8 are found in a 1-best score vector (moses.ini setups differ).

    ``mapping`` maps a slot (``"mf3"`` or ``"mf3_lm"``) to a score reference or a list of candidate
    references tried in order. A reference is ``NAME`` (its first value), ``NAME[i]`` (its i-th
    value, from 0) or a sum such as ``"LM0+LM1"``; a trailing ``:`` / ``=`` on names is ignored.
    Slots not given keep their defaults, which cover both the old (``d lm w tm``) and the Moses 2.1+
    (``Distortion0 LM0 WordPenalty0 TranslationModel0 PhrasePenalty0``) layouts.
    """

    def __init__(self, mapping: Mapping[str, str | Sequence[str]] | None = None):
        chosen: dict[str, tuple[str, ...]] = dict(DEFAULT_FEATURE_MAP)
        for key, refs in (mapping or {}).items():
            slot = self._slot(key)
            chosen[slot] = (refs,) if isinstance(refs, str) else tuple(refs)
            if not chosen[slot]:
                raise QEInputError(f"decoder feature_map: no score reference given for {key!r}")
        try:
            self.refs = {slot: tuple(_Ref.parse(r) for r in chosen[slot]) for slot in MF_SLOTS}
        except ValueError as exc:
            raise QEInputError(f"decoder feature_map: {exc}") from None
        self._cache: dict[tuple[tuple[str, int], ...], tuple[_Ref, ...]] = {}

    @staticmethod
    def _slot(key: str) -> str:
        for slot in MF_SLOTS:
            if key in (slot, slot.split("_", 1)[0]):
                return slot
        raise QEInputError(
            f"decoder feature_map: unknown key {key!r}; use one of {', '.join(MF_SLOTS)} (or mf1..mf8)"
        )

    def describe(self) -> dict[str, list[str]]:
        """The candidate references of every slot, as text (for signatures and docs)."""
        return {slot: [r.text for r in refs] for slot, refs in self.refs.items()}

    def resolve(self, scores: Mapping[str, Sequence[float]]) -> tuple[float, ...]:
        """MF1-MF8 from one parsed score vector; ``ValueError`` names the slot that has no score."""
        layout = tuple((name, len(values)) for name, values in scores.items())
        chosen = self._cache.get(layout)
        if chosen is None:
            chosen = self._choose(scores)
            if len(self._cache) < 64:  # sparse features make many layouts: keep the cache small
                self._cache[layout] = chosen
        return tuple(ref.value(scores) for ref in chosen)  # type: ignore[misc]

    def _choose(self, scores: Mapping[str, Sequence[float]]) -> tuple[_Ref, ...]:
        """The first candidate reference of each slot that the score layout has."""
        out = []
        for slot, refs in self.refs.items():
            for ref in refs:
                if ref.value(scores) is not None:
                    out.append(ref)
                    break
            else:
                tried = " or ".join(r.text for r in refs)
                raise ValueError(
                    f"no score for {slot} (tried {tried}); the line has {', '.join(scores)}: "
                    "set the decoder feature_map for this moses.ini"
                )
        return tuple(out)


# ---------------------------------------------------------------------------------------------
# Full parser


@dataclass(slots=True)
class NBestEntry:
    """One fully parsed n-best line. ``segmentation`` / ``alignment`` are ``None`` when absent."""

    sent_id: int
    words: list[str]
    scores: dict[str, list[float]]
    total: float
    segmentation: list[tuple[tuple[int, int], tuple[int, int]]] | None
    alignment: list[tuple[int, int]] | None
    line: int = 0

    @property
    def hypothesis(self) -> str:
        """The hypothesis as one space-separated string (segmentation marks removed)."""
        return " ".join(self.words)


def parse_sent_id(text: str | bytes) -> int:
    """A Moses sentence id (a non-negative integer); ``ValueError`` otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"sentence id {text.strip()!r} is not an integer") from None  # type: ignore[union-attr]
    if value < 0:
        raise ValueError(f"sentence id {value} is negative")
    return value


def parse_nbest_line(text: str, line: int = 0) -> NBestEntry:
    """Parse one n-best line; raises ``ValueError`` with a readable message when malformed.

    With five fields the optional one is told apart by its content: ``SRC=TGT`` items are a
    segmentation, ``i-j`` pairs a word alignment; with six, segmentation comes first.
    """
    fields = text.split("|||")
    if not 4 <= len(fields) <= 6:
        raise ValueError(f"expected 4 to 6 fields separated by '|||', found {len(fields)}")
    sent_id = parse_sent_id(fields[0])
    words = fields[1].split()
    if any(is_segment_mark(w) for w in words):
        words = [w for w in words if not is_segment_mark(w)]
    scores = parse_scores(fields[2])
    try:
        total = float(fields[3])
    except ValueError:
        raise ValueError(f"non-numeric total score {fields[3].strip()!r}") from None
    if not is_score(total):
        raise ValueError(f"total score {fields[3].strip()!r} is not a finite number of at most {MAX_SCORE:g}")
    segmentation = alignment = None
    extra = fields[4:]
    if len(extra) == 2:
        segmentation, alignment = parse_segmentation(extra[0]), parse_alignment(extra[1])
    elif extra:
        if "=" in extra[0]:
            segmentation = parse_segmentation(extra[0])
        else:
            alignment = parse_alignment(extra[0])
    return NBestEntry(sent_id, words, scores, total, segmentation, alignment, line)


def iter_nbest(path: str | Path, *, truncated: TruncatedPolicy = "error") -> Iterator[NBestEntry]:
    """Stream every hypothesis of an n-best list, fully parsed, one line in memory at a time.

    A truncated last line (no final newline) raises, or with ``truncated="drop"`` is skipped.
    """
    yield from iter_parsed_lines(path, KIND, parse_nbest_line, truncated)


def iter_nbest_sentences(
    path: str | Path, *, truncated: TruncatedPolicy = "error"
) -> Iterator[tuple[int, list[NBestEntry]]]:
    """Stream ``(sentence id, hypotheses best first)``, one sentence in memory at a time.

    A sentence's lines must be consecutive (ids themselves may come in any order). With
    ``truncated="drop"`` the sentence of a truncated last line is not yielded (it may be incomplete).
    """
    check_truncated_policy(truncated)
    path = Path(path)
    seen: dict[int, int] = {}
    group: list[NBestEntry] = []
    with open_log(path, KIND) as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n"):
                if truncated == "drop":
                    cut = _id_or_none(raw)
                    if group and cut not in (None, group[0].sent_id):
                        yield group[0].sent_id, group
                    return
                raise truncated_error(path, number, KIND)
            try:
                entry = parse_nbest_line(decode_line(raw, path, number), number)
            except ValueError as exc:
                raise QEInputError(str(exc), path, number) from None
            if group and entry.sent_id != group[0].sent_id:
                yield group[0].sent_id, group
                group = []
            if not group:
                if entry.sent_id in seen:
                    raise _not_contiguous(path, number, entry.sent_id, seen[entry.sent_id])
                seen[entry.sent_id] = number
            group.append(entry)
    if group:
        yield group[0].sent_id, group


# ---------------------------------------------------------------------------------------------
# Fast per-sentence summary


@dataclass(slots=True)
class NBestStats:
    """Per-sentence n-best statistics (the 1-best is the sentence's first line).

    ``mf`` is MF1-MF8 of the 1-best; score moments are over the total model scores of all
    hypotheses, length moments over their word counts (population standard deviations);
    ``posterior_*`` are the mean / minimum over 1-best tokens of the share of hypotheses that
    contain that token's word; ``margin`` is NaN with a single hypothesis, posteriors NaN for an
    empty 1-best.
    """

    sent_id: int
    line: int
    size: int
    best: str
    total: float
    mf: tuple[float, ...]
    margin: float
    score_mean: float
    score_std: float
    len_mean: float
    len_std: float
    posterior_mean: float
    posterior_min: float


class _Block:
    """The sentence being read: its parsed 1-best plus raw fields of the other hypotheses.

    Other lines are only split during the pass; their totals are converted and their score
    fields checked in bulk (C-level ``map`` / ``translate``) when the sentence ends.
    """

    __slots__ = (
        "best",
        "best_set",
        "best_words",
        "lens",
        "line",
        "marks",
        "mf",
        "misses",
        "raw_scores",
        "raw_totals",
        "sent_id",
        "skeleton",
        "total",
    )

    def __init__(self, sent_id: int, parts: list[bytes], path: Path, line: int, fmap: FeatureMap):
        self.sent_id = sent_id
        self.line = line
        try:
            hypothesis = parts[1].decode("utf-8")
            score_text = parts[2].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise QEInputError(f"invalid UTF-8 at byte {exc.start} of a field", path, line) from None
        try:
            scores = parse_scores(score_text)
        except ValueError as exc:
            raise QEInputError(str(exc), path, line) from None
        try:
            self.total = float(parts[3])
        except ValueError:
            raise QEInputError(f"non-numeric total score {parts[3].strip()!r}", path, line) from None
        if not is_score(self.total):
            raise QEInputError(
                f"total score {parts[3].strip().decode('ascii', 'replace')!r} is not a finite number "
                f"of at most {MAX_SCORE:g}",
                path,
                line,
            )
        try:
            self.mf = fmap.resolve(scores)
        except ValueError as exc:
            raise QEInputError(str(exc), path, line) from None
        words = parts[1].split()
        self.marks = b"|" in parts[1] and any(is_segment_mark(w) for w in words)
        if self.marks:
            words = [w for w in words if not is_segment_mark(w)]
            hypothesis = " ".join(w.decode("utf-8") for w in words)
        self.best = " ".join(hypothesis.split())
        self.best_words = words
        self.best_set = set(words)
        self.lens = [len(words)]
        # Per other hypothesis, the 1-best words it lacks (usually fewer than those it has).
        self.misses: list[set[bytes]] = []
        self.raw_totals: list[bytes] = []
        self.raw_scores: list[bytes] = []
        self.skeleton = parts[2].translate(None, _NUMBER_CHARS)

    def add_marked(self, parts: list[bytes]) -> None:
        """Add a hypothesis whose words carry ``|i-j|`` marks (slow path)."""
        words = [w for w in parts[1].split() if not is_segment_mark(w)]
        self.lens.append(len(words))
        self.misses.append(self.best_set.difference(words))
        self.raw_totals.append(parts[3])
        self.raw_scores.append(parts[2])

    def _check(self, path: Path) -> list[float]:
        """Validate the other lines' totals and score fields; returns all totals, best first."""
        try:
            totals = list(map(float, self.raw_totals))
        except ValueError:
            for i, raw in enumerate(self.raw_totals):
                try:
                    float(raw)
                except ValueError:
                    raise QEInputError(
                        f"non-numeric total score {raw.strip()!r}", path, self.line + 1 + i
                    ) from None
        for i, total in enumerate(totals):
            if not is_score(total):
                raise QEInputError(
                    f"total score {self.raw_totals[i].strip().decode('ascii', 'replace')!r} is not a finite "
                    f"number of at most {MAX_SCORE:g}",
                    path,
                    self.line + 1 + i,
                )
        raw_scores = self.raw_scores
        skeleton = self.skeleton
        if raw_scores and b"\n".join(raw_scores).translate(None, _NUMBER_CHARS) != b"\n".join(
            [skeleton] * len(raw_scores)
        ):
            for i, raw in enumerate(raw_scores):
                if raw.translate(None, _NUMBER_CHARS) != skeleton:
                    try:
                        parse_scores(raw.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError) as exc:
                        raise QEInputError(str(exc), path, self.line + 1 + i) from None
        totals.insert(0, self.total)
        return totals

    def finish(self, path: Path) -> NBestStats:
        totals = self._check(path)
        n = len(totals)
        score_mean, score_std = _moments(totals)
        len_mean, len_std = _moments(self.lens)
        margin = totals[0] - totals[1] if n > 1 else math.nan
        if self.best_words:
            lacking = Counter(chain.from_iterable(self.misses))
            shares = [(n - lacking[w]) / n for w in self.best_words]
            post_mean, post_min = math.fsum(shares) / len(shares), min(shares)
        else:
            post_mean = post_min = math.nan
        return NBestStats(
            self.sent_id,
            self.line,
            n,
            self.best,
            self.total,
            self.mf,
            margin,
            score_mean,
            score_std,
            len_mean,
            len_std,
            post_mean,
            post_min,
        )


def _moments(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation (two-pass, exactly rounded sums)."""
    n = len(values)
    mean = math.fsum(values) / n
    deviations = list(map(sub, values, repeat(mean, n)))
    return mean, math.sqrt(math.fsum(map(mul, deviations, deviations)) / n)


def _id_or_none(raw: bytes) -> int | None:
    """The sentence id of a (possibly cut) line when its id field is complete, else ``None``."""
    head, sep, _ = raw.partition(b"|||")
    if not sep:
        return None
    try:
        return parse_sent_id(head)
    except ValueError:
        return None


def _not_contiguous(path: Path, line: int, sent_id: int, first: int) -> QEInputError:
    return QEInputError(
        f"sentence id {sent_id} appears again after other sentences (its first block starts at line "
        f"{first}); the hypotheses of one sentence must be on consecutive lines",
        path,
        line,
    )


def summarize_nbest(
    path: str | Path,
    feature_map: FeatureMap | Mapping[str, str | Sequence[str]] | None = None,
    *,
    truncated: TruncatedPolicy = "error",
) -> LogIndex[NBestStats]:
    """One streaming pass over an n-best list, returning :class:`NBestStats` per sentence id.

    Every line is checked: field count, integer id, numeric total; the 1-best's scores are fully
    parsed, other lines' score fields must have the 1-best's layout with values made of number
    characters (lines with another layout, e.g. other sparse features, are fully parsed). Errors
    name file and line. A truncated last line raises, or with ``truncated="drop"`` its sentence is
    left out (recorded in ``LogIndex.dropped``). Memory: one sentence's raw fields plus summaries.
    """
    check_truncated_policy(truncated)
    path = Path(path)
    fmap = feature_map if isinstance(feature_map, FeatureMap) else FeatureMap(feature_map)
    index: LogIndex[NBestStats] = LogIndex(path, KIND)
    stats = index.stats
    starts: dict[int, int] = {}
    block: _Block | None = None
    cur_raw: bytes | None = None
    nfields = 0
    raw = b""
    # Bound methods of the current block, kept in locals: this loop runs once per line.
    lens_append = misses_append = totals_append = scores_append = None
    lacks = None
    try:
        with open_log(path, KIND) as handle:
            for raw in handle:
                parts = raw.split(b"|||")
                if parts[0] != cur_raw or len(parts) != nfields:
                    number = block.line + len(block.lens) if block is not None else 1
                    nf = len(parts)
                    if nf < 4 or nf > 6:
                        if not raw.endswith(b"\n"):
                            raise Truncated(number)
                        message = f"expected 4 to 6 fields separated by '|||', found {nf}"
                        raise QEInputError(message, path, number)
                    try:
                        sent_id = parse_sent_id(parts[0])
                    except ValueError as exc:
                        if not raw.endswith(b"\n"):
                            raise Truncated(number) from None
                        raise QEInputError(str(exc), path, number) from None
                    cur_raw, nfields = parts[0], nf
                    if block is None or sent_id != block.sent_id:
                        if block is not None:
                            stats[block.sent_id] = block.finish(path)
                        if sent_id in starts:
                            raise _not_contiguous(path, number, sent_id, starts[sent_id])
                        starts[sent_id] = number
                        if not raw.endswith(b"\n"):
                            raise Truncated(number)
                        block = _Block(sent_id, parts, path, number, fmap)
                        lens_append = block.lens.append
                        misses_append = block.misses.append
                        totals_append = block.raw_totals.append
                        scores_append = block.raw_scores.append
                        lacks = block.best_set.difference
                        if block.marks:
                            cur_raw = None  # every line of this sentence takes the slow path
                        continue
                    if block.marks:
                        cur_raw = None  # keep every line of this sentence on the slow path
                        block.add_marked(parts)
                        continue
                words = parts[1].split()
                lens_append(len(words))
                misses_append(lacks(words))
                totals_append(parts[3])
                scores_append(parts[2])
            if raw and not raw.endswith(b"\n"):
                raise Truncated(block.line + len(block.lens) - 1 if block is not None else 1)
    except Truncated as cut:
        if truncated == "error":
            raise truncated_error(path, cut.line, KIND) from None
        cut_id = _id_or_none(raw)
        if block is not None and cut_id not in (None, block.sent_id):
            stats[block.sent_id] = block.finish(path)
        elif block is not None:
            index.dropped.add(block.sent_id)
        if cut_id is not None:
            index.dropped.add(cut_id)
    else:
        if block is not None:
            stats[block.sent_id] = block.finish(path)
    index.max_id = max(chain(stats, index.dropped), default=-1)
    return index


__all__ = [
    "DEFAULT_FEATURE_MAP",
    "MF_SLOTS",
    "FeatureMap",
    "NBestEntry",
    "NBestStats",
    "is_segment_mark",
    "iter_nbest",
    "iter_nbest_sentences",
    "parse_alignment",
    "parse_nbest_line",
    "parse_scores",
    "parse_segmentation",
    "parse_sent_id",
    "summarize_nbest",
]
