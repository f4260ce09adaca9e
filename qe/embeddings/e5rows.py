"""The e5 forward pass on packed token rows, each step on one sequence's own rows: a sequence's result
is its own alone.

The tokens of many sequences are packed one after another into one row matrix (no padding between
them). Every step runs on one sequence's rows at a time: the embedding layer norm, the QKV and output
projections, attention, residuals, layer norms, the feed-forward layer and its GELU; the mean pooling
per sequence over its own rows.

Why a sequence's vectors do not depend on the other sequences, their order or their number, bit for
bit: every call sees that sequence's rows alone, at the same alignment (each row starts on a 64-byte
boundary), so its shapes and inputs are the same whatever the batch. Sharing a matrix product between
sequences would not do: a BLAS kernel may sum a row of a product in an order that depends on where the
row sits in the matrix (OpenBLAS 0.3.31's Haswell sgemm, on AVX2 CPUs, rounds rows differently by
their position modulo 12 and in the last partial tile), so a sequence's low bits would depend on its
neighbours. Checked by ``tests/test_crossencoder_member.py`` on real pairs (alone, in order, shuffled,
in batches of 1, 3, 7 and 64, on 1 and 2 threads: equal with ``np.array_equal``) and by
``benchmarks/cross_encoder_speed.py`` on 800. Packing still saves the padding a batch of unequal
sequences would carry, and groups of sequences run on the encoder's threads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from qe.embeddings.e5file import dequantize
from qe.embeddings.e5net import E5Network, gelu, layernorm

GELU_ROWS = 32
"""Rows GELU runs on at once: its four arrays (each row 6 KB) stay in the CPU's cache (a quarter faster
than 256 rows at a time; element-wise, so the same values)."""
GROUP_ROWS = 4096
"""About this many token rows are packed and run at once: a thread's arrays (about 8 KB a row) stay
small, and a batch splits over the threads."""
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
    each, as many as a multiple of ``threads`` so the threads finish together (no more than the
    sequences)."""
    total = sum(sizes)
    if not sizes:
        return []
    count = max(1, min(threads * math.ceil(total / (threads * GROUP_ROWS)), len(sizes)))
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
    ids, so tokenizing one group overlaps another's arithmetic."""
    out = np.empty((len(sizes), network.hidden), dtype=_F32)

    def run(group: range) -> None:
        packed = PackedPass.from_ids(network, ids_of(group))
        packed.run(0, len(network.layers))
        out[group.start : group.stop] = packed.pooled()

    in_groups(groups(sizes, threads), run, threads)
    return out


def states_in_groups(
    network: E5Network,
    seqs: Sequence[Sequence[int]],
    stop: int,
    *,
    start: int = 0,
    states: Sequence[np.ndarray] | None = None,
    threads: int = 1,
) -> list[np.ndarray]:
    """The output of layer ``stop - 1`` for each sequence, (its length, hidden) float32: from its token
    ids (``start`` 0) or from ``states``, the output of layer ``start - 1``; each its own alone."""
    out: list[np.ndarray] = [np.empty(0, dtype=_F32)] * len(seqs)

    def run(group: range) -> None:
        if states is None:
            packed = PackedPass.from_ids(network, [seqs[i] for i in group])
        else:
            packed = PackedPass.from_states(network, [states[i] for i in group])
        packed.run(start, stop)
        out[group.start : group.stop] = packed.states()

    in_groups(groups([len(s) for s in seqs], threads), run, threads)
    return out


def in_groups(parts: list[range], run: Callable[[range], None], threads: int) -> None:
    """``run`` on each group, on ``threads`` threads each with one BLAS thread."""
    from qe.infra.workers import blas_threads

    with blas_threads(1):
        if threads == 1 or len(parts) < 2:
            for group in parts:
                run(group)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(run, parts))


