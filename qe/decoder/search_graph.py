"""Moses search graphs (``-output-search-graph[-extended]``) and word graphs (``-output-word-graph``).

Search graph: one line per hypothesis, sentence id first, then ``key=value`` items
(``hyp stack back score transition [recombined] forward fscore covered``), the extended format's
``scores="..."`` and finally ``out=`` with the phrase's target words. Word graph: per sentence a
``VERSION=1.0`` / ``UTTERANCE=id`` header, then one arc per line (``J= S= E= a= l= r= w=``, tab
separated in Moses' output; space-separated SLF-style lines and ``I=`` node lines are accepted too).
Both summarizers stream the file once, keeping one sentence's graph in memory at a time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from operator import methodcaller
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

SG_KIND = "search graph"
WG_KIND = "word graph"

# ---------------------------------------------------------------------------------------------
# Search graph


@dataclass(slots=True)
class SearchGraphNode:
    """One search-graph line; fields absent from the line (e.g. on the initial ``hyp=0``) are None."""

    sent_id: int
    hyp: int
    stack: int
    back: int | None = None
    score: float | None = None
    transition: float | None = None
    recombined: int | None = None
    forward: int | None = None
    fscore: float | None = None
    covered: tuple[int, int] | None = None
    out: str | None = None
    scores: str | None = None
    line: int = 0


_INT_KEYS = ("back", "recombined", "forward")
_FLOAT_KEYS = ("score", "transition", "fscore")


def _split_head(text: str) -> tuple[str, str | None, str | None]:
    """Split a line into its ``key=value`` head, the ``scores="..."`` text and the ``out=`` text."""
    head, sep, out = text.partition(" out=")
    out_text = out.strip() if sep else None
    if out_text is not None and len(out_text) >= 2 and out_text[0] == out_text[-1] == '"':
        out_text = out_text[1:-1]
    scores = None
    if ' scores="' in head:
        head, _, rest = head.partition(' scores="')
        scores, quote, after = rest.partition('"')
        if not quote:
            raise ValueError('unterminated scores="..." item')
        head += after
    return head, scores, out_text


def parse_search_graph_line(text: str, line: int = 0) -> SearchGraphNode:
    """Parse one search-graph line; ``ValueError`` with a readable message when malformed."""
    head, scores, out = _split_head(text)
    tokens = head.split()
    if not tokens:
        raise ValueError("empty search-graph line")
    try:
        sent_id = int(tokens[0])
    except ValueError:
        raise ValueError(f"sentence id {tokens[0]!r} is not an integer") from None
    items: dict[str, str] = {}
    for token in tokens[1:]:
        key, eq, value = token.partition("=")
        if not eq:
            raise ValueError(f"search-graph item {token!r} is not key=value")
        items[key] = value
    if "hyp" not in items or "stack" not in items:
        raise ValueError("search-graph line without hyp= and stack=")
    try:
        node = SearchGraphNode(sent_id, int(items["hyp"]), int(items["stack"]), line=line)
        for key in _INT_KEYS:
            if key in items:
                setattr(node, key, int(items[key]))
        for key in _FLOAT_KEYS:
            if key in items:
                value = float(items[key])
                if not is_score(value):
                    raise ValueError(f"{key}={items[key]} is not a finite number of at most {MAX_SCORE:g}")
                setattr(node, key, value)
        if "covered" in items:
            start, _, end = items["covered"].partition("-")
            node.covered = (int(start), int(end))
    except ValueError as exc:
        if "finite" in str(exc):
            raise
        raise ValueError(f"non-numeric value in search-graph line: {head.strip()!r}") from None
    node.out, node.scores = out, scores
    return node


def iter_search_graph(path: str | Path, *, truncated: TruncatedPolicy = "error") -> Iterator[SearchGraphNode]:
    """Stream every search-graph line, fully parsed (a truncated last line raises, or is skipped)."""
    yield from iter_parsed_lines(path, SG_KIND, parse_search_graph_line, truncated)


@dataclass(slots=True)
class SearchGraphStats:
    """Per-sentence search-graph statistics.

    ``hypotheses`` counts every line but the initial ``hyp=0`` (recombined ones included),
    ``recombined`` the lines with ``recombined=``; ``source_words`` is the largest ``stack`` (words
    covered by complete hypotheses). Fan-out is the number of lines whose ``back=`` is a given
    hypothesis, over the hypotheses that have successors; ``fscore_std`` the population standard
    deviation of ``fscore`` over the hypotheses. NaN where undefined (no hypotheses).
    """

    sent_id: int
    line: int
    hypotheses: int
    recombined: int
    source_words: int
    fanout_mean: float
    fanout_max: float
    fscore_std: float


class _SGBlock:
    __slots__ = ("backs", "fscores", "hypotheses", "line", "max_stack", "recombined", "sent_id")

    def __init__(self, sent_id: int, line: int):
        self.sent_id = sent_id
        self.line = line
        self.hypotheses = 0
        self.recombined = 0
        self.max_stack = 0
        self.backs: list[bytes] = []
        self.fscores: list[float] = []

    def finish(self) -> SearchGraphStats:
        fanout = Counter(self.backs)
        if fanout:
            fan_mean, fan_max = len(self.backs) / len(fanout), float(max(fanout.values()))
        else:
            fan_mean = fan_max = math.nan
        if self.fscores:
            mean = math.fsum(self.fscores) / len(self.fscores)
            fscore_std = math.sqrt(math.fsum((f - mean) ** 2 for f in self.fscores) / len(self.fscores))
        else:
            fscore_std = math.nan
        return SearchGraphStats(
            self.sent_id,
            self.line,
            self.hypotheses,
            self.recombined,
            self.max_stack,
            fan_mean,
            fan_max,
            fscore_std,
        )


_ITEM_SPLIT = methodcaller("split", b"=", 1)


def summarize_search_graph(
    path: str | Path, *, truncated: TruncatedPolicy = "error"
) -> LogIndex[SearchGraphStats]:
    """One streaming pass over a search graph, returning :class:`SearchGraphStats` per sentence id.

    A sentence's lines must be consecutive. A truncated last line raises, or with
    ``truncated="drop"`` its sentence is left out (``LogIndex.dropped``).
    """
    check_truncated_policy(truncated)
    path = Path(path)
    index: LogIndex[SearchGraphStats] = LogIndex(path, SG_KIND)
    stats = index.stats
    starts: dict[int, int] = {}
    block: _SGBlock | None = None
    raw = b""
    number = 0
    try:
        with open_log(path, SG_KIND) as handle:
            for number, raw in enumerate(handle, 1):
                head = raw.partition(b" out=")[0]
                if b' scores="' in head:
                    head = head.partition(b' scores="')[0]
                tokens = head.split()
                try:
                    if not raw.endswith(b"\n"):
                        raise Truncated(number)
                    sent_id = int(tokens[0])
                    items = dict(map(_ITEM_SPLIT, tokens[1:]))
                    hyp = int(items[b"hyp"])
                    stack = int(items[b"stack"])
                    if hyp:
                        back = items[b"back"]
                        int(back)
                        fscore = float(items[b"fscore"]) if b"fscore" in items else None
                        if fscore is not None and not is_score(fscore):
                            raise ValueError("fscore")
                except (ValueError, KeyError, IndexError):
                    raise QEInputError(
                        "malformed search-graph line (expected: id hyp=N stack=N [back=N ... fscore=X ...])",
                        path,
                        number,
                    ) from None
                if block is None or sent_id != block.sent_id:
                    if block is not None:
                        stats[block.sent_id] = block.finish()
                    if sent_id in starts:
                        raise QEInputError(
                            f"sentence id {sent_id} appears again after other sentences (first at line "
                            f"{starts[sent_id]}); a sentence's search-graph lines must be consecutive",
                            path,
                            number,
                        )
                    starts[sent_id] = number
                    block = _SGBlock(sent_id, number)
                if not hyp:
                    continue
                block.hypotheses += 1
                if b"recombined" in items:
                    block.recombined += 1
                if stack > block.max_stack:
                    block.max_stack = stack
                block.backs.append(back)
                if fscore is not None:
                    block.fscores.append(fscore)
    except Truncated as cut:
        if truncated == "error":
            raise truncated_error(path, cut.line, SG_KIND) from None
        tokens = raw.split()
        cut_id = int(tokens[0]) if len(tokens) > 1 and tokens[0].isdigit() else None
        if block is not None and cut_id not in (None, block.sent_id):
            stats[block.sent_id] = block.finish()  # complete: the cut line starts another sentence
        elif block is not None:
            index.dropped.add(block.sent_id)
        if cut_id is not None:
            index.dropped.add(cut_id)
    else:
        if block is not None:
            stats[block.sent_id] = block.finish()
    index.max_id = max(chain(stats, index.dropped), default=-1)
    return index


# ---------------------------------------------------------------------------------------------
# Word graph


@dataclass(slots=True)
class WordGraphArc:
    """One word-graph arc (``J=`` line): from node ``start`` to node ``end`` with its scores.

    ``a`` holds the translation-model scores, ``l`` the language-model scores, ``r`` the
    reordering scores; ``source`` is ``None`` when ``w=`` carries only the target phrase.
    """

    sent_id: int
    link: int
    start: int
    end: int
    a: tuple[float, ...]
    l: tuple[float, ...]  # noqa: E741  (Moses' field name)
    r: tuple[float, ...]
    source: str | None
    target: str
    line: int = 0

    @property
    def score(self) -> float:
        """The unweighted sum of all the arc's model scores (``a`` + ``l`` + ``r``)."""
        return math.fsum(chain(self.a, self.l, self.r))


