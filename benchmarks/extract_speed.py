"""Feature-extraction speed of every registered family on the 2,254 WMT12 pairs, and bundle build time.

Each family that can run with default settings and the WMT12 resource bundle is timed on all
pairs in one batch, after its resources have been loaded (a warm-up on two pairs loads them;
tokenization of the timed sentences is included). Families that cannot run here (e.g. decoder
features without Moses logs, a missing optional dependency) are skipped.

``resource_build_seconds`` is the time to build the WMT12 bundle from
configs/resources-wmt12-en-es.toml into a temporary directory (with an empty token cache), or,
with --bundle, the build time recorded in that bundle's manifest.

Usage: python benchmarks/extract_speed.py [--bundle DIR] [--data-dir DIR] [--families a,b]
Prints ``{"<family>": {"pairs", "seconds", "pairs_per_second"}, ..., "resource_build_seconds": s}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.bundle import ResourceBundle, build_bundle  # noqa: E402
from qe.data import load_registered, resolve_data_dir  # noqa: E402
from qe.features.base import Pairs  # noqa: E402
from qe.features.registry import registered_families  # noqa: E402

CONFIG = REPO / "configs" / "resources-wmt12-en-es.toml"


def time_family(cls, batch: Pairs, bundle: ResourceBundle) -> dict | None:
    """Time one family; None if it cannot run here."""
    try:
        family = cls()
        warm = Pairs(ids=batch.ids[:2], src=batch.src[:2], mt=batch.mt[:2])
        family.extract(warm, bundle)
        start = time.perf_counter()
        values = family.extract(batch, bundle)
        seconds = time.perf_counter() - start
    except Exception as exc:  # a family that cannot run here is skipped, with the reason on stderr
        print(f"skipping {cls.name}: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return None
    if values.shape[0] != len(batch):
        print(f"skipping {cls.name}: returned {values.shape[0]} rows", file=sys.stderr)
        return None
    return {
        "pairs": len(batch),
        "seconds": round(seconds, 3),
        "pairs_per_second": round(len(batch) / seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", type=Path, help="an existing WMT12 bundle (skips the build)")
    parser.add_argument("--data-dir", help="data directory (default $QE_DATA_DIR)")
    parser.add_argument("--families", help="comma-separated family names (default: all registered)")
    args = parser.parse_args()
    data_dir = resolve_data_dir(args.data_dir)
    warnings.filterwarnings("ignore")

    with tempfile.TemporaryDirectory() as tmp:
        if args.bundle is not None:
            bundle = ResourceBundle(args.bundle)
            build_seconds = float(bundle.manifest["build_seconds"])
        else:
            start = time.perf_counter()
            bundle = build_bundle(
                CONFIG,
                Path(tmp) / "bundle",
                data_dir=data_dir,
                progress=False,
                token_cache_dir=Path(tmp) / "tok",
            )
            build_seconds = time.perf_counter() - start

        train = load_registered("wmt12-en-es", "train", data_dir)
        test = load_registered("wmt12-en-es", "test", data_dir)
        batch = Pairs(ids=train.ids + test.ids, src=train.src + test.src, mt=train.mt + test.mt)

        registry = registered_families()
        names = args.families.split(",") if args.families else sorted(registry)
        result: dict = {}
        for name in names:
            if name not in registry:
                print(f"skipping {name}: not registered", file=sys.stderr)
                continue
            timing = time_family(registry[name], batch, bundle)
            if timing is not None:
                result[name] = timing
    result["resource_build_seconds"] = round(build_seconds, 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
