"""End-to-end speed of the `qe` command line, measured in one run; prints one JSON dict.

Every timing is the wall time of the real command in a fresh subprocess (``python -m qe`` with this
checkout first on the path), the median of ``--runs`` runs; ``best`` holds the fastest run of each and
``cpu`` the median CPU time (user + system) of the subprocess, which a busy shared machine inflates
less than the wall time.

- ``python_seconds``: ``python -c pass``, the floor of any command;
- ``startup_seconds_help``: ``qe --help``;
- ``startup_seconds_predict_one``: ``qe predict`` on one WMT12 pair (the first test pair) with a
  baseline17 SVR: the model, its resource bundle and the feature family are loaded, one pair scored;
- ``baseline17_2254_seconds``: ``qe features --families baseline17`` on the 2,254 WMT12 pairs
  (training then test set, ``source.eng`` / ``target_system.spa``) into a TSV: start-up, loading the
  bundle, extraction and writing;
- ``ter_pairs_per_second`` / ``ter_identical``: ``qe.evaluation.textmetrics.ter.sentence_ter`` on the 2,254 MT
  outputs against the reference translations as pseudo-references (whitespace collapsed,
  case-insensitive: the pseudoref family's defaults), and how many scores equal sacreBLEU's
  ``TER().sentence_score`` exactly (``sacrebleu_ter_pairs_per_second`` for the ratio).

- ``pairs_per_second`` (``{"<family>": {"jobs1", "jobs2"}}``), ``speedup``, ``critical_speedup`` (and the
  other keys of ``extraction_scaling.scaling_report``, its load average as ``scaling_load_average``),
  ``lm_ibm1_pairs_per_second_jobs1`` and ``tagging_calls_per_pair``: ``qe features`` per family with
  1 and 2 jobs on ``--pairs`` (20,000) distinct pairs, as ``benchmarks/extraction_scaling.py``
  measures them (its docstring says how; about half an hour for the eight families).

Each measurement is one function of :data:`MEASUREMENTS` taking the shared :class:`Setup` and
returning its keys.

Usage: python benchmarks/end_to_end_speed.py [--data-dir DIR] [--bundle DIR] [--model FILE] [--runs N]
       [--families a,b | --families ''] [--pairs N]
Without ``--model`` a model is trained first (``qe run configs/wmt12-extracted-svr.toml`` with the
bundle, about a minute, not timed). The bundle defaults to ``models/resources/wmt12-en-es``; build it
with this version (``qe resources build``) so that its tables are binary.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import extraction_scaling as scaling  # noqa: E402

from qe.data import resolve_data_dir  # noqa: E402

WMT12 = "wmt12-qe"
SPLITS = ("training_set", "test_set")


@dataclass
class Setup:
    """What the measurements share: inputs written once, the model, the bundle, runs per timing."""

    work: Path
    data: Path
    bundle: Path
    model: Path
    src: Path  # the 2,254 source sentences
    mt: Path  # and their machine translations
    runs: int
    families: list[str]  # measured by extraction_scaling ([] skips it)
    pairs: int


def _env() -> dict[str, str]:
    """This checkout first on the path; Python writes and reads its bytecode caches as it does by
    default (a sandbox's ``PYTHONDONTWRITEBYTECODE`` would make every run compile qe from source)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _qe(*args: str) -> list[str]:
    return [sys.executable, "-m", "qe", *args]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wall(command: list[str] | Callable[[int], list[str]], runs: int) -> tuple[float, float, float]:
    """(median, best) wall seconds and median CPU seconds of ``runs`` runs; a callable gets the run
    number (to write a fresh output each run)."""
    seconds, cpu = [], []
    for run in range(runs):
        argv = command(run) if callable(command) else command
        start, start_cpu = time.perf_counter(), _children_cpu()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=_env(), cwd=REPO)
        seconds.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - start_cpu)
    return round(statistics.median(seconds), 3), round(min(seconds), 3), round(statistics.median(cpu), 3)


def _timings(found: dict[str, tuple[float, float, float]]) -> dict[str, Any]:
    """Median wall seconds by key, with ``best`` and ``cpu`` sub-dicts (merged by :func:`main`)."""
    return {key: median for key, (median, _, _) in found.items()} | {
        "best": {key: best for key, (_, best, _) in found.items()},
        "cpu": {key: cpu for key, (_, _, cpu) in found.items()},
    }


def _lines(data: Path, split_dir: str, name: str) -> list[str]:
    return (data / WMT12 / split_dir / name).read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------------- measurements


def startup(setup: Setup) -> dict[str, Any]:
    """``python -c pass``, ``qe --help`` and ``qe predict`` on one pair."""
    one_src = setup.work / "one.src"
    one_mt = setup.work / "one.mt"
    one_src.write_text(_lines(setup.data, "test_set", "source.eng")[0] + "\n", encoding="utf-8")
    one_mt.write_text(_lines(setup.data, "test_set", "target_system.spa")[0] + "\n", encoding="utf-8")
    predict = _qe("predict", "--model", str(setup.model), "--src", str(one_src), "--mt", str(one_mt))
    predict += ["--resources", str(setup.bundle), "--quiet"]
    return _timings(
        {
            "python_seconds": _wall([sys.executable, "-c", "pass"], setup.runs),
            "startup_seconds_help": _wall(_qe("--help"), setup.runs),
            "startup_seconds_predict_one": _wall(predict, setup.runs),
        }
    )


