"""Fine-tuning the USE-M encoder and a regression head on QE labels (JAX + optax AdamW, CPU).

``finetune`` trains one setting (``Settings``: which layer groups to unfreeze, learning rates,
head, batch size, epochs) on the training pairs, scores the dev pairs after every epoch and keeps
the epoch of best dev Pearson (early stopping after ``patience`` epochs without a gain);
``select`` runs several settings and keeps the best on dev. Everything random comes from
``seed`` (head initialisation, batch order), and XLA's CPU kernels are deterministic for a
given machine and thread count, so two runs give the same numbers. Each epoch logs its mean
training loss, dev Pearson, seconds (wall clock and CPU) and the process's peak memory.

When the per-token layers stay frozen (``unfreeze`` head / dan / top) their output is computed
once per sentence and the epochs run the sentence stage alone; ``all`` trains every dense weight
end to end (the piece-embedding table always stays frozen). Needs the ``neural`` extra.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np
import optax

from qe.embeddings import jaxnet
from qe.embeddings.finetuned import UNFREEZE, save_finetuned, trained_names
from qe.embeddings.model import _Tokenizer, model_id, resource_dir
from qe.embeddings.training import (
    adamw_by_part,
    check_splits,
    epoch_record,
    length_batches,
    regressor_manifest,
)
from qe.evaluation.metrics import pearson
from qe.infra.errors import QEInputError


@dataclass(frozen=True)
class Settings:
    """One fine-tuning setting; every field is chosen on dev."""

    unfreeze: str = "top"
    lr: float = 1e-4  # the encoder's learning rate
    head_lr: float = 1e-3
    hidden: int = 256  # 0: a linear head
    batch_size: int = 32  # pairs per step
    max_epochs: int = 10
    patience: int = 2
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    seed: int = 13

    def __post_init__(self) -> None:
        if self.unfreeze not in UNFREEZE:
            raise QEInputError(f"unfreeze must be one of {', '.join(UNFREEZE)} (got {self.unfreeze!r})")


# What the model file keeps of each epoch: the training curve, not the timings and memory (printed as
# the epochs run), which differ between runs and would give a rebuilt bundle another signature.


@dataclass
class Finetuned:
    """A trained setting: its best epoch's weights (numpy), the label scaling and the history."""

    settings: Settings
    encoder: dict[str, np.ndarray]
    head: dict[str, np.ndarray]
    label_mean: float
    label_std: float
    history: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    best_dev_pearson: float = float("nan")

    def save(self, path: str | Path, languages: Sequence[str] = ()) -> None:
        """The model file (``qe.embeddings.finetuned``): arrays and a manifest, no code."""
        manifest = regressor_manifest(self, model_id(resource_dir()), languages)
        save_finetuned(path, self.encoder, self.head, manifest)


