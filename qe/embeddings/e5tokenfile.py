"""The e5 token head for word-level QE (issue 34, build 3): its settings, its numpy scorer and its
checked model file (``.qxtok``), numpy only (no JAX; training is ``qe.embeddings.e5tokhead``).

The model is multilingual-e5-small reading a pair as ``qe.embeddings.e5tokens`` lays it out, its top
``top_layers`` layers trained, and a linear head of three outputs over each slot's vector (the mean of
its pieces' last-layer vectors): the BAD logit of an MT word, a gap or a source word
(``w`` (384, 3), ``b`` (3,)). ``TokenHeadModel.probabilities`` runs each pair alone through the network
(one BLAS thread; pairs on the encoder's threads at once) and the head in float64, so a slot's
probability does not depend on the batch it came in.

The ``.qxtok`` file is a zip of ``manifest.json`` and one float32 ``.npy`` per array
(``layers/<k>/<name>.npy``, ``head/w.npy``, ``head/b.npy``), written and read by
``qe.embeddings.e5crossfile``'s helpers: the member list exactly that of ``top_layers`` layers and the
head, each ``.npy`` header (C-ordered little-endian float32, the base network's shapes) checked before
its data, every value finite, ``base_model`` the installed e5 file's, the gap piece and the pooling
this qe's. Nothing is unpickled. A word model (``.qwords``) holds the same bytes as one member
(``qe.wordmodel.tokenheadfamily``), read back by :meth:`TokenHeadModel.from_bytes` with the same checks.
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from qe.embeddings.e5crossfile import (
    check_base_model,
    float_archive,
    layer_shapes,
    manifest_integer,
    read_float_members,
    shared_encoder,
    with_layers,
)
from qe.embeddings.e5encoder import E5Encoder
from qe.embeddings.e5net import LAYER_NAMES, E5Network
from qe.embeddings.e5tokens import GAP_PIECE, KINDS, POOLING, TokenLayout, token_layout
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write
from qe.predictors.check import UNREADABLE_ARCHIVE, BadModel, read_manifest, reading_model_archive

FORMAT = "qe-token-head"
VERSION = 1
SUFFIX = ".qxtok"
_F4 = np.dtype("<f4")
_KEPT_HISTORY = ("epoch", "loss", "heldout_mcc", "heldout_logloss")


@dataclass(frozen=True)
class TokenSettings:
    """How a token head is trained (``qe.embeddings.e5tokhead``); the ``[words.tokenhead]`` table."""

    top_layers: int = 4  # the layers trained (the rest frozen), as the sentence cross-encoder
    lr: float = 1e-4  # the trained layers' learning rate
    head_lr: float = 1e-3
    batch_size: int = 32
    max_epochs: int = 3
    patience: int = 1
    bad_weight: float = 3.0  # a BAD slot's weight in the cross-entropy (OK: 1)
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    holdout: float = 0.1  # the share of training sentences held out for early stopping
    seed: int = 13
    threads: int = 2

    def __post_init__(self) -> None:
        for name in ("top_layers", "batch_size", "max_epochs", "patience", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise QEInputError(f"tokenhead.{name} must be a positive integer (got {value!r})")
        if self.top_layers > 12:
            raise QEInputError(f"tokenhead.top_layers must be at most 12 (got {self.top_layers})")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise QEInputError(f"tokenhead.seed must be a non-negative integer (got {self.seed!r})")
        bounds = {
            "lr": 1,
            "head_lr": 1,
            "weight_decay": 1,
            "clip_norm": 100,
            "bad_weight": 100,
            "holdout": 0.5,
        }
        for name, high in bounds.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= high:
                raise QEInputError(
                    f"tokenhead.{name} must be a number above 0 and at most {high} (got {value!r})"
                )

    @classmethod
    def of(cls, table: dict[str, Any]) -> TokenSettings:
        """The settings of a config's ``[words.tokenhead]`` table (absent fields: the defaults)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            raise QEInputError(
                f"tokenhead.{unknown[0]} is not a setting (expected {', '.join(sorted(known))})"
            )
        return cls(**table)


def head_shapes(width: int) -> dict[str, tuple[int, ...]]:
    """The linear head over ``width``-value slot vectors: one BAD logit per kind."""
    return {"w": (width, len(KINDS)), "b": (len(KINDS),)}