def baseline17(setup: Setup) -> dict[str, Any]:
    """``qe features --families baseline17`` on the 2,254 pairs into a new TSV each run."""

    def command(run: int) -> list[str]:
        out = setup.work / f"baseline17-{run}.tsv"
        args = ["features", "--families", "baseline17", "--src", str(setup.src), "--mt", str(setup.mt)]
        return _qe(*args, "--resources", str(setup.bundle), "--out", str(out), "--quiet")

    found = _timings({"baseline17_2254_seconds": _wall(command, setup.runs)})
    rows = len((setup.work / "baseline17-0.tsv").read_text(encoding="utf-8").splitlines()) - 1
    if rows != 2254:
        raise SystemExit(f"baseline17 wrote {rows} rows, expected 2254")
    return found


def ter_speed(setup: Setup) -> dict[str, Any]:
    """qe.evaluation.textmetrics' TER against sacreBLEU's on the MT outputs vs the reference translations."""
    from sacrebleu.metrics import TER

    from qe.evaluation.textmetrics.ter import sentence_ter

    mt = setup.mt.read_text(encoding="utf-8").splitlines()
    refs = [
        ref for split in SPLITS for ref in _lines(setup.data, f"{split}_annotations", "target_reference.spa")
    ]
    pairs = [(" ".join(h.split()), " ".join(r.split())) for h, r in zip(mt, refs, strict=True)]
    start = time.perf_counter()
    ours = [sentence_ter(h, r) for h, r in pairs]
    ours_seconds = time.perf_counter() - start
    metric = TER()
    start = time.perf_counter()
    theirs = [metric.sentence_score(h, [r]).score for h, r in pairs]
    theirs_seconds = time.perf_counter() - start
    return {
        "ter_pairs_per_second": round(len(pairs) / ours_seconds, 1),
        "ter_identical": f"{sum(a == b for a, b in zip(ours, theirs, strict=True))}/{len(pairs)}",
        "sacrebleu_ter_pairs_per_second": round(len(pairs) / theirs_seconds, 1),
    }


def extraction_scaling(setup: Setup) -> dict[str, Any]:
    """Pairs per second of each family with 1 and 2 jobs on 20,000 distinct pairs, lm + ibm1 together
    with one job, and tagging calls per pair (``benchmarks/extraction_scaling.py`` says how)."""
    if not setup.families:
        return {}
    os.environ["QE_BUNDLE"] = str(setup.bundle)
    report = scaling.scaling_report(setup.families, setup.pairs)
    report["scaling_load_average"] = report.pop("load_average")
    return report


MEASUREMENTS: list[Callable[[Setup], dict[str, Any]]] = [startup, baseline17, ter_speed, extraction_scaling]


# ---------------------------------------------------------------------- setup


def train_model(work: Path, bundle: Path, data: Path) -> Path:
    """A baseline17 SVR on the bundle: configs/wmt12-extracted-svr.toml with its resources replaced."""
    config = tomllib.loads((REPO / "configs" / "wmt12-extracted-svr.toml").read_text(encoding="utf-8"))
    config["features"]["resources"] = str(bundle)
    path = work / "wmt12-extracted-svr.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    run = work / "run"
    argv = _qe("run", str(path), "--output-dir", str(run), "--data-dir", str(data), "--quiet")
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=_env(), cwd=REPO)
    return run / "model.skops"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None, help="folder with wmt12-qe/ (default $QE_DATA_DIR)")
    parser.add_argument("--bundle", type=Path, default=REPO / "models" / "resources" / "wmt12-en-es")
    parser.add_argument("--model", type=Path, help="a baseline17 model trained with --bundle")
    parser.add_argument("--runs", type=int, default=3, help="runs per timing (the median is reported)")
    parser.add_argument(
        "--families",
        default=",".join(scaling.FAMILIES),
        help="families whose 1- and 2-job speed is measured on --pairs distinct pairs ('' skips it)",
    )
    parser.add_argument("--pairs", type=int, default=20_000, help="distinct pairs for the scaling runs")
    args = parser.parse_args()
    data = resolve_data_dir(args.data_dir)
    with tempfile.TemporaryDirectory(prefix="qe-e2e-") as folder:
        work = Path(folder)
        src, mt = work / "wmt12.src", work / "wmt12.mt"
        for path, name in ((src, "source.eng"), (mt, "target_system.spa")):
            lines = [line for split in SPLITS for line in _lines(data, split, name)]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        model = args.model or train_model(work, args.bundle.resolve(), data)
        families = [f.strip() for f in args.families.split(",") if f.strip()]
        setup = Setup(
            work, data, args.bundle.resolve(), model.resolve(), src, mt, args.runs, families, args.pairs
        )
        result: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
        extra: dict[str, dict[str, float]] = {"best": {}, "cpu": {}}
        for measure in MEASUREMENTS:
            found = measure(setup)
            for key, values in extra.items():
                values.update(found.pop(key, {}))
            result.update(found)
        result.update(extra)
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
