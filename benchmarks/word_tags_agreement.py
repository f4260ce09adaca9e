"""How far tags derived from src / mt / pe (+ the shipped src-mt alignments) agree with MLQE-PE's
shipped ``.tags`` and ``.source_tags``, for the seven pairs.

Per pair and tag kind (MT words, gaps, source words): the share of tags equal, BAD-F1 (the shipped
tags as gold) and Matthews' correlation; and the share of sentences whose three tag lines are all
identical. Prints one JSON dict (docs/word-level.md holds the table).

    python benchmarks/word_tags_agreement.py [--data-dir DIR] [--splits train dev test20]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qe.data.sets.wmt20_mlqe import MLQE_PAIRS, MLQE_SPLITS
from qe.words.derive import derive_tags
from qe.words.files import load_word_level
from qe.words.tags import BAD

KINDS = ("mt", "gaps", "src")


def scores(counts: dict[str, int]) -> dict[str, float]:
    """Share equal, BAD-F1 and MCC from the confusion counts (tp/fp/fn/tn, BAD the positive class)."""
    tp, fp, fn, tn = (counts[k] for k in ("tp", "fp", "fn", "tn"))
    total = tp + fp + fn + tn
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    mcc = (tp * tn - fp * fn) / denominator if denominator else 0.0
    return {"equal": round((tp + tn) / total, 4), "bad_f1": round(f1, 4), "mcc": round(mcc, 4), "tags": total}


def agreement(pair: str, splits: list[str], data_dir: str | None) -> dict:
    """The agreement of one pair over the given splits."""
    counts = {kind: dict.fromkeys(("tp", "fp", "fn", "tn"), 0) for kind in KINDS}
    same = sentences = 0
    for split in splits:
        data = load_word_level(pair, split, data_dir)
        for k in range(len(data)):
            ours = derive_tags(data.src[k], data.mt[k], data.post_edits[k], data.alignments[k])
            shipped = {"mt": data.mt_tags[k], "gaps": data.gap_tags[k], "src": data.src_tags[k]}
            for kind in KINDS:
                box = counts[kind]
                for a, b in zip(getattr(ours, kind), shipped[kind], strict=True):
                    box[("t" if a == b else "f") + ("p" if a == BAD else "n")] += 1
            same += all(getattr(ours, kind) == shipped[kind] for kind in KINDS)
            sentences += 1
    return {
        **{kind: scores(counts[kind]) for kind in KINDS},
        "sentences_identical": round(same / sentences, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--splits", nargs="+", default=list(MLQE_SPLITS), choices=MLQE_SPLITS)
    args = parser.parse_args()
    result = {pair: agreement(pair, args.splits, args.data_dir) for pair in MLQE_PAIRS}
    print(json.dumps({"splits": args.splits, "pairs": result}, indent=1))


if __name__ == "__main__":
    main()