_HEADER_KEYS = {"VERSION", "N", "L", "base", "lmscale", "wdpenalty", "lmname"}


def _items(text: str) -> dict[str, str]:
    """``key=value`` items of a word-graph line: tab-separated, or space-separated where a token
    without ``=`` continues the previous value (``a=-1.2, -3.4``, ``w=la casa|the house``)."""
    items: dict[str, str] = {}
    if "\t" in text:
        for field in text.split("\t"):
            key, eq, value = field.partition("=")
            if not eq:
                raise ValueError(f"word-graph item {field!r} is not key=value")
            items[key.strip()] = value.strip()
        return items
    key = None
    for token in text.split():
        name, eq, value = token.partition("=")
        if eq and name and key not in ("w", "W"):
            key = name
            items[key] = value
        elif key is None:
            raise ValueError(f"word-graph item {token!r} is not key=value")
        else:
            items[key] += " " + token
    return items


def _numbers(text: str | None) -> tuple[float, ...]:
    return tuple(float(x) for x in text.replace(",", " ").split()) if text else ()


def parse_word_graph_arc(text: str, sent_id: int, line: int = 0) -> WordGraphArc:
    """Parse one ``J=`` arc line of sentence ``sent_id``; ``ValueError`` when malformed."""
    items = _items(text)
    try:
        link, start, end = int(items["J"]), int(items["S"]), int(items["E"])
        a, lm, r = _numbers(items.get("a")), _numbers(items.get("l")), _numbers(items.get("r"))
    except KeyError as exc:
        raise ValueError(f"word-graph arc without {exc.args[0]}=") from None
    except ValueError:
        raise ValueError("non-numeric value in word-graph arc") from None
    words = items.get("w", items.get("W", ""))
    source: str | None
    if "|" in words:
        source, target = words.split("|", 1)
        source = source.strip()
    else:
        source, target = None, words
    return WordGraphArc(sent_id, link, start, end, a, lm, r, source, target.strip(), line)