def expected_arrays(network: E5Network, top_layers: int) -> dict[str, tuple[int, ...]]:
    """Every array (name without ``.npy``) a token head of ``top_layers`` trained layers holds."""
    depth = len(network.layers)
    names = {
        f"layers/{k}/{name}": shape
        for k in range(top_layers)
        for name, shape in layer_shapes(network, depth - top_layers + k).items()
    }
    return names | {f"head/{name}": shape for name, shape in head_shapes(network.hidden).items()}


class TokenHeadModel:
    """A trained token head, scored with numpy: per pair of token lists, each MT word's, gap's and source
    word's probability of BAD (NaN for a slot cut off by the 512-token limit)."""

    def __init__(
        self,
        layers: Sequence[dict[str, np.ndarray]],
        head: dict[str, np.ndarray],
        encoder: E5Encoder,
        manifest: dict[str, Any] | None = None,
    ):
        self.layers = [{name: np.asarray(layer[name], dtype=_F4) for name in LAYER_NAMES} for layer in layers]
        self.head = {name: np.asarray(head[name], dtype=_F4) for name in head_shapes(encoder.network.hidden)}
        self.encoder = encoder
        self.network = with_layers(encoder.network, self.layers)
        self.manifest = manifest or {}
        self._w = self.head["w"].astype(np.float64)
        self._b = self.head["b"].astype(np.float64)

    @property
    def top_layers(self) -> int:
        """How many of the encoder's top layers were trained (and are held here)."""
        return len(self.layers)

    def layouts(self, src: Sequence[Sequence[str]], mt: Sequence[Sequence[str]]) -> list[TokenLayout]:
        """Each pair's input and slot spans (``qe.embeddings.e5tokens``)."""
        if len(src) != len(mt):
            raise QEInputError(f"{len(src)} source sentences but {len(mt)} translations")
        return [token_layout(self.encoder.tokenizer, s, m) for s, m in zip(src, mt, strict=True)]

    def probabilities(
        self, src: Sequence[Sequence[str]], mt: Sequence[Sequence[str]]
    ) -> dict[str, list[np.ndarray]]:
        """Per kind (``target``, ``gaps``, ``source``), per pair, each slot's probability of BAD (float64;
        NaN where cut off). Each pair runs alone with one BLAS thread, pairs on the encoder's threads."""
        from qe.infra.workers import blas_threads

        layouts = self.layouts(src, mt)
        out: list[dict[str, np.ndarray] | None] = [None] * len(layouts)

        def run(row: int) -> None:
            x, _ = self.network.hidden_states([layouts[row].ids])
            out[row] = self.slot_probabilities(layouts[row], x[0])

        with blas_threads(1):
            if self.encoder.threads == 1 or len(layouts) < 2:
                for row in range(len(layouts)):
                    run(row)
            else:
                with ThreadPoolExecutor(self.encoder.threads) as pool:
                    list(pool.map(run, range(len(layouts))))
        return {kind: [row[kind] for row in out if row is not None] for kind in KINDS}

    def slot_probabilities(self, layout: TokenLayout, states: np.ndarray) -> dict[str, np.ndarray]:
        """One pair's probabilities per kind from its last-layer vectors ``states`` (tokens, 384), in
        float64: each slot's mean piece vector through the head, then the sigmoid."""
        states = np.asarray(states, dtype=np.float64)
        out = {}
        for index, kind in enumerate(KINDS):
            spans = layout.spans[kind]
            values = np.full(len(spans), np.nan)
            for row, (a, b) in enumerate(spans.tolist()):
                if a >= 0:
                    logit = states[a:b].mean(axis=0) @ self._w[:, index] + self._b[index]
                    values[row] = 1.0 / (1.0 + math.exp(-logit)) if logit > -700 else 0.0
            out[kind] = values
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The trained arrays by name (``expected_arrays``)."""
        out = {
            f"layers/{k}/{name}": layer[name] for k, layer in enumerate(self.layers) for name in LAYER_NAMES
        }
        return out | {f"head/{name}": self.head[name] for name in sorted(self.head)}

    def describe(self) -> dict[str, Any]:
        """The manifest entry of this head (JSON values): what it reads and how it was trained."""
        return {
            **{k: v for k, v in self.manifest.items() if k not in ("format", "version")},
            "base_model": self.encoder.model_id,
            "top_layers": self.top_layers,
            "gap_piece": GAP_PIECE,
            "pooling": POOLING,
        }

    def to_bytes(self) -> bytes:
        """The ``.qxtok`` file's bytes: arrays and manifest, no code (same model, same bytes)."""
        manifest = {**self.describe(), "format": FORMAT, "version": VERSION}
        return float_archive(manifest, {f"{name}.npy": value for name, value in self.arrays().items()})

    def save(self, path: str | Path) -> None:
        """Write the ``.qxtok`` model file atomically."""
        with atomic_write(path, "wb") as handle:
            handle.write(self.to_bytes())

    @classmethod
    def load(cls, path: str | Path, encoder: E5Encoder | None = None) -> TokenHeadModel:
        """Read and check a ``.qxtok`` file (``encoder``: default the installed e5 file's, shared); a file
        that is not a usable token head is one ``QEInputError`` line naming it."""
        encoder = encoder or shared_encoder()
        with reading_model_archive(path, "token head"), zipfile.ZipFile(path) as archive:
            return _read(archive, encoder)

    @classmethod
    def from_bytes(cls, data: bytes, encoder: E5Encoder | None = None) -> TokenHeadModel:
        """A ``.qxtok`` file's bytes (a word model's member) read and checked as :meth:`load` does; what
        makes them unusable is a ``BadModel`` reason (the caller names the file they came in)."""
        encoder = encoder or shared_encoder()
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                return _read(archive, encoder)
        except BadModel:
            raise
        except UNREADABLE_ARCHIVE as exc:
            raise BadModel(f"its token head cannot be read ({str(exc)[:200]})") from None


