"""Pearson r with MLQE-PE's z_mean (test20) of every single ``nmt`` feature, for the seven pairs.

Each feature is taken alone, as is (no learning), so the numbers show how much the NMT model's own
token log-probabilities say about quality. ``lp_mean`` (mean with </s>) is the issue's reference
(ro-en 0.647 ... en-de 0.208). Prints a markdown table: that feature, the model's score, and the
best three features by |r| (sign kept). ``--split`` picks another split, ``--label hter`` the
post-editing half (mlqe-pe/<pair>, HTER) instead.

    python benchmarks/nmt_single_features.py [--data-dir DIR] [--split test20] [--label da|hter]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qe.features.base import Pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scipy import stats

from qe.data import load_registered
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS
from qe.features.extractor import extract_features
from qe.features.registry import make_families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--split", default="test20")
    parser.add_argument("--label", choices=["da", "hter"], default="da")
    args = parser.parse_args()
    family = make_families(["nmt"], {})
    print("| pair | lp_mean | model_score | best single features (Pearson r) |")
    print("|---|---|---|---|")
    for pair in MLQE_PAIRS:
        name = f"mlqe-{'da' if args.label == 'da' else 'pe'}/{pair}"
        data = load_registered(name, args.split, args.data_dir)
        table = extract_features(
            family, Pairs.of(data.src, data.mt, extra=data.inputs, ids=data.ids), progress=False
        )
        r = {c.removeprefix("nmt."): stats.pearsonr(table[c], data.labels).statistic for c in table.columns}
        best = sorted(r, key=lambda name: -abs(r[name]))[:3]
        cells = ", ".join(f"`{name}` {r[name]:.3f}" for name in best)
        print(f"| {pair} | {r['lp_mean']:.3f} | {r['model_score']:.3f} | {cells} |")


if __name__ == "__main__":
    main()
