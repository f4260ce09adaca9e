"""Run feature families over a dataset in batches (joblib), with progress, into one named table."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs
from tqdm import tqdm

from qe.features.base import FeatureFamily, Pairs
from qe.infra.expected import shown_duration
from qe.infra.workers import exit_with_parent_everywhere
from qe.resources.crossfit import split_by_fold


def _extract_batch(
    families: list[FeatureFamily], batch: Pairs, resources: Any
) -> tuple[np.ndarray, list[float]]:
    """The families' columns for one batch (sharing its annotations) and each family's seconds.

    Training pairs of a cross-fitted bundle are scored with their fold's tables
    (``qe.resources.crossfit``): the batch is cut by fold once and every family runs on each piece.
    """
    reads_bundle = any(family.needs_bundle for family in families)
    seconds = [0.0] * len(families)
    out: np.ndarray | None = None
    for rows, part, part_resources in split_by_fold(batch, resources, reads_bundle):
        columns = []
        for k, family in enumerate(families):
            start = time.perf_counter()
            columns.append(family.extract(part, part_resources if family.needs_bundle else resources))
            seconds[k] += time.perf_counter() - start
        values = np.hstack(columns)
        if rows is None:
            return values, seconds
        if out is None:
            out = np.zeros((len(batch), values.shape[1]), dtype=values.dtype)
        out[rows] = values
    assert out is not None
    return out, seconds


PILOT_PAIRS = (20, 60)
"""The first pairs of a long extraction, done here before the rest: the first 20 pay for loading
models and tables, the next 60 time a pair (their values are those the workers would give)."""
PILOT_MIN_PAIRS = 1000


def _pilot(
    families: list[FeatureFamily], pairs: Pairs, resources: Any, batch_size: int, n_jobs: int
) -> tuple[list[tuple[np.ndarray, list[float]]], str]:
    """The pilot pairs' parts and ``expected to take about ... (timed on the first 80)``: the time of a
    pair times the rest, shared by the workers, each of which loads what the first pairs loaded."""
    warm, timed = PILOT_PAIRS
    started = time.perf_counter()
    first = _extract_batch(families, pairs.slice(0, warm), resources)
    loading = time.perf_counter() - started
    started = time.perf_counter()
    second = _extract_batch(families, pairs.slice(warm, warm + timed), resources)
    per_pair = (time.perf_counter() - started) / timed
    rest = len(pairs) - warm - timed
    workers = max(1, min(effective_n_jobs(n_jobs), math.ceil(rest / batch_size)))
    seconds = per_pair * rest / workers + (loading if workers > 1 else 0.0)
    return [first, second], f"expected to take {shown_duration(seconds)} (timed on the first {warm + timed})"


def extract_features(
    families: list[FeatureFamily],
    pairs: Pairs,
    *,
    resources: Any = None,
    batch_size: int = 1000,
    n_jobs: int = 1,
    progress: bool = True,
    whole: bool = True,
    bind: bool = True,
) -> pd.DataFrame:
    """A table with one row per pair and one ``family.feature`` column per feature.

    The families of a batch share its annotations (tokens, tags: ``qe.features.annotations``), so
    the first family that needs one pays for it; ``table.attrs["family_seconds"]`` holds each
    family's extraction seconds, summed over the batches.

    ``whole=False`` marks one chunk of a longer input: the families' ``check_ids`` (does a decoder
    log cover exactly the dataset?) is then the caller's, once, with every id. ``bind=False``: the
    caller has bound the families to ``resources`` (once per process).
    """
    exit_with_parent_everywhere()  # workers end with this process, even if it is killed
    for family in families:
        if bind:
            family.bind(resources)
        if whole:
            family.check_ids(pairs.ids)
    columns = [column for family in families for column in family.column_names()]
    batches = [pairs.slice(i, i + batch_size) for i in range(0, len(pairs), batch_size)]
    for batch in batches:  # a text too long for a family is refused before any family runs
        for family in families:
            family.check_lengths(batch)
    label = "features " + ",".join(family.name for family in families)
    parts: list[tuple[np.ndarray, list[float]]] = []
    if progress and len(pairs) >= PILOT_MIN_PAIRS:
        parts, expected = _pilot(families, pairs, resources, batch_size, n_jobs)
        print(f"{label}: {len(pairs):,} pairs, {expected}", file=sys.stderr, flush=True)
        done = sum(len(part) for part, _ in parts)
        batches = [pairs.slice(i, i + batch_size) for i in range(done, len(pairs), batch_size)]
    parallel = Parallel(n_jobs=n_jobs, return_as="generator")
    results = parallel(delayed(_extract_batch)(families, batch, resources) for batch in batches)
    parts += list(tqdm(results, total=len(batches), desc=label, unit="batch", disable=not progress))
    values = np.vstack([part for part, _ in parts]) if parts else np.empty((0, len(columns)))
    table = pd.DataFrame(values, columns=columns)
    table.attrs["family_seconds"] = {
        family.name: sum(seconds[k] for _, seconds in parts) for k, family in enumerate(families)
    }
    return table
