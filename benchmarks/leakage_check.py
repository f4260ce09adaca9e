"""Run a bundle config's leakage check on its corpora without building anything: matches and seconds.

    python benchmarks/leakage_check.py [CONFIG] [--extra newstest-en-es/newstest2012.en]

Paths are relative to the data directory ($QE_DATA_DIR). Prints the exact-only time beside the
exact + near-duplicate time (same run), and every corpus file with matches.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qe.bundle import read_bundle_config
from qe.data import resolve_data_dir
from qe.infra.io import read_text_lines
from qe.resources.leakage import DEFAULT_NEAR_CHRF, check_leakage


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("config", nargs="?", default="configs/resources-wmt12-en-es.toml")
    parser.add_argument("--extra", action="append", default=[], help="another corpus file to check")
    args = parser.parse_args()
    config = read_bundle_config(args.config)
    root = resolve_data_dir()
    files = [
        root / path
        for table in config.corpora.values()
        for side in ("src", "tgt")
        if (path := getattr(table, side)) is not None
    ]
    files += [root / extra for extra in args.extra]
    corpora = [(path, read_text_lines(path)) for path in files]
    eval_files = [root / name for name in config.leakage.eval_files]
    threshold = config.leakage.near_duplicate_chrf
    threshold = DEFAULT_NEAR_CHRF if threshold is None else threshold
    timings = {}
    for label, near in (("exact only", 0.0), (f"exact + near (chrF >= {threshold:g})", threshold)):
        start = time.perf_counter()
        evaluation, overlaps = check_leakage(corpora, eval_files, near)
        timings[label] = time.perf_counter() - start
    lines = sum(len(lines) for _, lines in corpora)
    print(f"{lines} corpus lines in {len(corpora)} files against {len(evaluation)} evaluation lines")
    for label, seconds in timings.items():
        print(f"  {label}: {seconds:.2f} s")
    for overlap in overlaps:
        print(f"{overlap.corpus}: {len(overlap.exact)} exact, {len(overlap.near)} near-duplicate(s)")
        for match in overlap.matches[:5]:
            print(f"    {match.describe()}")
    if not overlaps:
        print("no corpus line copies an evaluation sentence")


if __name__ == "__main__":
    main()