def _read(archive: zipfile.ZipFile, encoder: E5Encoder) -> TokenHeadModel:
    """The token head of an open ``.qxtok`` archive: its manifest, member list and arrays checked."""
    names = [info.filename for info in archive.infolist()]
    if len(set(names)) != len(names):
        raise BadModel("a member name appears twice")
    manifest = read_manifest(archive, FORMAT, VERSION)
    top = check_token_manifest(manifest, encoder)
    expected = {f"{name}.npy": shape for name, shape in expected_arrays(encoder.network, top).items()}
    arrays = read_float_members(archive, expected, f"{top} trained layers and a token head")
    return _model(
        {name.removesuffix(".npy"): value for name, value in arrays.items()}, manifest, encoder, top
    )


def check_token_manifest(manifest: dict[str, Any], encoder: E5Encoder) -> int:
    """The number of trained layers of a token head's manifest (entry), after checking that it reads the
    installed e5 file, this qe's gap piece and pooling (a ``BadModel`` reason otherwise)."""
    if not isinstance(manifest, dict):
        raise BadModel("the token head's manifest is not a table")
    check_base_model(manifest, encoder)
    top = manifest_integer(manifest, "top_layers", 1, len(encoder.network.layers))
    if manifest.get("gap_piece") != GAP_PIECE or manifest.get("pooling") != POOLING:
        raise BadModel(
            f"the token head does not read gaps as {GAP_PIECE!r} and words by their {POOLING} piece"
        )
    return top


def _model(
    arrays: dict[str, np.ndarray], manifest: dict[str, Any], encoder: E5Encoder, top: int
) -> TokenHeadModel:
    """The model of checked arrays (names of ``expected_arrays``)."""
    layers = [{name: arrays[f"layers/{k}/{name}"] for name in LAYER_NAMES} for k in range(top)]
    head = {name: arrays[f"head/{name}"] for name in head_shapes(encoder.network.hidden)}
    return TokenHeadModel(
        layers, head, encoder, {k: v for k, v in manifest.items() if k not in ("format", "version")}
    )


def settings_record(settings: TokenSettings) -> dict[str, Any]:
    """The settings as JSON values (manifests, signatures)."""
    return asdict(settings)


def history_record(history: Sequence[dict[str, float]]) -> list[dict[str, float]]:
    """A training curve without its timings (the same model gives the same bytes)."""
    return [{key: row[key] for key in _KEPT_HISTORY if key in row} for row in history]
