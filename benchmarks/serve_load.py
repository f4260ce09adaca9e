"""Load on ``qe serve`` in one run; prints one JSON dict:
``{"single": {"p50_ms", "p99_ms", "requests_per_second"}, "batch": {"pairs_per_second",
"cli_pairs_per_second"}, "rss_growth_mb", "errors"}``.

It starts ``qe serve`` on 127.0.0.1 (any free port) with a model (``--model``, default the best en-es
model ``models/wmt12-en-es.skops``; ``models/wmt12-en-es-fast.skops`` is the light one) and
``--workers`` scoring processes, then, on distinct English-Spanish pairs (newstest, Tatoeba, FLORES, as
``benchmarks/extraction_scaling.py`` picks them), over keep-alive HTTP connections:

- after 200 warm-up requests (not counted), the server's memory (the RSS of the server and its
  worker processes) is taken;
- ``single``: 2,000 one-pair ``POST /v1/score`` requests from 8 concurrent clients: the median and
  99th-percentile latency of a request and the requests per second of the whole phase;
- ``batch``: 10,000 further pairs in 100-pair ``POST /v1/score`` requests from 2 concurrent clients
  (so the worker always has the next batch waiting), pairs per second; ``cli_pairs_per_second``:
  ``qe predict`` on the same 10,000 pairs with ``--jobs`` equal to the workers, wall time of the whole
  command (start-up included, as a user runs it);
- 7,900 more one-pair requests bring the requests after the warm-up to 10,000; ``rss_growth_mb`` is
  the memory then minus the memory after the warm-up;
- ``errors``: requests not answered 200, or not answered at all.

The server and ``qe predict`` each start from an empty cache of their own (``QE_CACHE_DIR`` in a
temporary folder), so that neither reuses features or vectors the other computed. The load average
at the start and end, and the counts, go to stderr. The server is stopped with
SIGTERM at the end (its exit code must be 0, else it is counted as an error).

Targets (issue 21): p50 <= 50 ms, p99 <= 250 ms, batch >= 0.9x the CLI, growth < 50 MB, no error.

Usage: python benchmarks/serve_load.py [--model FILE] [--workers N] [--data-dir DIR] [--scale F]
(``--scale 0.1``: a tenth of every count, as ``tests/test_serve_load.py`` runs it.)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from extraction_scaling import distinct_pairs  # noqa: E402

WARM_UP = 200
SINGLE = 2_000
CLIENTS = 8
BATCH_PAIRS = 10_000
BATCH_SIZE = 100
BATCH_CLIENTS = 2
TOTAL_AFTER_WARM_UP = 10_000


def log(message: str) -> None:
    print(f"serve_load: {message}", file=sys.stderr, flush=True)


def _env(cache: Path) -> dict[str, str]:
    """The environment of a qe process: this checkout first, and its own feature / vector cache."""
    path = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": path, "QE_CACHE_DIR": str(cache)}


def start_server(model: Path, workers: int, cache: Path) -> tuple[subprocess.Popen, str, int]:
    """``qe serve`` on 127.0.0.1, any free port; returns once it says where it listens."""
    command = [
        sys.executable,
        "-m",
        "qe",
        "serve",
        "--model",
        str(model),
        "--port",
        "0",
        "--workers",
        str(workers),
    ]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=_env(cache)
    )
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"on http://([^/]+):(\d+)/ \(", line)
        if found:
            threading.Thread(
                target=lambda: [None for _ in process.stderr], daemon=True
            ).start()  # keep draining
            return process, found.group(1), int(found.group(2))
    raise SystemExit(f"qe serve did not start (exit code {process.wait()})")


def tree_rss_mb(pid: int) -> float:
    """The resident memory of ``pid`` and its children, in MB (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree = {pid} | {child for child, parent in parents.items() if parent == pid}
    total = 0
    for member in tree:
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(found.group(1)) if found else 0
    return total / 1024


class Client:
    """One keep-alive connection; :meth:`score` returns the latency in seconds, or None on an error."""

    def __init__(self, host: str, port: int, model: str) -> None:
        self.host, self.port, self.model = host, port, model
        self.connection = http.client.HTTPConnection(host, port, timeout=300)

    def score(self, pairs: list[dict[str, str]]) -> float | None:
        body = json.dumps({"model": self.model, "pairs": pairs}).encode()
        start = time.perf_counter()
        try:
            self.connection.request(
                "POST", "/v1/score", body=body, headers={"Content-Type": "application/json"}
            )
            response = self.connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=300)
            return None
        elapsed = time.perf_counter() - start
        if response.status != 200 or len(json.loads(data)["results"]) != len(pairs):
            return None
        return elapsed


