"""A cross-encoder for sentence scores: multilingual-e5-small reading source and MT as one input
(``<s> src </s></s> mt </s>``), mean-pooled, a regression head; its top layers fine-tuned on QE labels
(JAX + optax AdamW, CPU), scored in numpy.

The lower layers stay frozen: their output is computed once per pair in numpy (``frozen_states``) and
shared by every setting that trains the same number of layers or fewer (a deeper cut continues from a
shallower one's states). ``CrossTrainer.run`` trains one setting (``CrossSettings``: how many top layers,
learning rates, head, batch size, epochs), scores the dev pairs after every epoch and keeps the epoch of
best dev Pearson (early stopping after ``patience`` epochs without a gain). Everything random comes from
``seed`` (head initialisation, batch order) and XLA's CPU kernels are deterministic for a given machine
and thread count, so two runs give the same numbers. Each epoch logs its loss, dev Pearson, seconds
(wall clock and CPU) and the process's peak memory. Needs the ``neural`` extra (JAX, optax).
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from qe.embeddings import e5jax
from qe.embeddings.e5crossfile import pair_sequences, save_cross, with_layers
from qe.embeddings.e5encoder import E5Encoder
from qe.embeddings.e5frozen import FrozenStates, Memo, frozen_states
from qe.embeddings.e5frozen import bucket as _bucket
from qe.embeddings.e5frozen import padded as _padded
from qe.embeddings.training import (
    adamw_by_part,
    check_splits,
    dense_head,
    epoch_record,
    length_batches,
    regressor_manifest,
)
from qe.evaluation.metrics import pearson
from qe.infra.errors import QEInputError

Split = tuple[Sequence[str], Sequence[str], Sequence[float]]
__all__ = ["CrossModel", "CrossSettings", "CrossTrainer", "frozen_states", "pair_sequences", "with_layers"]


@dataclass(frozen=True)
class CrossSettings:
    """One training setting; every field is chosen on dev."""

    top_layers: int = 2  # the layers trained (the rest frozen)
    lr: float = 1e-4  # the trained layers' learning rate
    head_lr: float = 1e-3
    hidden: int = 256  # 0: a linear head
    batch_size: int = 32
    max_epochs: int = 5
    patience: int = 2
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    seed: int = 13

    def __post_init__(self) -> None:
        for name in ("top_layers", "batch_size", "max_epochs", "patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise QEInputError(f"{name} must be a positive integer (got {value!r})")
        if isinstance(self.hidden, bool) or not isinstance(self.hidden, int) or not 0 <= self.hidden <= 4096:
            raise QEInputError(f"hidden must be an integer from 0 to 4096 (got {self.hidden!r})")
        for name in ("lr", "head_lr", "weight_decay", "clip_norm"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 10:
                raise QEInputError(f"{name} must be a number from 0 to 10 (got {value!r})")


@dataclass
class CrossModel:
    """A trained setting: its best epoch's top layers and head (numpy), the label scaling, the history
    and the dev scores of that epoch (label units)."""

    settings: CrossSettings
    layers: list[dict[str, np.ndarray]]
    head: dict[str, np.ndarray]
    label_mean: float
    label_std: float
    history: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    best_dev_pearson: float = float("nan")
    dev_scores: np.ndarray | None = None

    def score(self, encoder: E5Encoder, src: Sequence[str], mt: Sequence[str]) -> np.ndarray:
        """Scores (label units) of (source, MT) pairs in numpy, no JAX: the encoder's network with the
        trained top layers in place of its own, mean pooling (on ``encoder.threads`` threads), the head
        in float64."""
        if len(src) != len(mt):
            raise QEInputError(f"{len(src)} source sentences but {len(mt)} translations")
        scorer = copy.copy(encoder)
        scorer.network = with_layers(encoder.network, self.layers)
        pooled = scorer.pooled(pair_sequences(encoder, src, mt)).astype(np.float64)
        head = {name: value.astype(np.float64) for name, value in self.head.items()}
        hidden = np.tanh(pooled @ head["w1"] + head["b1"]) if "w1" in head else pooled
        return (hidden @ head["w"] + head["b"])[:, 0] * self.label_std + self.label_mean

    def save(
        self,
        path: str | Path,
        encoder: E5Encoder,
        languages: Sequence[str] = (),
        language_pairs: Sequence[str] = (),
    ) -> None:
        """The model file (``qe.embeddings.e5crossfile``, ``.qxenc``): arrays and a manifest, no code;
        the training curve without its timings, so the same model gives the same bytes;
        ``language_pairs``: a pooled corpus's pairs it learnt from (``languages`` are "mul" then)."""
        manifest = regressor_manifest(self, encoder.model_id, languages, language_pairs)
        save_cross(path, self.layers, self.head, manifest)


def _optimizer(settings: CrossSettings) -> optax.GradientTransformation:
    """AdamW with the layers' and the head's learning rates, after clipping the gradient's norm."""
    rates = {"layers": settings.lr, "head": settings.head_lr}
    return adamw_by_part(rates, settings.weight_decay, settings.clip_norm)


@functools.partial(jax.jit, static_argnames=("heads", "eps"))
def _scores(params, x, mask, *, heads: int, eps: float) -> jax.Array:
    return e5jax.scores(params["layers"], params["head"], x, mask, heads, eps)


@functools.partial(jax.jit, static_argnames=("settings", "heads", "eps"))
def _step(params, state, x, mask, labels, weights, *, settings: CrossSettings, heads: int, eps: float):
    """One AdamW step on the weighted mean squared error of a batch: new parameters, optimizer state,
    the batch's loss."""

    def loss(p):
        errors = e5jax.scores(p["layers"], p["head"], x, mask, heads, eps) - labels
        return (weights * errors * errors).sum() / weights.sum()

    value, grads = jax.value_and_grad(loss)(params)
    updates, state = _optimizer(settings).update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


