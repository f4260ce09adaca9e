"""What the two encoder trainers (USE-M fine-tuning, ``qe.embeddings.finetune``; the e5 cross-encoder,
``qe.embeddings.e5cross``) do alike: batches of rows sorted by length, AdamW with a learning rate per
part of the parameters, a fresh regression head, and one epoch's record (logged, checked finite)."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import optax

from qe.infra.errors import QEInputError

SORT_WINDOW = 32
"""Batches whose rows are sorted by length together (less padding)."""
KEPT_HISTORY = ("epoch", "loss", "dev_pearson")
"""An epoch's record as a model file keeps it: without its timings, so the same model gives the same bytes."""


class TrainedRegressor(Protocol):
    """What both trainers' results hold: settings (a dataclass with ``hidden``), the label scaling and
    the training curve."""

    settings: Any
    label_mean: float
    label_std: float
    history: list[dict[str, float]]
    best_epoch: int
    best_dev_pearson: float


def regressor_manifest(
    model: TrainedRegressor, base_model: str, languages: Sequence[str], language_pairs: Sequence[str] = ()
) -> dict[str, Any]:
    """The manifest of a trained regressor's model file: its base encoder, head width, label scaling,
    languages (and a pooled corpus's ``language_pairs``), settings and curve (``KEPT_HISTORY``)."""
    pooled = {"language_pairs": list(language_pairs)} if language_pairs else {}
    return {
        **pooled,
        "base_model": base_model,
        "head_hidden": model.settings.hidden,
        "label_mean": model.label_mean,
        "label_std": model.label_std,
        "languages": list(languages),
        "training": {
            "settings": asdict(model.settings),
            "best_epoch": model.best_epoch,
            "dev_pearson": model.best_dev_pearson,
            "history": [{key: row[key] for key in KEPT_HISTORY} for row in model.history],
        },
    }


def check_splits(train: Sequence[Sequence], dev: Sequence[Sequence]) -> None:
    """Refuse, in one line, a training or dev split (sources, translations, labels) of fewer than 2
    pairs, of columns that differ in length, or with a label that is not a finite number."""
    for name, split in (("training", train), ("dev", dev)):
        if not len(split[0]) == len(split[1]) == len(split[2]) >= 2:
            raise QEInputError(f"the {name} split needs at least 2 pairs, each with a source, MT and label")
        if not np.isfinite(np.asarray(split[2], dtype=np.float64)).all():
            raise QEInputError(f"the {name} split has a label that is not a finite number")


def length_batches(lengths: np.ndarray, size: int, rng: np.random.Generator | None) -> list[np.ndarray]:
    """Batches of row numbers: shuffled (``rng``) then sorted by length within windows of batches,
    batch order shuffled again; without ``rng``, all rows sorted by length (to score a split)."""
    if rng is None:
        rows = np.argsort(lengths, kind="stable")
        return [rows[i : i + size] for i in range(0, len(rows), size)]
    rows = rng.permutation(len(lengths))
    batches = []
    for start in range(0, len(rows), size * SORT_WINDOW):
        chunk = rows[start : start + size * SORT_WINDOW]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + size] for i in range(0, len(chunk), size))
    return [batches[i] for i in rng.permutation(len(batches))]


def adamw_by_part(
    rates: Mapping[str, float], weight_decay: float, clip_norm: float
) -> optax.GradientTransformation:
    """AdamW with a learning rate for each top-level part of the parameters (``rates``: part -> rate),
    after clipping the gradient's global norm."""
    return optax.chain(
        optax.clip_by_global_norm(clip_norm),
        optax.multi_transform(
            {part: optax.adamw(rate, weight_decay=weight_decay) for part, rate in rates.items()},
            {part: part for part in rates},
        ),
    )


def dense_head(key: jax.Array, width: int, hidden: int) -> dict[str, jax.Array]:
    """A fresh regression head over ``width`` inputs: linear with zero weights (``hidden`` 0), or one
    tanh layer of ``hidden`` units (scaled normal weights) then linear."""
    if hidden == 0:
        return {"w": jnp.zeros((width, 1), jnp.float32), "b": jnp.zeros((1,), jnp.float32)}
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (width, hidden), jnp.float32) / np.sqrt(width),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w": jax.random.normal(k2, (hidden, 1), jnp.float32) / np.sqrt(hidden),
        "b": jnp.zeros((1,), jnp.float32),
    }


def epoch_record(
    epoch: int,
    losses: Sequence[float],
    counts: Sequence[int],
    dev_pearson: float,
    started: float,
    cpu: float,
    log: Callable[[str], None],
    what: str,
) -> dict[str, float]:
    """One epoch's record (mean training loss weighted by batch sizes, dev Pearson, wall-clock and CPU
    seconds since ``started`` / ``cpu``, the process's peak memory), logged in one line; a loss that is
    not finite is a ``QEInputError`` naming ``what`` diverged."""
    row = {
        "epoch": epoch,
        "loss": float(np.average(losses, weights=counts)),
        "dev_pearson": dev_pearson,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    log(
        f"epoch {epoch}: loss {row['loss']:.4f}  dev Pearson {dev_pearson:.4f}  {row['seconds']:.1f} s "
        f"({row['cpu_seconds']:.1f} s of CPU)  peak memory {row['peak_mb']:.0f} MB"
    )
    if not np.isfinite(row["loss"]):
        raise QEInputError(f"{what} diverged at epoch {epoch}: the loss is not finite")
    return row
