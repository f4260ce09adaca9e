"""multilingual-e5-small's encoder layers and a regression head in JAX, differentiable, for training
the top layers of a cross-encoder (source and MT in one input) on QE labels.

The arithmetic is ``qe.embeddings.e5net.E5Network._layer``'s (post-norm BERT layer: self-attention of
12 heads over the sequence's own tokens, residual, layer norm, feed-forward with the exact erf GELU,
residual, layer norm) on padded batches: a layer's output agrees with the numpy pass to float32
rounding (``tests/test_e5_cross.py``). The head reads the mean of the last layer's vectors over the
real tokens (``e5.c``'s pooling), through one tanh layer (``hidden`` units) or linearly (``hidden`` 0).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

# numpy, from e5net (the scorer needs them without JAX), kept here for the trainer's callers
from qe.embeddings.e5net import LAYER_ARRAYS as LAYER_ARRAYS
from qe.embeddings.e5net import layer_params as layer_params

Params = dict[str, jax.Array]


def _layernorm(x: jax.Array, gamma: jax.Array, beta: jax.Array, eps: float) -> jax.Array:
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred * jax.lax.rsqrt((centred * centred).mean(axis=-1, keepdims=True) + eps) * gamma + beta


def encoder_layer(p: Params, x: jax.Array, mask: jax.Array, heads: int, eps: float) -> jax.Array:
    """One post-norm layer on ``x`` (batch, width, hidden); ``mask`` (batch, width) is 1 on real tokens,
    which alone are attended to."""
    batch, width, hidden = x.shape
    size = hidden // heads
    qkv = (x @ p["qkv"] + p["qkv_b"]).reshape(batch, width, 3, heads, size).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0] * (1 / np.sqrt(size)), qkv[1], qkv[2]
    bias = jnp.where(mask[:, None, None, :] > 0, 0.0, -1e30).astype(x.dtype)
    weights = jax.nn.softmax(q @ k.swapaxes(-1, -2) + bias, axis=-1)
    context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, width, hidden)
    x = _layernorm(context @ p["out"] + p["out_b"] + x, p["ln1_g"], p["ln1_b"], eps)
    mid = jax.nn.gelu(x @ p["ffn_in"] + p["ffn_in_b"], approximate=False)
    return _layernorm(mid @ p["ffn_out"] + p["ffn_out_b"] + x, p["ln2_g"], p["ln2_b"], eps)


def mean_pooled(x: jax.Array, mask: jax.Array) -> jax.Array:
    """Each sequence's mean vector over its real tokens."""
    return (x * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)


def head_scores(head: Params, pooled: jax.Array) -> jax.Array:
    """The head's score (standardised label units) of each pooled vector."""
    hidden = jnp.tanh(pooled @ head["w1"] + head["b1"]) if "w1" in head else pooled
    return (hidden @ head["w"] + head["b"])[:, 0]


def scores(
    layers: list[Params], head: Params, x: jax.Array, mask: jax.Array, heads: int, eps: float
) -> jax.Array:
    """The cross-encoder's scores: the trained top ``layers`` (in order) on the frozen layers' output
    ``x``, mean-pooled, then the ``head``."""
    for layer in layers:
        x = encoder_layer(layer, x, mask, heads, eps)
    return head_scores(head, mean_pooled(x, mask))
