"""Run feature families over a dataset in batches (joblib), with progress, into one named table."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from tqdm import tqdm

from qe.errors import QEInputError
from qe.features.base import FeatureFamily, PairBatch, registered_families
from qe.workers import exit_with_parent_everywhere

# Modules that define the built-in families; each registers itself when imported.
BUILTIN_FAMILY_MODULES = [
    "baseline17",
    "lm",
    "ibm1",
    "surface",
    "pseudoref",
    "linguistic",
    "decoder",
    "edits",
]


def load_builtin_families() -> dict[str, type[FeatureFamily]]:
    """Import every built-in family module that exists and return the registry."""
    for name in BUILTIN_FAMILY_MODULES:
        try:
            importlib.import_module(f"qe.features.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"qe.features.{name}":
                raise
    return registered_families()


def make_families(
    names: Iterable[str], settings: dict[str, dict[str, Any]] | None = None
) -> list[FeatureFamily]:
    """Instantiate families by name with their per-family settings."""
    registry = load_builtin_families()
    settings = settings or {}
    families = []
    for name in names:
        if name not in registry:
            raise QEInputError(f"unknown feature family {name!r} (known: {', '.join(sorted(registry))})")
        families.append(registry[name](**settings.get(name, {})))
    return families


def _extract_batch(families: list[FeatureFamily], batch: PairBatch, resources: Any) -> np.ndarray:
    return np.hstack([family.extract(batch, resources) for family in families])


def extract_features(
    families: list[FeatureFamily],
    ids: list[str],
    src: list[str],
    mt: list[str],
    *,
    resources: Any = None,
    extra: dict[str, list[Any]] | None = None,
    batch_size: int = 1000,
    n_jobs: int = 1,
    progress: bool = True,
) -> pd.DataFrame:
    """A table with one row per pair and one ``family.feature`` column per feature."""
    exit_with_parent_everywhere()  # workers end with this process, even if it is killed
    if not (len(ids) == len(src) == len(mt)):
        raise QEInputError(f"{len(src)} source sentences but {len(mt)} translations")
    extra = extra or {}
    for family in families:
        family.bind(resources)
        family.check_ids(ids)
    columns = [column for family in families for column in family.column_names()]
    starts = range(0, len(src), batch_size)
    batches = [
        PairBatch(
            ids=ids[i : i + batch_size],
            src=src[i : i + batch_size],
            mt=mt[i : i + batch_size],
            extra={key: values[i : i + batch_size] for key, values in extra.items()},
        )
        for i in starts
    ]
    label = "features " + ",".join(family.name for family in families)
    parallel = Parallel(n_jobs=n_jobs, return_as="generator")
    results = parallel(delayed(_extract_batch)(families, batch, resources) for batch in batches)
    parts = list(tqdm(results, total=len(batches), desc=label, unit="batch", disable=not progress))
    values = np.vstack(parts) if parts else np.empty((0, len(columns)))
    return pd.DataFrame(values, columns=columns)
