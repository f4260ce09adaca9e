"""The USE multilingual v3 network in JAX, differentiable, for fine-tuning; the QE regression head.

Same weights (read where ``UseModel`` reads them: ``read_weights``) and the same arithmetic as
``qe.embeddings.model.UseModel``, written for padded batches: the vectors agree to 1e-5 before
training (``tests/test_finetune.py``). JAX was chosen for CPU training: its CPU wheels are small
(jax + jaxlib, about 100 MB) and ``jax.grad`` + XLA fuse the whole step, while PyTorch's default
Linux wheel pulls several GB of CUDA libraries. The optimizer is optax's AdamW.

The network splits in two: ``token_sums`` (per-token layers: projection, layer norm, the three
n-gram CNN branches, the final per-token normalisation, summed over each sentence) and
``sentence_vectors`` (the final layer norm's affine part, the pooling projection, the DAN layers,
tanh, L2 normalisation). When the token layers are frozen, ``token_sums`` runs once per sentence
and training runs the sentence stage alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jax
import jax.numpy as jnp

from qe.embeddings.finetuned import LAYER_GROUPS, PAIR_WIDTH, head_input
from qe.embeddings.model import _CNN, _NUM_CHUNKS, _ORDERS, read_weights, resource_dir
from qe.embeddings.training import dense_head

Params = dict[str, jax.Array]


def base_params(resources: Path | None = None) -> tuple[dict[str, jax.Array], Params, float]:
    """The frozen constants (piece table, dequantisation scale and offset), the trainable encoder
    arrays (float32, named as in ``weights.npz``) and the layer norms' epsilon."""
    table, dense = read_weights(resources or resource_dir())
    const = {
        "table": jnp.asarray(table),
        "scale": jnp.asarray(dense["scale"], jnp.float32),
        "lo": jnp.asarray(dense["lo"], jnp.float32),
    }
    names = [name for group in LAYER_GROUPS.values() for name in group]
    encoder = {name: jnp.asarray(dense[name], jnp.float32) for name in names}
    return const, encoder, float(dense["eps"])


def _layernorm(x: jax.Array, eps: float) -> jax.Array:
    """``x`` centred and scaled to unit variance over its last axis (no affine part)."""
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred * jax.lax.rsqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)


def _windows(x: jax.Array, n: int, left: int) -> jax.Array:
    """For every position t, the rows t-left .. t-left+n-1 side by side (zero rows outside)."""
    length = x.shape[1]
    padded = jnp.pad(x, ((0, 0), (left, n - 1 - left), (0, 0)))
    return jnp.concatenate([padded[:, o : o + length] for o in range(n)], axis=-1)


def token_sums(encoder: Params, const: Mapping[str, jax.Array], ids: jax.Array, lens: jax.Array, eps: float):
    """Per sentence (a row of ``ids``, ``lens`` pieces then padding), the sum over its pieces of the
    normalised per-token features (1280 values; the final layer norm without its affine part)."""
    mask = (jnp.arange(ids.shape[1])[None, :] < lens[:, None])[..., None].astype(jnp.float32)
    chunk = ids % _NUM_CHUNKS
    emb = (
        const["table"][ids].astype(jnp.float32) * const["scale"][chunk][..., None]
        + const["lo"][chunk][..., None]
    )
    orders = [n for n, _ in _ORDERS]
    x = emb @ jnp.concatenate([encoder[f"proj{n}"] for n in orders], axis=1)
    x = x + jnp.concatenate([encoder[f"proj_b{n}"] for n in orders])
    x = _layernorm(x, eps) * jnp.concatenate([encoder[f"ln_g{n}"] for n in orders])
    x = (x + jnp.concatenate([encoder[f"ln_b{n}"] for n in orders])) * mask
    features = [emb]
    for i, (n, left) in enumerate(_ORDERS):
        xi = x[..., i * _CNN : (i + 1) * _CNN]
        h = jax.nn.relu(_windows(xi, n, left) @ encoder[f"w1_{n}"] + encoder[f"b1_{n}"]) + xi
        h = h * mask
        features.append(jax.nn.relu(_windows(h, n, left) @ encoder[f"w2_{n}"] + encoder[f"b2_{n}"]) + h)
    return (_layernorm(jnp.concatenate(features, axis=-1), eps) * mask).sum(axis=1)


def sentence_vectors(encoder: Params, sums: jax.Array, lens: jax.Array, eps: float) -> jax.Array:
    """L2-normalised 512-value sentence vectors from ``token_sums``' output."""
    length = lens.astype(jnp.float32)[:, None]
    pooled = sums * encoder["ln_g"] + length * encoder["ln_b"]
    mean = (pooled @ encoder["cnn_W"] + length * encoder["cnn_b"]) * jax.lax.rsqrt(length)
    y0 = jax.nn.relu(mean @ encoder["d0"])
    y1 = jax.nn.relu(mean @ encoder["p1"] + y0 @ encoder["d1"])
    y2 = jax.nn.relu(y1 @ encoder["d2"])
    z = jnp.tanh(y1 @ encoder["p3"] + y2 @ encoder["d3"])
    return z * jax.lax.rsqrt(jnp.clip((z * z).sum(axis=1, keepdims=True), eps, None))


def head_scores(head: Params, u: jax.Array, v: jax.Array) -> jax.Array:
    """The head's score (in standardised label units) of each pair of source / MT vectors."""
    hidden = head_input(u, v, jnp)
    if "w1" in head:
        hidden = jnp.tanh(hidden @ head["w1"] + head["b1"])
    return (hidden @ head["w"] + head["b"])[:, 0]


def init_head(key: jax.Array, hidden: int) -> Params:
    """A fresh head over the 2048 pair features: linear (``hidden`` 0) or one tanh layer."""
    return dense_head(key, PAIR_WIDTH, hidden)
