"""A fine-tuned USE-M encoder with its QE regression head, saved as data and scored with numpy.

The file is a zip of ``manifest.json`` and one ``.npy`` array per fine-tuned encoder weight
(``encoder/<name>.npy``, named as in the package's ``weights.npz``; the weights left frozen, the
piece table among them, are read from the installed package, whose ``model_id`` the manifest
names) and per head weight (``head/<name>.npy``). Nothing in it is code: arrays are read with
``allow_pickle=False``, and every one is checked (member size before reading, then dtype, shape,
finiteness) before use, as ``qe.predictors.check`` does for the other models. Scoring needs neither JAX
nor optax: ``UseModel`` runs the fine-tuned weights and the head is two matrix products.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from qe.embeddings.model import DIM, UseModel, model_id, read_weights, resource_dir
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write
from qe.predictors.check import BadModel, check_array, check_number, read_manifest, reading_model_archive

FORMAT = "qe-finetuned-encoder"
VERSION = 1
LAYER_GROUPS: dict[str, tuple[str, ...]] = {
    "token": tuple(
        f"{kind}{n}"
        for n in (2, 3, 5)
        for kind in ("proj", "proj_b", "ln_g", "ln_b", "w1_", "b1_", "w2_", "b2_")
    ),
    "pool": ("ln_g", "ln_b", "cnn_W", "cnn_b"),
    "dan": ("d0", "d1", "d2", "d3", "p1", "p3"),
}
"""The encoder's dense weights by layer group: per-token layers, pooling, DAN (deep averaging) layers."""
UNFREEZE: dict[str, tuple[str, ...]] = {
    "head": (),
    "dan": ("dan",),
    "top": ("pool", "dan"),
    "all": ("token", "pool", "dan"),
}
"""Which layer groups a fine-tuning setting trains (the piece-embedding table always stays frozen)."""
PAIR_WIDTH = 4 * DIM
MAX_HIDDEN = 4096
_NPY_HEADER = 1024  # an .npy member may exceed its data by at most this (format header)
_F4 = np.dtype("<f4")


def head_input(u: Any, v: Any, xp: Any = np) -> Any:
    """The pair features the head reads: [u, v, |u - v|, u * v] (``xp``: numpy or jax.numpy)."""
    return xp.concatenate([u, v, xp.abs(u - v), u * v], axis=1)


def head_shapes(hidden: int) -> dict[str, tuple[int, ...]]:
    """The head's arrays: linear (``hidden`` 0) or one tanh layer of ``hidden`` units."""
    if hidden == 0:
        return {"w": (PAIR_WIDTH, 1), "b": (1,)}
    return {"w1": (PAIR_WIDTH, hidden), "b1": (hidden,), "w": (hidden, 1), "b": (1,)}


def trained_names(unfreeze: str) -> list[str]:
    """The encoder weights a setting of ``UNFREEZE`` trains, hence saves."""
    return [name for group in UNFREEZE[unfreeze] for name in LAYER_GROUPS[group]]


def base_shapes(resources: Path | None = None) -> dict[str, tuple[int, ...]]:
    """The shape of every dense encoder weight of the installed package."""
    _, dense = read_weights(resources or resource_dir())
    return {name: dense[name].shape for group in LAYER_GROUPS.values() for name in group}


