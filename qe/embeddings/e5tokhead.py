"""Training the e5 token head for word-level QE (issue 34, build 3; MicroTransQuest's design on the e5
cross-encoder): per MT word, gap and source word a BAD probability, later the word tagger's features.

A pair is one input (``qe.embeddings.e5tokens``: source, then the MT with a gap marker between words);
the lower layers stay frozen and run once per input in numpy (``qe.embeddings.e5frozen``, shared with
the sentence cross-encoder, and through a ``memo`` between the full and fold models of a cross-fitted
run); the top ``top_layers`` layers (``qe.embeddings.e5jax``) and a linear head of three BAD logits (MT
word, gap, source word) over each slot's mean piece vector are trained with AdamW (optax; gradients
clipped, the layers' and the head's learning rates apart) on the cross-entropy of the OK/BAD tags, a
BAD slot weighing ``bad_weight`` (3 by default, chosen, not tuned: en-de's training tags are 15.6% BAD
for MT words, 12.6% for source words, 2.7% for gaps, so BAD MT words then weigh about half as much as
OK ones in all instead of a sixth; the tagger reads the probability as one feature among others, where
its ranking matters more than its calibration). Batches of ``batch_size`` pairs sorted by length
within windows and padded to few widths, as ``qe.embeddings.e5cross``.

Early stopping: a seeded ``holdout`` share of the training sentences (a tenth by default) is left out
of the steps and scored after every epoch; the epoch of the highest mean over the three kinds of the
held-out MCC (each at its best threshold, ``qe.evaluation.wordmetrics.best_threshold``; ties: the lower
held-out log-loss) is kept, training stops after ``patience`` epochs without a gain. Everything random
comes from ``seed`` (the held-out split, the batch order; the head starts at zero weights and the bias
at each kind's weighted BAD log-odds) and XLA's CPU kernels are deterministic for a machine and thread
count. Needs JAX and optax.
"""

from __future__ import annotations

import functools
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import optax

from qe.embeddings import e5jax
from qe.embeddings.e5encoder import E5Encoder
from qe.embeddings.e5frozen import FrozenStates, Memo, bucket, padded
from qe.embeddings.e5tokenfile import TokenHeadModel, TokenSettings, history_record, settings_record
from qe.embeddings.e5tokens import KINDS, TokenLayout, pooling_rows, token_layout
from qe.embeddings.training import adamw_by_part, length_batches
from qe.evaluation.wordmetrics import best_threshold
from qe.infra.errors import QEInputError

Tokens = Sequence[Sequence[str]]
Labels = dict[str, list[np.ndarray]]
"""Per kind (``KINDS``), per sentence, True for each BAD slot."""


@dataclass
class TokenResult:
    """A trained token head (its best epoch), its curve, and the probabilities it gave the ``score``
    pairs (per kind, per pair; JAX forward on the frozen states, equal to the numpy scorer to float32
    rounding)."""

    model: TokenHeadModel
    history: list[dict[str, float]]
    best_epoch: int
    best_mcc: float
    pairs: int
    heldout_pairs: int
    scored: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def summary(self) -> dict[str, object]:
        """What a manifest records of this model (no timings)."""
        return {
            "pairs": self.pairs,
            "heldout_pairs": self.heldout_pairs,
            "best_epoch": self.best_epoch,
            "heldout_mcc": round(self.best_mcc, 6),
            "history": history_record(self.history),
        }


def _optimizer(settings: TokenSettings) -> optax.GradientTransformation:
    """AdamW with the layers' and the head's learning rates, after clipping the gradient's norm."""
    return adamw_by_part(
        {"layers": settings.lr, "head": settings.head_lr}, settings.weight_decay, settings.clip_norm
    )


def slot_logits(
    params: dict, x: jax.Array, mask: jax.Array, pool: jax.Array, onehot: jax.Array, heads: int, eps: float
) -> jax.Array:
    """Each slot's BAD logit: the trained layers on the frozen states ``x`` (batch, width, 384), each
    slot's mean piece vector (``pool`` (batch, slots, width) @ the last layer), the head's output of
    the slot's kind (``onehot`` (batch, slots, 3))."""
    for layer in params["layers"]:
        x = e5jax.encoder_layer(layer, x, mask, heads, eps)
    vectors = pool @ x
    return ((vectors @ params["head"]["w"] + params["head"]["b"]) * onehot).sum(axis=-1)


@functools.partial(jax.jit, static_argnames=("heads", "eps"))
def _logits(params, x, mask, pool, onehot, *, heads: int, eps: float):
    return slot_logits(params, x, mask, pool, onehot, heads, eps)


@functools.partial(jax.jit, static_argnames=("settings", "heads", "eps"))
def _step(
    params, state, x, mask, pool, onehot, y, weight, *, settings: TokenSettings, heads: int, eps: float
):
    """One AdamW step on the weighted cross-entropy of a batch's slots."""

    def loss(p):
        logits = slot_logits(p, x, mask, pool, onehot, heads, eps)
        return (weight * optax.sigmoid_binary_cross_entropy(logits, y)).sum() / jnp.maximum(
            weight.sum(), 1e-9
        )

    value, grads = jax.value_and_grad(loss)(params)
    updates, state = _optimizer(settings).update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