def run_clients(
    host: str, port: int, model: str, requests: list[list[dict[str, str]]], clients: int
) -> tuple[list[float], int, float]:
    """Send ``requests`` (each a list of pairs) from ``clients`` threads: ``(latencies, errors, seconds)``."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    queue = list(reversed(requests))

    def work() -> None:
        nonlocal errors
        client = Client(host, port, model)
        while True:
            with lock:
                if not queue:
                    break
                pairs = queue.pop()
            took = client.score(pairs)
            with lock:
                if took is None:
                    errors += 1
                else:
                    latencies.append(took)
        client.connection.close()

    threads = [threading.Thread(target=work) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors, time.perf_counter() - start


def cli_pairs_per_second(model: Path, pairs: list[dict[str, str]], jobs: int, cache: Path) -> float:
    """Pairs per second of ``qe predict`` on ``pairs`` (wall time of the command, start-up included)."""
    with tempfile.TemporaryDirectory() as folder:
        src, mt, out = Path(folder, "src"), Path(folder, "mt"), Path(folder, "out.tsv")
        src.write_text("".join(p["src"] + "\n" for p in pairs), encoding="utf-8")
        mt.write_text("".join(p["mt"] + "\n" for p in pairs), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "qe",
            "predict",
            "--model",
            str(model),
            "--src",
            str(src),
            "--mt",
            str(mt),
        ]
        command += ["--out", str(out), "--jobs", str(jobs), "--quiet"]
        start = time.perf_counter()
        subprocess.run(command, check=True, env=_env(cache))
        seconds = time.perf_counter() - start
        assert len(out.read_text().splitlines()) == len(pairs) + 1
    return len(pairs) / seconds


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=REPO / "models" / "wmt12-en-es.skops")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every request count by this")
    args = parser.parse_args()
    warm_up, single_n, batch_n, total = (
        max(BATCH_SIZE, round(count * args.scale))
        for count in (WARM_UP, SINGLE, BATCH_PAIRS, TOTAL_AFTER_WARM_UP)
    )
    if not args.model.is_file():
        raise SystemExit(f"{args.model}: not found (make demo builds the en-es model)")

    needed = warm_up + single_n + batch_n
    src, mt = distinct_pairs(needed, args.data_dir)
    pairs = [{"src": s, "mt": m} for s, m in zip(src, mt, strict=True)]
    if len(pairs) < needed:
        raise SystemExit(f"only {len(pairs)} distinct pairs in the data directory; {needed} are needed")
    warm, single, batch = pairs[:warm_up], pairs[warm_up : warm_up + single_n], pairs[warm_up + single_n :]
    start_load = os.getloadavg()[0]
    log(f"load average at the start: {start_load:.2f}; model {args.model.name}, {args.workers} worker(s)")

    caches = tempfile.TemporaryDirectory(prefix="serve-load-")  # each side starts from an empty cache
    process, host, port = start_server(args.model, args.workers, Path(caches.name, "server"))
    name = args.model.name.removesuffix(".skops")
    errors = 0
    try:
        _, failed, _ = run_clients(host, port, name, [[p] for p in warm], CLIENTS)
        errors += failed
        rss_before = tree_rss_mb(process.pid)

        latencies, failed, seconds = run_clients(host, port, name, [[p] for p in single], CLIENTS)
        errors += failed
        single_report = {
            "p50_ms": round(1000 * statistics.median(latencies), 2),
            "p99_ms": round(1000 * percentile(latencies, 0.99), 2),
            "requests_per_second": round(len(single) / seconds, 1),
        }
        chunks = [batch[k : k + BATCH_SIZE] for k in range(0, len(batch), BATCH_SIZE)]
        _, failed, seconds = run_clients(host, port, name, chunks, BATCH_CLIENTS)
        errors += failed
        served_rate = len(batch) / seconds

        soak = max(0, total - len(single) - len(chunks))
        _, failed, _ = run_clients(host, port, name, [[pairs[k % len(pairs)]] for k in range(soak)], CLIENTS)
        errors += failed
        rss_after = tree_rss_mb(process.pid)
    finally:
        process.terminate()
        code = process.wait(300)
    errors += code != 0
    log(f"server: {rss_before:.0f} MB after the warm-up, {rss_after:.0f} MB after {total:,} more requests")
    log(f"server exit code after SIGTERM: {code}")

    cli_rate = cli_pairs_per_second(args.model, batch, args.workers, Path(caches.name, "cli"))
    caches.cleanup()
    log(f"load average at the end: {os.getloadavg()[0]:.2f}; batch / CLI = {served_rate / cli_rate:.2f}")
    report: dict[str, Any] = {
        "single": single_report,
        "batch": {"pairs_per_second": round(served_rate, 1), "cli_pairs_per_second": round(cli_rate, 1)},
        "rss_growth_mb": round(rss_after - rss_before, 1),
        "errors": errors,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