def save_finetuned(
    path: str | Path,
    encoder: dict[str, np.ndarray],
    head: dict[str, np.ndarray],
    manifest: dict[str, Any],
) -> None:
    """Write the model file atomically: ``manifest`` (JSON values) completed with the array names,
    then each array as float32 ``.npy`` (fixed timestamps: the same model gives the same bytes)."""
    manifest = {
        **manifest,
        "format": FORMAT,
        "version": VERSION,
        "encoder_arrays": sorted(encoder),
    }
    members = {"manifest.json": json.dumps(manifest, indent=1, sort_keys=True).encode()}
    for prefix, arrays in (("encoder", encoder), ("head", head)):
        for name in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(
                buffer, np.ascontiguousarray(arrays[name], dtype=_F4), allow_pickle=False
            )
            members[f"{prefix}/{name}.npy"] = buffer.getvalue()
    with atomic_write(path, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(
                zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED
            )


def read_finetuned(
    path: str | Path, resources: Path | None = None
) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The manifest, encoder arrays and head arrays of a model file, all checked; a file that is not
    a usable fine-tuned encoder is a ``QEInputError`` naming it."""
    with reading_model_archive(path, "fine-tuned encoder"), zipfile.ZipFile(path) as archive:
        return _read(archive, resources)


def _read(archive: zipfile.ZipFile, resources: Path | None) -> tuple[dict, dict, dict]:
    infos = {info.filename: info for info in archive.infolist()}
    manifest = read_manifest(archive, FORMAT, VERSION)
    check_number(manifest.get("label_mean"), "label_mean")
    check_number(manifest.get("label_std"), "label_std", low=1e-12)
    hidden = manifest.get("head_hidden")
    if isinstance(hidden, bool) or not isinstance(hidden, int) or not 0 <= hidden <= MAX_HIDDEN:
        raise BadModel(f"head_hidden is not an integer from 0 to {MAX_HIDDEN}")
    if not isinstance(manifest.get("base_model"), str):
        raise BadModel("manifest.json names no base_model")
    names = manifest.get("encoder_arrays")
    shapes = base_shapes(resources)
    if not isinstance(names, list) or not all(isinstance(n, str) and n in shapes for n in names):
        raise BadModel("encoder_arrays is not a list of the encoder's weight names")
    expected = {f"encoder/{n}.npy": shapes[n] for n in names}
    expected |= {f"head/{n}.npy": shape for n, shape in head_shapes(hidden).items()}
    if set(infos) != {"manifest.json", *expected}:
        raise BadModel(f"members differ from {sorted(expected)} and manifest.json")
    arrays = {}
    for member, shape in expected.items():
        if infos[member].file_size > math.prod(shape) * _F4.itemsize + _NPY_HEADER:
            raise BadModel(f"{member} is larger than a float32 array of shape {shape}")
        with archive.open(member) as handle:
            value = np.lib.format.read_array(handle, allow_pickle=False)
        arrays[member] = check_array(value, member, _F4, shape, finite=True)
    encoder = {n: arrays[f"encoder/{n}.npy"] for n in names}
    head = {n: arrays[f"head/{n}.npy"] for n in head_shapes(hidden)}
    return manifest, encoder, head


class FinetunedEncoder:
    """A saved fine-tuned encoder, scored with numpy: ``score(src, mt)`` gives one label per pair."""

    def __init__(
        self,
        manifest: dict[str, Any],
        encoder: dict[str, np.ndarray],
        head: dict[str, np.ndarray],
        *,
        resources: Path | None = None,
        blas_threads: int = 1,
    ):
        root = resources or resource_dir()
        installed = model_id(root)
        if manifest["base_model"] != installed:
            raise QEInputError(
                f"the encoder was fine-tuned from {manifest['base_model']}, the installed one is {installed}"
            )
        self.manifest = manifest
        self.head = {name: value.astype(np.float64) for name, value in head.items()}
        self.model = UseModel(root, weights=encoder, blas_threads=blas_threads)

    @classmethod
    def load(cls, path: str | Path, *, resources: Path | None = None) -> FinetunedEncoder:
        """Read and check a model file written by ``save_finetuned``."""
        manifest, encoder, head = read_finetuned(path, resources)
        return cls(manifest, encoder, head, resources=resources)

    def score(self, src: list[str], mt: list[str]) -> np.ndarray:
        """The predicted label of each (source, MT) pair, in the training labels' units."""
        if len(src) != len(mt):
            raise QEInputError(f"{len(src)} source sentences but {len(mt)} translations")
        u = self.model.encode(src).astype(np.float64)
        v = self.model.encode(mt).astype(np.float64)
        # row by row: a pair's score must not depend on the batch it came in (BLAS blocks a matrix
        # product by its number of rows), as the vectors do not
        scores = np.empty(len(src), dtype=np.float64)
        for row, pair in enumerate(head_input(u, v)):
            if "w1" in self.head:
                pair = np.tanh(pair @ self.head["w1"] + self.head["b1"])
            scores[row] = (pair @ self.head["w"])[0] + self.head["b"][0]
        return scores * self.manifest["label_std"] + self.manifest["label_mean"]


_LOADED: dict[str, FinetunedEncoder] = {}
"""The models this process has read, by path: a worker process reads each file once."""


def score_in_process(path: str, src: list[str], mt: list[str]) -> np.ndarray:
    """Scores from this process's copy of the model file at ``path`` (read and checked on first use)."""
    model = _LOADED.get(path)
    if model is None:
        model = _LOADED[path] = FinetunedEncoder.load(path)
    return model.score(src, mt)