def batch_arrays(
    layouts: Sequence[TokenLayout],
    states: Sequence[np.ndarray],
    rows: Sequence[int],
    size: int,
    labels: Labels | None = None,
    bad_weight: float = 1.0,
) -> tuple[np.ndarray, ...]:
    """One padded batch: frozen states, token mask, slot pooling rows, kind one-hots, and (with
    ``labels``) each slot's BAD tag and loss weight (0 on padding)."""
    width = bucket(max(len(layouts[r].ids) for r in rows))
    x, valid = padded([states[r] for r in rows], size, width)
    pool = np.zeros((size, width, width), dtype=np.float32)
    onehot = np.zeros((size, width, len(KINDS)), dtype=np.float32)
    y = np.zeros((size, width), dtype=np.float32)
    weight = np.zeros((size, width), dtype=np.float32)
    for i, r in enumerate(rows):
        kind, matrix = pooling_rows(layouts[r])
        n = len(kind)
        pool[i, :n, : matrix.shape[1]] = matrix
        onehot[i, np.arange(n), kind] = 1.0
        if labels is not None:
            kept = [layouts[r].spans[k][:, 0] >= 0 for k in KINDS]
            tags = np.concatenate([labels[k][r][keep] for k, keep in zip(KINDS, kept, strict=True)])
            y[i, :n] = tags
            weight[i, :n] = np.where(tags, bad_weight, 1.0)
    return x, valid.astype(np.float32), pool, onehot, y, weight


def _split_slots(
    layouts: Sequence[TokenLayout], rows: Sequence[int], values: np.ndarray
) -> dict[str, list[np.ndarray]]:
    """Per kind, per row, the slot values (NaN where a slot was cut off) from a (rows, slots) array."""
    out: dict[str, list[np.ndarray]] = {kind: [] for kind in KINDS}
    for i, r in enumerate(rows):
        kind, _ = pooling_rows(layouts[r])
        for index, name in enumerate(KINDS):
            spans = layouts[r].spans[name]
            full = np.full(len(spans), np.nan)
            full[spans[:, 0] >= 0] = values[i, : len(kind)][kind == index]
            out[name].append(full)
    return out


