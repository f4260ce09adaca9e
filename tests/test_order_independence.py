"""A pair's features are a function of the pair and the resources alone.

200 WMT12 test pairs through ``qe features`` with every family that reads text (the pseudo-references
and back-translations from the bundle's Apertium member, the embeddings with their pseudo-reference
cosines), each run a new process: in order and shuffled, one job and two (chunks of other sizes), from
an empty cache and from a warm one, and among 100 other pairs. Every value agrees to 1e-12.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import write_lines
from tests.helpers.bundles import WMT12_CONFIG, needs_kenlm

FAMILIES = "surface,baseline17,lm,ibm1,linguistic,edits,pseudoref,spelling,embeddings"
SETTINGS = ("pseudoref.backtranslation=true", "embeddings.pseudo_ref=true", "embeddings.projections=2")
PAIRS = 200

pytestmark = [pytest.mark.data, pytest.mark.slow, needs_kenlm]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from qe.bundle import build_bundle

    root = tmp_path_factory.mktemp("wmt12-bundle")
    build_bundle(WMT12_CONFIG, root / "bundle", data_dir=data_dir, progress=False, token_cache_dir=root / "t")
    return root / "bundle"


def features(
    bundle: Path, src: list[str], mt: list[str], folder: Path, cache: Path, *options: str
) -> np.ndarray:
    """``qe features`` in a new process on these pairs, with ``QE_CACHE_DIR=cache``: the table's values."""
    folder.mkdir(parents=True, exist_ok=True)
    write_lines(folder / "src", src)
    write_lines(folder / "mt", mt)
    sets = [part for setting in SETTINGS for part in ("--set", setting)]
    command = [
        sys.executable,
        "-m",
        "qe",
        "features",
        "--src",
        str(folder / "src"),
        "--mt",
        str(folder / "mt"),
    ]
    command += [
        "--resources",
        str(bundle),
        "--families",
        FAMILIES,
        *sets,
        "--out",
        str(folder / "out.parquet"),
    ]
    env = {**os.environ, "QE_CACHE_DIR": str(cache)}
    done = subprocess.run([*command, "--quiet", *options], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return pd.read_parquet(folder / "out.parquet").to_numpy(dtype=float)


def test_features_do_not_depend_on_order_jobs_chunks_cache_or_company(bundle, data_dir, tmp_path):
    test_set = data_dir / "wmt12-qe" / "test_set"
    src = (test_set / "source.eng").read_text(encoding="utf-8").splitlines()
    mt = (test_set / "target_system.spa").read_text(encoding="utf-8").splitlines()
    others = list(range(PAIRS, PAIRS + 100))
    shuffled = random.Random(12).sample(range(PAIRS), PAIRS)
    mixed = random.Random(13).sample(list(range(PAIRS)) + others, PAIRS + len(others))

    def run(name: str, order: list[int], cache: str, *options: str) -> np.ndarray:
        """The rows of the 200 pairs, in their own order, from a run on ``order``."""
        table = features(bundle, [src[i] for i in order], [mt[i] for i in order], tmp_path / name,
                         tmp_path / cache, *options)  # fmt: skip
        rows = {pair: row for pair, row in zip(order, table, strict=True)}
        return np.vstack([rows[pair] for pair in range(PAIRS)])

    ordered = run("ordered", list(range(PAIRS)), "cache-a")
    assert ordered.shape[1] > 200 and np.isfinite(ordered).all()
    two_jobs = ("--jobs", "2", "--chunk-size")
    runs = {
        "shuffled, cold": run("shuffled", shuffled, "cache-b"),
        "two jobs, chunks of 60, cold": run("jobs", list(range(PAIRS)), "cache-c", *two_jobs, "60"),
        "shuffled, two jobs, chunks of 45, warm": run("warm", shuffled, "cache-a", *two_jobs, "45"),
        "among 100 other pairs, cold": run("mixed", mixed, "cache-d"),
    }
    columns = pd.read_parquet(tmp_path / "ordered" / "out.parquet").columns
    for name, values in runs.items():
        worst = np.abs(values - ordered).max(axis=0)
        assert worst.max() <= 1e-12, (name, {c: w for c, w in zip(columns, worst, strict=True) if w > 1e-12})
