"""The frozen lower layers of the e5 encoder, run once per input in numpy and kept per cut: what the
sentence cross-encoder (``qe.embeddings.e5cross``) and the word-level token head
(``qe.embeddings.e5tokhead``) train on top of. Numpy only (no JAX).

``frozen_states`` (``qe.embeddings.e5rows.states_in_groups``) runs layers ``start`` to ``stop - 1`` on
many inputs (each input's rows alone, packed in groups on threads each with one BLAS thread: an input's
state does not depend on the others).
``FrozenStates`` keeps, for some splits of inputs, the output at each cut asked for, continuing a deeper
cut from a shallower one, and can share a ``memo`` (cut -> token ids -> state) with other trainers over
the same encoder, so that the full and fold models of a cross-fitted run compute each input's frozen
state once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from qe.embeddings.e5net import E5Network
from qe.embeddings.e5rows import states_in_groups as frozen_states

Memo = dict[int, dict[tuple[int, ...], np.ndarray]]
"""Frozen states shared between trainers: cut -> token ids -> (length, 384) float32."""


def padded(
    states: Sequence[np.ndarray], rows: int | None = None, width: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sequence vectors stacked into a zero-padded (rows, width, 384) array and its token mask; rows
    past ``states`` hold one real (zero) token so that their attention stays defined."""
    rows = rows or len(states)
    width = width or max(len(s) for s in states)
    x = np.zeros((rows, width, states[0].shape[1]), dtype=np.float32)
    valid = np.zeros((rows, width), dtype=bool)
    valid[len(states) :, 0] = True
    for row, s in enumerate(states):
        x[row, : len(s)] = s
        valid[row, : len(s)] = True
    return x, valid


def bucket(length: int) -> int:
    """The padded width of a batch whose longest input has ``length`` tokens (few shapes to compile)."""
    step = 16 if length <= 128 else 32 if length <= 256 else 64
    return min(-(-length // step) * step, 512)


class FrozenStates:
    """The frozen layers' output for some splits of token-id sequences, computed on first need and kept
    per cut: ``states(stop)`` is, per split, the output of layer ``stop - 1`` of every sequence. With a
    shared ``memo`` only the inputs it lacks at a cut run, from the deepest cut that holds them all (an
    input's state is its own, so a shared memo gives the states a fresh one would, bit for bit)."""

    def __init__(
        self,
        network: E5Network,
        splits: Sequence[Sequence[Sequence[int]]],
        *,
        threads: int = 2,
        log: Callable[[str], None] = print,
        memo: Memo | None = None,
    ):
        self.network, self.splits, self.threads, self.log = network, splits, threads, log
        self._states: dict[int, list[list[np.ndarray]]] = {}
        self._memo = memo

    def states(self, stop: int) -> list[list[np.ndarray]]:
        """The output of layer ``stop - 1`` (of the embeddings for 0) for each split's sequences,
        continued from the deepest cut already computed below it (through the shared ``memo`` if any)."""
        if stop not in self._states and self._memo is not None:
            self._states[stop] = self._shared(stop, self._memo)
        if stop not in self._states:
            started = time.perf_counter()
            below = max((cut for cut in self._states if cut < stop), default=0)
            self._states[stop] = [
                frozen_states(
                    self.network,
                    seqs,
                    stop,
                    start=below,
                    states=self._states[below][i] if below else None,
                    threads=self.threads,
                )
                for i, seqs in enumerate(self.splits)
            ]
            self.log(
                f"ran the frozen layers below layer {stop} on {sum(map(len, self.splits))} inputs in "
                f"{time.perf_counter() - started:.1f} s"
            )
        return self._states[stop]

    def _shared(self, stop: int, memo: Memo) -> list[list[np.ndarray]]:
        """``states(stop)`` through ``memo``: only the inputs it lacks at ``stop`` run."""
        kept = memo.setdefault(stop, {})
        keys = [[tuple(s) for s in seqs] for seqs in self.splits]
        missing = list(dict.fromkeys(key for split in keys for key in split if key not in kept))
        if missing:
            started = time.perf_counter()
            below = max(
                (cut for cut, known in memo.items() if 0 < cut < stop and all(k in known for k in missing)),
                default=0,
            )
            computed = frozen_states(
                self.network,
                missing,
                stop,
                start=below,
                states=[memo[below][k] for k in missing] if below else None,
                threads=self.threads,
            )
            kept.update(zip(missing, computed, strict=True))
            self.log(
                f"ran the frozen layers below layer {stop} on {len(missing)} inputs in "
                f"{time.perf_counter() - started:.1f} s ({sum(map(len, keys)) - len(missing)} shared)"
            )
        return [[kept[key] for key in split] for split in keys]
