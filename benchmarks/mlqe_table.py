"""The multilingual MLQE-PE table: baseline, nmt and best systems on test20, every pair and label,
and the steps of issue 23 (features alone, the fine-tuned encoder alone, features + fine-tuned encoder).

Runs ``configs/mlqe/<label>-<pair>-<system>.toml`` (written by ``scripts/mlqe_configs.py``; every
parameter in them was chosen on the dev split, docs/mlqe-log.md) for the seven pairs, DA z_mean
(``da``) and HTER (``hter``): builds a missing resource bundle first (``models/resources/``, about a
minute each; those with the fine-tuned encoder several), extracts the features through the feature
cache, fits each system's learner on the 7,000 training pairs and scores the 1,000 test20 pairs: the
numbers ``qe run`` reports under ``test`` (its 5-fold CV on train is left out here). Each system is
also fitted on train alone and scored on dev (``dev_pearson``; the dev rows that repeat a training
pair left out), which is what chooses between the steps.

Prints JSON: ``{"<pair>": {"da": {"pearson", "spearman", "mae", "rmse", "dev_pearson", "signature"},
"hter": {...}}, ...}`` for the best systems, the same under ``"baseline"``, ``"nmt"``, ``"finetuned"``
and ``"stacked"`` (``signature``: what ``qe run`` writes to ``signature.txt`` for that config, so
``benchmarks/reproduce_row.py`` can check a row), the git commit measured under ``"commit"``, and
under ``"lp_mean"`` the test20 Pearson of the NMT model's mean token log-probability used alone (sign
flipped for HTER, where a higher log-probability means fewer edits). ``--markdown`` prints the full
table instead (as docs/mlqe-log.md shows it), beside the WMT20 OpenKiwi baseline's published
Pearsons and the goals of issue 14;
``--steps`` the per-pair steps table of issue 23 (dev and test20 Pearson of each step, the step dev
chose, MonoTransQuest and the goal). Issue 23 item 3: ``--systems pooled,zeroshot`` (not run by
default: they build eight more bundles) adds the step "+ pooling" (``<label>-pooled.toml``, one model
over the seven pairs, each pair's dev and test20 Pearson taken from its own rows) and the zero-shot
column (``da-<pair>-zeroshot.toml``, trained on the other six pairs) beside the NMT model's own
``lp_mean`` Pearson on the pair. Issue 34: ``--systems best,crossencoder,crossstacked`` (not run by
default) adds the steps "e5 cross-encoder alone" and "features + e5 cross-encoder"
(``<label>-<pair>-crossencoder.toml`` and ``-crossstacked.toml``, on the bundle with ``[crossencoder]``,
whose build trains six cross-encoders: an epoch of 4 trained layers over a pair's training pairs takes
about 3 minutes on 2 cores, so up to about 1.5 hours per bundle); a table without them renders as
before. Issue 34 build item 4: ``--systems crosspooled,crosszeroshot`` (not run by default: eight more
cross-encoder bundles for DA, one for HTER, each about as long to build as a pair's, for their
cross-encoders learn from a sample of 7,000 pooled training pairs; each run then scores every pooled
pair, 63,000 for the seven pairs' train, dev and test20, about 20 minutes at 54 pairs/s) adds the step
"e5 cross-encoder pooled" (``<label>-crosspooled.toml``: the pooled cross-encoder's prediction alone,
each pair's dev and test20 Pearson from its own rows) and the column "e5 cross-encoder zero-shot"
(``da-<pair>-crosszeroshot.toml``, trained on the other six pairs) beside the zero-shot one; the
cross-encoder alone reads no NMT log-probabilities, so these runs leave ``lp_mean`` to the others. Issue
32 step 6: ``--labels hter --systems best,wordstacked`` adds "features + word tags"
(``pe-<pair>-wordstacked.toml``: the best system plus the ``wordtags`` family, on the bundle with
``[wordtags]``, whose build trains six word taggers). Progress goes to stderr.

    python benchmarks/mlqe_table.py [--markdown | --steps] [--labels da,hter] [--pairs ro-en,et-en]
        [--systems best,finetuned,stacked] [--data-dir DIR] [--configs DIR]
    python benchmarks/mlqe_table.py --markdown --from table.json   # the table of a saved run, no refit
    python benchmarks/mlqe_table.py --steps --from da.json hter.json   # two saved runs as one table
    python benchmarks/mlqe_table.py --steps --save table.json   # also keeps the JSON, after every system
    python benchmarks/mlqe_table.py --steps --save table.json --resume   # continue a run cut short
"""

