"""N-gram frequency tables (orders 1..n) with QuEst's quartile cut-offs, and a truecase-model reader.

An n-gram is its tokens joined by single spaces (tokens never contain spaces). Tables are saved
as gzip-compressed text: a JSON header line, then per order a ``\\N-grams:`` line followed by
``ngram<TAB>count`` lines, so they are easy to inspect and to build with other tools; or (what
``qe resources build`` writes) as a binary ``.npz`` holding the header and, per order, the n-grams
and their counts as arrays, which loads without parsing (see ``qe.infra.arrays``).

Quartile cut-offs follow QuEst (reference-behaviour.md §1): keep the n-grams of one order whose
count is at least ``min_count`` (3: n-grams seen once or twice count as unseen), sort their counts
ascending, and take ``cut_j = sorted[floor((j + 1) * (N - 1) / 4)]`` for j = 0..3, so the last
cut-off is the maximum. Quartile 1 is ``0 < f <= cut_1``, quartile 4 is ``cut_3 < f <= cut_4``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from qe.infra.arrays import damaged, is_npz, pack_lines, read_arrays, unpack_lines, write_arrays
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, parse_bounded

FORMAT = "qe-ngram-counts/1"
BINARY_FORMAT = "qe-ngram-counts-binary/1"
MAX_BINARY_ORDER = 9  # orders stored in a binary table: 1 .. 9
DEFAULT_MIN_COUNT = 3

_TRUECASE_COUNT = re.compile(r"\((\d+)(?:/(\d+))?\)")


def ngrams(tokens: Sequence[str], order: int) -> list[str]:
    """The ``order``-grams of a token list, left to right, duplicates kept (no ``<s>``/``</s>``)."""
    if order == 1:
        return list(tokens)
    return [" ".join(tokens[i : i + order]) for i in range(len(tokens) - order + 1)]


def quartile_cutoffs(counts: Iterable[int], min_count: int = DEFAULT_MIN_COUNT) -> tuple[int, int, int, int]:
    """QuEst's four cut-offs of a frequency list (``(0, 0, 0, 0)`` when nothing reaches ``min_count``)."""
    kept = sorted(c for c in counts if c >= min_count)
    if not kept:
        return (0, 0, 0, 0)
    n = len(kept)
    return tuple(kept[((j + 1) * (n - 1)) // 4] for j in range(4))  # type: ignore[return-value]


class NgramCounts:
    """Counts of n-grams of orders 1..``max_order``; ``count`` returns 0 for unseen n-grams.

    ``min_count`` (set when loading) drops rarer n-grams, which then count as unseen. The
    number of sentences and tokens the counts come from are kept as metadata.
    """

    def __init__(
        self,
        tables: dict[int, dict[str, int]],
        *,
        sentences: int | None = None,
        tokens: int | None = None,
        min_count: int = 1,
        source: str = "",
    ) -> None:
        if not tables:
            raise ValueError("an n-gram table needs at least one order")
        self.tables = {int(k): v for k, v in tables.items()}
        self.max_order = max(self.tables)
        self.sentences = sentences
        self.tokens = tokens
        self.min_count = min_count
        self.source = source
        self._cutoffs: dict[tuple[int, int], tuple[int, int, int, int]] = {}

    # ------------------------------------------------------------------ building

    @classmethod
    def from_sentences(cls, sentences: Iterable[Sequence[str]], max_order: int = 3) -> NgramCounts:
        """Count the n-grams of tokenized sentences (each a list of tokens)."""
        if max_order < 1:
            raise ValueError("max_order must be >= 1")
        counters = {n: Counter() for n in range(1, max_order + 1)}
        n_sent = n_tok = 0
        for tokens in sentences:
            if isinstance(tokens, str):
                raise TypeError("expected tokenized sentences (lists of tokens), got a string")
            n_sent += 1
            n_tok += len(tokens)
            for n, counter in counters.items():
                counter.update(ngrams(tokens, n))
        return cls({n: dict(c) for n, c in counters.items()}, sentences=n_sent, tokens=n_tok, source="corpus")

    # ------------------------------------------------------------------ lookups

    def table(self, order: int) -> dict[str, int]:
        """The ``ngram -> count`` dict of one order (for fast lookups in loops)."""
        if order not in self.tables:
            raise QEInputError(
                f"no {order}-gram counts in this n-gram table (it has orders {sorted(self.tables)}): "
                f"build the bundle's [ngrams] with max_order = {order} or more"
            )
        return self.tables[order]

    def count(self, ngram: str | Sequence[str], order: int | None = None) -> int:
        """Count of an n-gram given as a string or a token sequence (0 when unseen)."""
        if not isinstance(ngram, str):
            ngram = " ".join(ngram)
        if order is None:
            order = ngram.count(" ") + 1
        table = self.tables.get(order)
        return 0 if table is None else table.get(ngram, 0)

    def cutoffs(self, order: int, min_count: int = DEFAULT_MIN_COUNT) -> tuple[int, int, int, int]:
        """QuEst's quartile cut-offs of one order (cached)."""
        key = (order, min_count)
        if key not in self._cutoffs:
            self._cutoffs[key] = quartile_cutoffs(self.table(order).values(), max(min_count, self.min_count))
        return self._cutoffs[key]

    def pruned(self, min_count: int) -> NgramCounts:
        """A copy without the n-grams seen fewer than ``min_count`` times."""
        tables = {n: {g: c for g, c in t.items() if c >= min_count} for n, t in self.tables.items()}
        return NgramCounts(
            tables,
            sentences=self.sentences,
            tokens=self.tokens,
            min_count=max(min_count, self.min_count),
            source=self.source,
        )

    def __len__(self) -> int:
        return sum(len(t) for t in self.tables.values())

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}-grams: {len(t)}" for n, t in sorted(self.tables.items()))
        return f"NgramCounts({sizes}, min_count={self.min_count})"

    def info(self) -> dict:
        """Sizes and cut-offs, for manifests."""
        return {
            "orders": sorted(self.tables),
            "types": {str(n): len(t) for n, t in sorted(self.tables.items())},
            "sentences": self.sentences,
            "tokens": self.tokens,
            "min_count": self.min_count,
            "cutoffs": {str(n): list(self.cutoffs(n)) for n in sorted(self.tables)},
            "source": self.source,
        }

    # ------------------------------------------------------------------ files

    def _header(self, format_name: str) -> dict:
        return {
            "format": format_name,
            "max_order": self.max_order,
            "sentences": self.sentences,
            "tokens": self.tokens,
            "min_count": self.min_count,
            "source": self.source,
        }

    def save(self, path: str | Path) -> None:
        """Write the gzip text format (atomically)."""
        header = self._header(FORMAT)
        with atomic_write(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write((json.dumps(header, sort_keys=True) + "\n").encode())
            for n in sorted(self.tables):
                gz.write(f"\\{n}-grams:\n".encode())
                items = sorted(self.tables[n].items(), key=lambda kv: (-kv[1], kv[0]))
                gz.write("".join(f"{g}\t{c}\n" for g, c in items).encode())

    def save_binary(self, path: str | Path) -> None:
        """Write the binary format (atomically): the header as JSON bytes and, per order ``n``, the
        n-grams (``grams_n``, one per line) and their counts (``counts_n``, int64), most frequent
        first (as in the text format), so that loading with a ``min_count`` reads only a prefix."""
        if self.max_order > MAX_BINARY_ORDER or min(self.tables) < 1:
            raise QEInputError(f"a binary n-gram table holds orders 1 to {MAX_BINARY_ORDER}", path)
        header = json.dumps(self._header(BINARY_FORMAT), sort_keys=True).encode()
        arrays = {"header": np.frombuffer(header, dtype=np.uint8)}
        for n, table in sorted(self.tables.items()):
            items = sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))
            arrays[f"grams_{n}"] = pack_lines([g for g, _ in items], f"{n}-gram", path)
            arrays[f"counts_{n}"] = np.array([c for _, c in items], dtype=np.int64)
        write_arrays(path, BINARY_FORMAT, arrays)

    @classmethod
    def _load_binary(cls, path: Path, min_count: int, wanted: set[int] | None) -> NgramCounts:
        """A :meth:`save_binary` table, every array used checked first."""
        orders = [n for n in range(1, MAX_BINARY_ORDER + 1) if wanted is None or n in wanted]
        expected = {"header": ("uint8", 1)}
        for n in orders:
            expected.update({f"grams_{n}": ("uint8", 1), f"counts_{n}": ("int64", 1)})
        arrays = read_arrays(path, BINARY_FORMAT, expected, optional=[k for k in expected if k != "header"])
        try:
            header = parse_bounded(json.loads, arrays["header"].tobytes().decode("utf-8"), path, "the header")
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise damaged("unreadable header", path) from None
        if not isinstance(header, dict) or header.get("format") != BINARY_FORMAT:
            raise damaged(f"header is not {BINARY_FORMAT}", path)
        tables: dict[int, dict[str, int]] = {}
        for n in orders:
            if (f"grams_{n}" in arrays) != (f"counts_{n}" in arrays):
                raise damaged(f"order {n} lacks its grams or counts", path)
            if f"counts_{n}" not in arrays:
                continue
            counts = arrays[f"counts_{n}"]
            if len(counts) and (bool(np.any(counts[1:] > counts[:-1])) or int(counts[-1]) < 0):
                raise damaged(f"{n}-gram counts not sorted, or negative", path)
            kept = int(np.searchsorted(-counts, -min_count, side="right"))  # counts >= min_count
            grams = unpack_lines(arrays[f"grams_{n}"], len(counts), f"the {n}-grams", path, first=kept)
            tables[n] = dict(zip(grams, counts[:kept].tolist(), strict=True))
            if len(tables[n]) != kept:
                raise damaged(f"a {n}-gram appears twice", path)
        if not tables:
            raise QEInputError("no n-gram section found", path)
        return cls(
            tables,
            sentences=header.get("sentences"),
            tokens=header.get("tokens"),
            min_count=max(min_count, int(header.get("min_count") or 1)),
            source=str(header.get("source", "")),
        )

    @classmethod
    def load(cls, path: str | Path, min_count: int = 1, orders: Iterable[int] | None = None) -> NgramCounts:
        """Read a saved table (gzip text or :meth:`save_binary`), keeping n-grams seen at least
        ``min_count`` times (and only ``orders``).

        Raises QEInputError naming the file (and line) when it is missing, empty, not gzip, not
        UTF-8, malformed or a damaged binary table.
        """
        path = Path(path)
        if not path.is_file():
            raise QEInputError("n-gram count file not found", path)
        wanted = None if orders is None else {int(o) for o in orders}
        if is_npz(path):
            return cls._load_binary(path, min_count, wanted)
        try:
            with gzip.open(path, "rb") as handle:
                data = handle.read()
        except (OSError, EOFError) as exc:
            reason = type(exc).__name__  # not its text: that may quote the file's first bytes
            raise QEInputError(f"not a readable gzip n-gram count file ({reason})", path) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise QEInputError("invalid UTF-8", path, line) from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            raise QEInputError("n-gram count file is empty", path)
        try:
            header = parse_bounded(json.loads, lines[0], path, "the header")
        except json.JSONDecodeError:
            raise QEInputError("missing JSON header line (not a qe n-gram count file)", path, 1) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise QEInputError(f"unknown format (expected {FORMAT})", path, 1)
        tables: dict[int, dict[str, int]] = {}
        current: dict[str, int] | None = None
        skip = False
        for number, line in enumerate(lines[1:], start=2):
            if line.startswith("\\") and line.endswith("-grams:"):
                try:
                    order = int(line[1 : -len("-grams:")])
                except ValueError:
                    raise QEInputError("bad section line (expected '\\N-grams:')", path, number) from None
                skip = wanted is not None and order not in wanted
                current = None if skip else tables.setdefault(order, {})
                continue
            if skip:
                continue
            gram, tab, count_text = line.rpartition("\t")
            if current is None or not tab or not gram:
                raise QEInputError("expected 'ngram<TAB>count' inside an order section", path, number)
            try:
                count = int(count_text)
            except ValueError:
                raise QEInputError("count is not an integer", path, number) from None
            if count >= min_count:
                current[gram] = count
        if not tables:
            raise QEInputError("no n-gram section found", path)
        return cls(
            tables,
            sentences=header.get("sentences"),
            tokens=header.get("tokens"),
            min_count=max(min_count, int(header.get("min_count") or 1)),
            source=str(header.get("source", "")),
        )


def load_truecase_counts(path: str | Path) -> NgramCounts:
    """Case-folded unigram counts from a Moses truecaser model (``richer (322/323) Richer (1)``).

    Every casing variant's count is added to its lower-cased form, so the table holds the
    corpus frequency of each lower-cased word (what QuEst's lowercased pipeline looked up).
    """
    path = Path(path)
    if not path.is_file():
        raise QEInputError("truecase model not found", path)
    data = path.read_bytes()
    if not data.strip():
        raise QEInputError("truecase model is empty", path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QEInputError("invalid UTF-8", path, data.count(b"\n", 0, exc.start) + 1) from None
    counts: dict[str, int] = {}
    total = 0
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) % 2:
            raise QEInputError("expected 'word (count/total) [word (count)]...' pairs", path, number)
        for word, count_text in zip(fields[::2], fields[1::2], strict=True):
            match = _TRUECASE_COUNT.fullmatch(count_text)
            if match is None:
                raise QEInputError("bad count (expected '(n)' or '(n/total)')", path, number)
            count = int(match.group(1))
            key = word.lower()
            counts[key] = counts.get(key, 0) + count
            total += count
    return NgramCounts({1: counts}, tokens=total, source=f"truecase-model:{path.name}")
