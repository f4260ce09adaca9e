"""Benchmark: stream a generated 1,000,000-line Moses n-best list through ``summarize_nbest``.

The n-best list (1,000 sentences x 1,000 hypotheses of about 25 words, Moses 2.1+ score layout with
lexicalized reordering) is generated into a temporary directory; it is then read in a fresh
subprocess so that the peak resident set size (``resource.getrusage``) is that of the reading
process alone. Prints one JSON object: ``{"lines", "seconds", "lines_per_second", "peak_rss_mb"}``.

    python benchmarks/nbest_stream.py [--lines N] [--per-sentence K]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def generate(path: Path, lines: int, per_sentence: int, seed: int = 12) -> None:
    """Write a realistic n-best list: each sentence's hypotheses are edits of one base sentence."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like word frequencies
    written = 0
    sent_id = 0
    with path.open("w", encoding="utf-8") as out:
        while written < lines:
            base = rng.choices(vocab, weights, k=rng.randint(18, 32))
            replacements = rng.choices(vocab, weights, k=4 * per_sentence)
            block = []
            total = -rng.uniform(20, 60)
            for h in range(min(per_sentence, lines - written)):
                words = list(base)
                for k in range(rng.randint(0, 4)):
                    words[rng.randrange(len(words))] = replacements[4 * h + k]
                if h % 3 == 1:
                    del words[rng.randrange(len(words))]
                n = len(words)
                scores = (
                    f"LexicalReordering0= {-rng.random() * 4:.5f} 0 0 {-rng.random() * 3:.5f} 0 0 "
                    f"Distortion0= {-rng.randint(0, 12)} LM0= {-rng.uniform(40, 120):.4f} "
                    f"WordPenalty0= -{n} PhrasePenalty0= {rng.randint(4, 14)} "
                    f"TranslationModel0= {-rng.uniform(2, 20):.5f} {-rng.uniform(2, 20):.5f} "
                    f"{-rng.uniform(2, 20):.5f} {-rng.uniform(2, 20):.5f}"
                )
                block.append(f"{sent_id} ||| {' '.join(words)}  ||| {scores} ||| {total - h * 0.01:.4f}\n")
            out.writelines(block)
            written += len(block)
            sent_id += 1


def child(path: str) -> None:
    """Read the n-best list and report lines, seconds and this process's peak RSS as JSON."""
    sys.path.insert(0, str(REPO))
    from qe.decoder.nbest import summarize_nbest

    start = time.perf_counter()
    index = summarize_nbest(path)
    seconds = time.perf_counter() - start
    lines = sum(stats.size for stats in index.stats.values())
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
    print(json.dumps({"lines": lines, "seconds": seconds, "peak_rss_mb": peak_kb / 1024}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--per-sentence", type=int, default=1000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="qe-nbest-bench-") as tmp:
        path = Path(tmp) / "bench.nbest"
        generate(path, args.lines, args.per_sentence)
        run = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
    measured = json.loads(run.stdout)
    if measured["lines"] != args.lines:
        raise SystemExit(f"read {measured['lines']} lines, expected {args.lines}")
    result = {
        "lines": measured["lines"],
        "seconds": round(measured["seconds"], 3),
        "lines_per_second": round(measured["lines"] / measured["seconds"]),
        "peak_rss_mb": round(measured["peak_rss_mb"], 1),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