class PackedPass:
    """One group of sequences packed in rows (``from_ids`` or ``from_states``), run through layers a
    sequence at a time (``run``): each sequence's rows (``states``) or mean (``pooled``)."""

    def __init__(self, network: E5Network, lengths: Sequence[int], x: np.ndarray):
        self.net = network
        self.lengths = list(lengths)
        self.starts = np.cumsum([0, *self.lengths[:-1]]).tolist()
        self.x = x
        h = network.hidden
        self.qkv = _aligned(len(x), 3 * h)
        self.context = _aligned(len(x), h)
        longest = max(self.lengths)
        self.attended = _aligned(longest, h)
        width = network.layers[0]["ffn_in"].shape[1]
        self.mid = _aligned(longest, width)
        self.gelu_scratch = [_aligned(GELU_ROWS, width) for _ in range(3)]
        self.scores = _aligned(network.heads * longest, longest).ravel()

    @classmethod
    def from_ids(cls, network: E5Network, seqs: Sequence[Sequence[int]]) -> PackedPass:
        """The embedding layer's output for token-id sequences (each 1 to ``max_tokens`` ids)."""
        lengths = [len(s) for s in seqs]
        if not seqs or min(lengths) < 1 or max(lengths) > network.max_tokens:
            raise ValueError(f"sequences must hold 1 to {network.max_tokens} token ids")
        rows = sum(lengths)
        ids = np.fromiter((i for s in seqs for i in s), dtype=np.int64, count=rows)
        if ids.min() < 0 or ids.max() >= network.word.shape[0]:
            raise ValueError("a token id is outside the vocabulary")
        x = _aligned(rows, network.hidden)
        x[:] = dequantize(network.word[ids])
        x += network.position[np.concatenate([np.arange(n) for n in lengths])]
        packed = cls(network, lengths, x)
        for start, length in packed.spans():
            layernorm(x[start : start + length], *network.emb_ln, network.eps)
        return packed

    @classmethod
    def from_states(cls, network: E5Network, states: Sequence[np.ndarray]) -> PackedPass:
        """Sequences' vectors out of a layer, each (its length, hidden): the next layer's input."""
        lengths = [len(s) for s in states]
        if not states or min(lengths) < 1 or any(s.shape[1:] != (network.hidden,) for s in states):
            raise ValueError(f"states must be (1 or more, {network.hidden}) arrays")
        x = _aligned(sum(lengths), network.hidden)
        np.concatenate(states, axis=0, out=x)
        return cls(network, lengths, x)

    def spans(self) -> list[tuple[int, int]]:
        """Each sequence's first row and its number of rows."""
        return list(zip(self.starts, self.lengths, strict=True))

    def run(self, start: int, stop: int) -> None:
        """Layers ``start`` to ``stop - 1``, each on one sequence's rows at a time."""
        for layer in self.net.layers[start:stop]:
            for first, length in self.spans():
                self._layer(layer, first, length)

    def states(self) -> list[np.ndarray]:
        """Each sequence's rows, copied: (its length, hidden) float32."""
        return [self.x[start : start + length].copy() for start, length in self.spans()]

    def pooled(self) -> np.ndarray:
        """Each sequence's mean over its own rows: (sequences, hidden) float32."""
        out = np.empty((len(self.lengths), self.net.hidden), dtype=_F32)
        for row, (start, length) in enumerate(self.spans()):
            np.add.reduce(self.x[start : start + length], axis=0, out=out[row])
            out[row] /= _F32(length)
        return out

    def _layer(self, layer: dict, start: int, length: int) -> None:
        """One post-norm layer in place on one sequence's rows of ``self.x``."""
        net = self.net
        h, eps = net.hidden, net.eps
        rows, qkv = self.x[start : start + length], self.qkv[start : start + length]
        np.matmul(rows, layer["qkv"], out=qkv)
        qkv += layer["qkv_b"]
        qkv[:, :h] *= _F32(1 / np.sqrt(h // net.heads))
        self._attention(start, length)
        attended, mid = self.attended[:length], self.mid[:length]
        np.matmul(self.context[start : start + length], layer["out"], out=attended)
        attended += layer["out_b"]
        attended += rows
        layernorm(attended, *layer["ln1"], eps)
        np.matmul(attended, layer["ffn_in"], out=mid)
        mid += layer["ffn_in_b"]
        for a in range(0, length, GELU_ROWS):
            part = mid[a : a + GELU_ROWS]
            gelu(part, *(scratch[: len(part)] for scratch in self.gelu_scratch))
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
