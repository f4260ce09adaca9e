"""Speed of the "second opinion" engines on the 2,254 WMT12 pairs (train + test), one worker.

Each part is one function taking the pairs and returning its timings:

- ``mt2``: Apertium eng-spa through ``qe.resources.mt2`` on all source sentences, from a cold
  translation cache (a temporary directory; pipeline start included), then again from the warm
  cache; beside it, in the same run, the ``apertium -u eng-spa`` command on the same sentences in
  one batch (the pipe must not be slower).
- ``spelling``: ``spelling_stats`` on every pair (source en_US, MT es_ES) with freshly loaded
  dictionaries and empty memos (loading included); the Moses tokens are made beforehand, as the
  feature families share them.
- ``embeddings``: the 4,508 sources and MT sentences through the package's own ``encode`` (one
  process, its defaults) and through ``qe.embeddings`` with two workers; ``min_cosine`` compares
  the vectors (see ``benchmarks/encoder_speed.py``).

Usage: python benchmarks/second_opinion_speed.py [--data-dir DIR] [--parts mt2,spelling,embeddings]
Prints ``{"mt2": {"pairs_per_second": ...}, "spelling": {"pairs_per_second": ...}, "embeddings":
{"sentences_per_second", "package_sentences_per_second", "speedup", "min_cosine", ...}}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.data import load_registered, resolve_data_dir  # noqa: E402


@dataclass
class Pairs:
    """The sentence pairs every part runs on."""

    src: list[str]
    mt: list[str]


def _rate(pairs: int, seconds: float) -> float:
    return round(pairs / seconds, 1)


def mt2_part(data: Pairs) -> dict:
    """Apertium eng-spa: the pipe from a cold cache, from the warm cache, and the batch command."""
    from qe.resources.mt2 import Apertium, close_all

    n = len(data.src)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        engine = Apertium("eng-spa", cache_dir=tmp)
        engine.translate(data.src)
        cold = time.perf_counter() - start
        close_all()
        start = time.perf_counter()
        Apertium("eng-spa", cache_dir=tmp).translate(data.src)
        warm = time.perf_counter() - start
        text = "".join(" ".join(s.split()) + "\n" for s in data.src)
        start = time.perf_counter()
        subprocess.run(["apertium", "-u", "eng-spa"], input=text, capture_output=True, text=True, check=True)
        batch = time.perf_counter() - start
    return {
        "pairs": n,
        "seconds": round(cold, 3),
        "pairs_per_second": _rate(n, cold),
        "warm_cache_pairs_per_second": _rate(n, warm),
        "batch_command_seconds": round(batch, 3),
        "batch_command_pairs_per_second": _rate(n, batch),
    }


def spelling_part(data: Pairs) -> dict:
    """Misspelled-word counts of both sides of every pair, dictionaries loaded inside the timing."""
    from qe.resources.spelling import SpellChecker, spelling_stats
    from qe.text.processing import TextConfig, TextProcessor

    src_tokens = TextProcessor(TextConfig("en", style="moses", case="keep")).tokenize_many(data.src)
    mt_tokens = TextProcessor(TextConfig("es", style="moses", case="keep")).tokenize_many(data.mt)
    n = len(data.src)
    start = time.perf_counter()
    en, es = SpellChecker("en"), SpellChecker("es")
    for src, mt in zip(src_tokens, mt_tokens, strict=True):
        spelling_stats(src, mt, en, es)
    seconds = time.perf_counter() - start
    return {"pairs": n, "seconds": round(seconds, 3), "pairs_per_second": _rate(n, seconds)}


def embeddings_part(data: Pairs) -> dict:
    """The sentence encoder on the sources and MT of every pair: the package's own ``encode`` in
    one process against ours with two workers (``benchmarks/encoder_speed.py``), same run."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from encoder_speed import compare_encoders

    result, _ = compare_encoders(data.src + data.mt)
    return result


PARTS: dict[str, Callable[[Pairs], dict]] = {
    "mt2": mt2_part,
    "spelling": spelling_part,
    "embeddings": embeddings_part,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="data directory (default $QE_DATA_DIR)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated ({', '.join(PARTS)})")
    args = parser.parse_args()
    names = [name for name in args.parts.split(",") if name]
    unknown = [name for name in names if name not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)} (known: {', '.join(PARTS)})")
    data_dir = resolve_data_dir(args.data_dir)
    train = load_registered("wmt12-en-es", "train", data_dir)
    test = load_registered("wmt12-en-es", "test", data_dir)
    data = Pairs(src=train.src + test.src, mt=train.mt + test.mt)
    print(json.dumps({name: PARTS[name](data) for name in names}))


if __name__ == "__main__":
    main()