from __future__ import annotations

import argparse
import functools
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

from qe.config.document import thaw  # noqa: E402
from qe.config.experiment import ExperimentConfig  # noqa: E402
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS  # noqa: E402
from qe.data.splits import label_range, repeated_pairs  # noqa: E402
from qe.evaluation.metrics import evaluate  # noqa: E402
from qe.learners.factory import describe, make_learner  # noqa: E402
from qe.run.config import apply_overrides, load_config  # noqa: E402
from qe.run.context import RunContext  # noqa: E402
from qe.run.extraction import build_split  # noqa: E402
from qe.run.fit import refit_with_dev  # noqa: E402
from qe.run.persist import signature  # noqa: E402

CONFIGS = REPO / "configs" / "mlqe"
LABELS = {"da": "da", "hter": "pe"}  # table key -> config / bundle prefix
SYSTEMS = (
    "baseline",
    "nmt",
    "best",
    "finetuned",
    "stacked",
    "pooled",
    "zeroshot",
    "crossencoder",
    "crossstacked",
    "crosspooled",
    "crosszeroshot",
    "wordstacked",
)
POOLED = ("pooled", "crosspooled")  # one run over the seven pairs scores each of them
ZERO_SHOTS = ("zeroshot", "crosszeroshot")  # DA only: trained on the other six pairs, tested on one
STEPS = {  # issue 23's steps, each a system
    "best": "features alone",
    "finetuned": "fine-tuned encoder alone",
    "stacked": "features + fine-tuned encoder",
    "pooled": "+ pooling (one model, seven pairs)",
}
CROSS_STEPS = {  # issue 34's steps (a step, as each of STEPS, is shown when the table holds it)
    "crossencoder": "e5 cross-encoder alone",
    "crossstacked": "features + e5 cross-encoder",
    "crosspooled": "e5 cross-encoder pooled (one model, seven pairs)",  # issue 34 build item 4
    "wordstacked": "features + word tags",  # issue 32 step 6 (HTER only)
}
ZERO_SHOT_COLUMNS = {  # beside the steps, not chosen among them: no label of the pair; shown when held
    "zeroshot": "zero-shot (other six pairs)",
    "crosszeroshot": "e5 cross-encoder zero-shot (other six pairs)",
}
MONOTRANSQUEST = {  # XLM-R fine-tuned on a GPU, test20 Pearson (issue 23; TransQuest's WMT20 tables)
    "da": {"ro-en": 0.898, "et-en": 0.775, "ne-en": 0.791, "si-en": 0.653, "ru-en": 0.773, "en-de": 0.467,
           "en-zh": 0.478},
}  # fmt: skip
STEP_GOALS = {  # issue 23: test20 Pearson
    "da": {"ro-en": 0.82, "et-en": 0.70, "ne-en": 0.70, "si-en": 0.61, "ru-en": 0.75, "en-de": 0.45,
           "en-zh": 0.45},
    "hter": {"en-de": 0.50, "en-zh": 0.45},
}  # fmt: skip
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


def ensure_bundle(config: ExperimentConfig, configs: Path, data_dir: str | None) -> None:
    """Build the config's resource bundle (``models/resources/mlqe-NAME``) from its bundle config
    (``resources-NAME.toml`` beside the configs) when it is not there yet."""
    path = config.features.resources
    if not path or (Path(path) / "manifest.json").is_file():
        return
    from qe.bundle import build_bundle

    started = time.perf_counter()
    source = configs / f"resources-{Path(path).name.removeprefix('mlqe-')}.toml"
    log(f"building {path} from {source}")
    build_bundle(source, path, data_dir=data_dir, progress=False)
    log(f"built {path} in {time.perf_counter() - started:.0f} s")