def iter_word_graph(
    path: str | Path, *, truncated: TruncatedPolicy = "error"
) -> Iterator[tuple[int, list[WordGraphArc], set[int]]]:
    """Stream ``(sentence id, arcs, node ids)`` per utterance, one utterance in memory at a time.

    Node ids are those of ``I=`` lines plus every arc end. With ``truncated="drop"`` the utterance of
    a truncated last line is not yielded.
    """
    return _utterances(Path(path), truncated, set())


def _utterances(
    path: Path, truncated: str, dropped: set[int]
) -> Iterator[tuple[int, list[WordGraphArc], set[int]]]:
    """The word-graph reader; ids lost to a truncated last line are added to ``dropped``."""
    check_truncated_policy(truncated)
    seen: dict[int, int] = {}
    sent_id: int | None = None
    arcs: list[WordGraphArc] = []
    nodes: set[int] = set()
    with open_log(path, WG_KIND) as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n"):
                if truncated == "error":
                    raise truncated_error(path, number, WG_KIND)
                if raw.startswith(b"UTTERANCE=") and sent_id is not None:
                    yield sent_id, arcs, nodes  # complete: the cut line is the next header
                elif sent_id is not None:
                    dropped.add(sent_id)
                return
            text = decode_line(raw, path, number).strip()
            if not text:
                continue
            key = text.partition("=")[0]
            try:
                if key == "UTTERANCE":
                    if sent_id is not None:
                        yield sent_id, arcs, nodes
                    sent_id = int(text.partition("=")[2])
                    if sent_id < 0:
                        raise ValueError(f"negative utterance id {sent_id}")
                    if sent_id in seen:
                        raise ValueError(f"utterance {sent_id} appears twice (first at line {seen[sent_id]})")
                    seen[sent_id] = number
                    arcs, nodes = [], set()
                elif key in _HEADER_KEYS:
                    continue
                elif sent_id is None:
                    raise ValueError("word-graph line before any UTTERANCE= header")
                elif key == "I":
                    nodes.add(int(_items(text)["I"]))
                elif key == "J":
                    arc = parse_word_graph_arc(text, sent_id, number)
                    arcs.append(arc)
                    nodes.add(arc.start)
                    nodes.add(arc.end)
                else:
                    raise ValueError(f"unrecognised word-graph line starting with {key!r}")
            except ValueError as exc:
                raise QEInputError(str(exc), path, number) from None
    if sent_id is not None:
        yield sent_id, arcs, nodes


