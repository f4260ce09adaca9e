"""Speed of ``qe predict --words`` with a saved word model: loading the model, reading and checking the
inputs (with the NMT log-probabilities and the source-MT alignments when the model reads them) and
tagging (features and the three classifiers in numpy), for the first ``--pairs`` pairs of MLQE-PE
dev, best of ``--repeats``. One JSON dict on stdout.

    OMP_NUM_THREADS=1 QE_DATA_DIR=... python benchmarks/word_predict_speed.py --model run/model.qwords \\
        [--pair en-de] [--pairs 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qe.data.fetch import resolve_data_dir
from qe.wordmodel.modelfile import load_word_model
from qe.wordmodel.tagging import read_inputs, tag_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--pair", default="en-de")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    root = resolve_data_dir(args.data_dir) / "mlqe-pe"
    xx = args.pair.replace("-", "")
    src = root / "post-editing" / f"{args.pair}-dev" / "dev.src"
    mt = root / "post-editing" / f"{args.pair}-dev" / "dev.mt"
    pieces = root / "direct-assessments" / f"{args.pair}-dev" / "word-probas" / f"mt.dev.{xx}"
    logprobs = root / "direct-assessments" / f"{args.pair}-dev" / "word-probas" / f"word_probas.dev.{xx}"
    links = root / "post-editing" / f"{args.pair}-dev" / "dev.src-mt.alignments"
    best = {"load_s": float("inf"), "read_s": float("inf"), "tag_s": float("inf")}
    for _ in range(args.repeats):
        started = time.perf_counter()
        model = load_word_model(args.model)
        loaded = time.perf_counter()
        nmt = (pieces, logprobs) if model.nmt else (None, None)
        data, word_nmt = read_inputs(model, args.model, src, mt, *nmt, links if model.alignments else None)
        n = min(args.pairs, len(data))
        aligned = None if data.alignments is None else data.alignments[:n]
        data = type(data)(data.src[:n], data.mt[:n], alignments=aligned)
        if word_nmt is not None:
            word_nmt = type(word_nmt)(word_nmt.words[:n], word_nmt.sentence[:n])
        read = time.perf_counter()
        lines = list(tag_lines(model, data, word_nmt))
        tagged = time.perf_counter()
        assert len(lines) == n
        best = {
            "load_s": min(best["load_s"], loaded - started),
            "read_s": min(best["read_s"], read - loaded),
            "tag_s": min(best["tag_s"], tagged - read),
        }
    print(
        json.dumps(
            {
                "pairs": n,
                "nmt": model.nmt,
                "families": [family.name for family in model.featurizer.families],
                **{k: round(v, 3) for k, v in best.items()},
                "pairs_per_s_tagging": round(n / best["tag_s"]),
                "pairs_per_s_read_and_tag": round(n / (best["read_s"] + best["tag_s"])),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
