"""Benchmark: the config `qe init` writes, on up to 15,000 pooled MLQE-PE HTER training pairs (issues 21, 31).

Training data as a new user pooled it in issue 21: MLQE-PE en-de post-editing train + dev (8,000
pairs) and the first en-zh training pairs (``--rows``, default 13,442; 15,000 takes every en-zh
training pair: issue 31's time budget), with their post-edits; test: en-de test20 (1,000 pairs). The
pooled target side mixes German and Chinese: a measure of time and scale, not of a pair. The files
are written to ``--work DIR`` (outside the repository; nothing of the data directory is copied into it).

``--sizes N,N,...`` (the evidence for ``qe init``'s threshold): for each N, the first N rows of the
pooled set in a fixed shuffled order, ``surface`` features (what `qe init --light` configures), and
the two learners `qe init --light` can write, each as `qe run` fits it: the exact SVR with `qe init`'s
48-candidate grid and ``svr_fast`` with its default grid, 5-fold CV on MAE (same folds), refit on the N rows.
Prints per N and learner the CV MAE of the chosen candidate, the CV Pearson of its out-of-fold
predictions (same folds, chosen parameters), the seconds of the search, and test20 Pearson (for
information: the test set chooses nothing).

Without ``--sizes`` (the "must show"): ``qe init`` (its default: every family the pair supports
here, a bundle from the training split, the average learner) then ``qe run`` as subprocesses on the
``--rows`` pairs, wall time (resources included) and the run's test Pearson; with ``--exact-run DIR``, that
run is compared with a run of the exact SVR grid (the config `qe init` wrote before, run separately: it takes
hours).

Usage:
  python benchmarks/init_scale.py [--work DIR] [--rows 15000] [--sizes 1000,2000,4000] [--exact-run DIR]
      [--n-jobs 2] [--data-dir DIR]
Prints one JSON line (``load``: the 1/5/15-minute load average at the start and the end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from qe.features.base import Pairs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EN_DE, EN_ZH = "mlqe-pe/post-editing/en-de", "mlqe-pe/post-editing/en-zh"
EN_DE_ROWS, FROM_EN_ZH = 8000, 5442  # 8,000 en-de + 5,442 en-zh = issue 21's 13,442 pairs
MAX_ROWS = 15_000  # 8,000 en-de + every en-zh training pair


def write_pooled(data: Path, work: Path, rows: int = EN_DE_ROWS + FROM_EN_ZH) -> None:
    """train.{src,mt,pe,hter} (en-de train + dev, then the first en-zh training pairs up to ``rows``)
    and test.* (en-de test20)."""
    work.mkdir(parents=True, exist_ok=True)
    for role in ("src", "mt", "pe", "hter"):
        parts = [
            (data / f"{EN_DE}-train/train.{role}").read_text(encoding="utf-8").splitlines(),
            (data / f"{EN_DE}-dev/dev.{role}").read_text(encoding="utf-8").splitlines(),
            (data / f"{EN_ZH}-train/train.{role}").read_text(encoding="utf-8").splitlines(),
        ]
        lines = [line for part in parts for line in part][:rows]
        (work / f"train.{role}").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        if role != "pe":
            test = (data / f"{EN_DE}-test20/test20.{role}").read_text(encoding="utf-8")
            (work / f"test.{role}").write_text(test, encoding="utf-8")


def qe(*argv: str, cwd: Path) -> float:
    """Run ``qe ARGV`` in ``cwd``; its wall time in seconds."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "qe", *argv], cwd=cwd, env=env, check=True)
    return time.perf_counter() - started


def must_show(work: Path, exact_run: Path | None, n_jobs: int | None) -> dict:
    """``qe init`` + ``qe run`` on the pooled files (beside an exact-grid run, if given)."""
    files = ["--src", "train.src", "--mt", "train.mt", "--labels", "train.hter", "--post-edits", "train.pe"]
    files += ["--test-src", "test.src", "--test-mt", "test.mt", "--test-labels", "test.hter"]
    init = qe("init", *files, "--src-lang", "en", "--tgt-lang", "de", "--label-range", "0", "1",
              "--out", "pooled.toml", "--force", cwd=work)  # fmt: skip
    jobs = ["--jobs", str(n_jobs)] if n_jobs else []
    run = qe("run", "pooled.toml", "--output-dir", "runs/pooled", "--overwrite", *jobs, cwd=work)
    metrics = json.loads((work / "runs/pooled/metrics.json").read_text())
    result = {
        "rows": metrics["cv"]["n"],
        "init_seconds": round(init, 1),
        "run_seconds": round(run, 1),
        "learner": metrics["signature"].split("|learner:")[1].split("|")[0],
        "test_pearson": round(metrics["test"]["Pearson"], 4),
        "cv_pearson": round(metrics["cv"]["Pearson"], 4),
    }
    if exact_run is not None:
        exact = json.loads((exact_run / "metrics.json").read_text())
        result["exact"] = {
            "learner": exact["signature"].split("|learner:")[1].split("|")[0],
            "seconds": exact["seconds"],
            "test_pearson": round(exact["test"]["Pearson"], 4),
            "cv_pearson": round(exact["cv"]["Pearson"], 4),
        }
        result["test_pearson_gap"] = round(result["test_pearson"] - result["exact"]["test_pearson"], 4)
    return result


