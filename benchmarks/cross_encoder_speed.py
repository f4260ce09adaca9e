"""The e5 cross-encoder's numpy scoring, each pair alone through the padded network against the packed
scorer (``qe.embeddings.e5rows``, a pair's own rows at a time): one JSON dict.

A toy model file like ``tests/test_crossencoder_member.py``'s ``toy_model`` but with 4 trained layers
(the base network's layers 8-11 moved by seeded noise, as training would leave them) and a seeded tanh
head of 256 units (the default; its weights scaled by one over the square root of their fan-in so
that the tanh is not saturated and a change in the vectors shows in the scores) is written and
loaded with ``CrossEncoderModel.load``. It scores the first ``--pairs`` MLQE-PE en-de dev pairs
(default 500) with the implementation before (``per_pair_pooled``: each pair alone through
``E5Network.mean_pooled``, one BLAS thread, pairs on the threads) and the current one
(``CrossEncoderModel.pooled``: ``qe.embeddings.e5rows``), both with the same float64 head, on 1 and 2
threads: ``--repeats`` runs of each (default 3), old and new interleaved (the machine may be shared:
compare the two, not the absolute numbers), medians of pairs per second of wall time and of the
process's CPU time, the load average before and after.

Then it checks: the largest difference between the two implementations' scores and pooled vectors
(and each's Pearson with the dev labels), and that a pair's score is the same bit for bit
(``np.array_equal``) alone, in the order given, shuffled, and in batches of 1, 3, 7 and 64, on 1 and
2 threads, over the en-de pairs and the first ``--zh-pairs`` en-zh dev pairs (default 300).

``--saved FILE ...`` also scores the whole MLQE-PE DA dev split of each saved model's languages (its
manifest's) with both implementations (1 thread): the largest score difference and each's dev
Pearson, under ``"saved"``.

Usage: python benchmarks/cross_encoder_speed.py [--pairs N] [--zh-pairs N] [--repeats N]
       [--data-dir DIR] [--no-check] [--saved FILE ...]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.data import load_registered  # noqa: E402
from qe.embeddings.e5crossfile import CrossEncoderModel, pair_sequences, save_cross, shared_encoder  # noqa: E402
from qe.embeddings.e5encoder import E5Encoder  # noqa: E402
from qe.embeddings.e5net import E5Network, layer_params  # noqa: E402
from qe.infra.workers import blas_threads  # noqa: E402

DEFAULT_DATA_DIR = "/work/shared/data"
TOP_LAYERS = 4
HEAD_HIDDEN = 256
BATCHES = (1, 3, 7, 64)


def toy_model(encoder: E5Encoder, seed: int = 0) -> tuple[list, dict, dict]:
    """4 trained layers (the base ones moved by seeded noise) and a seeded tanh head (``save_cross``)."""
    rng = np.random.default_rng(seed)
    depth = len(encoder.network.layers)
    layers = [
        {
            name: (value + 0.01 * rng.standard_normal(value.shape)).astype(np.float32)
            for name, value in layer_params(encoder.network, index).items()
        }
        for index in range(depth - TOP_LAYERS, depth)
    ]
    width = encoder.network.hidden
    head = {
        "w1": (rng.standard_normal((width, HEAD_HIDDEN)) / np.sqrt(width)).astype(np.float32),
        "b1": (0.1 * rng.standard_normal(HEAD_HIDDEN)).astype(np.float32),
        "w": (rng.standard_normal((HEAD_HIDDEN, 1)) / np.sqrt(HEAD_HIDDEN)).astype(np.float32),
        "b": rng.standard_normal(1).astype(np.float32),
    }
    manifest = {
        "base_model": encoder.model_id,
        "head_hidden": HEAD_HIDDEN,
        "label_mean": 0.3,
        "label_std": 2.0,
    }
    return layers, head, manifest


def per_pair_pooled(network: E5Network, seqs: Sequence[Sequence[int]], threads: int) -> np.ndarray:
    """The implementation before: each pair alone through ``mean_pooled`` (one BLAS thread), pairs on
    ``threads`` threads at once."""
    out = np.empty((len(seqs), network.hidden), dtype=np.float32)

    def run(row: int) -> None:
        out[row] = network.mean_pooled([seqs[row]])[0]

    with blas_threads(1):
        if threads == 1 or len(seqs) < 2:
            for row in range(len(seqs)):
                run(row)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(run, range(len(seqs))))
    return out


def with_threads(model: CrossEncoderModel, threads: int) -> CrossEncoderModel:
    """The same model scoring on ``threads`` threads (a copy of its encoder; the arrays shared)."""
    encoder = copy.copy(model.encoder)
    encoder.threads = threads
    out = copy.copy(model)
    out.encoder = encoder
    return out


def old_scores(model: CrossEncoderModel, src: Sequence[str], mt: Sequence[str]) -> np.ndarray:
    """Scores from text as the implementation before computed them."""
    seqs = pair_sequences(model.encoder, src, mt)
    return model.head_scores(per_pair_pooled(model.network, seqs, model.encoder.threads))


def timings(model: CrossEncoderModel, src: list[str], mt: list[str], repeats: int) -> dict:
    """Pairs per second (wall and CPU) of the old and the new scoring, interleaved, on 1 and 2 threads."""
    runs: dict = {"old": {}, "new": {}}
    for threads in (1, 2):
        scorer = with_threads(model, threads)
        calls: dict[str, Callable[[], np.ndarray]] = {
            "old": lambda s=scorer: old_scores(s, src, mt),
            "new": lambda s=scorer: s.score(src, mt),
        }
        for rep in range(repeats):
            for name in ("old", "new") if rep % 2 == 0 else ("new", "old"):
                load = os.getloadavg()[0]
                wall, cpu = time.perf_counter(), time.process_time()
                calls[name]()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                runs[name].setdefault(str(threads), []).append(
                    {"wall": len(src) / wall, "cpu": len(src) / cpu, "load": [load, os.getloadavg()[0]]}
                )
    out: dict = {"pairs_per_second": {}, "pairs_per_cpu_second": {}, "runs_pairs_per_second": {}, "load": {}}
    for name, by_threads in runs.items():
        for key, field in (("pairs_per_second", "wall"), ("pairs_per_cpu_second", "cpu")):
            out[key][name] = {
                t: round(statistics.median(r[field] for r in rs), 1) for t, rs in by_threads.items()
            }
        out["runs_pairs_per_second"][name] = {
            t: [round(r["wall"], 1) for r in rs] for t, rs in by_threads.items()
        }
        out["load"][name] = {
            t: [[round(v, 2) for v in r["load"]] for r in rs] for t, rs in by_threads.items()
        }
    out["speedup"] = {
        t: round(out["pairs_per_second"]["new"][t] / out["pairs_per_second"]["old"][t], 2) for t in ("1", "2")
    }
    return out


def batch_independent(model: CrossEncoderModel, src: list[str], mt: list[str]) -> dict:
    """Whether every pair's score is the same bit for bit alone, in order, shuffled and in batches of
    ``BATCHES``, on 1 and 2 threads; the ways that differ from the first, if any."""
    order = np.random.default_rng(7).permutation(len(src))
    reference = None
    differ = []
    for threads in (1, 2):
        scorer = with_threads(model, threads)
        ways = {
            "in order": scorer.score(src, mt),
            "shuffled": _unshuffled(scorer.score([src[i] for i in order], [mt[i] for i in order]), order),
        }
        for size in BATCHES:  # a batch of 1 is each pair alone
            ways[f"batches of {size}"] = np.concatenate(
                [scorer.score(src[a : a + size], mt[a : a + size]) for a in range(0, len(src), size)]
            )
        for way, scores in ways.items():
            if reference is None:
                reference = scores
            elif not np.array_equal(scores, reference):
                differ.append(f"{way}, {threads} threads")
    return {"batch_independent": not differ, "differ": differ}


def saved_model(path: Path, encoder: E5Encoder, data_dir: Path) -> dict:
    """A saved model scored by both implementations on its language pair's DA dev split."""
    model = with_threads(CrossEncoderModel.load(path, encoder), 1)
    pair = "-".join(model.manifest["languages"])
    dev = load_registered(f"mlqe-da/{pair}", "dev", data_dir)
    src, mt, labels = list(dev.src), list(dev.mt), np.asarray(dev.labels, dtype=np.float64)
    old, new = old_scores(model, src, mt), model.score(src, mt)
    return {
        "path": str(path),
        "dev": f"mlqe-da/{pair}",
        "pairs": len(src),
        "max_abs_score_diff": float(np.abs(old - new).max()),
        "dev_pearson": {
            name: round(float(np.corrcoef(scores, labels)[0, 1]), 6)
            for name, scores in (("old", old), ("new", new))
        },
    }


