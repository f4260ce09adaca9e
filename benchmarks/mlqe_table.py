"""The multilingual MLQE-PE table: baseline, nmt and best systems on test20, every pair and label.

Runs ``configs/mlqe/<label>-<pair>-<system>.toml`` (written by ``scripts/mlqe_configs.py``; every
parameter in them was chosen on the dev split, docs/mlqe-log.md) for the seven pairs, DA z_mean
(``da``) and HTER (``hter``): builds a missing resource bundle first (``models/resources/``, about a
minute each), extracts the features through the feature cache, fits each system's learner on the
7,000 training pairs and scores the 1,000 test20 pairs: the numbers ``qe run`` reports under
``test`` (its 5-fold CV on train is left out here, to keep the whole table well under an hour).

Prints JSON: ``{"<pair>": {"da": {"pearson", "spearman", "mae", "rmse", "signature"}, "hter": {...}},
...}`` for the best systems, the same under ``"baseline"`` and ``"nmt"`` (``signature``: what ``qe run``
writes to ``signature.txt`` for that config, so ``benchmarks/reproduce_row.py`` can check a row), the
git commit measured under ``"commit"``, and under ``"lp_mean"`` the test20
Pearson of the NMT model's mean token log-probability used alone (sign flipped for HTER, where a
higher log-probability means fewer edits). ``--markdown`` prints the README table instead, beside
the WMT20 OpenKiwi baseline's published Pearsons and the goals of issue 14. Progress goes to stderr.

    python benchmarks/mlqe_table.py [--markdown] [--labels da,hter] [--pairs ro-en,et-en] [--data-dir DIR]
    python benchmarks/mlqe_table.py --markdown --from table.json   # the table of a saved run, no refit
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# HistGradientBoosting's OpenMP threads slow it down twenty-fold on a machine busy with other work.
os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from qe.config import apply_overrides, load_config  # noqa: E402
from qe.configtypes import ExperimentConfig, thaw  # noqa: E402
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS  # noqa: E402
from qe.learners.factory import describe, make_learner  # noqa: E402
from qe.metrics import evaluate  # noqa: E402
from qe.run.context import RunContext  # noqa: E402
from qe.run.features import build_split  # noqa: E402
from qe.run.fit import refit_with_dev  # noqa: E402
from qe.run.persist import signature  # noqa: E402
from qe.run.splits import label_range  # noqa: E402

CONFIGS = REPO / "configs" / "mlqe"
LABELS = {"da": "da", "hter": "pe"}  # table key -> config / bundle prefix
SYSTEMS = ("baseline", "nmt", "best")
# WMT20 OpenKiwi baseline, Pearson on test20 (TransQuest's README, WMT20 tables; HTER: en-de and en-zh only).
OPENKIWI = {
    "da": {"ro-en": 0.685, "et-en": 0.477, "ne-en": 0.386, "si-en": 0.374, "ru-en": 0.548, "en-de": 0.146,
           "en-zh": 0.168},
    "hter": {"en-de": 0.392, "en-zh": 0.506},
}  # fmt: skip
GOALS = {  # issue 14: test20 Pearson of the best system
    "da": {
        "ro-en": 0.75,
        "et-en": 0.62,
        "ne-en": 0.62,
        "si-en": 0.52,
        "ru-en": 0.62,
        "en-de": 0.30,
        "en-zh": 0.35,
    },
    "hter": {"en-de": 0.45, "en-zh": 0.55},
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_bundle(config: ExperimentConfig, label: str, pair: str, data_dir: str | None) -> None:
    """Build the config's resource bundle from its bundle config when it is not there yet."""
    path = config.features.resources
    if not path or (Path(path) / "manifest.json").is_file():
        return
    from qe.resources.bundle import build_bundle

    started = time.perf_counter()
    log(f"building {path} from configs/mlqe/resources-{label}-{pair}.toml")
    build_bundle(CONFIGS / f"resources-{label}-{pair}.toml", path, data_dir=data_dir, progress=False)
    log(f"built {path} in {time.perf_counter() - started:.0f} s")


def run_system(config: ExperimentConfig) -> tuple[dict[str, float | str], float, dict[str, float]]:
    """Fit on train (and dev), predict test20: (metrics and the run's signature, lp_mean-alone
    Pearson or nan, seconds per step)."""
    started = time.perf_counter()
    ctx = RunContext(config)
    train, test = build_split(ctx, "train"), build_split(ctx, "test")
    dev = build_split(ctx, "dev") if config.data.has_dev else None
    extracted = time.perf_counter()
    learner = config.learner
    if learner.grid:
        raise SystemExit(f"{config.name}: the table runs frozen configs only (no [learner] grid)")
    model = make_learner(learner.name, thaw(learner.params), scale=learner.scale, seed=config.seed, n_jobs=1)
    sig = signature(ctx, describe(model))
    if dev is not None and config.data.fit_on == "train+dev":  # as `qe run` (dev repeats left out)
        model, _ = refit_with_dev(learner, model, model, train, dev, train.dataset.labels)
    else:
        model.fit(train.features.to_numpy(), train.dataset.labels)
    pred = model.predict(test.features.to_numpy())
    bounds = label_range(config.data)
    if bounds and learner.clip:
        pred = np.clip(pred, *bounds)
    scores = evaluate(test.dataset.labels, pred)
    metrics = {
        "pearson": round(scores["Pearson"], 4),
        "spearman": round(scores["Spearman_scipy"], 4),
        "mae": round(scores["MAE_exact"], 4),
        "rmse": round(scores["RMSE_exact"], 4),
        "signature": sig,
    }
    column = "nmt.lp_mean"
    lp_mean = (
        float(np.corrcoef(test.features[column], test.dataset.labels)[0, 1])
        if column in test.features
        else float("nan")
    )
    done = time.perf_counter()
    return metrics, lp_mean, {"features": extracted - started, "fit": done - extracted}


