"""The e5 forward pass on packed token rows in fixed-shape chunks: a sequence's result is its own alone.

The tokens of many sequences are packed one after another into one row matrix (no padding between
them). Every position-wise step (embedding layer norm, QKV and output projections, residuals, layer
norms, the feed-forward layer and its GELU) runs on chunks of exactly ``CHUNK`` rows, the last chunk
of a group filled with padding rows, so every such call has the same shapes whatever the batch.
Attention runs per sequence over its own tokens (shapes from its length alone), and the mean pooling
per sequence over its own rows.

Why a sequence's vectors do not depend on the other sequences, their order or their number, bit for
bit: a matrix product of fixed shapes runs the same BLAS kernel with the same blocking on every call,
so each output element is accumulated over the inner dimension in the same order whatever the values
in the other rows (OpenBLAS's threads, were there several, split the rows or columns of the output,
never the inner dimension; here each group runs on one BLAS thread); the element-wise steps and the
row reductions (layer norm's mean and variance) compute a row from that row alone, on arrays of the
same shapes and alignment every time. This relies on the BLAS computing each row of a fixed-shape
product alone, an implementation property no standard promises, which
``tests/test_crossencoder_member.py`` checks on real pairs (alone, in order, shuffled, in batches of
1, 3, 7 and 64, on 1 and 2 threads: equal with ``np.array_equal``) and
``benchmarks/cross_encoder_speed.py`` on 800. A padded batch (``E5Network.run_layers``) has no such
property: padding changes the length of attention's sums and products.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from qe.embeddings.e5file import dequantize
from qe.embeddings.e5net import E5Network, gelu, layernorm

CHUNK = 256
"""Rows of every position-wise matrix product (and element-wise step): fixed, whatever the batch. BLAS
packs the weights once per chunk: 256 rows (groups of 4,096) gave 12% more pairs per CPU second than
128 (groups of 2,048), 512 (groups of 8,192) 4% more again, but one pair alone pays for a whole chunk."""
GELU_ROWS = 32
"""Rows GELU runs on at once: its four arrays (each row 6 KB) stay in the CPU's cache (a quarter faster
than a whole chunk at a time; element-wise, so the same values)."""
GROUP_ROWS = 4096
"""About this many token rows are packed and run at once: a thread's arrays (about 8 KB a row) stay
small, the padding of a group's last chunk is 3% of it on average, and a batch splits over the threads."""
_F32 = np.float32
_ALIGN = 64


def _aligned(rows: int, width: int) -> np.ndarray:
    """A zeroed float32 (rows, width) array starting on a 64-byte boundary (the same alignment every
    call, so no vector loop runs differently by where an array happens to start)."""
    size = rows * width
    buffer = np.zeros(size + _ALIGN // 4, dtype=_F32)
    start = (-buffer.ctypes.data % _ALIGN) // 4
    return buffer[start : start + size].reshape(rows, width)


def groups(sizes: Sequence[int], threads: int) -> list[range]:
    """Consecutive sequences packed together: groups of about equal rows, at most about ``GROUP_ROWS``
    each, as many as a multiple of ``threads`` so the threads finish together, but no more than the
    chunks the rows fill (a few pairs split over threads would each pay a chunk of padding)."""
    total = sum(sizes)
    if not sizes:
        return []
    count = min(threads * math.ceil(total / (threads * GROUP_ROWS)), math.ceil(total / CHUNK))
    count = max(1, count)
    out: list[range] = []
    start, done, current = 0, 0, 0
    for i, size in enumerate(sizes):
        index = min(count - 1, int((done + size / 2) * count / max(total, 1)))  # where its middle falls
        if index != current and i > start:
            out.append(range(start, i))
            start = i
        current, done = index, done + size
    out.append(range(start, len(sizes)))
    return out


def packed_pooled(network: E5Network, seqs: Sequence[Sequence[int]], threads: int = 1) -> np.ndarray:
    """Each token-id sequence's mean last-layer vector (as ``E5Network.mean_pooled``): (sequences,
    hidden) float32; a vector depends on its sequence alone (not on the batch, its order or ``threads``)."""
    return pooled_in_groups(network, [len(s) for s in seqs], lambda group: [seqs[i] for i in group], threads)


def pooled_in_groups(
    network: E5Network,
    sizes: Sequence[int],
    ids_of: Callable[[range], Sequence[Sequence[int]]],
    threads: int = 1,
) -> np.ndarray:
    """``packed_pooled`` with the token ids made on the groups' threads: ``sizes`` are the sequences'
    lengths or estimates of them (they only shape the groups), ``ids_of(group)`` gives a group's token
    ids, so tokenizing one group overlaps another's arithmetic. The groups run on ``threads`` threads,
    each with one BLAS thread."""
    from qe.infra.workers import blas_threads

    out = np.empty((len(sizes), network.hidden), dtype=_F32)

    def run(group: range) -> None:
        out[group.start : group.stop] = PackedPass(network, ids_of(group)).pooled()

    parts = groups(sizes, threads)
    with blas_threads(1):
        if threads == 1 or len(parts) < 2:
            for group in parts:
                run(group)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(run, parts))
    return out