class TokenTrainer:
    """One token head's training: the pairs laid out and held out once, the frozen layers' output on
    first need (shared through ``memo``), ``run`` trains with early stopping on the held-out pairs.
    ``score``: other pairs (source and MT token lists) the best epoch's model is applied to."""

    def __init__(
        self,
        src: Tokens,
        mt: Tokens,
        labels: Labels,
        settings: TokenSettings,
        *,
        encoder: E5Encoder,
        score: tuple[Tokens, Tokens] | None = None,
        log: Callable[[str], None] = print,
        memo: Memo | None = None,
    ):
        if not len(src) == len(mt) >= 2 or any(len(labels[kind]) != len(src) for kind in KINDS):
            raise QEInputError(
                "the token head needs at least 2 training pairs, each with its three kinds of tags"
            )
        depth = len(encoder.network.layers)
        if settings.top_layers > depth:
            raise QEInputError(f"tokenhead.top_layers must be at most {depth} (got {settings.top_layers})")
        self.settings, self.encoder, self.log = settings, encoder, log
        self.labels = {kind: [np.asarray(v, dtype=bool) for v in labels[kind]] for kind in KINDS}
        tok = encoder.tokenizer
        self.layouts = [token_layout(tok, s, m) for s, m in zip(src, mt, strict=True)]
        self.score_layouts = [token_layout(tok, s, m) for s, m in zip(*score, strict=True)] if score else []
        n = len(self.layouts)
        held = max(1, round(n * settings.holdout))
        order = np.random.default_rng(settings.seed).permutation(n)
        self.heldout, self.train_rows = np.sort(order[:held]), np.sort(order[held:])
        self.frozen = FrozenStates(
            encoder.network,
            [[lay.ids for lay in self.layouts], [lay.ids for lay in self.score_layouts]],
            threads=settings.threads,
            log=log,
            memo=memo,
        )

    def run(self) -> TokenResult:
        """Train; keep the epoch of the best mean held-out MCC."""
        s, network = self.settings, self.encoder.network
        depth = len(network.layers)
        start = depth - s.top_layers
        states, score_states = self.frozen.states(start)
        heads, eps = network.heads, float(network.eps)
        params = {
            "layers": [
                jax.tree.map(jnp.asarray, e5jax.layer_params(network, i)) for i in range(start, depth)
            ],
            "head": self._initial_head(network.hidden),
        }
        opt_state = _optimizer(s).init(params)
        rng = np.random.default_rng(s.seed)
        lengths = np.array([len(self.layouts[r].ids) for r in self.train_rows])
        best = {"epoch": 0, "mcc": -np.inf, "logloss": np.inf, "params": params}
        history: list[dict[str, float]] = []
        for epoch in range(1, s.max_epochs + 1):
            started, cpu = time.perf_counter(), time.process_time()
            losses, weights = [], []
            for batch in length_batches(lengths, s.batch_size, rng):
                rows = self.train_rows[batch]
                arrays = batch_arrays(self.layouts, states, rows, s.batch_size, self.labels, s.bad_weight)
                params, opt_state, value = _step(params, opt_state, *arrays, settings=s, heads=heads, eps=eps)
                losses.append(float(value))
                weights.append(float(arrays[-1].sum()))
            held = self._probabilities(params, self.layouts, states, self.heldout)
            mcc, logloss = self._heldout_scores(held)
            row = {
                "epoch": epoch,
                "loss": float(np.average(losses, weights=weights)),
                "heldout_mcc": mcc,
                "heldout_logloss": logloss,
                "seconds": time.perf_counter() - started,
                "cpu_seconds": time.process_time() - cpu,
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
            history.append(row)
            self.log(
                f"token head epoch {epoch}: loss {row['loss']:.4f}  held-out MCC {mcc:.4f} (kinds mean)  "
                f"log-loss {logloss:.4f}  {row['seconds']:.1f} s ({row['cpu_seconds']:.1f} s of CPU)  "
                f"peak memory {row['peak_mb']:.0f} MB"
            )
            if not np.isfinite(row["loss"]):
                raise QEInputError(f"token head training diverged at epoch {epoch}: the loss is not finite")
            if (mcc, -logloss) > (best["mcc"], -best["logloss"]):  # ties: the lower log-loss
                best = {"epoch": epoch, "mcc": mcc, "logloss": logloss, "params": params}
            elif epoch - best["epoch"] >= s.patience:
                break
        kept = best["params"]
        layers = [{k: np.asarray(v) for k, v in layer.items()} for layer in kept["layers"]]
        head = {k: np.asarray(v) for k, v in kept["head"].items()}
        manifest = {
            "settings": settings_record(s),
            "best_epoch": best["epoch"],
            "history": history_record(history),
        }
        model = TokenHeadModel(layers, head, self.encoder, manifest)
        scored = {}
        if self.score_layouts:
            rows = np.arange(len(self.score_layouts))
            scored = self._probabilities(kept, self.score_layouts, score_states, rows)
        self.log(f"token head: best epoch {best['epoch']}, held-out MCC {best['mcc']:.4f}")
        return TokenResult(
            model,
            history,
            int(best["epoch"]),
            float(best["mcc"]),
            len(self.train_rows),
            len(self.heldout),
            scored,
        )

    def _initial_head(self, width: int) -> dict[str, jax.Array]:
        """Zero weights; each kind's bias the log-odds of BAD in training, BAD weighted."""
        bias = []
        for kind in KINDS:
            tags = (
                np.concatenate([self.labels[kind][r] for r in self.train_rows])
                if len(self.train_rows)
                else []
            )
            share = float(np.clip(np.mean(tags) if len(tags) else 0.5, 1e-3, 1 - 1e-3))
            bias.append(np.log(self.settings.bad_weight * share / (1 - share)))
        return {"w": jnp.zeros((width, len(KINDS)), jnp.float32), "b": jnp.asarray(bias, jnp.float32)}

    def _probabilities(
        self, params: dict, layouts: Sequence[TokenLayout], states: Sequence[np.ndarray], rows: np.ndarray
    ) -> dict[str, list[np.ndarray]]:
        """Per kind, per row (in ``rows`` order), each slot's BAD probability from the JAX forward."""
        network, size = self.encoder.network, self.settings.batch_size
        out: dict[str, list[np.ndarray | None]] = {kind: [None] * len(rows) for kind in KINDS}
        position = {int(r): i for i, r in enumerate(rows)}
        lengths = np.array([len(layouts[r].ids) for r in rows])
        for batch in length_batches(lengths, size, None):
            chosen = rows[batch]
            x, mask, pool, onehot, _, _ = batch_arrays(layouts, states, chosen, size)
            logits = np.asarray(
                _logits(params, x, mask, pool, onehot, heads=network.heads, eps=float(network.eps)),
                dtype=np.float64,
            )
            values = 1.0 / (1.0 + np.exp(-np.clip(logits, -700, 700)))
            for kind, lists in _split_slots(layouts, chosen, values).items():
                for r, value in zip(chosen.tolist(), lists, strict=True):
                    out[kind][position[r]] = value
        return out  # type: ignore[return-value]

    def _heldout_scores(self, held: dict[str, list[np.ndarray]]) -> tuple[float, float]:
        """The mean over kinds of the held-out MCC at each kind's best threshold, and the mean log-loss."""
        mccs, losses = [], []
        for kind in KINDS:
            p = np.concatenate(held[kind]) if held[kind] else np.zeros(0)
            y = np.concatenate([self.labels[kind][r] for r in self.heldout])
            kept = ~np.isnan(p)
            p, y = np.clip(p[kept], 1e-7, 1 - 1e-7), y[kept]
            if len(y):
                losses.append(float(-np.mean(np.where(y, np.log(p), np.log1p(-p)))))
            if y.any() and not y.all():
                mccs.append(best_threshold(y, p, "mcc")[1])
        return (float(np.mean(mccs)) if mccs else 0.0), (float(np.mean(losses)) if losses else float("nan"))