def _bucket(length: int) -> int:
    """The padded length of a batch whose longest sentence has ``length`` pieces (few shapes to compile)."""
    if length > 256:
        return 1 << (length - 1).bit_length()
    step = 32 if length <= 128 else 64
    return -(-length // step) * step


class _Pieces:
    """The tokenised sentences of a split and padded batches of them."""

    def __init__(self, tokenizer: _Tokenizer, src: Sequence[str], mt: Sequence[str]):
        self.src = [tokenizer.encode(text) for text in src]
        self.mt = [tokenizer.encode(text) for text in mt]
        self.sizes = np.array(
            [[len(p) for p in self.src], [len(p) for p in self.mt]], dtype=np.int32
        ).reshape(2, -1)
        self.lengths = self.sizes.max(axis=0)

    def __len__(self) -> int:
        return len(self.src)

    def batch(self, rows: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Piece ids (2 * ``size`` rows: the sources then the translations, padded with one-piece
        rows past ``rows``) and their lengths."""
        width = _bucket(int(self.lengths[rows].max()))
        ids = np.zeros((2 * size, width), dtype=np.int32)
        lens = np.ones(2 * size, dtype=np.int32)
        for half, lists in enumerate((self.src, self.mt)):
            for k, row in enumerate(rows):
                pieces = lists[row]
                ids[half * size + k, : len(pieces)] = pieces
                lens[half * size + k] = len(pieces)
        return ids, lens


def _optimizer(settings: Settings) -> optax.GradientTransformation:
    """AdamW with the encoder's and the head's learning rates, after clipping the gradient's norm."""
    rates = {"encoder": settings.lr, "head": settings.head_lr}
    return adamw_by_part(rates, settings.weight_decay, settings.clip_norm)


@functools.partial(jax.jit, static_argnames=("end_to_end", "eps"))
def _scores(params, frozen, const, inputs, lens, *, end_to_end: bool, eps: float) -> jax.Array:
    """The head's scores of a batch: ``inputs`` are piece ids (``end_to_end``) or token sums; the
    first half of the rows are the sources, the second half their translations."""
    encoder = {**frozen, **params["encoder"]}
    sums = jaxnet.token_sums(encoder, const, inputs, lens, eps) if end_to_end else inputs
    vectors = jaxnet.sentence_vectors(encoder, sums, lens, eps)
    half = vectors.shape[0] // 2
    return jaxnet.head_scores(params["head"], vectors[:half], vectors[half:])


@functools.partial(jax.jit, static_argnames=("settings", "eps"))
def _step(params, state, frozen, const, inputs, lens, labels, weights, *, settings: Settings, eps: float):
    """One AdamW step on the weighted mean squared error of a batch; the new parameters, optimizer
    state and the batch's loss."""
    end_to_end = "token" in UNFREEZE[settings.unfreeze]

    def loss(p):
        errors = _scores(p, frozen, const, inputs, lens, end_to_end=end_to_end, eps=eps) - labels
        return (weights * errors * errors).sum() / weights.sum()

    value, grads = jax.value_and_grad(loss)(params)
    updates, state = _optimizer(settings).update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


_token_sums = jax.jit(jaxnet.token_sums, static_argnames="eps")


@dataclass
class _Network:
    """A setting's frozen weights and constants, and how its batches are fed (piece ids or sums)."""

    frozen: dict
    const: dict
    eps: float
    end_to_end: bool

    def predict(self, params: dict, inputs: Any, lens: np.ndarray) -> jax.Array:
        return _scores(
            params, self.frozen, self.const, inputs, lens, end_to_end=self.end_to_end, eps=self.eps
        )

    def sums(self, ids: np.ndarray, lens: np.ndarray) -> jax.Array:
        return _token_sums(self.frozen, self.const, ids, lens, eps=self.eps)


class Trainer:
    """Training and dev pairs prepared once for any number of settings: tokenised, labels scaled to
    zero mean and unit variance, and (on first need) the frozen per-token layers' sums, taken from and
    added to ``memo`` (by piece ids: trainers on other rows of the same sentences share them)."""

    def __init__(
        self,
        train: tuple[Sequence[str], Sequence[str], Sequence[float]],
        dev: tuple[Sequence[str], Sequence[str], Sequence[float]],
        *,
        log: Callable[[str], None] = print,
        resources: Path | None = None,
        memo: dict[tuple[int, ...], np.ndarray] | None = None,
    ):
        started = time.perf_counter()
        check_splits(train, dev)
        root = resources or resource_dir()
        self.log = log
        self.const, self.base, self.eps = jaxnet.base_params(root)
        labels = np.asarray(train[2], dtype=np.float64)
        self.mean, self.std = float(labels.mean()), float(labels.std()) or 1.0
        self.scaled = ((labels - self.mean) / self.std).astype(np.float32)
        self.dev_gold = np.asarray(dev[2], dtype=np.float64)
        tokenizer = _Tokenizer(root / "sp.model")
        self.sets = [_Pieces(tokenizer, *split[:2]) for split in (train, dev)]
        self._sums: list[np.ndarray] | None = None
        self._memo = {} if memo is None else memo
        seconds = time.perf_counter() - started
        log(f"prepared {len(self.sets[0])} training and {len(self.sets[1])} dev pairs in {seconds:.1f} s")

    def _feeds(self, net: _Network, size: int) -> list[Callable[[np.ndarray], tuple[Any, np.ndarray]]]:
        """For the training and the dev split, the inputs of a batch of rows: padded piece ids (end to
        end) or the token sums of its sentences (frozen per-token layers), and the sentence lengths."""
        if net.end_to_end:
            return [functools.partial(pieces.batch, size=size) for pieces in self.sets]
        if self._sums is None:
            started = time.perf_counter()
            self._sums = [_token_sums_of(net, pieces, self._memo) for pieces in self.sets]
            self.log(f"computed the frozen layers' token sums in {time.perf_counter() - started:.1f} s")
        return [
            functools.partial(_sums_batch, sums, pieces, size)
            for sums, pieces in zip(self._sums, self.sets, strict=True)
        ]

    def run(self, settings: Settings) -> Finetuned:
        """Train ``settings``; keep the epoch of best dev Pearson."""
        names = trained_names(settings.unfreeze)
        frozen = {name: value for name, value in self.base.items() if name not in names}
        net = _Network(frozen, self.const, self.eps, "token" in UNFREEZE[settings.unfreeze])
        params = {
            "encoder": {name: self.base[name] for name in names},
            "head": jaxnet.init_head(jax.random.PRNGKey(settings.seed), settings.hidden),
        }
        state = _optimizer(settings).init(params)
        size = settings.batch_size
        feeds = self._feeds(net, size)
        rng = np.random.default_rng(settings.seed)
        result = Finetuned(settings, {}, {}, self.mean, self.std)
        for epoch in range(1, settings.max_epochs + 1):
            started, cpu = time.perf_counter(), time.process_time()
            losses, counts = [], []
            for rows in length_batches(self.sets[0].lengths, size, rng):
                inputs, lens = feeds[0](rows)
                y = np.zeros(size, dtype=np.float32)
                y[: len(rows)] = self.scaled[rows]
                w = (np.arange(size) < len(rows)).astype(np.float32)
                params, state, value = _step(
                    params, state, frozen, self.const, inputs, lens, y, w, settings=settings, eps=self.eps
                )
                losses.append(float(value))
                counts.append(len(rows))
            dev_r = pearson(self.dev_gold, _predict(net, params, feeds[1], self.sets[1], size))
            what = f"fine-tuning (lr {settings.lr})"
            result.history.append(epoch_record(epoch, losses, counts, dev_r, started, cpu, self.log, what))
            if epoch == 1 or dev_r > result.best_dev_pearson:
                result.best_epoch, result.best_dev_pearson = epoch, dev_r
                result.encoder = {name: np.asarray(value) for name, value in params["encoder"].items()}
                result.head = {name: np.asarray(value) for name, value in params["head"].items()}
            elif epoch - result.best_epoch >= settings.patience:
                break
        self.log(f"best epoch {result.best_epoch}: dev Pearson {result.best_dev_pearson:.4f}")
        return result


def finetune(
    train: tuple[Sequence[str], Sequence[str], Sequence[float]],
    dev: tuple[Sequence[str], Sequence[str], Sequence[float]],
    settings: Settings,
    *,
    log: Callable[[str], None] = print,
    resources: Path | None = None,
) -> Finetuned:
    """Train ``settings`` on ``train`` (sources, translations, labels); keep the best epoch on ``dev``."""
    return Trainer(train, dev, log=log, resources=resources).run(settings)


_SUMS_BATCH = 64


def _token_sums_of(net: _Network, pieces: _Pieces, memo: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """The frozen per-token layers' sums of every source (row 0) and translation (row 1) of a split;
    ``memo`` holds the sums already computed by piece ids (the frozen layers give a sentence the same
    sums in every setting and every model trained from the same base weights) and gets the new ones."""
    keys = [tuple(ids) for ids in (*pieces.src, *pieces.mt)]
    todo = sorted(dict.fromkeys(key for key in keys if key not in memo), key=len)
    for start in range(0, len(todo), _SUMS_BATCH):
        chunk = todo[start : start + _SUMS_BATCH]
        ids = np.zeros((_SUMS_BATCH, _bucket(len(chunk[-1]))), dtype=np.int32)
        lens = np.ones(_SUMS_BATCH, dtype=np.int32)  # rows past the chunk: one padding piece
        for row, key in enumerate(chunk):
            ids[row, : len(key)] = key
            lens[row] = len(key)
        out = np.asarray(net.sums(ids, lens))
        for row, key in enumerate(chunk):
            memo[key] = out[row]
    return np.stack([memo[key] for key in keys]).reshape(2, len(pieces), -1)


def _sums_batch(
    sums: np.ndarray, pieces: _Pieces, size: int, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A batch of precomputed token sums laid out as ``_Pieces.batch`` lays out piece ids."""
    out = np.zeros((2 * size, sums.shape[2]), dtype=np.float32)
    lens = np.ones(2 * size, dtype=np.int32)
    for half in (0, 1):
        out[half * size : half * size + len(rows)] = sums[half, rows]
        lens[half * size : half * size + len(rows)] = pieces.sizes[half, rows]
    return out, lens


def _predict(net: _Network, params: dict, inputs: Callable, pieces: _Pieces, size: int) -> np.ndarray:
    """Scores (standardised units) of every pair of a split, in order."""
    scores = np.empty(len(pieces), dtype=np.float64)
    for rows in length_batches(pieces.lengths, size, None):
        batch_in, lens = inputs(rows)
        scores[rows] = np.asarray(net.predict(params, batch_in, lens))[: len(rows)]
    return scores


def live_scores(
    model: Finetuned, src: Sequence[str], mt: Sequence[str], resources: Path | None = None
) -> np.ndarray:
    """``model``'s scores computed with the JAX network (to compare with the saved model's numpy pass)."""
    root = resources or resource_dir()
    const, base, eps = jaxnet.base_params(root)
    frozen = {name: value for name, value in base.items() if name not in model.encoder}
    net = _Network(frozen, const, eps, end_to_end=True)
    pieces = _Pieces(_Tokenizer(root / "sp.model"), src, mt)
    params = {"encoder": model.encoder, "head": model.head}
    size = model.settings.batch_size
    scores = _predict(net, params, functools.partial(pieces.batch, size=size), pieces, size)
    return scores * model.label_std + model.label_mean


def select(
    train: tuple[Sequence[str], Sequence[str], Sequence[float]],
    dev: tuple[Sequence[str], Sequence[str], Sequence[float]],
    grid: Sequence[Settings],
    *,
    log: Callable[[str], None] = print,
    memo: dict[tuple[int, ...], np.ndarray] | None = None,
) -> tuple[Finetuned, list[tuple[Settings, float, int]]]:
    """Train every setting of ``grid``; the one of best dev Pearson, and each setting's (dev Pearson,
    best epoch). ``memo``: the frozen layers' sums to share (``Trainer``)."""
    best: Finetuned | None = None
    table = []
    trainer = Trainer(train, dev, log=log, memo=memo)
    for settings in grid:
        log(f"setting {asdict(settings)}")
        model = trainer.run(settings)
        table.append((settings, model.best_dev_pearson, model.best_epoch))
        if best is None or model.best_dev_pearson > best.best_dev_pearson:
            best = model
    if best is None:
        raise QEInputError("no fine-tuning setting to try")
    return best, table


def settings_grid(
    unfreeze: Sequence[str], lr: Sequence[float], hidden: Sequence[int], **common: Any
) -> list[Settings]:
    """Every combination of the layers to unfreeze, the encoder's learning rate and the head's size
    (``common``: the other ``Settings`` fields), once each: with ``unfreeze = "head"`` the encoder's
    learning rate plays no part, so it is tried once."""
    grid = [
        Settings(unfreeze=layers, lr=rate if layers != "head" else lr[0], hidden=size, **common)
        for layers in unfreeze
        for rate in lr
        for size in hidden
    ]
    return list(dict.fromkeys(grid))
