"""How ``qe features`` scales: pairs per second with 1 and 2 jobs per family on 20,000 distinct pairs.

Input: 20,000 distinct English-Spanish pairs built from the data directory: the newstest files
(``newstest-en-es/*.en`` with their ``.es``, by file name), the Tatoeba test set and the FLORES-101
devtest, in that order; a pair whose source or target sentence was seen before is dropped (so no
per-process memo makes a repeat free), and the first 20,000 are kept. The MT is the Spanish
reference; the ``pseudoref`` family gets the Spanish reference as its pseudo-reference too (the
corpora have no second translation). Resources: the WMT12 bundle models/resources/wmt12-en-es
(``--bundle`` or ``$QE_BUNDLE`` for another).

Each measurement is one ``qe features --families F --jobs N --out FILE.tsv --quiet`` run, in a
fresh Python process (``nice -n 10``, ``$QE_CACHE_DIR`` a new empty directory, so the sentence
encoder's vector cache starts empty), timed from the command's start to its end: reading and
checking the input, starting the workers, loading the resources, extracting, writing. The
interpreter's start and the imports (``qe.cli`` with its command modules, the feature families and
the libraries they use: pandas, spaCy, kenlm) are left out, and the Moses tokenizers' cached
specification is written before the timing: they do not change with the number of jobs
(``benchmarks/end_to_end_speed.py`` times the start-up).
``pairs_per_second`` = pairs / those seconds. The 1-job and 2-job runs of a family follow each
other; other work on the machine slows both, so compare the ratio. A family whose 1-job run takes
under 20 s is run three times with each (alternating) and its median runs are reported.

``tagging_calls_per_pair``: the sentences handed to a UPOS tagger
(``qe.resources.pos.tagged_sentences``) per pair and side, when ``lm``, ``ibm1`` and ``linguistic``
are extracted together with one job on 1,000 of the pairs: 1 when the tags are shared.

Usage: python benchmarks/extraction_scaling.py [--families a,b] [--pairs N] [--bundle DIR]
Prints ``{"pairs", "pairs_per_second": {"<family>": {"jobs1", "jobs2"}}, "speedup": {...},
"cpu_seconds", "critical_pairs_per_second", "critical_speedup", "tagging_calls_per_pair",
"lm_ibm1_pairs_per_second_jobs1", "load_average"}``.

When other work shares the machine, wall-clock ratios say little (Linux gives each session a fair
share of the CPUs however many processes it runs, so a second worker mostly takes time from the
first). ``cpu_seconds`` (user + system CPU of the command and its workers) shows whether two jobs
do more work than one, and ``critical_pairs_per_second`` divides the pairs by the CPU seconds of
the command plus those of its busiest worker: the wall-clock speed on an otherwise idle machine
with a core per process (a bound: it takes the command's own work, reading and writing, as never
overlapping the workers').
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PAIRS = 20_000
FAMILIES = ("baseline17", "surface", "lm", "ibm1", "linguistic", "pseudoref", "spelling", "embeddings")
TAGGING_SAMPLE = 1_000
SHORT_RUN_SECONDS = 20  # a family whose 1-job run is shorter is measured REPEATS times
REPEATS = 3
_FILES: dict[int, dict[str, Path]] = {}


def log(message: str) -> None:
    print(f"[extraction_scaling] {message}", file=sys.stderr, flush=True)


def bundle_dir() -> Path:
    """The resource bundle: ``$QE_BUNDLE``, else models/resources/wmt12-en-es of this checkout."""
    return Path(os.environ.get("QE_BUNDLE") or REPO / "models" / "resources" / "wmt12-en-es")


def distinct_pairs(n: int = PAIRS, data_dir: str | Path | None = None) -> tuple[list[str], list[str]]:
    """The first ``n`` pairs of newstest, Tatoeba and FLORES-101 en-es whose source and target are both
    new (see the module docstring); fewer if the corpora hold fewer."""
    sys.path.insert(0, str(REPO))
    from qe.data import resolve_data_dir
    from qe.infra.io import read_text_lines

    root = resolve_data_dir(data_dir)
    news = sorted((root / "newstest-en-es").glob("*.en"))
    corpora = [(path, path.with_suffix(".es")) for path in news]
    corpora.append(
        (
            root / "tatoeba-en-es/tatoeba-test-v2021-08-07.eng",
            root / "tatoeba-en-es/tatoeba-test-v2021-08-07.spa",
        )
    )
    corpora.append((root / "flores101-en-es/eng.devtest", root / "flores101-en-es/spa.devtest"))
    seen_src: set[str] = set()
    seen_tgt: set[str] = set()
    src: list[str] = []
    tgt: list[str] = []
    for en, es in corpora:
        for s, t in zip(read_text_lines(en), read_text_lines(es), strict=True):
            s, t = s.strip(), t.strip()
            if not s or not t or s in seen_src or t in seen_tgt:
                continue
            seen_src.add(s)
            seen_tgt.add(t)
            src.append(s)
            tgt.append(t)
            if len(src) == n:
                return src, tgt
    return src, tgt


def input_files(n: int = PAIRS) -> dict[str, Path]:
    """``src`` / ``mt`` / ``pseudo_ref`` files of ``n`` distinct pairs (written once per process)."""
    if n not in _FILES:
        folder = Path(tempfile.mkdtemp(prefix="qe-scaling-"))
        atexit.register(shutil.rmtree, folder, True)
        src, tgt = distinct_pairs(n)
        files = {"src": folder / "src.en", "mt": folder / "mt.es", "pseudo_ref": folder / "ref.es"}
        for role, lines in (("src", src), ("mt", tgt), ("pseudo_ref", tgt)):
            files[role].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        _FILES[n] = files
    return _FILES[n]


def _families(families: str | Sequence[str]) -> list[str]:
    return [families] if isinstance(families, str) else list(families)


def _run(families: Sequence[str], jobs: int, n: int, *, count_tags: bool = False) -> dict:
    """One timed ``qe features`` run in a fresh process (see the module docstring)."""
    files = input_files(n)
    out = files["src"].parent / f"out-{'-'.join(families)}-{jobs}.tsv"
    argv = [
        "features",
        "--src",
        str(files["src"]),
        "--mt",
        str(files["mt"]),
        "--families",
        ",".join(families),
    ]
    argv += ["--resources", str(bundle_dir()), "--jobs", str(jobs), "--out", str(out), "--quiet"]
    if "pseudoref" in families:
        argv += ["--pseudo-ref", str(files["pseudo_ref"])]
    with tempfile.TemporaryDirectory(prefix="qe-scaling-cache-") as cache:
        env = {**os.environ, "PYTHONPATH": str(REPO), "QE_CACHE_DIR": cache}
        command = ["nice", "-n", "10", sys.executable, __file__, "--one", json.dumps(argv)]
        if count_tags:
            command.append("--count-tags")
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    out.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"qe {' '.join(argv)} failed: {done.stderr.strip().splitlines()[-1:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["pairs"] = n
    return result


def measure(families: str | Sequence[str], jobs: int, n: int = PAIRS) -> dict[str, float]:
    """One run: ``pairs_per_second`` (wall clock), ``cpu_seconds`` (the command and its workers) and
    ``critical_pairs_per_second`` (pairs / the CPU seconds of the command plus those of its busiest
    worker: the speed on an otherwise idle machine with a core per process, whatever the load now)."""
    result = _run(_families(families), jobs, n)
    return {
        "pairs_per_second": round(n / result["seconds"], 1),
        "cpu_seconds": round(result["cpu_seconds"], 1),
        "critical_pairs_per_second": round(n / result["critical_cpu_seconds"], 1),
    }


def measure_both(family: str, n: int = PAIRS) -> dict[str, dict[str, float]]:
    """1-job and 2-job runs of one family, alternating; a family whose 1-job run is shorter than
    ``SHORT_RUN_SECONDS`` is run ``REPEATS`` times with each and the median run of each is kept
    (runs of a few seconds vary by about 20 % on a shared machine)."""
    runs: dict[int, list[dict[str, float]]] = {jobs: [measure(family, jobs, n)] for jobs in (1, 2)}
    if n / runs[1][0]["pairs_per_second"] < SHORT_RUN_SECONDS:
        for _ in range(REPEATS - 1):
            for jobs in (1, 2):
                runs[jobs].append(measure(family, jobs, n))
    return {f"jobs{jobs}": _median_run(found) for jobs, found in runs.items()}


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    ordered = sorted(runs, key=lambda run: run["pairs_per_second"])
    return ordered[(len(ordered) - 1) // 2]


def pairs_per_second(families: str | Sequence[str], jobs: int, n: int = PAIRS) -> float:
    """Pairs per second of ``qe features`` for these families with ``jobs`` jobs on ``n`` distinct pairs."""
    return measure(families, jobs, n)["pairs_per_second"]


def tagging_calls_per_pair(n: int = TAGGING_SAMPLE) -> float:
    """Sentences handed to a UPOS tagger per pair and side when lm, ibm1 and linguistic are extracted
    together (one job, ``n`` distinct pairs)."""
    result = _run(["lm", "ibm1", "linguistic"], 1, n, count_tags=True)
    return round(result["tagged_sentences"] / (2 * n), 3)


# ---------------------------------------------------------------------- in the measuring process

_BUSY: list[Path] = []  # the folder where each process running chunks notes its CPU seconds


def _timed_chunk(task: Any, chunk: Any) -> Any:
    """``qe.stream.tasks.run_chunk``, then note this process's CPU seconds (a file per process id)."""
    from qe.stream import tasks

    result = tasks.untimed_run_chunk(task, chunk)
    (_BUSY[0] / str(os.getpid())).write_text(repr(time.process_time()))
    return result


