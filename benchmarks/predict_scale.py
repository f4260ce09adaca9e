"""Streamed ``qe predict`` at scale: peak memory at 100k and 1M pairs, throughput with 1 and 2 jobs, Dask.

Input: the WMT12 training + test sentence pairs (source.eng / target_system.spa, 2,254 pairs)
repeated in order until the wanted number of pairs, written to temporary files. The model is an
SVR trained on the WMT12 training set with the baseline17, lm, ibm1 and surface families and the
resource bundle models/resources/wmt12-en-es (built by ``qe resources build
configs/resources-wmt12-en-es.toml``; copied to a temporary directory first), unless ``--model``
names one. If the bundle is missing,
the model uses the surface family alone (said on stderr).

Every run is ``python -m qe predict ... --out FILE --quiet`` in a subprocess (default chunk size
10,000). Peak memory is the largest sum of resident set sizes over the subprocess and all its
descendants (loky workers, Dask nanny and worker processes), sampled from /proc every 0.2 s;
shared pages count once per process, so this overstates the true footprint. Throughput is pairs
divided by the command's wall time (start-up, model and resource loading included).

Runs: 2 jobs on ``--small`` pairs (peak memory; also a 2-job throughput run when
``--throughput-pairs`` equals ``--small``); 1 job and 2 jobs on ``--throughput-pairs`` pairs,
alternately, ``--repeat`` times each, the fastest run of each counting (other work on the machine
can only slow a run down); a Dask local cluster of 2 worker processes on ``--throughput-pairs``
pairs, compared byte for byte with the loky output; 2 jobs on ``--large`` pairs (peak memory).
``pairs`` in the output is the size of the throughput runs.

Usage: python benchmarks/predict_scale.py [--model M] [--data-dir DIR] [--small N] [--large N]
       [--throughput-pairs N] [--families a,b]
Prints ``{"pairs", "peak_rss_mb_100k", "peak_rss_mb_1m", "pairs_per_second_1job",
"pairs_per_second_2jobs", "speedup", "dask_identical"}``.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.data import resolve_data_dir  # noqa: E402

BUNDLE = REPO / "models" / "resources" / "wmt12-en-es"
FAMILIES = "baseline17,lm,ibm1,surface"
PAGE = os.sysconf("SC_PAGE_SIZE")


def log(message: str) -> None:
    print(f"[predict_scale] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- memory of a process tree


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants."""
    children = _children_map()
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


def run_measured(cmd: list[str]) -> tuple[float, float]:
    """Run a command; return (wall seconds, peak resident MB of its process tree).

    Also logs the CPU seconds of the tree and the mean load average, to judge whether other work
    on the machine slowed the run down (the throughput figures assume an otherwise idle machine).
    """
    peak = 0
    loads: list[float] = []
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr_lines: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True)
    reader.start()
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        loads.append(os.getloadavg()[0])
        time.sleep(0.2)
    seconds = time.perf_counter() - started
    reader.join()
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(getattr(cpu_after, f) - getattr(cpu_before, f) for f in ("ru_utime", "ru_stime"))
    load = sum(loads) / max(1, len(loads))
    log(f"  wall {seconds:.1f} s, CPU {cpu:.1f} s (process tree), mean 1-min load average {load:.1f}")
    if proc.returncode != 0:
        sys.stderr.write(b"".join(stderr_lines[-20:]).decode("utf-8", "replace"))
        raise SystemExit(f"command failed (exit {proc.returncode}): {' '.join(cmd)}")
    return seconds, peak / 2**20


# ---------------------------------------------------------------------- input and model


def wmt12_pairs(data_dir: Path) -> tuple[list[bytes], list[bytes]]:
    root = data_dir / "wmt12-qe"
    src, mt = [], []
    for split in ("training_set", "test_set"):
        src += (root / split / "source.eng").read_bytes().splitlines(keepends=True)
        mt += (root / split / "target_system.spa").read_bytes().splitlines(keepends=True)
    assert len(src) == len(mt)
    return src, mt


def write_cycled(lines: list[bytes], n: int, path: Path) -> Path:
    with open(path, "wb") as handle:
        for start in range(0, n, len(lines)):
            handle.writelines(lines[: min(len(lines), n - start)])
    return path