def markdown(table: dict) -> str:
    """The README table: one row per pair, target and system."""
    lines = [
        "| pair | target | system | Pearson | Spearman | MAE | RMSE | `lp_mean` alone | OpenKiwi | goal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for pair in MLQE_PAIRS:
        for key in LABELS:
            rows = [
                (s, (table.get(pair, {}) if s == "best" else table[s].get(pair, {})).get(key))
                for s in SYSTEMS
            ]
            rows = [(s, m) for s, m in rows if m]
            for i, (system, m) in enumerate(rows):
                first = i == 0
                lp = table["lp_mean"].get(pair, {}).get(key)
                refs = [
                    f"{lp:.3f}" if first and lp is not None else "",
                    f"{OPENKIWI[key][pair]:.3f}" if first and pair in OPENKIWI[key] else "",
                    f"{GOALS[key][pair]:.2f}" if first and pair in GOALS[key] else "",
                ]
                name = f"**{system}**" if system == "best" else system
                pearson = f"**{m['pearson']:.3f}**" if system == "best" else f"{m['pearson']:.3f}"
                cells = [pair if first else "", key if first else "", name, pearson]
                cells += [f"{m[k]:.3f}" for k in ("spearman", "mae", "rmse")] + refs
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


README_PAIRS = ("ro-en", "et-en", "ne-en", "si-en", "ru-en", "en-de", "en-zh")  # into English first


def readme_table(table: dict) -> str:
    """The README's summary: per pair the best systems' DA and HTER Pearson beside the goals,
    OpenKiwi and the NMT model's ``lp_mean`` (written by ``scripts/update_readme.py``)."""
    lines = [
        "| pair | DA Pearson | goal | OpenKiwi | NMT `lp_mean` alone | HTER Pearson | goal | OpenKiwi |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def ref(values: dict, pair: str, digits: int) -> str:
        return f"{values[pair]:.{digits}f}" if pair in values else ""

    for pair in README_PAIRS:
        da, hter = table[pair]["da"]["pearson"], table[pair]["hter"]["pearson"]
        cells = [pair, f"**{da:.3f}**", ref(GOALS["da"], pair, 2), ref(OPENKIWI["da"], pair, 3)]
        cells += [f"{table['lp_mean'][pair]['da']:.3f}", f"{hter:.3f}"]
        cells += [ref(GOALS["hter"], pair, 2), ref(OPENKIWI["hter"], pair, 3)]
        lines.append("|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|")
    return "\n".join(lines)


def git_commit() -> str:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it (``unknown`` outside git)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout

    try:
        commit, dirty = git("rev-parse", "HEAD").strip(), git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def read_table(path: Path) -> dict:
    """A table this script printed as JSON; anything else is one clear line."""
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a table this script printed ({error})") from None
    if not isinstance(table, dict) or not all(
        isinstance(table.get(k), dict) for k in ("lp_mean", *SYSTEMS[:2])
    ):
        raise ValueError(f"{path}: not a table this script printed (no baseline / nmt / lp_mean blocks)")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the README table instead of JSON")
    parser.add_argument("--labels", default="da,hter", help="comma-separated: da, hter")
    parser.add_argument("--pairs", default=",".join(MLQE_PAIRS), help="comma-separated language pairs")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated: baseline, nmt, best")
    parser.add_argument("--data-dir", help="folder with the datasets (default: $QE_DATA_DIR)")
    parser.add_argument("--from", dest="saved", type=Path, help="JSON a previous run printed: render it")
    args = parser.parse_args()
    if args.saved:
        try:
            table = read_table(args.saved)
        except ValueError as error:
            parser.error(str(error))
        print(markdown(table) if args.markdown else json.dumps(table, indent=2))
        return
    labels, pairs, systems = (value.split(",") for value in (args.labels, args.pairs, args.systems))
    for values, known, what in (
        (labels, LABELS, "label"),
        (pairs, MLQE_PAIRS, "pair"),
        (systems, SYSTEMS, "system"),
    ):
        unknown = [v for v in values if v not in known]
        if unknown:
            parser.error(f"unknown {what}(s) {', '.join(unknown)} (known: {', '.join(known)})")
    started = time.perf_counter()
    table: dict = {pair: {} for pair in pairs} | {"baseline": {}, "nmt": {}, "lp_mean": {}}
    jobs = [(pair, key, system) for pair in pairs for key in labels for system in systems]
    for number, (pair, key, system) in enumerate(jobs, start=1):
        path = CONFIGS / f"{LABELS[key]}-{pair}-{system}.toml"
        if not path.is_file():
            raise SystemExit(f"{path}: not found (python scripts/mlqe_configs.py writes the configs)")
        config = load_config(path)
        if args.data_dir:
            config = apply_overrides(config, args.data_dir)
        ensure_bundle(config, LABELS[key], pair, args.data_dir)
        metrics, lp_mean, seconds = run_system(config)
        (table[pair] if system == "best" else table[system].setdefault(pair, {}))[key] = metrics
        if not np.isnan(lp_mean):
            table["lp_mean"].setdefault(pair, {})[key] = round(-lp_mean if key == "hter" else lp_mean, 4)
        log(
            f"[{number}/{len(jobs)}] {key} {pair} {system}: features {seconds['features']:.0f} s, "
            f"fit {seconds['fit']:.0f} s, test20 Pearson {metrics['pearson']:.3f}"
        )
    table["seconds"] = round(time.perf_counter() - started, 1)
    table["commit"] = git_commit()
    log(f"whole table: {table['seconds'] / 60:.1f} min")
    print(markdown(table) if args.markdown else json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
