"""Benchmark: greedy forward selection with 5-fold CV SVR on WMT12 training, 1 vs 2 joblib workers.

Candidates (63): the 17 official WMT12 baseline features, their signed logs
(sign(x) * log(1 + |x|)) and squares, plus 12 ratios / differences of them (listed in
``derived_features``). Labels: the 1832 training effort scores. The learner is the default
``make_learner("svr")`` pipeline (standardization + RBF SVR, default parameters), scored by mean
absolute error over 5 shuffled folds; a feature is added only if it lowers the CV MAE by more
than ``--tol``, up to ``--max-features``. The search runs once with 1 worker and once with 2
(``--backend dask`` runs them on a Dask LocalCluster of 1 and 2 workers, or on ``--scheduler``),
checks that both select the same features, and prints one JSON object:
``{"n_candidates", "seconds_1job", "seconds_2jobs", "speedup", "selected"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import pandas as pd

from qe.data import load_registered, load_registered_features, resolve_data_dir
from qe.infra.errors import QEInputError
from qe.selection import SequentialSelector, parallel_backend_context

P = "bf17."
DEFAULT_DATA_DIR = "/work/shared/data"


def derived_features(base: pd.DataFrame) -> pd.DataFrame:
    """The 63 candidates: official features, signed logs, squares, and 12 ratios / differences."""
    out = {name: base[name] for name in base.columns}
    for name in base.columns:
        short = name.removeprefix(P)
        values = base[name].to_numpy(dtype=np.float64)
        out[f"log.{short}"] = np.sign(values) * np.log1p(np.abs(values))
        out[f"sq.{short}"] = values**2
    src_tok, mt_tok = base[P + "src_tokens"], base[P + "mt_tokens"]
    src_lm, mt_lm = base[P + "src_lm_logprob"], base[P + "mt_lm_logprob"]
    out["ratio.mt_src_tokens"] = mt_tok / src_tok
    out["diff.mt_src_tokens"] = mt_tok - src_tok
    out["ratio.src_lm_per_token"] = src_lm / src_tok
    out["ratio.mt_lm_per_token"] = mt_lm / mt_tok
    out["diff.src_mt_lm"] = src_lm - mt_lm
    out["diff.lm_per_token"] = src_lm / src_tok - mt_lm / mt_tok
    out["ratio.src_punct_per_token"] = base[P + "src_punctuation"] / src_tok
    out["ratio.mt_punct_per_token"] = base[P + "mt_punctuation"] / mt_tok
    out["diff.mt_src_punct"] = base[P + "mt_punctuation"] - base[P + "src_punctuation"]
    out["ratio.ibm1_translations_per_token"] = base[P + "src_ibm1_translations_p0.2"] / src_tok
    out["diff.src_1gram_q4_q1"] = base[P + "src_1gram_q4_share"] - base[P + "src_1gram_q1_share"]
    out["diff.src_2gram_q4_q1"] = base[P + "src_2gram_q4_share"] - base[P + "src_2gram_q1_share"]
    return pd.DataFrame(out)


def run(X: pd.DataFrame, y: np.ndarray, args: argparse.Namespace, n_jobs: int) -> tuple[float, list]:
    """Time one forward selection with ``n_jobs`` workers; return (seconds, selected features)."""
    selector = SequentialSelector(
        direction="forward", scoring="MAE", cv=args.cv, tol=args.tol, max_features=args.max_features
    )
    load = os.getloadavg()[0]
    with parallel_backend_context(args.backend, args.scheduler, n_jobs=n_jobs):
        start = time.perf_counter()
        selector.fit(X, y)
        seconds = time.perf_counter() - start
    # The machine may be shared: the load average tells how far the timings can be trusted.
    print(
        f"n_jobs={n_jobs}: {seconds:.1f} s, {selector.n_evaluations_} candidate subsets, "
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
    )
    return seconds, selector.selected_features()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help=f"data directory (default: $QE_DATA_DIR, else {DEFAULT_DATA_DIR})")
    parser.add_argument("--max-features", type=int, default=15)
    parser.add_argument("--tol", type=float, default=1e-3, help="minimum CV MAE gain to add a feature")
    parser.add_argument("--cv", type=int, default=5)
    parser.add_argument("--backend", default="loky", choices=["loky", "dask"])
    parser.add_argument("--scheduler", help="Dask scheduler address (default: start a LocalCluster)")
    args = parser.parse_args()
    try:
        data_dir = resolve_data_dir(args.data_dir or os.environ.get("QE_DATA_DIR") or DEFAULT_DATA_DIR)
        base = load_registered_features("wmt12-en-es", "wmt12-official-bf17", "train", data_dir)
        y = load_registered("wmt12-en-es", "train", data_dir).labels
        X = derived_features(base)
        seconds_1, selected_1 = run(X, y, args, 1)
        seconds_2, selected_2 = run(X, y, args, 2)
    except QEInputError as exc:
        sys.exit(f"error: {exc}")
    if selected_1 != selected_2:
        sys.exit(f"error: 1 and 2 workers selected different features: {selected_1} vs {selected_2}")
    result = {
        "n_candidates": int(X.shape[1]),
        "seconds_1job": round(seconds_1, 2),
        "seconds_2jobs": round(seconds_2, 2),
        "speedup": round(seconds_1 / seconds_2, 3),
        "selected": selected_2,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