def _unshuffled(scores: np.ndarray, order: np.ndarray) -> np.ndarray:
    out = np.empty_like(scores)
    out[order] = scores
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--zh-pairs", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("QE_DATA_DIR", DEFAULT_DATA_DIR))
    parser.add_argument("--no-check", action="store_true", help="time only")
    parser.add_argument("--saved", nargs="*", default=[], help="saved .qxenc models to compare on dev")
    args = parser.parse_args()
    dev = load_registered("mlqe-da/en-de", "dev", Path(args.data_dir))
    src, mt = list(dev.src[: args.pairs]), list(dev.mt[: args.pairs])
    labels = np.asarray(dev.labels[: args.pairs], dtype=np.float64)
    encoder = shared_encoder()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "toy.qxenc"
        save_cross(path, *toy_model(encoder))
        model = CrossEncoderModel.load(path, encoder)
    tokens = [len(s) for s in pair_sequences(encoder, src, mt)]
    model.score(src[:8], mt[:8])  # warm-up
    old_scores(model, src[:8], mt[:8])
    result: dict = {
        "pairs": len(src),
        "mean_tokens_per_pair": round(float(np.mean(tokens)), 1),
        "top_layers": TOP_LAYERS,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }
    result |= timings(model, src, mt, args.repeats)
    if not args.no_check:
        one = with_threads(model, 1)
        old, new = old_scores(one, src, mt), one.score(src, mt)
        seqs = pair_sequences(encoder, src, mt)
        old_pooled = per_pair_pooled(model.network, seqs, 1)
        result["max_abs_score_diff"] = float(np.abs(old - new).max())
        result["max_abs_pooled_diff"] = float(np.abs(old_pooled - one.pooled(src, mt)).max())
        result["pearson_with_labels"] = {
            name: round(float(np.corrcoef(scores, labels)[0, 1]), 6)
            for name, scores in (("old", old), ("new", new))
        }
        zh = load_registered("mlqe-da/en-zh", "dev", Path(args.data_dir))
        check_src, check_mt = src + list(zh.src[: args.zh_pairs]), mt + list(zh.mt[: args.zh_pairs])
        result |= batch_independent(model, check_src, check_mt)
        result["checked_pairs"] = len(check_src)
    if args.saved:
        result["saved"] = [saved_model(Path(path), encoder, Path(args.data_dir)) for path in args.saved]
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