def _one(argv: list[str], count_tags: bool) -> None:
    """Import the CLI, then time one command. ``critical_cpu_seconds``: this process's CPU during
    the command plus that of its busiest worker."""
    from qe import cli
    from qe.resources import pos
    from qe.stream import tasks

    cli.build_parser()  # imports every command module, outside the timed part
    _import_libraries()
    _BUSY.append(Path(tempfile.mkdtemp(prefix="qe-scaling-busy-")))
    tasks.untimed_run_chunk = tasks.run_chunk
    tasks.run_chunk = _timed_chunk  # forked workers inherit it
    own, cpu = time.process_time(), _cpu_seconds()
    start = time.perf_counter()
    code = cli.main(argv)
    seconds = time.perf_counter() - start
    if code != 0:
        raise SystemExit(code)
    workers = [float(f.read_text()) for f in _BUSY[0].iterdir() if f.name != str(os.getpid())]
    shutil.rmtree(_BUSY[0], ignore_errors=True)
    result = {
        "seconds": seconds,
        "cpu_seconds": _cpu_seconds() - cpu,
        "critical_cpu_seconds": time.process_time() - own + max(workers, default=0.0),
        "tagged_sentences": pos.tagged_sentences() if count_tags else None,
    }
    print(json.dumps(result))