class PackedPass:
    """One group of sequences packed in row chunks, run through every layer: ``pooled()``."""

    def __init__(self, network: E5Network, seqs: Sequence[Sequence[int]]):
        self.net = network
        self.lengths = [len(s) for s in seqs]
        if not seqs or min(self.lengths) < 1 or max(self.lengths) > network.max_tokens:
            raise ValueError(f"sequences must hold 1 to {network.max_tokens} token ids")
        self.starts = np.cumsum([0, *self.lengths[:-1]]).tolist()
        rows = sum(self.lengths)
        self.rows = math.ceil(rows / CHUNK) * CHUNK
        h = network.hidden
        ids = np.fromiter((i for s in seqs for i in s), dtype=np.int64, count=rows)
        if ids.min() < 0 or ids.max() >= network.word.shape[0]:
            raise ValueError("a token id is outside the vocabulary")
        positions = np.concatenate([np.arange(n) for n in self.lengths])
        self.x = _aligned(self.rows, h)
        self.x[:rows] = dequantize(network.word[ids])
        self.x[:rows] += network.position[positions]
        for c in range(0, self.rows, CHUNK):
            layernorm(self.x[c : c + CHUNK], *network.emb_ln, network.eps)
        self.qkv = _aligned(self.rows, 3 * h)
        self.context = _aligned(self.rows, h)
        self.attended = _aligned(CHUNK, h)
        width = network.layers[0]["ffn_in"].shape[1]
        self.mid = _aligned(CHUNK, width)
        self.gelu_scratch = [_aligned(GELU_ROWS, width) for _ in range(3)]
        longest = max(self.lengths)
        self.scores = _aligned(network.heads * longest, longest).ravel()

    def pooled(self) -> np.ndarray:
        """Every layer, then each sequence's mean over its own rows: (sequences, hidden) float32."""
        for layer in self.net.layers:
            self._layer(layer)
        out = np.empty((len(self.lengths), self.net.hidden), dtype=_F32)
        for row, (start, length) in enumerate(zip(self.starts, self.lengths, strict=True)):
            np.add.reduce(self.x[start : start + length], axis=0, out=out[row])
            out[row] /= _F32(length)
        return out

    def _layer(self, layer: dict) -> None:
        """One post-norm layer in place on ``self.x``: projections chunk by chunk, attention per sequence."""
        net, x, qkv = self.net, self.x, self.qkv
        h, eps = net.hidden, net.eps
        scale = _F32(1 / np.sqrt(h // net.heads))
        for c in range(0, self.rows, CHUNK):
            block = qkv[c : c + CHUNK]
            np.matmul(x[c : c + CHUNK], layer["qkv"], out=block)
            block += layer["qkv_b"]
            block[:, :h] *= scale
        for start, length in zip(self.starts, self.lengths, strict=True):
            self._attention(start, length)
        attended, mid, scratch = self.attended, self.mid, self.gelu_scratch
        for c in range(0, self.rows, CHUNK):
            rows = x[c : c + CHUNK]
            np.matmul(self.context[c : c + CHUNK], layer["out"], out=attended)
            attended += layer["out_b"]
            attended += rows
            layernorm(attended, *layer["ln1"], eps)
            np.matmul(attended, layer["ffn_in"], out=mid)
            mid += layer["ffn_in_b"]
            for a in range(0, CHUNK, GELU_ROWS):
                gelu(mid[a : a + GELU_ROWS], *scratch)
            np.matmul(mid, layer["ffn_out"], out=rows)
            rows += layer["ffn_out_b"]
            rows += attended
            layernorm(rows, *layer["ln2"], eps)

    def _attention(self, start: int, length: int) -> None:
        """One sequence's self-attention over its own tokens, into its rows of ``self.context``."""
        heads = self.net.heads
        size = self.net.hidden // heads
        part = self.qkv[start : start + length].reshape(length, 3, heads, size)
        q = part[:, 0].transpose(1, 0, 2)
        k = part[:, 1].transpose(1, 2, 0)
        v = part[:, 2].transpose(1, 0, 2)
        scores = self.scores[: heads * length * length].reshape(heads, length, length)
        np.matmul(q, k, out=scores)
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = self.context[start : start + length].reshape(length, heads, size).transpose(1, 0, 2)
        np.matmul(scores, v, out=context)
