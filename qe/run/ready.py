"""Build and register the ready-made models of :mod:`qe.model.catalog`: the bundle when it is missing, then
the record's experiment config run as ``qe run`` runs it, then its model and a manifest (figures and
signature read from the run) put into the models directory.

Layout of the models directory: ``resources/<bundle>/`` (bundles), ``runs/<name>/`` (the run
directories, for ``qe report`` / ``qe compare``), ``<name>.skops`` and ``<name>.json``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qe import __version__
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, sha256_file, write_text_atomic
from qe.learners.progress import say
from qe.model.catalog import (
    MANIFEST_FORMAT,
    REPO,
    manifest_path,
    model_path,
    models_dir,
    read_manifest,
    record,
)


def _config_file(relative: str) -> Path:
    path = REPO / relative
    if not path.is_file():
        raise QEInputError("not found: ready-made models are built from the source checkout's configs", path)
    return path


def config_digest(name: str) -> str:
    """The sha256 of the record's experiment and bundle configs together: a change rebuilds the model."""
    entry = record(name)
    files = [entry.config] + ([entry.bundle_config] if entry.bundle_config else [])
    both = "".join(sha256_file(_config_file(path)) for path in files)
    return hashlib.sha256(both.encode()).hexdigest()


def is_current(name: str, folder: str | Path | None = None) -> bool:
    """Whether ``name`` is built from its configs as they are now, and its model file is the one built."""
    manifest = read_manifest(name, folder)
    return (
        manifest is not None
        and manifest.get("config_sha256") == config_digest(name)
        and manifest.get("model_sha256") == sha256_file(model_path(name, folder))
    )


def build_ready(
    name: str,
    folder: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    jobs: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Build the catalogue model ``name`` into the models directory ``folder`` and return its manifest.

    The bundle (``folder/resources/<bundle name>``) is built only when missing; the run goes to
    ``folder/runs/<name>`` (replacing an earlier run of qe's); the model is copied to
    ``folder/<name>.skops`` and the manifest written last, so a model counts as built only when both
    are there. ``jobs`` overrides the configs' parallel jobs (results are the same).
    """
    from qe.bundle import build_bundle, read_bundle_config
    from qe.run.config import apply_overrides, load_config
    from qe.run.pipeline import run_experiment

    entry = record(name)
    folder = models_dir(folder)
    config_file = _config_file(entry.config)
    config = apply_overrides(load_config(config_file), data_dir, jobs)
    bundle_dir, bundle_seconds = None, None
    if entry.bundle_config is not None:
        bundle_file = _config_file(entry.bundle_config)
        bundle_dir = folder / "resources" / read_bundle_config(bundle_file).name
        config = config.replace(features=dataclasses.replace(config.features, resources=str(bundle_dir)))
    started = time.perf_counter()
    if bundle_dir is not None and not (bundle_dir / "manifest.json").is_file():
        say(f"{name}: building the resource bundle {bundle_dir}")
        build_bundle(bundle_file, bundle_dir, data_dir=data_dir, n_jobs=jobs or 2, progress=progress)
        bundle_seconds = round(time.perf_counter() - started, 1)
    say(f"{name}: running {entry.config}")
    run_dir = folder / "runs" / name
    ran = time.perf_counter()
    metrics = run_experiment(config, run_dir, overwrite=True, progress=progress, inputs=[config_file])
    run_seconds = round(time.perf_counter() - ran, 1)
    target = model_path(name, folder)
    with (run_dir / "model.skops").open("rb") as source, atomic_write(target, "wb") as handle:
        shutil.copyfileobj(source, handle)
    manifest = {
        "format": MANIFEST_FORMAT,
        **entry.describe(),
        "training_rows": (metrics.get("fit_on") or {}).get("rows", metrics["cv"]["n"]),
        "test": {key: metrics["test"][key] for key in entry.figures},
        "signature": metrics["signature"],
        "config": entry.config,
        "bundle_config": entry.bundle_config,
        "config_sha256": config_digest(name),
        "bundle": None if bundle_dir is None else str(bundle_dir.resolve()),
        "run": str(run_dir.resolve()),
        "model_sha256": sha256_file(target),
        "build_seconds": {"bundle": bundle_seconds, "run": run_seconds},
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "qe_version": __version__,
    }
    write_text_atomic(manifest_path(name, folder), json.dumps(manifest, indent=2) + "\n")
    return manifest