def _import_libraries() -> None:
    """Import, outside the timed part, the modules ``qe features`` imports when it starts: the feature
    families and the libraries they load at first use (pandas, spaCy, kenlm), and write the Moses
    tokenizers' specification into the run's fresh cache (``qe.text.fastmoses``; built once per machine).
    Like the interpreter's start they cost the same with any number of jobs (about a second here,
    measured by ``benchmarks/end_to_end_speed.py``); the bundle members, pipelines and models are
    still loaded inside the timed part."""
    import importlib

    from qe.features.registry import registered_families

    registered_families()
    for name in ("pandas", "pyarrow", "kenlm", "spacy", "qe.features.extractor"):
        try:
            importlib.import_module(name)
        except ImportError:  # an optional library that is not installed
            continue
    from qe.text.fastmoses import tokenizer_spec

    for lang in ("en", "es"):  # the Moses tokenizers' cached specification, as a user's warm cache has it
        tokenizer_spec(lang)


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its finished workers."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def scaling_report(families: Sequence[str], n: int = PAIRS) -> dict[str, Any]:
    """Every measurement of this script (the keys its docstring lists) for ``families`` on ``n`` pairs;
    a family that cannot run (e.g. an optional dependency missing) is skipped with a note."""
    load = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for family in families:
        try:
            runs[family] = measure_both(family, n)
        except RuntimeError as exc:
            log(f"skipping {family}: {exc}")
            continue
        log(f"{family}: {runs[family]} (load {os.getloadavg()[0]:.1f})")

    def pick(key: str) -> dict[str, dict[str, float]]:
        return {family: {jobs: run[key] for jobs, run in by_jobs.items()} for family, by_jobs in runs.items()}

    def ratios(key: str) -> dict[str, float]:
        return {family: round(v["jobs2"] / v["jobs1"], 2) for family, v in pick(key).items()}

    together = pairs_per_second(["lm", "ibm1"], 1, n)
    calls = tagging_calls_per_pair()
    return {
        "pairs": n,
        "pairs_per_second": pick("pairs_per_second"),
        "speedup": ratios("pairs_per_second"),
        "cpu_seconds": pick("cpu_seconds"),
        "critical_pairs_per_second": pick("critical_pairs_per_second"),
        "critical_speedup": ratios("critical_pairs_per_second"),
        "tagging_calls_per_pair": calls,
        "lm_ibm1_pairs_per_second_jobs1": together,
        "load_average": {"start": load, "end": [round(x, 2) for x in os.getloadavg()]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated families")
    parser.add_argument("--pairs", type=int, default=PAIRS, help="distinct pairs (default 20,000)")
    parser.add_argument("--bundle", help="resource bundle (default models/resources/wmt12-en-es)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--count-tags", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        sys.path.insert(0, str(REPO))
        _one(json.loads(args.one), args.count_tags)
        return
    if args.bundle:
        os.environ["QE_BUNDLE"] = str(Path(args.bundle).resolve())
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    report = scaling_report(families, args.pairs)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
