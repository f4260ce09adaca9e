"""Where a served model's time goes, per pair: one JSON dict.

It loads ``--model`` as a ``qe serve`` worker does (``qe.serve.worker.prepare_worker_process``: one BLAS
thread, no disk caches, memos capped at 2,000 entries; then the families warmed and one pair
scored), and scores ``--pairs`` distinct English-Spanish pairs (``benchmarks/extraction_scaling.py``'s,
after 50 kept for the warm-up) in batches of ``--batch`` pairs (4: what one of two workers scores at a
time with eight clients waiting), as the worker scores a batch of queued requests. It prints
``{"batch", "pairs", "wall_ms_per_pair", "cpu_ms_per_pair", "families_ms", "predict_ms", "rest_ms",
"start_seconds"}``: the wall and CPU time per pair of the whole scoring (the CPU of this process only:
Apertium's stages run in processes of their own, so their time shows in the wall time), each family's
extraction time per pair (wall, as ``qe.features.extractor`` measures it), the estimator's prediction
(CPU) and what no part accounts for; ``start_seconds``: loading, warming and the first pair (wall).

A ``--profile FILE`` writes a cProfile of the scoring for ``python -m pstats``.

Usage: python benchmarks/serve_cost.py [--model FILE] [--batch N] [--pairs N] [--data-dir DIR]
       [--profile FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from qe.serve.worker import prepare_worker_process  # noqa: E402

WARM_UP = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(REPO / "models" / "wmt12-en-es.skops"))
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args()
    prepare_worker_process(2000)  # before numpy is loaded, as in a worker

    from extraction_scaling import distinct_pairs

    from qe.features.base import Pairs
    from qe.model.scoring import ScoringContext

    src, mt = distinct_pairs(args.pairs + WARM_UP, args.data_dir)
    n = min(args.pairs, len(src) - WARM_UP)
    begin = time.perf_counter()
    context = ScoringContext.open(args.model)
    context.warm()
    context.score(Pairs.of(src[:1], mt[:1]))
    start_seconds = time.perf_counter() - begin
    src, mt = src[WARM_UP : WARM_UP + n], mt[WARM_UP : WARM_UP + n]

    predict_seconds = 0.0
    checked_scores = context.model.checked_scores

    def timed_scores(table, first_line=1):
        nonlocal predict_seconds
        started = time.process_time()
        try:
            return checked_scores(table, first_line)
        finally:
            predict_seconds += time.process_time() - started

    context.model.checked_scores = timed_scores
    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    families: dict[str, float] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    for first in range(0, n, args.batch):
        batch = Pairs.of(src[first : first + args.batch], mt[first : first + args.batch])
        scored = context.score(batch, keep_features=True)
        for name, seconds in scored.features.attrs["family_seconds"].items():
            families[name] = families.get(name, 0.0) + seconds
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if profile is not None:
        profile.disable()
        profile.dump_stats(args.profile)

    def per_pair(seconds: float) -> float:
        return round(1000 * seconds / n, 2)

    report = {
        "batch": args.batch,
        "pairs": n,
        "wall_ms_per_pair": per_pair(wall),
        "cpu_ms_per_pair": per_pair(cpu),
        "families_ms": {name: per_pair(seconds) for name, seconds in families.items()},
        "predict_ms": per_pair(predict_seconds),
        "rest_ms": per_pair(wall - sum(families.values()) - predict_seconds),
        "start_seconds": round(start_seconds, 1),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
