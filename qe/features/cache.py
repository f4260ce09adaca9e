"""Per-family feature cache: one parquet file per (family, settings, resource bundle, sentences).

``extract_cached`` runs ``extract_features`` one family at a time, stores each family's columns
under ``<cache_dir>/<family>/<dataset>-<key>.parquet`` and reuses them when the key matches. The
key hashes everything that changes a value: the family name, its settings and ``signature()``
(after ``bind(bundle)``, so resolved settings such as ``pos="auto"`` count), its column names,
the bundle's ``signature()`` (which changes whenever a member does), the ids, sentences and
extra inputs (``qe.data.digest``: from the digests a run's splits take once, which also make their
fingerprints), a hash of the source file defining the family (editing a family invalidates its
entries), the qe version, ``qe.text.processing.TEXT_VERSION`` and ``CACHE_VERSION``. Code a family calls in
other modules (e.g. resource loaders) is not hashed: pass ``refresh=True`` after changing it.
The extraction time of each family is measured and stored with its columns, so a cache hit
still reports how long the family took to compute. The families missing from the cache are
extracted together, so that they share the annotations of each batch (``qe.features.annotations``:
``lm`` and ``ibm1`` tag each sentence once); the first family that needs an annotation is charged
for it.

Default directory: ``$QE_CACHE_DIR/features``, else ``~/.cache/qe/features``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from qe import __version__
from qe.data.digest import text_digest
from qe.features.base import FeatureFamily, Pairs
from qe.features.extractor import extract_features
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, cache_root, disk_caches_allowed
from qe.text.processing import TEXT_VERSION

log = logging.getLogger(__name__)

CACHE_VERSION = 3
"""Bumped when the cache layout or key changes, or a value changes in code the key does not hash (2: the
data part comes from ``qe.data.digest``; 3: Apertium's translations no longer depend on the sentences
sent before them, ``qe.resources.mt2.PROTOCOL``)."""

_META_KEY = b"qe_feature_cache"


def default_cache_dir() -> Path:
    """``$QE_CACHE_DIR/features`` or ``~/.cache/qe/features``."""
    return cache_root() / "features"


def bundle_signature(resources: Any) -> str:
    """The bundle's ``signature()``, ``none`` without a bundle, else the object's type."""
    if resources is None:
        return "none"
    signature = getattr(resources, "signature", None)
    return str(signature()) if callable(signature) else type(resources).__name__


@functools.lru_cache(maxsize=64)
def _source_hash(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return "unknown"


def family_code_hash(family: FeatureFamily) -> str:
    """A hash of the source file defining the family's class: editing the code invalidates its cache."""
    try:
        path = inspect.getsourcefile(type(family))
    except TypeError:
        path = None
    return _source_hash(path) if path else "unknown"


def family_key(family: FeatureFamily, resources: Any, data_hash: str) -> str:
    """The cache key of one family on one dataset (a hex sha256)."""
    signature = getattr(family, "signature", None)
    payload = {
        "version": CACHE_VERSION,
        "qe": __version__,
        "text_version": TEXT_VERSION,
        "code": family_code_hash(family),
        "family": family.name,
        "settings": family.settings,
        "signature": str(signature()) if callable(signature) else None,
        "columns": family.column_names(),
        "bundle": bundle_signature(resources),
        "data": data_hash,
    }
    text = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label) or "data"


def cache_path(cache_dir: Path, family: str, dataset: str, key: str) -> Path:
    """Where a family's columns for one dataset are stored."""
    return cache_dir / _safe(family) / f"{_safe(dataset)}-{key[:20]}.parquet"


def _read(path: Path, key: str, columns: list[str], n_rows: int) -> tuple[pd.DataFrame, float] | None:
    """The cached table and its recorded extraction seconds, or None if missing or not matching."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
        meta = json.loads((table.schema.metadata or {}).get(_META_KEY, b"{}"))
    except (OSError, ValueError, RecursionError) as exc:
        log.warning("ignoring unreadable feature cache %s (%s)", path, exc)
        return None
    frame = table.to_pandas()
    if meta.get("key") != key or list(frame.columns) != columns or len(frame) != n_rows:
        log.warning("ignoring stale feature cache %s", path)
        return None
    return frame.astype(np.float64), float(meta.get("seconds", 0.0))


def _write(path: Path, frame: pd.DataFrame, key: str, family: str, seconds: float) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = {"key": key, "family": family, "seconds": seconds, "rows": len(frame), "version": CACHE_VERSION}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META_KEY: json.dumps(meta)})
    with atomic_write(path, mode="wb") as handle:
        pq.write_table(table, handle)


def extract_cached(
    families: list[FeatureFamily],
    pairs: Pairs,
    resources: Any = None,
    cache_dir: str | Path | None = None,
    *,
    dataset: str = "data",
    batch_size: int = 1000,
    n_jobs: int = 1,
    progress: bool = True,
    use_cache: bool = True,
    refresh: bool = False,
    bind: bool = True,
    data_hash: str | None = None,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Feature table of all ``families`` (columns in family order) and seconds per family.

    Each family is bound to ``resources`` (``bind=False``: the caller has bound them), then loaded
    from the cache or extracted with ``extract_features`` and stored. ``dataset`` is a readable label
    for the file name only (the sentences are part of the key: ``data_hash``, the caller's
    ``TextDigest.cache_key`` of the pairs' ids, sentences and extra inputs, or computed here).
    ``refresh`` recomputes and overwrites; ``use_cache=False`` neither reads nor writes. The seconds of
    a cached family are those measured when it was computed; ``table.attrs["cache_hits"]`` lists the
    families read from the cache. The pairs' origins (where each input was read) only serve error
    messages.
    """
    names = [family.name for family in families]
    if len(set(names)) != len(names):
        raise QEInputError(f"a feature family is listed twice: {', '.join(names)}")
    use_cache = use_cache and disk_caches_allowed()
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if data_hash is None:
        data_hash = text_digest(pairs.ids, pairs.src, pairs.mt, pairs.extra).cache_key() if use_cache else ""
    frames: dict[str, pd.DataFrame] = {}
    timings: dict[str, float] = {}
    hits: list[str] = []
    missing: list[tuple[FeatureFamily, str, Path | None]] = []
    for family in families:
        if bind:
            family.bind(resources)
        columns = family.column_names()
        key = family_key(family, resources, data_hash) if use_cache else ""
        path = cache_path(root, family.name, dataset, key) if use_cache else None
        cached = _read(path, key, columns, len(pairs)) if path is not None and not refresh else None
        if cached is None:
            missing.append((family, key, path))
            continue
        frames[family.name], timings[family.name] = cached[0], round(cached[1], 3)
        hits.append(family.name)
    if missing:  # extracted together, so that they compute shared annotations (tags) once
        table = extract_features(
            [family for family, _, _ in missing],
            pairs,
            resources=resources,
            batch_size=batch_size,
            n_jobs=n_jobs,
            progress=progress,
            bind=False,
        )
        for family, key, path in missing:
            frame = table[family.column_names()].copy()
            frame.attrs = {}
            seconds = table.attrs["family_seconds"][family.name]
            if path is not None:
                _write(path, frame, key, family.name, seconds)
            frames[family.name], timings[family.name] = frame, round(seconds, 3)
    parts = [frames[family.name].reset_index(drop=True) for family in families]
    timings = {family.name: timings[family.name] for family in families}
    table = pd.concat(parts, axis=1) if parts else pd.DataFrame(index=range(len(pairs)))
    table.attrs["cache_hits"] = hits
    return table, timings
