"""IBM Model 1 lexical translation tables t(target | source), trained by vectorized EM.

The EM follows nltk 3.10's ``IBMModel1`` exactly (uniform start 1/|target vocabulary|, a NULL
source word in every sentence, the 1e-12 probability floor), so the tables agree with nltk to
rounding error while training orders of magnitude faster. Tables are saved in a GIZA-style text
format, one ``src tgt prob`` line per entry, with the empty word written as ``NULL``, or (what
``qe resources build`` writes) in a binary ``.npz`` of the CSR arrays and the two vocabularies that
loads without parsing (see ``qe.infra.arrays``); :meth:`IBM1Table.load` reads either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from qe.infra.arrays import damaged, is_npz, pack_lines, read_arrays, unpack_lines, write_arrays
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write

NULL = "NULL"
"""Name of the empty source word, in tables and in saved files (reserved: not allowed as a token)."""

BINARY_FORMAT = "qe-ibm1-table/1"
"""Format name inside a binary table (:meth:`IBM1Table.save_binary`)."""

MIN_PROB = 1.0e-12
"""Probability floor of nltk's IBM models, applied after every M step (and in scoring, per word)."""

_CHUNK_ELEMENTS = 1 << 16  # cells are generated and unpacked in chunks of about this many
_PACK_BITS = 63  # (pair, slot, count) of a cell are sorted as one int64 when they fit in this many bits


