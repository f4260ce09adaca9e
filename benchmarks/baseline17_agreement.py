"""Agreement of our baseline17 features with the official WMT12 baseline feature values.

For each of the 17 features: Pearson r and the share of rows equal to 4 significant digits, over
the 2,254 WMT12 pairs (training then test), with ``quest_compat=True``. The official values come
from ``wmt12-qe/baseline_features/{training,test}.qe.baseline.tsv`` under the data directory.

Usage: python benchmarks/baseline17_agreement.py [--bundle DIR] [--data-dir DIR] [--set KEY=VALUE ...]
Without --bundle it uses models/resources/wmt12-en-es, or builds the WMT12 bundle in a temporary
directory when that does not exist. Prints one JSON object:
``{"features": {"1": {"name", "pearson", "exact"}, ..., "17": {...}}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.bundle import ResourceBundle, build_bundle  # noqa: E402
from qe.data import load_registered, resolve_data_dir  # noqa: E402
from qe.features.base import Pairs  # noqa: E402
from qe.features.baseline17 import Baseline17  # noqa: E402

DEFAULT_BUNDLE = REPO / "models" / "resources" / "wmt12-en-es"
CONFIG = REPO / "configs" / "resources-wmt12-en-es.toml"


def official_values(data_dir: Path) -> np.ndarray:
    """The official 17 features, training rows then test rows (the trailing empty field dropped)."""
    parts = []
    for split in ("training", "test"):
        path = data_dir / "wmt12-qe" / "baseline_features" / f"{split}.qe.baseline.tsv"
        parts.append(np.loadtxt(path, delimiter="\t", usecols=range(17), ndmin=2))
    return np.vstack(parts)


def same_4_digits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: equal when both are rounded to 4 significant digits."""
    fmt = np.vectorize(lambda x: float(f"{x:.4g}"))
    return fmt(a) == fmt(b)


def pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson r, or None when either column is constant."""
    if np.std(a) == 0 or np.std(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def parse_value(text: str):
    """A --set value: int, float, true/false, or a string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", type=Path, help="resource bundle directory")
    parser.add_argument("--data-dir", help="data directory (default $QE_DATA_DIR)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="baseline17 setting")
    args = parser.parse_args()

    data_dir = resolve_data_dir(args.data_dir)
    settings = {"quest_compat": True}
    for item in args.set:
        key, _, value = item.partition("=")
        settings[key] = parse_value(value)

    with tempfile.TemporaryDirectory() as tmp:
        bundle_dir = args.bundle or DEFAULT_BUNDLE
        if args.bundle is None and not (DEFAULT_BUNDLE / "manifest.json").is_file():
            bundle = build_bundle(
                CONFIG,
                Path(tmp) / "bundle",
                data_dir=data_dir,
                progress=False,
                token_cache_dir=Path(tmp) / "tok",
            )
        else:
            bundle = ResourceBundle(bundle_dir)

        train = load_registered("wmt12-en-es", "train", data_dir)
        test = load_registered("wmt12-en-es", "test", data_dir)
        batch = Pairs(ids=train.ids + test.ids, src=train.src + test.src, mt=train.mt + test.mt)
        family = Baseline17(**settings)
        ours = family.extract(batch, bundle)

    official = official_values(data_dir)
    if official.shape != ours.shape:
        raise SystemExit(f"shape mismatch: ours {ours.shape}, official {official.shape}")
    result = {"features": {}}
    for j, spec in enumerate(family.specs()):
        r = pearson(ours[:, j], official[:, j])
        result["features"][str(j + 1)] = {
            "name": spec.name,
            "pearson": None if r is None else round(r, 4),
            "exact": round(float(same_4_digits(ours[:, j], official[:, j]).mean()), 4),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
