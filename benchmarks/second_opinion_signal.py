"""How much the "second opinion" engines say about quality: Pearson r with the WMT12 effort labels.

On the 1,832 training pairs: sentence chrF (sacrebleu) of the MT output against Apertium's
translation of the source, and the share of misspelled MT words (``spelling_stats``: Moses tokens,
case kept; numbers, punctuation and words also found in the source not counted). Information for
the feature families that will use these engines; the translation cache is the default one.

Usage: python benchmarks/second_opinion_signal.py [--data-dir DIR]
Prints ``{"pairs": 1832, "chrf_vs_apertium": {"pearson_r": ..., "mean": ...}, "mt_misspelled_share": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.data import load_registered, resolve_data_dir  # noqa: E402
from qe.resources.mt2 import Apertium  # noqa: E402
from qe.resources.spelling import spelling_stats  # noqa: E402
from qe.text.processing import TextConfig, TextProcessor  # noqa: E402


def summary(values: list[float], labels: np.ndarray) -> dict:
    r, p = pearsonr(values, labels)
    mean = float(np.mean(values))
    return {"pearson_r": round(float(r), 4), "p_value": float(f"{p:.2g}"), "mean": round(mean, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="data directory (default $QE_DATA_DIR)")
    args = parser.parse_args()
    from sacrebleu.metrics import CHRF

    train = load_registered("wmt12-en-es", "train", resolve_data_dir(args.data_dir))
    labels = np.asarray(train.labels, dtype=float)
    second = Apertium("eng-spa").translate(train.src)
    chrf = CHRF()
    chrf_scores = [chrf.sentence_score(mt, [ref]).score for mt, ref in zip(train.mt, second, strict=True)]
    src_tokens = TextProcessor(TextConfig("en", style="moses", case="keep")).tokenize_many(train.src)
    mt_tokens = TextProcessor(TextConfig("es", style="moses", case="keep")).tokenize_many(train.mt)
    stats = [spelling_stats(s, t, "en", "es") for s, t in zip(src_tokens, mt_tokens, strict=True)]
    result = {
        "pairs": len(labels),
        "chrf_vs_apertium": summary(chrf_scores, labels),
        "mt_misspelled_share": summary([s["mt_misspelled_share"] for s in stats], labels),
        "mt_misspelled_count": summary([float(s["mt_misspelled"]) for s in stats], labels),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