def sizes(work: Path, counts: list[int], n_jobs: int) -> dict:
    """CV evidence for the threshold: both learners `qe init` can write, at each training size."""
    import numpy as np
    from scipy.stats import pearsonr
    from sklearn.base import clone
    from sklearn.model_selection import KFold, cross_val_predict

    from qe.data import load_parallel
    from qe.doctor.init_configs import svr_grid
    from qe.features.cache import extract_cached
    from qe.features.registry import make_families

    def features(split: str) -> tuple:
        data = load_parallel(work / f"{split}.src", work / f"{split}.mt", work / f"{split}.hter")
        families = make_families(["surface"], {"surface": {"src_lang": "en", "tgt_lang": "de"}})
        table, _ = extract_cached(
            families, Pairs.of(data.src, data.mt, ids=data.ids), dataset=f"init-scale-{split}", progress=False
        )
        return table.to_numpy(dtype=np.float64), np.asarray(data.labels, dtype=np.float64)

    from qe.learners.factory import make_learner

    x_all, y_all = features("train")
    x_test, y_test = features("test")
    order = np.random.default_rng(0).permutation(len(y_all))
    found: dict = {}
    for count in counts:
        x, y = x_all[order[:count]], y_all[order[:count]]
        folds = KFold(5, shuffle=True, random_state=42)
        learners = {
            "svr": make_learner("svr", grid=svr_grid(y), n_jobs=n_jobs),
            "svr_fast": make_learner("svr_fast", grid="default", n_jobs=n_jobs),
        }
        found[count] = {}
        for name, search in learners.items():
            started = time.perf_counter()
            search.fit(x, y)
            seconds = time.perf_counter() - started
            oof = cross_val_predict(clone(search.best_estimator_), x, y, cv=folds, n_jobs=n_jobs)
            found[count][name] = {
                "cv_mae": round(-float(search.best_score_), 4),
                "cv_pearson": round(float(pearsonr(oof, y)[0]), 4),
                "search_seconds": round(seconds, 1),
                "test_pearson": round(float(pearsonr(search.predict(x_test), y_test)[0]), 4),
                "params": {
                    k.removeprefix("model__"): float(f"{v:.3g}") for k, v in search.best_params_.items()
                },
            }
            print(json.dumps({count: {name: found[count][name]}}), file=sys.stderr, flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/qe-init-scale"))
    parser.add_argument("--rows", type=int, default=EN_DE_ROWS + FROM_EN_ZH, help="pooled training pairs")
    parser.add_argument("--sizes", help="comma-separated training sizes: the threshold evidence")
    parser.add_argument("--exact-run", type=Path, help="a run directory of the exact SVR grid to compare")
    parser.add_argument("--n-jobs", type=int, default=None, help="default: the config's (qe init: all cores)")
    parser.add_argument("--data-dir", type=Path, default=None, help="default: $QE_DATA_DIR")
    args = parser.parse_args()
    data = args.data_dir or Path(os.environ.get("QE_DATA_DIR", REPO.parent / "shared" / "data"))
    load_start = os.getloadavg()
    if not 1 <= args.rows <= MAX_ROWS:
        raise SystemExit(f"init_scale: --rows takes 1 to {MAX_ROWS:,} (the pooled pairs there are)")
    write_pooled(data, args.work, args.rows)
    if args.sizes:
        counts = [int(n) for n in args.sizes.split(",") if n]
        result: dict = {"sizes": sizes(args.work, counts, args.n_jobs or 2)}
    else:
        result = must_show(args.work, args.exact_run, args.n_jobs)
    result["load"] = {
        "start": [round(v, 2) for v in load_start],
        "end": [round(v, 2) for v in os.getloadavg()],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