class IBM1Table:
    """t(target_word | source_word) lexical probabilities.

    Entries are stored as a CSR matrix (source rows, target columns); pairs not in the table
    have probability 0. The empty word is the source word ``NULL``. ``len(table)`` is the
    number of (source, target) entries.
    """

    def __init__(
        self,
        src_words: Sequence[str],
        tgt_words: Sequence[str],
        rows: np.ndarray,
        cols: np.ndarray,
        probs: np.ndarray,
        *,
        null: bool,
        presorted: bool = False,
    ) -> None:
        """Build from parallel entry arrays (``rows``/``cols`` index ``src_words``/``tgt_words``).

        Words without any entry are dropped from the vocabularies; duplicate entries raise
        ValueError. ``presorted`` promises entries already ordered by (row, col).
        """
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        probs = np.asarray(probs, dtype=np.float64)
        src_words, rows = _compact(list(src_words), rows)
        tgt_words, cols = _compact(list(tgt_words), cols)
        n_tgt = max(len(tgt_words), 1)
        keys = rows * n_tgt + cols
        if not presorted:
            order = np.argsort(keys, kind="stable")
            keys, rows, cols, probs = keys[order], rows[order], cols[order], probs[order]
        if len(keys) > 1 and bool(np.any(keys[1:] <= keys[:-1])):
            raise ValueError("duplicate or unsorted (source, target) entries")
        self._src_words = src_words
        self._tgt_words = tgt_words
        self._src_index = dict(zip(src_words, range(len(src_words)), strict=True))
        self._tgt_index = dict(zip(tgt_words, range(len(tgt_words)), strict=True))
        self._n_tgt = n_tgt
        self._keys = keys  # row * n_tgt + col, sorted: CSR order and a global search index
        self._indptr = np.zeros(len(src_words) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(src_words)), out=self._indptr[1:])
        self._cols = cols.astype(np.int32)
        self._probs = probs
        self._null = bool(null)
        self._count_cache: dict[float, np.ndarray] = {}
        self._src_vocab: frozenset[str] | None = None
        self._tgt_vocab: frozenset[str] | None = None

    # ------------------------------------------------------------------ training

    @classmethod
    def train(
        cls,
        src_sents: list[list[str]],
        tgt_sents: list[list[str]],
        iterations: int = 5,
        null: bool = True,
        min_prob: float = 0.0,
        progress: bool = False,
        *,
        count_target_repeats: bool = False,
    ) -> IBM1Table:
        """Train t(tgt | src) with ``iterations`` EM steps from a uniform start, as nltk's IBMModel1.

        ``null`` adds the empty source word to every sentence. Entries below ``min_prob`` are
        dropped after training (EM itself keeps every co-occurring pair). By default a word
        repeated within one target sentence contributes its expected counts once, as in nltk
        3.10; ``count_target_repeats=True`` counts every token, as Brown et al. and GIZA++ do.
        """
        if len(src_sents) != len(tgt_sents):
            counts = f"{len(src_sents)} vs {len(tgt_sents)}"
            raise QEInputError(f"source and target have different numbers of sentences ({counts})")
        if iterations < 0:
            raise ValueError("iterations must be >= 0")
        from tqdm.auto import tqdm

        # NULL is id 0 (unused when null is False): a NULL token in the corpus gets id 0 too.
        src_words, src_ids, src_lens = _encode(src_sents, [NULL], "source")
        if bool(np.any(src_ids == 0)):
            raise QEInputError(f"the source token {NULL!r} is reserved for the empty word")
        tgt_words, tgt_ids, tgt_lens = _encode(tgt_sents, [], "target")
        model = _EMProblem(
            src_ids, src_lens, tgt_ids, tgt_lens, len(src_words), len(tgt_words), null, count_target_repeats
        )
        # nltk starts from 1 / |target vocabulary| for every pair (its initial_prob).
        probs = np.full(model.n_pairs, 1.0 / max(len(tgt_words), 1))
        for _ in tqdm(range(iterations), desc="IBM1 EM", disable=not progress, leave=False):
            probs = model.em_step(probs)
        keep = probs >= min_prob
        return cls(
            src_words,
            tgt_words,
            model.pair_src[keep],
            model.pair_tgt[keep],
            probs[keep],
            null=null,
            presorted=True,
        )

    # ------------------------------------------------------------------ lookups

    def __len__(self) -> int:
        return len(self._probs)

    def __repr__(self) -> str:
        return (
            f"IBM1Table({len(self._src_words)} source words, {len(self._tgt_words)} target words, "
            f"{len(self)} entries, null={self._null})"
        )

    @property
    def src_vocab(self) -> frozenset[str]:
        """Source words with at least one entry (``NULL`` included when the table has it)."""
        if self._src_vocab is None:
            self._src_vocab = frozenset(self._src_words)
        return self._src_vocab

    @property
    def tgt_vocab(self) -> frozenset[str]:
        """Target words with at least one entry."""
        if self._tgt_vocab is None:
            self._tgt_vocab = frozenset(self._tgt_words)
        return self._tgt_vocab

    @property
    def has_null(self) -> bool:
        """Whether the empty source word takes part in scoring and alignment."""
        return self._null

    def prob(self, src_word: str, tgt_word: str) -> float:
        """t(tgt_word | src_word); 0.0 if the pair is not in the table."""
        s = self._src_index.get(src_word)
        t = self._tgt_index.get(tgt_word)
        if s is None or t is None:
            return 0.0
        lo, hi = int(self._indptr[s]), int(self._indptr[s + 1])
        pos = lo + int(np.searchsorted(self._cols[lo:hi], t))
        if pos < hi and self._cols[pos] == t:
            return float(self._probs[pos])
        return 0.0

    def translations(self, src_word: str, min_prob: float = 0.0) -> dict[str, float]:
        """Target words with t(tgt | src_word) > ``min_prob``, mapped to their probability."""
        s = self._src_index.get(src_word)
        if s is None:
            return {}
        lo, hi = int(self._indptr[s]), int(self._indptr[s + 1])
        probs = self._probs[lo:hi]
        keep = probs > min_prob
        words = self._tgt_words
        cols = self._cols[lo:hi][keep].tolist()
        return {words[c]: p for c, p in zip(cols, probs[keep].tolist(), strict=True)}

    def n_translations(self, src_word: str, min_prob: float) -> int:
        """Number of target words with t(tgt | src_word) > ``min_prob`` (0 for unknown words).

        Counts for all source words are computed once per threshold and cached.
        """
        s = self._src_index.get(src_word)
        return 0 if s is None else int(self._counts_above(min_prob)[s])

    def translation_counts(self, min_prob: float) -> dict[str, int]:
        """:meth:`n_translations` of every source word that has at least one translation."""
        counts = self._counts_above(min_prob)
        found = np.flatnonzero(counts)
        words = self._src_words
        return dict(zip([words[i] for i in found.tolist()], counts[found].tolist(), strict=True))

    def _counts_above(self, min_prob: float) -> np.ndarray:
        """Per source word, the number of entries with probability > ``min_prob`` (cached)."""
        counts = self._count_cache.get(min_prob)
        if counts is None:
            rows = np.repeat(np.arange(len(self._src_words)), np.diff(self._indptr))
            counts = np.bincount(rows[self._probs > min_prob], minlength=len(self._src_words))
            if len(self._count_cache) >= 16:
                self._count_cache.clear()
            self._count_cache[min_prob] = counts
        return counts

    def _block(self, src: Sequence[str], tgt: Sequence[str]) -> np.ndarray:
        """Matrix of t(tgt[j] | src[i]) with rows j and columns i (column 0 = NULL if the table has it)."""
        src_list = ([NULL] if self._null else []) + list(src)
        s = np.array([self._src_index.get(w, -1) for w in src_list], dtype=np.int64)
        t = np.array([self._tgt_index.get(w, -1) for w in tgt], dtype=np.int64)
        keys = t[:, None] + s[None, :] * self._n_tgt
        valid = (t[:, None] >= 0) & (s[None, :] >= 0)
        if len(self._keys) == 0:
            return np.zeros(keys.shape)
        pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        hit = valid & (self._keys[pos] == keys)
        return np.where(hit, self._probs[pos], 0.0)

    def sentence_log_prob(self, src: list[str], tgt: list[str]) -> float:
        """Natural-log IBM1 P(tgt | src) without the length term epsilon (Brown et al. 1993, Model 1).

        log P = sum_j log(sum_i t(tgt_j | src_i)) - m log(l + 1), i over NULL and the l source
        words (l without NULL when the table has none). Each inner sum is floored at MIN_PROB so
        unknown target words cost log(1e-12) instead of -inf; an empty target gives 0.0.
        """
        m = len(tgt)
        if m == 0:
            return 0.0
        positions = len(src) + (1 if self._null else 0)
        sums = np.maximum(self._block(src, tgt).sum(axis=1), MIN_PROB)
        return float(np.log(sums).sum() - m * math.log(max(positions, 1)))

    def viterbi_alignment(self, src: list[str], tgt: list[str]) -> list[int]:
        """Best source index for each target word (-1 = NULL), with nltk's tie rule (later index wins).

        A source word must reach max(t(tgt | NULL), MIN_PROB) to beat the NULL alignment.
        """
        if not tgt:
            return []
        block = self._block(src, tgt)
        if self._null:
            base = np.maximum(block[:, 0], MIN_PROB)
            block = block[:, 1:]
        else:
            base = np.full(len(tgt), MIN_PROB)
        if block.shape[1] == 0:
            return [-1] * len(tgt)
        last_best = block.shape[1] - 1 - np.argmax(block[:, ::-1], axis=1)
        best = block[np.arange(len(tgt)), last_best]
        return np.where(best >= base, last_best, -1).tolist()

    # ------------------------------------------------------------------ files

    def save(self, path: str | Path) -> None:
        """Write ``src tgt prob`` lines (UTF-8, atomically); probabilities round-trip exactly."""
        for words, side in ((self._src_words, "source"), (self._tgt_words, "target")):
            for w in words:
                if len(w.split()) != 1:
                    raise QEInputError(f"cannot save {side} word {w!r}: empty or contains whitespace", path)
        rows = np.repeat(np.arange(len(self._src_words)), np.diff(self._indptr)).tolist()
        src, tgt = self._src_words, self._tgt_words
        with atomic_write(path) as handle:
            lines = [
                f"{src[r]} {tgt[c]} {p!r}\n"
                for r, c, p in zip(rows, self._cols.tolist(), self._probs.tolist(), strict=True)
            ]
            handle.writelines(lines)

    def save_binary(self, path: str | Path) -> None:
        """Write the table as a binary ``.npz`` (atomically): the vocabularies and the CSR entries
        (row and column of each entry as int32, probabilities as float64), read back exactly."""
        rows = np.repeat(np.arange(len(self._src_words), dtype=np.int32), np.diff(self._indptr))
        write_arrays(
            path,
            BINARY_FORMAT,
            {
                "src_words": pack_lines(self._src_words, "source word", path),
                "tgt_words": pack_lines(self._tgt_words, "target word", path),
                "rows": rows,
                "cols": self._cols.astype(np.int32),
                "probs": self._probs.astype(np.float64),
            },
        )

    @classmethod
    def load(cls, path: str | Path, min_prob: float = 0.0) -> IBM1Table:
        """Read a table (text ``src tgt prob`` lines, or a :meth:`save_binary` file), keeping entries
        with prob >= ``min_prob``.

        The table uses the empty word iff a source word is ``NULL``. Raises QEInputError naming
        the file (and line) for a missing or empty file, invalid UTF-8, malformed lines and a
        damaged binary table.
        """
        path = Path(path)
        try:
            if is_npz(path):
                return cls._load_binary(path, min_prob)
            data = path.read_bytes()
        except FileNotFoundError:
            raise QEInputError("file not found", path) from None
        except IsADirectoryError:
            raise QEInputError("is a directory, expected an IBM1 table file", path) from None
        if not data.strip():
            raise QEInputError("file is empty", path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
            raise QEInputError(f"invalid UTF-8 at byte {column} of the line", path, line) from None
        lines = text.removeprefix("\ufeff").split("\n")
        if lines[-1] == "":
            lines.pop()
        src_index: dict[str, int] = {}
        tgt_index: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        probs: list[float] = []
        numbers: list[int] = []
        for number, line in enumerate(lines, start=1):
            fields = line.split()
            if len(fields) != 3:
                raise QEInputError(f"expected 'src tgt prob', got {len(fields)} fields", path, number)
            try:
                p = float(fields[2])
            except ValueError:
                raise QEInputError("probability is not a number", path, number) from None
            if not 0.0 <= p <= 1.0 + 1e-6:
                raise QEInputError("probability outside [0, 1]", path, number)
            if p < min_prob:
                continue
            rows.append(src_index.setdefault(fields[0], len(src_index)))
            cols.append(tgt_index.setdefault(fields[1], len(tgt_index)))
            probs.append(p)
            numbers.append(number)
        row_arr = np.array(rows, dtype=np.int64)
        col_arr = np.array(cols, dtype=np.int64)
        keys = row_arr * max(len(tgt_index), 1) + col_arr
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        dup = np.flatnonzero(keys[1:] == keys[:-1])
        if len(dup):
            first, second = numbers[order[dup[0]]], numbers[order[dup[0] + 1]]
            raise QEInputError(f"duplicate entry (first on line {first})", path, second)
        return cls(
            list(src_index),
            list(tgt_index),
            row_arr[order],
            col_arr[order],
            np.array(probs)[order],
            null=NULL in src_index,
            presorted=True,
        )

    @classmethod
    def _load_binary(cls, path: Path, min_prob: float) -> IBM1Table:
        """A :meth:`save_binary` table, with every array checked before it is used."""
        arrays = read_arrays(
            path,
            BINARY_FORMAT,
            {
                "src_words": ("uint8", 1),
                "tgt_words": ("uint8", 1),
                "rows": ("int32", 1),
                "cols": ("int32", 1),
                "probs": ("float64", 1),
            },
        )
        rows, cols, probs = arrays["rows"], arrays["cols"], arrays["probs"]
        if not len(rows) == len(cols) == len(probs):
            raise damaged("entry arrays differ in length", path)
        src_count = int(rows.max(initial=-1)) + 1
        tgt_count = int(cols.max(initial=-1)) + 1
        src_words = unpack_lines(arrays["src_words"], src_count, "the source vocabulary", path)
        tgt_words = unpack_lines(arrays["tgt_words"], tgt_count, "the target vocabulary", path)
        if len(rows) and (int(rows.min()) < 0 or int(cols.min()) < 0):
            raise damaged("negative word index", path)
        if not bool(np.all((probs >= 0.0) & (probs <= 1.0 + 1e-6))):
            raise damaged("probability outside [0, 1]", path)
        if len(set(src_words)) != len(src_words) or len(set(tgt_words)) != len(tgt_words):
            raise damaged("a word appears twice in a vocabulary", path)
        keep = probs >= min_prob
        try:
            return cls(
                src_words,
                tgt_words,
                rows[keep],
                cols[keep],
                probs[keep],
                null=NULL in src_words,
                presorted=True,
            )
        except ValueError:
            raise damaged("duplicate or unsorted entries", path) from None


def train_both_directions(
    src_sents: list[list[str]],
    tgt_sents: list[list[str]],
    iterations: int = 5,
    *,
    n_jobs: int = 2,
    **kw,
) -> tuple[IBM1Table, IBM1Table]:
    """Train (t(tgt | src), t(src | tgt)) in parallel with joblib; ``kw`` goes to ``IBM1Table.train``."""
    from joblib import Parallel, delayed

    jobs = [(src_sents, tgt_sents), (tgt_sents, src_sents)]
    forward, backward = Parallel(n_jobs=n_jobs)(
        delayed(IBM1Table.train)(a, b, iterations, **kw) for a, b in jobs
    )
    return forward, backward


# ---------------------------------------------------------------------- internals


def _encode(sents: Sequence[Sequence[str]], first_words: list[str], side: str):
    """Integer-code tokens: (vocabulary starting with ``first_words``, flat ids, sentence lengths)."""
    for k, sent in enumerate(sents):
        if isinstance(sent, str):
            raise TypeError(f"{side} sentence {k} is a string; expected a list of tokens")
    lengths = np.fromiter(map(len, sents), dtype=np.int64, count=len(sents))
    flat = list(chain.from_iterable(sents))
    words = list(dict.fromkeys(chain(first_words, flat)))
    index = dict(zip(words, range(len(words)), strict=True))
    ids = np.fromiter(map(index.__getitem__, flat), dtype=np.int64, count=len(flat))
    return words, ids, lengths


def _types_per_sentence(sent: np.ndarray, ids: np.ndarray, vocab: int):
    """Distinct word ids per sentence, sorted by sentence: (sentence, id, count) arrays."""
    vocab = max(vocab, 1)
    keys, counts = np.unique(sent * vocab + ids, return_counts=True)
    return keys // vocab, keys % vocab, counts


def _compact(words: list[str], ids: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Drop words that ``ids`` never uses, renumbering ``ids`` (order preserved)."""
    used = np.bincount(ids, minlength=len(words)) > 0
    if bool(used.all()):
        return words, ids
    new_id = np.cumsum(used) - 1
    return [w for w, u in zip(words, used.tolist(), strict=True) if u], new_id[ids]


class _EMProblem:
    """A corpus as a sparse (pair x slot) matrix for vectorized EM.

    A slot is one distinct target word t of one sentence; its cells are that sentence's distinct
    source words s (NULL included), valued by their count in the sentence. Stored as CSR with
    one row per (s, t) pair, rows sorted by (s, t). With p the pair probabilities, one E step
    is two sparse mat-vec products: normalizers z = M^T p, expected counts c = p * (M (1 / z)).
    """

    def __init__(
        self,
        src_ids: np.ndarray,
        src_lens: np.ndarray,
        tgt_ids: np.ndarray,
        tgt_lens: np.ndarray,
        n_src: int,
        n_tgt: int,
        null: bool,
        count_target_repeats: bool,
    ) -> None:
        import scipy.sparse as sp  # training only: loading and scoring tables do without scipy

        n_sent = len(src_lens)
        sentences = np.arange(n_sent, dtype=np.int64)
        src_sent = np.repeat(sentences, src_lens)
        if null:  # the empty word (id 0) once in every sentence
            src_sent = np.concatenate([sentences, src_sent])
            src_ids = np.concatenate([np.zeros(n_sent, dtype=np.int64), src_ids])
        s_sent, s_id, s_cnt = _types_per_sentence(src_sent, src_ids, n_src)
        t_sent, t_id, t_cnt = _types_per_sentence(np.repeat(sentences, tgt_lens), tgt_ids, n_tgt)
        n_src_types = np.bincount(s_sent, minlength=n_sent)
        s_start = np.concatenate([[0], np.cumsum(n_src_types)[:-1]])
        # Target words of sentences without any source word (possible only without NULL) are skipped.
        keep = n_src_types[t_sent] > 0
        t_sent, t_id, t_cnt = t_sent[keep], t_id[keep], t_cnt[keep]
        slot_len = n_src_types[t_sent]
        n_slots = len(slot_len)
        slot_start = np.zeros(n_slots + 1, dtype=np.int64)
        np.cumsum(slot_len, out=slot_start[1:])
        n_cells = int(slot_start[-1])
        # Cell number c of slot j is source entry c - slot_start[j] + s_start[sentence of j].
        slot_shift = s_start[t_sent] - slot_start[:-1]

        # Sort cells by (pair key, slot, count), all packed into one int64 when they fit.
        n_tgt = max(n_tgt, 1)
        count_bits = max(int(s_cnt.max(initial=1)).bit_length(), 1)
        slot_bits = max(int(n_slots).bit_length(), 1)
        key_bits = max(int(max(n_src, 1) * n_tgt).bit_length(), 1)
        packed_ok = count_bits + slot_bits + key_bits <= _PACK_BITS
        index_dtype = np.int32 if max(n_cells, n_slots) < 2**31 - 1 else np.int64
        keys = np.empty(n_cells, dtype=np.int64)
        slots = np.empty(n_cells, dtype=index_dtype)
        counts = np.empty(n_cells, dtype=np.float64)
        # Small chunks keep the temporaries in cache.
        for a, b in _chunks(slot_start, _CHUNK_ELEMENTS):
            lo, hi = int(slot_start[a]), int(slot_start[b])
            slot = np.repeat(np.arange(a, b, dtype=np.int64), slot_len[a:b])
            src_entry = slot_shift[slot]
            src_entry += np.arange(lo, hi)
            key = keys[lo:hi]
            np.take(s_id, src_entry, out=key)
            key *= n_tgt
            key += t_id[slot]
            if packed_ok:
                key <<= slot_bits
                key |= slot
                key <<= count_bits
                key |= s_cnt[src_entry]
            else:
                slots[lo:hi] = slot
                counts[lo:hi] = s_cnt[src_entry]
        if packed_ok:
            keys.sort()
            for lo in range(0, n_cells, _CHUNK_ELEMENTS):
                key = keys[lo : lo + _CHUNK_ELEMENTS]
                counts[lo : lo + _CHUNK_ELEMENTS] = key & ((1 << count_bits) - 1)
                key >>= count_bits
                slots[lo : lo + _CHUNK_ELEMENTS] = key & ((1 << slot_bits) - 1)
                key >>= slot_bits
        else:  # huge vocabularies: a stable argsort by pair key instead
            order = np.argsort(keys, kind="stable")
            keys, slots, counts = keys[order], slots[order], counts[order]
            del order
        new_pair = np.empty(n_cells, dtype=bool)
        new_pair[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=new_pair[1:])
        starts = np.flatnonzero(new_pair)
        del new_pair
        uniques = keys[starts]
        del keys
        self.n_pairs = len(uniques)
        self.pair_src, self.pair_tgt = np.divmod(uniques, n_tgt)
        indptr = np.append(starts, n_cells).astype(index_dtype)
        self.matrix = sp.csr_array((counts, slots, indptr), shape=(self.n_pairs, n_slots))
        self.slot_weight = t_cnt.astype(np.float64) if count_target_repeats else None
        # Pairs are sorted by source word: the M step normalizes contiguous runs.
        self.run_starts = np.flatnonzero(np.concatenate([[True], self.pair_src[1:] != self.pair_src[:-1]]))
        self.run_lens = np.diff(np.append(self.run_starts, self.n_pairs))

    def em_step(self, probs: np.ndarray) -> np.ndarray:
        """One EM iteration: expected counts from ``probs``, then normalized, floored probabilities."""
        if self.n_pairs == 0:
            return probs
        inv_norm = 1.0 / (self.matrix.T @ probs)
        if self.slot_weight is not None:
            inv_norm *= self.slot_weight
        counts = self.matrix @ inv_norm
        counts *= probs
        totals = np.add.reduceat(counts, self.run_starts)
        counts /= np.repeat(totals, self.run_lens)
        return np.maximum(counts, MIN_PROB, out=counts)


def _chunks(starts: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Ranges [a, b) of segments (``starts`` = cumulative offsets) holding about ``size`` items each."""
    n = len(starts) - 1
    bounds = np.unique(np.searchsorted(starts, np.arange(0, int(starts[-1]), size))).tolist()
    return list(zip(bounds, [*bounds[1:], n], strict=True)) if n else []
