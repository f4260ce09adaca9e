"""Saved models: a skops file (loading executes no code) holding the estimator and what it needs."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import skops.io as sio

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