def ready_config(path: Path, args: argparse.Namespace) -> ExperimentConfig:
    """A system's config, read with ``--data-dir`` applied, its resource bundle built if missing."""
    if not path.is_file():
        raise SystemExit(f"{path}: not found (python scripts/mlqe_configs.py writes the configs)")
    config = load_config(path)
    if args.data_dir:
        config = apply_overrides(config, args.data_dir)
    ensure_bundle(config, args.configs, args.data_dir)
    return config


def dev_pearson(model, train, dev) -> float:
    """The learner fitted on train alone, scored on the dev rows that do not repeat a training pair."""
    from sklearn.base import clone

    keep = sorted(set(range(len(dev.dataset))) - set(repeated_pairs(train.dataset, dev.dataset)))
    fitted = clone(model).fit(train.features.to_numpy(), train.dataset.labels)
    pred = fitted.predict(dev.features.to_numpy()[keep])
    return round(float(np.corrcoef(pred, dev.dataset.labels[keep])[0, 1]), 4)


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
    dev_r = dev_pearson(model, train, dev) if dev is not None else None
    if dev is not None and config.data.fit_on == "train+dev":  # as `qe run` (dev repeats left out)
        model, _ = refit_with_dev(learner, model, model, train, dev, train.dataset.labels)
    else:
        model.fit(train.features.to_numpy(), train.dataset.labels)
    pred = model.predict(test.features.to_numpy())
    bounds = label_range(config.data)
    if bounds and learner.clip:
        pred = np.clip(pred, *bounds)
    if test.dataset.pairs is not None and dev is not None:  # pooled: each pair's dev and test on its own
        seconds = {"features": extracted - started, "fit": time.perf_counter() - extracted}
        return per_pair(test, pred, dev, model, train, sig), float("nan"), seconds
    scores = evaluate(test.dataset.labels, pred)
    metrics = {
        "pearson": round(scores["Pearson"], 4),
        "spearman": round(scores["Spearman_scipy"], 4),
        "mae": round(scores["MAE_exact"], 4),
        "rmse": round(scores["RMSE_exact"], 4),
        "dev_pearson": dev_r,
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


def per_pair(test, pred, dev, model, train, sig: str) -> dict:
    """A pooled system's metrics per pair (``{pair: metrics}``): test20 Pearson of the model fitted on
    train (+ dev), dev Pearson of the model fitted on train alone (dev rows repeating a training pair
    left out), and the NMT model's own lp_mean Pearson (None when the system has no nmt family)."""
    from sklearn.base import clone

    keep = sorted(set(range(len(dev.dataset))) - set(repeated_pairs(train.dataset, dev.dataset)))
    fitted = clone(model).fit(train.features.to_numpy(), train.dataset.labels)
    dev_pred = fitted.predict(dev.features.to_numpy()[keep])
    dev_pairs, dev_labels = np.asarray(dev.dataset.pairs)[keep], dev.dataset.labels[keep]
    pairs = np.asarray(test.dataset.pairs)
    found = {}
    for name in dict.fromkeys(test.dataset.pairs):
        rows, dev_rows = pairs == name, dev_pairs == name
        found[name.split("/")[1]] = {
            "pearson": round(float(np.corrcoef(pred[rows], test.dataset.labels[rows])[0, 1]), 4),
            "dev_pearson": round(float(np.corrcoef(dev_pred[dev_rows], dev_labels[dev_rows])[0, 1]), 4)
            if dev_rows.sum() > 1
            else None,
            "lp_mean": round(
                float(np.corrcoef(test.features["nmt.lp_mean"][rows], test.dataset.labels[rows])[0, 1]), 4
            )
            if "nmt.lp_mean" in test.features  # the cross-encoder alone reads no NMT log-probabilities
            else None,
            "signature": sig,
        }
    return found


def markdown(table: dict) -> str:
    """The full table (as docs/mlqe-log.md shows it): one row per pair, target and system."""
    lines = [
        "| pair | target | system | Pearson | Spearman | MAE | RMSE | `lp_mean` alone | OpenKiwi | goal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for pair in MLQE_PAIRS:
        for key in LABELS:
            rows = [
                (s, (table.get(pair, {}) if s == "best" else table[s].get(pair, {})).get(key))
                for s in SYSTEMS[:3]  # baseline, nmt, best (issue 23's steps: --steps)
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


def steps_markdown(table: dict) -> str:
    """Issue 23's and issue 34's tables: per pair and target, the dev and test20 Pearson of each step the
    table holds, the step of best dev Pearson (the one to report), the zero-shot Pearsons it holds (each
    with its ratio to the chosen step's), the NMT model's ``lp_mean``, MonoTransQuest's test20 Pearson
    and the goal."""

    def held(system: str) -> bool:
        if system == "best":
            return any(table.get(pair) for pair in MLQE_PAIRS)
        return any(table.get(system, {}).values())

    steps = {s: name for s, name in (STEPS | CROSS_STEPS).items() if held(s)}
    zero_shots = {s: name for s, name in ZERO_SHOT_COLUMNS.items() if held(s)}
    header = ["pair", "target", *(f"{name} (dev / test20)" for name in steps.values())]
    header += ["chosen on dev", "test20 of the chosen", *zero_shots.values()]
    header += ["NMT `lp_mean` alone", "MonoTransQuest", "goal"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for pair in MLQE_PAIRS:
        for key in LABELS:
            found = {s: m for s in steps if (m := system_metrics(table, pair, key, s))}
            if not found:
                continue
            cells = [pair, key]
            for step in steps:
                m = found.get(step)
                dev = "-" if not m or m.get("dev_pearson") is None else f"{m['dev_pearson']:.3f}"
                cells.append(f"{dev} / {m['pearson']:.3f}" if m else "")
            by_dev = {s: m["dev_pearson"] for s, m in found.items() if m.get("dev_pearson") is not None}
            chosen = max(by_dev, key=by_dev.get) if by_dev else None
            cells += [
                steps[chosen] if chosen else "",
                f"**{found[chosen]['pearson']:.3f}**" if chosen else "",
            ]
            for system in zero_shots:
                zero = system_metrics(table, pair, key, system)
                ratio = f" ({zero['pearson'] / found[chosen]['pearson']:.2f}x)" if zero and chosen else ""
                cells.append(f"{zero['pearson']:.3f}{ratio}" if zero else "")
            lp = table.get("lp_mean", {}).get(pair, {}).get(key)
            cells.append(f"{lp:.3f}" if lp is not None else "")
            cells += [
                f"{MONOTRANSQUEST.get(key, {})[pair]:.3f}" if pair in MONOTRANSQUEST.get(key, {}) else "",
                f"{STEP_GOALS[key][pair]:.2f}" if pair in STEP_GOALS[key] else "",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


README_PAIRS = ("ro-en", "et-en", "ne-en", "si-en", "ru-en", "en-de", "en-zh")  # into English first


def readme_table(table: dict) -> str:
    """The summary table of docs/mlqe.md: per pair the best systems' DA and HTER Pearson beside the goals,
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


def system_metrics(table: dict, pair: str, key: str, system: str) -> dict | None:
    """``system``'s test20 metrics for ``pair`` and label ``key`` in ``table`` (None: not scored); the
    best system's sit under the pair itself, every other system's under its own name."""
    block = table.get(pair, {}) if system == "best" else table.get(system, {}).get(pair, {})
    return block.get(key)


def merge_tables(first: dict, second: dict) -> dict:
    """Both tables in one, ``second`` winning where both hold a label of a pair's block: a resumed run
    keeps what was measured and adds the rest; the DA and the HTER runs render as one table."""
    merged = dict(first)
    for name, block in second.items():
        if not isinstance(block, dict) or not isinstance(merged.get(name), dict):
            merged[name] = block  # seconds, commit: the later run's
            continue
        if name in MLQE_PAIRS:  # the best system: {label: metrics}
            merged[name] = merged[name] | block
        else:  # another system or lp_mean: {pair: {label: metrics}}
            merged[name] = {
                pair: merged[name].get(pair, {}) | block.get(pair, {}) for pair in merged[name] | block
            }
    return merged


def save(path: Path | None, table: dict) -> None:
    """The table so far as JSON, written atomically to ``path`` (``--save``; None: nowhere), so that a
    run cut short keeps every system it finished."""
    from qe.infra.io import atomic_write

    if path is None:
        return
    with atomic_write(path, "w") as handle:
        handle.write(json.dumps(table, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the full table instead of JSON")
    parser.add_argument("--steps", action="store_true", help="print issue 23's per-pair steps table")
    parser.add_argument(
        "--configs", type=Path, default=CONFIGS, help="folder of the configs (default configs/mlqe)"
    )
    parser.add_argument("--labels", default="da,hter", help="comma-separated: da, hter")
    parser.add_argument("--pairs", default=",".join(MLQE_PAIRS), help="comma-separated language pairs")
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS[:5]), help=f"comma-separated: {', '.join(SYSTEMS)}"
    )
    parser.add_argument("--data-dir", help="folder with the datasets (default: $QE_DATA_DIR)")
    parser.add_argument(
        "--from",
        dest="saved",
        type=Path,
        nargs="+",
        help="JSON previous runs printed (the DA run and the HTER run, say): render them as one table",
    )
    parser.add_argument(
        "--save", type=Path, help="also write the JSON here, after every system (a long run's record)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run --save recorded: keep its systems, run only those it has not scored",
    )
    args = parser.parse_args()
    if args.resume and not args.save:
        parser.error("--resume continues the table in --save FILE: give --save")
    if args.saved:
        try:
            table = functools.reduce(merge_tables, map(read_table, args.saved))
        except ValueError as error:
            parser.error(str(error))
        print(render(table, args))
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
    table: dict = {pair: {} for pair in pairs} | {s: {} for s in SYSTEMS if s != "best"} | {"lp_mean": {}}
    if args.resume and args.save.exists():
        try:
            table = merge_tables(table, read_table(args.save))
        except ValueError as error:
            parser.error(str(error))
    jobs = [(pair, key, system) for pair in pairs for key in labels for system in systems]
    for number, (pair, key, system) in enumerate(jobs, start=1):
        if system_metrics(table, pair, key, system) is not None:
            continue  # --resume: this system's test20 was read by the run being continued
        if system in POOLED:  # one run scores every pair: all of them are recorded at once
            metrics = run_system(ready_config(args.configs / f"{LABELS[key]}-{system}.toml", args))[0]
            for each in pairs:
                table[system].setdefault(each, {})[key] = metrics[each]
            save(args.save, table)
            log(f"[{number}/{len(jobs)}] {key} {system}: every pair scored by one model")
            continue
        if system in ZERO_SHOTS and key != "da":
            continue  # zero-shot configs are written for DA (issue 23)
        if system == "wordstacked" and key != "hter":
            continue  # word tags come with the post-edits: HTER only (issue 32 step 6)
        config = ready_config(args.configs / f"{LABELS[key]}-{pair}-{system}.toml", args)
        metrics, lp_mean, seconds = run_system(config)
        if system in ZERO_SHOTS:  # one pooled test: the held-out pair's (its own lp_mean beside it)
            metrics = metrics[pair]
            lp_mean = float("nan") if metrics["lp_mean"] is None else metrics["lp_mean"]
        (table[pair] if system == "best" else table[system].setdefault(pair, {}))[key] = metrics
        if not np.isnan(lp_mean):
            table["lp_mean"].setdefault(pair, {})[key] = round(-lp_mean if key == "hter" else lp_mean, 4)
        save(args.save, table)
        log(
            f"[{number}/{len(jobs)}] {key} {pair} {system}: features {seconds['features']:.0f} s, "
            f"fit {seconds['fit']:.0f} s, test20 Pearson {metrics['pearson']:.3f}"
        )
    table["seconds"] = round(table.get("seconds", 0.0) + time.perf_counter() - started, 1)
    table["commit"] = git_commit()
    log(f"whole table: {table['seconds'] / 60:.1f} min")
    save(args.save, table)
    print(render(table, args))


def render(table: dict, args: argparse.Namespace) -> str:
    """The table as asked: steps, the full markdown table or JSON."""
    if args.steps:
        return steps_markdown(table)
    return markdown(table) if args.markdown else json.dumps(table, indent=2)


if __name__ == "__main__":
    main()