class CrossTrainer:
    """Training and dev pairs prepared once for any number of settings: tokenised as one input per pair,
    labels scaled to zero mean and unit variance, the frozen layers' output computed on first need and
    kept per cut. ``dev_rows``: the dev rows dev Pearson is computed on (default all; e.g. without the
    rows that repeat a training pair). ``memo``: frozen states to share with other trainers over the same
    encoder (cut -> token ids -> state), e.g. the full and fold models of a bundle: a pair already in it
    at a cut is not run again, the others run from the deepest cut that holds them all (the states of
    one input differ by float32 rounding with the batch it ran in, so a shared memo can move scores by
    that much against fresh trainers)."""

    def __init__(
        self,
        train: Split,
        dev: Split,
        *,
        encoder: E5Encoder | None = None,
        dev_rows: Sequence[int] | None = None,
        threads: int = 2,
        log: Callable[[str], None] = print,
        memo: Memo | None = None,
    ):
        started = time.perf_counter()
        check_splits(train, dev)
        self.encoder = encoder or E5Encoder()
        self.network = self.encoder.network
        self.threads, self.log = threads, log
        labels = np.asarray(train[2], dtype=np.float64)
        self.mean, self.std = float(labels.mean()), float(labels.std()) or 1.0
        self.scaled = ((labels - self.mean) / self.std).astype(np.float32)
        self.dev_gold = np.asarray(dev[2], dtype=np.float64)
        self.dev_rows = np.arange(len(self.dev_gold)) if dev_rows is None else np.asarray(dev_rows, dtype=int)
        self.seqs = [pair_sequences(self.encoder, *split[:2]) for split in (train, dev)]
        self.lengths = [np.array([len(s) for s in seqs]) for seqs in self.seqs]
        self._frozen = FrozenStates(self.network, self.seqs, threads=threads, log=log, memo=memo)
        seconds = time.perf_counter() - started
        log(f"tokenised {len(train[0])} training and {len(dev[0])} dev pairs in {seconds:.1f} s")

    def states(self, stop: int) -> list[list[np.ndarray]]:
        """The output of layer ``stop - 1`` (of the embeddings for 0) for the training and the dev pairs,
        continued from the deepest cut already computed below it (through the shared ``memo`` if any)."""
        return self._frozen.states(stop)

    def run(self, settings: CrossSettings) -> CrossModel:
        """Train ``settings``; keep the epoch of best dev Pearson."""
        depth = len(self.network.layers)
        if settings.top_layers > depth:
            raise QEInputError(f"top_layers must be at most {depth} (got {settings.top_layers})")
        start = depth - settings.top_layers
        train_states, dev_states = self.states(start)
        heads, eps = self.network.heads, float(self.network.eps)
        params = {
            "layers": [
                jax.tree.map(jnp.asarray, e5jax.layer_params(self.network, i)) for i in range(start, depth)
            ],
            "head": dense_head(jax.random.PRNGKey(settings.seed), self.network.hidden, settings.hidden),
        }
        state = _optimizer(settings).init(params)
        size = settings.batch_size
        rng = np.random.default_rng(settings.seed)
        result = CrossModel(settings, [], {}, self.mean, self.std)
        for epoch in range(1, settings.max_epochs + 1):
            started, cpu = time.perf_counter(), time.process_time()
            losses, counts = [], []
            for rows in length_batches(self.lengths[0], size, rng):
                x, mask = _padded(
                    [train_states[r] for r in rows], size, _bucket(int(self.lengths[0][rows].max()))
                )
                y = np.zeros(size, dtype=np.float32)
                y[: len(rows)] = self.scaled[rows]
                w = (np.arange(size) < len(rows)).astype(np.float32)
                params, state, value = _step(
                    params, state, x, mask.astype(np.float32), y, w, settings=settings, heads=heads, eps=eps
                )
                losses.append(float(value))
                counts.append(len(rows))
            dev_scores = self._predict(params, dev_states, size, heads, eps) * self.std + self.mean
            dev_r = pearson(self.dev_gold[self.dev_rows], dev_scores[self.dev_rows])
            what = f"training (lr {settings.lr})"
            result.history.append(epoch_record(epoch, losses, counts, dev_r, started, cpu, self.log, what))
            if epoch == 1 or dev_r > result.best_dev_pearson:
                result.best_epoch, result.best_dev_pearson = epoch, dev_r
                result.layers = [{k: np.asarray(v) for k, v in layer.items()} for layer in params["layers"]]
                result.head = {k: np.asarray(v) for k, v in params["head"].items()}
                result.dev_scores = dev_scores
            elif epoch - result.best_epoch >= settings.patience:
                break
        self.log(f"best epoch {result.best_epoch}: dev Pearson {result.best_dev_pearson:.4f}")
        return result

    def _predict(
        self, params: dict, states: list[np.ndarray], size: int, heads: int, eps: float
    ) -> np.ndarray:
        """Scores (standardised units) of every pair of a split, in order."""
        lengths = np.array([len(s) for s in states])
        out = np.empty(len(states), dtype=np.float64)
        for rows in length_batches(lengths, size, None):
            x, mask = _padded([states[r] for r in rows], size, _bucket(int(lengths[rows].max())))
            out[rows] = np.asarray(_scores(params, x, mask.astype(np.float32), heads=heads, eps=eps))[
                : len(rows)
            ]
        return out