def train_model(data_dir: Path, families: list[str], folder: Path, bundle: Path) -> Path:
    from qe.run.config import load_config
    from qe.run.pipeline import run_experiment

    lines = ['name = "predict-scale"', "seed = 42", "[data]", 'dataset = "wmt12-en-es"']
    lines += [f'data_dir = "{data_dir}"', "[features]", f"families = {json.dumps(families)}"]
    if any(f != "surface" for f in families):
        # a private copy: the model stays valid if the shared bundle is rebuilt meanwhile
        shutil.copytree(bundle, folder / "bundle")
        lines.append(f'resources = "{folder / "bundle"}"')
    lines += ["[learner]", 'name = "svr"', "[cv]", "folds = 3", "n_jobs = 2"]
    config = folder / "predict-scale.toml"
    config.write_text("\n".join(lines) + "\n")
    run_experiment(load_config(config), folder / "run", progress=False)
    return folder / "run" / "model.skops"


# ---------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="a saved model (default: train one, see above)")
    parser.add_argument("--data-dir", help="data directory (default $QE_DATA_DIR, then /work/shared/data)")
    parser.add_argument("--families", default=FAMILIES, help=f"families of the trained model ({FAMILIES})")
    parser.add_argument("--small", type=int, default=100_000, help="pairs of the small memory run")
    parser.add_argument("--large", type=int, default=1_000_000, help="pairs of the large memory run")
    parser.add_argument("--throughput-pairs", type=int, help="pairs of the 1/2-job runs (default --small)")
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument(
        "--repeat", type=int, default=2, help="1- and 2-job throughput runs each (the fastest counts)"
    )
    args = parser.parse_args()
    data_dir = resolve_data_dir(args.data_dir or os.environ.get("QE_DATA_DIR") or "/work/shared/data")
    through = args.throughput_pairs or args.small

    with tempfile.TemporaryDirectory(prefix="predict-scale-") as tmp:
        folder = Path(tmp)
        if args.model is not None:
            model = args.model
        else:
            families = [f.strip() for f in args.families.split(",") if f.strip()]
            if families != ["surface"] and not (BUNDLE / "manifest.json").is_file():
                log(f"no resource bundle at {BUNDLE}: the model uses the surface family only")
                families = ["surface"]
            log(f"training the model on WMT12 with families {','.join(families)}")
            model = train_model(data_dir, families, folder, BUNDLE)
        from qe.model.file import QEModel

        manifest = QEModel.load(model).manifest
        families_used = ",".join(manifest.get("families", []))
        log(f"model families: {families_used}; resources: {manifest.get('resources')}")
        src_lines, mt_lines = wmt12_pairs(data_dir)
        sizes = sorted({args.small, args.large, through})
        inputs = {
            n: (
                write_cycled(src_lines, n, folder / f"src.{n}"),
                write_cycled(mt_lines, n, folder / f"mt.{n}"),
            )
            for n in sizes
        }

        def predict(n: int, jobs: int, out: str, *extra: str) -> tuple[float, float]:
            src, mt = inputs[n]
            cmd = [sys.executable, "-m", "qe", "predict", "--model", str(model), "--src", str(src)]
            cmd += ["--mt", str(mt), "--out", str(folder / out), "--quiet", "--jobs", str(jobs)]
            cmd += ["--chunk-size", str(args.chunk_size), *extra]
            seconds, peak = run_measured(cmd)
            log(
                f"{n:,} pairs, {jobs} job(s) {' '.join(extra)}: {seconds:.1f} s ({n / seconds:.1f} pairs/s), "
                f"peak {peak:.0f} MB"
            )
            return seconds, peak

        small_seconds, peak_small = predict(args.small, 2, f"loky2.{args.small}")
        two_times = [small_seconds] if through == args.small else []
        one_times: list[float] = []
        for _ in range(args.repeat):  # alternate, keep the fastest: other load on the machine only slows
            one_times.append(predict(through, 1, f"loky1.{through}")[0])
            if len(two_times) < args.repeat:
                two_times.append(predict(through, 2, f"loky2.{through}")[0])
        one_seconds, two_seconds = min(one_times), min(two_times)
        identical_jobs = filecmp.cmp(folder / f"loky2.{through}", folder / f"loky1.{through}", shallow=False)
        log(f"1-job output identical to the 2-job output: {identical_jobs}")
        predict(through, 2, f"dask2.{through}", "--backend", "dask")
        identical = filecmp.cmp(folder / f"loky2.{through}", folder / f"dask2.{through}", shallow=False)
        _, peak_large = predict(args.large, 2, f"loky2.{args.large}")

    result = {
        "pairs": through,
        "peak_rss_mb_100k": round(peak_small, 1),
        "peak_rss_mb_1m": round(peak_large, 1),
        "pairs_per_second_1job": round(through / one_seconds, 1),
        "pairs_per_second_2jobs": round(through / two_seconds, 1),
        "speedup": round(one_seconds / two_seconds, 3),
        "dask_identical": identical,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
