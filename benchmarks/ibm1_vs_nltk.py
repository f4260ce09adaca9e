"""Benchmark: our vectorized IBM Model 1 against nltk 3.10's IBMModel1 on 5,000 en-es pairs.

Trains both with 5 EM iterations on the first pairs of newstest2011 + newstest2013 (lowercased,
Moses-tokenized) and prints one JSON object: max_abs_diff (over all entries of our table),
nltk_seconds, qe_seconds, speedup. nltk's time includes the Viterbi alignment of the corpus
that its constructor always runs after training (a small share); ours is one ``IBM1Table.train``
call: vocabulary coding, building the sparse co-occurrence index, EM. Times are process CPU
seconds by default (both implementations are single-threaded; CPU time is not inflated by other
jobs on a shared machine); ``--clock wall`` uses wall-clock time instead.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

from nltk.translate import AlignedSent, IBMModel1
from sacremoses import MosesTokenizer

from qe.words.ibm1 import NULL, IBM1Table

CORPORA = {
    "newstest": [("newstest-en-es/newstest2011.en", "newstest-en-es/newstest2011.es"),
                 ("newstest-en-es/newstest2013.en", "newstest-en-es/newstest2013.es")],
    "tatoeba": [("tatoeba-en-es/tatoeba-test-v2021-08-07.eng", "tatoeba-en-es/tatoeba-test-v2021-08-07.spa")],
}  # fmt: skip


def load_pairs(data_dir: Path, corpus: str, n_pairs: int) -> tuple[list[list[str]], list[list[str]]]:
    """The first ``n_pairs`` non-empty pairs of ``corpus``, lowercased and Moses-tokenized."""
    tok_en, tok_es = MosesTokenizer(lang="en"), MosesTokenizer(lang="es")
    src: list[list[str]] = []
    tgt: list[list[str]] = []
    for en_name, es_name in CORPORA[corpus]:
        en_lines = (data_dir / en_name).read_text(encoding="utf-8").splitlines()
        es_lines = (data_dir / es_name).read_text(encoding="utf-8").splitlines()
        for en, es in zip(en_lines, es_lines, strict=True):
            if len(src) == n_pairs:
                return src, tgt
            if en.strip() and es.strip():
                src.append(tok_en.tokenize(en.lower(), escape=False))
                tgt.append(tok_es.tokenize(es.lower(), escape=False))
    if len(src) < n_pairs:
        sys.exit(f"only {len(src)} pairs available in {corpus}, {n_pairs} requested")
    return src, tgt


def main() -> None:
    """Parse arguments, train both models, print the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = Path(os.environ.get("QE_DATA_DIR", "/work/shared/data"))
    parser.add_argument("--data-dir", type=Path, default=default_dir)
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="newstest")
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1, help="time each side this many times, keep the best")
    parser.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="process CPU time (default; both sides are single-threaded, robust to a busy machine) or wall",
    )
    args = parser.parse_args()

    src, tgt = load_pairs(args.data_dir, args.corpus, args.pairs)
    # Both "src" words and nltk's "mots" are the conditioning side: t(tgt | src).
    bitext = [AlignedSent(t, s) for s, t in zip(src, tgt, strict=True)]

    # Ours first, each timing after a full garbage collection, so that neither run pays for
    # collecting the other's objects. The best of --repeat runs is reported for both.
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    qe_seconds = nltk_seconds = float("inf")
    for _ in range(args.repeat):
        gc.collect()
        start = clock()
        table = IBM1Table.train(src, tgt, iterations=args.iterations)
        qe_seconds = min(qe_seconds, clock() - start)
    for _ in range(args.repeat):
        gc.collect()
        start = clock()
        reference = IBMModel1(bitext, args.iterations)
        nltk_seconds = min(nltk_seconds, clock() - start)

    ref_table = reference.translation_table
    n_ref = sum(len(row) for row in ref_table.values())  # before lookups, which add default entries
    max_abs_diff = 0.0
    for s in table.src_vocab:
        key = None if s == NULL else s
        for t, p in table.translations(s).items():
            max_abs_diff = max(max_abs_diff, abs(p - ref_table[t][key]))
    if n_ref != len(table):
        print(f"warning: nltk has {n_ref} entries, ours {len(table)}", file=sys.stderr)

    print(
        json.dumps(
            {
                "max_abs_diff": max_abs_diff,
                "nltk_seconds": round(nltk_seconds, 3),
                "qe_seconds": round(qe_seconds, 4),
                "speedup": round(nltk_seconds / qe_seconds, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
