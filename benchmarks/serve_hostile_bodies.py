"""The HTTP process of ``qe serve`` under hostile 2 MB JSON bodies (issue 33); prints one JSON dict:
``{"bodies", "rss_mb": [...], "peak_first_half_mb", "peak_second_half_mb", "healthz_median_ms", "statuses"}``:
the memory has levelled off when the second half of the bodies took it no higher than the first.

It starts ``qe serve`` on 127.0.0.1 (any free port; ``--model``, default ``models/wmt12-en-es-fast.skops``,
served as ``model``, the name the bodies give; the model lives in the worker, not in the process
measured), then two clients send ``--bodies`` bodies
(1,000), each one of ``tests/helpers/hostile_bodies.py``'s kinds in turn (an array of a million zeros,
180,000 unknown keys at the top level or in one pair, 150,000 escaped emoji in one text, 60,000
pairs, nesting too deep at the end of the body), each refused after it is parsed. The resident memory
of the HTTP process (not its worker) is taken after a warm-up of 20 bodies and every 50 bodies
after; a third client asks ``/healthz`` every 50 ms meanwhile. The server is stopped with SIGTERM.

Usage: python benchmarks/serve_hostile_bodies.py [--model FILE] [--bodies N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from serve_load import start_server  # noqa: E402

from tests.helpers.hostile_bodies import HOSTILE_BODIES  # noqa: E402
from tests.helpers.serve import rss_mb  # noqa: E402

WARM_UP = 20
EVERY = 50


def send(host: str, port: int, bodies: list[bytes], count: int, statuses: Counter) -> None:
    """``count`` bodies on one keep-alive connection, each of ``bodies`` in turn."""
    connection = http.client.HTTPConnection(host, port, timeout=300)
    for k in range(count):
        connection.request("POST", "/v1/score", bodies[k % len(bodies)], {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        statuses[response.status] += 1
    connection.close()


def probe(host: str, port: int, stop: threading.Event, latencies: list[float]) -> None:
    """``/healthz`` every 50 ms until ``stop``."""
    connection = http.client.HTTPConnection(host, port, timeout=300)
    while not stop.wait(0.05):
        start = time.perf_counter()
        connection.request("GET", "/healthz")
        connection.getresponse().read()
        latencies.append(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=REPO / "models" / "wmt12-en-es-fast.skops")
    parser.add_argument("--bodies", type=int, default=1_000)
    args = parser.parse_args()
    kinds = list(HOSTILE_BODIES.values())
    with tempfile.TemporaryDirectory() as cache:
        served = Path(cache) / "model.skops"  # served as "model", the name the bodies give
        served.symlink_to(args.model.resolve())
        process, host, port = start_server(served, 1, Path(cache))
        statuses: Counter = Counter()
        try:
            send(host, port, kinds, WARM_UP, statuses)
            rss = [rss_mb(process.pid)]
            stop, latencies = threading.Event(), []
            prober = threading.Thread(target=probe, args=(host, port, stop, latencies))
            prober.start()
            for _ in range(args.bodies // EVERY):
                clients = [
                    threading.Thread(target=send, args=(host, port, kinds[k::2], EVERY // 2, statuses))
                    for k in range(2)
                ]
                for client in clients:
                    client.start()
                for client in clients:
                    client.join()
                rss.append(rss_mb(process.pid))
                print(
                    f"serve_hostile_bodies: {sum(statuses.values())} bodies, RSS {rss[-1]:.1f} MB",
                    file=sys.stderr,
                )
            stop.set()
            prober.join()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(120)
    half = len(rss) // 2
    print(
        json.dumps(
            {
                "bodies": args.bodies,
                "rss_mb": [round(value, 1) for value in rss],
                "peak_first_half_mb": round(max(rss[: half + 1]), 1),
                "peak_second_half_mb": round(max(rss[half + 1 :]), 1),
                "healthz_median_ms": round(statistics.median(latencies) * 1000, 1),
                "statuses": dict(sorted(statuses.items())),
            }
        )
    )


if __name__ == "__main__":
    main()
