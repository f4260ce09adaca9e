"""Saved models: a skops file (loading executes no code) holding the estimator and what it needs."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import skops.io as sio

from qe import __version__
from qe.errors import QEInputError
from qe.io import atomic_write

# Types a model file may contain; anything else is refused before loading.
TRUSTED_PREFIXES = ("sklearn.", "numpy.", "scipy.", "qe.learners.")


def save_model(path: str | Path, estimator: Any, feature_names: list[str], manifest: dict[str, Any]) -> None:
    """Write the estimator, its input feature names and a JSON manifest into one skops file, atomically."""
    payload = {
        "estimator": estimator,
        "feature_names": list(feature_names),
        "manifest_json": json.dumps(manifest),
    }
    with atomic_write(path, "wb") as handle:
        handle.write(sio.dumps(payload))


def _untrusted(types: list[str]) -> list[str]:
    return [name for name in types if not name.startswith(TRUSTED_PREFIXES)]


def load_model(path: str | Path) -> tuple[Any, list[str], dict[str, Any]]:
    """Load ``(estimator, feature_names, manifest)``, refusing files with types outside the allowlist."""
    path = Path(path)
    if not path.is_file():
        raise QEInputError("model file not found", path)
    try:
        types = sio.get_untrusted_types(file=path)
    except (zipfile.BadZipFile, json.JSONDecodeError, KeyError, OSError, ValueError, EOFError) as exc:
        raise QEInputError(f"not a readable qe model file (truncated or corrupt?): {exc}", path) from None
    refused = _untrusted(types)
    if refused:
        raise QEInputError(f"model file holds untrusted types, refusing to load: {', '.join(refused)}", path)
    try:
        payload = sio.load(path, trusted=types)
    except Exception as exc:  # skops raises many types for corrupt content
        raise QEInputError(f"cannot load model file: {exc}", path) from None
    if not isinstance(payload, dict) or not {"estimator", "feature_names", "manifest_json"} <= set(payload):
        raise QEInputError("not a qe model file (missing estimator / feature names / manifest)", path)
    return payload["estimator"], list(payload["feature_names"]), json.loads(payload["manifest_json"])


class QEModel:
    """A trained predictor: feature families and settings, resource bundle reference, estimator.

    ``QEModel.load(path).predict(src_sentences, mt_sentences)`` computes the features the model
    was trained on from raw text and returns scores clipped to the training label range.
    """

    def __init__(self, estimator: Any, feature_names: list[str], manifest: dict[str, Any]) -> None:
        self.estimator = estimator
        self.feature_names = feature_names
        self.manifest = manifest

    @classmethod
    def load(cls, path: str | Path) -> QEModel:
        """Load a model file, refusing untrusted types and models of another major version."""
        estimator, names, manifest = load_model(path)
        theirs = str(manifest.get("qe_version", "0")).split(".")[0]
        ours = __version__.split(".")[0]
        if theirs != ours:
            raise QEInputError(
                f"model was written by qe {manifest.get('qe_version')}; this is qe {__version__}", path
            )
        return cls(estimator, names, manifest)

    def save(self, path: str | Path) -> None:
        """Write the model (skops) atomically."""
        save_model(path, self.estimator, self.feature_names, self.manifest)

    def open_resources(self, override: str | Path | None = None) -> Any:
        """The resource bundle the model was trained with, checked by its signature."""
        reference = self.manifest.get("resources")
        if not reference:
            return None
        from qe.resources.bundle import open_bundle

        bundle = open_bundle(override or reference["path"])
        if bundle.signature() != reference["signature"]:
            raise QEInputError(
                f"resource bundle {bundle.signature()} differs from the one the model was trained with "
                f"({reference['signature']}); rebuild it with the same config or pass the right --resources",
                bundle.path,
            )
        return bundle

    def make_families(self, inputs: dict[str, Any] | None = None) -> list[Any]:
        """The model's feature families with their prediction-time settings; ``inputs`` (by input
        name, e.g. a decoder log) are routed to the families that declare them."""
        if self.manifest.get("feature_sets"):
            raise QEInputError(
                "this model was trained on precomputed feature tables "
                f"({', '.join(self.manifest['feature_sets'])}), so it cannot score raw text; "
                "train it on feature families instead"
            )
        from qe.experiment import split_settings
        from qe.features.registry import make_families, route_inputs

        settings = split_settings(self.manifest.get("family_settings", {}), "predict")
        _, settings = route_inputs(self.manifest["families"], inputs or {}, settings)
        return make_families(self.manifest["families"], settings)

    def features(
        self,
        src: list[str],
        mt: list[str],
        *,
        ids: list[str] | None = None,
        resources: Any = None,
        families: list[Any] | None = None,
        extra: dict[str, list[Any]] | None = None,
        origins: dict[str, tuple[str, int]] | None = None,
        n_jobs: int = 1,
        progress: bool = False,
        whole: bool = True,
    ) -> Any:
        """The model's input feature table for raw sentence pairs (``families``: reuse made ones;
        ``extra``: line inputs such as a pseudo-reference, by input name; ``origins``: where they
        were read, for error messages; ``whole=False``: one chunk of a longer input)."""
        from qe.features.extractor import extract_features

        families = self.make_families() if families is None else families
        ids = [str(i) for i in range(len(src))] if ids is None else ids
        table = extract_features(
            families,
            ids,
            src,
            mt,
            resources=resources,
            extra=extra,
            origins=origins,
            n_jobs=n_jobs,
            progress=progress,
            whole=whole,
        )
        missing = [name for name in self.feature_names if name not in table.columns]
        if missing:
            raise QEInputError(f"extracted features lack {', '.join(missing[:5])} that the model needs")
        return table[self.feature_names]

    def score(self, table: Any) -> np.ndarray:
        """Scores for a feature table from :meth:`features`, clipped to the training label range."""
        scores = np.asarray(self.estimator.predict(table.to_numpy()), dtype=np.float64)
        bounds = self.manifest.get("label_range")
        return np.clip(scores, *bounds) if bounds else scores

    def predict(
        self,
        src: list[str],
        mt: list[str],
        *,
        resources: Any = None,
        n_jobs: int = 1,
        progress: bool = False,
    ) -> np.ndarray:
        """Scores for sentence pairs, clipped to the training label range."""
        if len(src) != len(mt):
            raise QEInputError(f"{len(src)} source sentences but {len(mt)} translations")
        if not src:
            raise QEInputError("no sentences to score")
        if resources is None:
            resources = self.open_resources()
        return self.score(self.features(src, mt, resources=resources, n_jobs=n_jobs, progress=progress))
