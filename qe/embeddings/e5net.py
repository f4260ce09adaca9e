"""multilingual-e5-small's BERT encoder in numpy (float32), on the dequantised weights of the e5 file.

The network of ``e5.c``'s ``forward_batch``: word (q4_0) + position (from 0) + token type 0
embeddings and a layer norm, then 12 post-norm layers (self-attention of 12 heads of 32 over the
sequence's own tokens, output projection, residual, layer norm; feed-forward 384 -> 1536 -> 384 with
the erf GELU, residual, layer norm). ``e5.c`` also rounds every matrix product's input to int8 per
32 values; here the products run on float32 activations (nearer the original model).

A batch runs padded to its longest sequence (the caller groups sequences of about the same length):
padding tokens are computed but get zero attention weight and are left out of the pooling, so a
sequence's result does not depend on its batch beyond float rounding. The word table stays 4-bit
(384 MB as float32): only the rows a batch uses are dequantised.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qe.embeddings.e5file import E5File, dequantize

_F32 = np.float32
_FFN_ROWS = 256
"""Tokens per feed-forward chunk: its 1536-wide activations (1.5 MB) stay in the CPU's cache."""
# Abramowitz & Stegun 7.1.26: 1 - erf(z) = t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1 / (1 + p z) for
# z >= 0, to 1.5e-7; with z = |x| / sqrt 2, p and the a's are rescaled so that h = (1 - erf(z)) / 2 comes out
# directly, and GELU(x) = x Phi(x) = max(x, 0) - |x| h
_ERF_P = _F32(0.3275911 * 0.70710678118654752440)
_ERF_A = tuple(_F32(0.5 * a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_ABS_MAX = _F32(8.5)  # Phi(-8.5) is 1e-17, nothing in float32 next to |x|; exp(-x^2 / 2) stays normal
LAYER_ARRAYS = ("qkv", "qkv_b", "out", "out_b", "ffn_in", "ffn_in_b", "ffn_out", "ffn_out_b")
"""The names of a layer's weight arrays in ``E5Network.layers`` (besides its two layer norms)."""
LAYER_NAMES = (*LAYER_ARRAYS, "ln1_g", "ln1_b", "ln2_g", "ln2_b")
"""A layer's arrays as trained (``qe.embeddings.e5jax``) and saved (``qe.embeddings.e5crossfile``)."""


def gelu(x: np.ndarray, *scratch: np.ndarray) -> np.ndarray:
    """BERT's exact GELU ``x * (1 + erf(x / sqrt 2)) / 2`` (as ``e5.c``; numpy has no erf), in place,
    to 5e-7; ``scratch``: three arrays of ``x``'s shape (none: new ones)."""
    a, t, h = scratch or (np.empty_like(x), np.empty_like(x), np.empty_like(x))
    np.abs(x, out=a)
    np.minimum(a, _ABS_MAX, out=a)
    np.multiply(a, _ERF_P, out=t)
    t += 1
    np.reciprocal(t, out=t)
    np.multiply(t, _ERF_A[0], out=h)
    for coefficient in _ERF_A[1:]:
        h += coefficient
        h *= t
    np.square(a, out=t)
    t *= _F32(-0.5)
    np.exp(t, out=t)
    h *= t
    h *= a
    np.maximum(x, 0, out=x)
    x -= h
    return x


def layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: np.float32) -> np.ndarray:
    """Layer norm over the rows of ``x`` (biased variance), in place."""
    x -= x.mean(axis=1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)
    var /= x.shape[1]
    var += eps
    np.sqrt(var, out=var)
    x /= var[:, None]
    x *= gamma
    x += beta
    return x


class E5Network:
    """The encoder's forward pass: ``hidden_states`` (every token's last-layer vector), ``mean_pooled``."""

    def __init__(self, model: E5File):
        t, c = model.tensors, model.config
        self.hidden, self.heads = c["hidden"], c["heads"]
        self.max_tokens = c["positions"]
        self.eps = _F32(model.eps)
        self.word = t["emb.word"]
        self.position = np.array(t["emb.pos"], dtype=_F32)
        self.position += t["emb.type"][0]  # every token has type 0
        self.emb_ln = (np.array(t["emb.ln.w"]), np.array(t["emb.ln.b"]))
        self.layers = []
        for i in range(c["layers"]):

            def w(name: str, i: int = i) -> np.ndarray:  # (in, out), for x @ w
                return np.ascontiguousarray(dequantize(t[f"l{i}.{name}"]).T)

            def b(name: str, i: int = i) -> np.ndarray:
                return np.array(t[f"l{i}.{name}"], dtype=_F32)

            self.layers.append(
                {
                    "qkv": np.concatenate([w("q.w"), w("k.w"), w("v.w")], axis=1),
                    "qkv_b": np.concatenate([b("q.b"), b("k.b"), b("v.b")]),
                    "out": w("ao.w"),
                    "out_b": b("ao.b"),
                    "ln1": (b("aln.w"), b("aln.b")),
                    "ffn_in": w("fi.w"),
                    "ffn_in_b": b("fi.b"),
                    "ffn_out": w("fo.w"),
                    "ffn_out_b": b("fo.b"),
                    "ln2": (b("oln.w"), b("oln.b")),
                }
            )

    def hidden_states(self, seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The last layer's vectors of ``seqs`` (each 1 to ``max_tokens`` ids), padded:
        (sequences, longest, 384) float32, and the (sequences, longest) mask of real tokens."""
        x, valid = self.embedded(seqs)
        return self.run_layers(x, valid, 0, len(self.layers)), valid

    def embedded(self, seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The embedding layer's output for ``seqs``, padded: (sequences, longest, 384) float32, and the
        mask of real tokens (the input of layer 0)."""
        lens = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        if len(seqs) == 0 or lens.min() < 1 or lens.max() > self.max_tokens:
            raise ValueError(f"sequences must hold 1 to {self.max_tokens} token ids")
        n, width = len(seqs), int(lens.max())
        valid = np.arange(width)[None, :] < lens[:, None]
        ids = np.zeros((n, width), dtype=np.int64)
        ids[valid] = np.fromiter((i for s in seqs for i in s), dtype=np.int64, count=int(lens.sum()))
        if ids.min() < 0 or ids.max() >= self.word.shape[0]:
            raise ValueError("a token id is outside the vocabulary")
        x = dequantize(self.word[ids.ravel()]).reshape(n, width, self.hidden)
        x += self.position[:width]
        x = layernorm(x.reshape(n * width, self.hidden), *self.emb_ln, self.eps)
        return x.reshape(n, width, self.hidden), valid

    def run_layers(self, x: np.ndarray, valid: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Layers ``start`` to ``stop - 1`` on the padded vectors ``x`` (the output of layer ``start - 1``,
        or ``embedded``'s for 0) with their mask: (sequences, width, 384) float32. A caller that trains the
        top layers runs the frozen ones once with this and keeps their output."""
        n, width = valid.shape
        key_bias = np.where(valid, _F32(0), _F32(-np.inf))[:, None, None, :]
        x = np.ascontiguousarray(x, dtype=_F32).reshape(n * width, self.hidden)
        for layer in self.layers[start:stop]:
            x = self._layer(x, layer, key_bias)
        return x.reshape(n, width, self.hidden)

    def mean_pooled(self, seqs: Sequence[Sequence[int]]) -> np.ndarray:
        """Each sequence's mean last-layer vector over all its tokens, ``<s>`` and ``</s>`` included
        (``e5.c``'s pooling, before L2 normalisation): (sequences, 384) float32."""
        x, valid = self.hidden_states(seqs)
        sums = np.einsum("nwh,nw->nh", x, valid.astype(_F32))
        return sums / valid.sum(axis=1, dtype=_F32)[:, None]

    def _layer(self, x: np.ndarray, layer: dict, key_bias: np.ndarray) -> np.ndarray:
        n, width = key_bias.shape[0], key_bias.shape[-1]
        h, heads = self.hidden, self.heads
        qkv = x @ layer["qkv"]
        qkv += layer["qkv_b"]
        q, k, v = qkv.reshape(n, width, 3, heads, h // heads).transpose(2, 0, 3, 1, 4).copy()
        q *= _F32(1 / np.sqrt(h // heads))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores += key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * width, h)
        out = context @ layer["out"]
        out += layer["out_b"]
        out += x
        x = layernorm(out, *layer["ln1"], self.eps)
        out = np.empty_like(x)
        rows = min(len(x), _FFN_ROWS)
        scratch = [np.empty((rows, layer["ffn_in"].shape[1]), dtype=_F32) for _ in range(3)]
        for a in range(0, len(x), _FFN_ROWS):
            mid = x[a : a + _FFN_ROWS] @ layer["ffn_in"]
            mid += layer["ffn_in_b"]
            gelu(mid, *(s[: len(mid)] for s in scratch))
            np.matmul(mid, layer["ffn_out"], out=out[a : a + _FFN_ROWS])
        out += layer["ffn_out_b"]
        out += x
        return layernorm(out, *layer["ln2"], self.eps)


def layer_params(network: E5Network, index: int) -> dict[str, np.ndarray]:
    """Layer ``index``'s weights as float32 arrays named as trained and saved (``LAYER_NAMES``)."""
    layer = network.layers[index]
    params = {name: np.array(layer[name], dtype=_F32) for name in LAYER_ARRAYS}
    for norm in ("ln1", "ln2"):
        params[f"{norm}_g"], params[f"{norm}_b"] = (np.array(a, dtype=_F32) for a in layer[norm])
    return params