@dataclass(slots=True)
class WordGraphStats:
    """Per-sentence word-graph statistics.

    ``source_words`` is the largest number of source words covered along a path (from the
    source phrases in ``w=src|tgt``), ``None`` when arcs carry only target words.
    ``out_entropy`` is the mean, over nodes with outgoing arcs, of the entropy (nats) of the
    softmax of their outgoing arcs' unweighted scores; NaN without arcs.
    """

    sent_id: int
    nodes: int
    arcs: int
    source_words: int | None
    out_entropy: float


def _source_words(arcs: list[WordGraphArc]) -> int | None:
    """Longest source coverage, propagated from start nodes along arcs (file order is by stack)."""
    if any(a.source is None for a in arcs):
        return None
    ends = {a.end for a in arcs}
    covered = {a.start: 0 for a in arcs if a.start not in ends}
    pending = arcs
    while pending:
        left = []
        for arc in pending:
            if arc.start in covered:
                value = covered[arc.start] + len(arc.source.split())  # type: ignore[union-attr]
                covered[arc.end] = max(covered.get(arc.end, 0), value)
            else:
                left.append(arc)
        if len(left) == len(pending):
            break  # a cycle: not a Moses lattice; keep what is reachable
        pending = left
    return max(covered.values(), default=0)


def _entropy(scores: list[float]) -> float:
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = math.fsum(weights)
    return -math.fsum(w / total * math.log(w / total) for w in weights if w > 0)


def word_graph_stats(sent_id: int, arcs: list[WordGraphArc], nodes: set[int]) -> WordGraphStats:
    """The statistics of one utterance's arcs and nodes."""
    outgoing: dict[int, list[float]] = {}
    for arc in arcs:
        outgoing.setdefault(arc.start, []).append(arc.score)
    entropies = [_entropy(s) for s in outgoing.values()]
    entropy = math.fsum(entropies) / len(entropies) if entropies else math.nan
    return WordGraphStats(sent_id, len(nodes), len(arcs), _source_words(arcs), entropy)


def summarize_word_graph(
    path: str | Path, *, truncated: TruncatedPolicy = "error"
) -> LogIndex[WordGraphStats]:
    """One streaming pass over a word graph, returning :class:`WordGraphStats` per sentence id.

    A truncated last line raises, or with ``truncated="drop"`` its utterance is left out.
    """
    path = Path(path)
    index: LogIndex[WordGraphStats] = LogIndex(path, WG_KIND)
    for sent_id, arcs, nodes in _utterances(path, truncated, index.dropped):
        index.stats[sent_id] = word_graph_stats(sent_id, arcs, nodes)
    index.max_id = max(chain(index.stats, index.dropped), default=-1)
    return index


__all__ = [
    "SearchGraphNode",
    "SearchGraphStats",
    "WordGraphArc",
    "WordGraphStats",
    "iter_search_graph",
    "iter_word_graph",
    "parse_search_graph_line",
    "parse_word_graph_arc",
    "summarize_search_graph",
    "summarize_word_graph",
    "word_graph_stats",
]
