"""``qe serve`` (issue 33, main 3feb89b): bodies that hold the event loop. Two clients sending 2 MB JSON
bodies (an array of zeros, 180,000 unknown keys; about 1.4 s of parsing each) held ``/healthz`` at a
median of 0.8-2.9 s (2 ms idle), and the HTTP process grew 70 -> 220 MB under such bodies without
levelling off. Bodies are now parsed off the event loop, and refused at the first thing wrong."""

from __future__ import annotations

import http.client
import statistics
import threading
import time

import pytest

from tests.helpers.hostile_bodies import HOSTILE_BODIES
from tests.helpers.serve import rss_mb, serving, still_serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(surface_model):
    with serving([surface_model]) as running:
        yield running


def _send(server, bodies: list[bytes], count: int, sent: list[int], stop: threading.Event) -> None:
    connection = server.connection()
    for k in range(count):
        if stop.is_set():
            break
        connection.request("POST", "/v1/score", bodies[k % len(bodies)], {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        assert 400 <= response.status < 500, response.status
        sent.append(1)
    connection.close()


def test_health_stays_fast_while_two_clients_send_2_mb_hostile_bodies(server):
    sent: list[int] = []
    stop = threading.Event()
    clients = [
        threading.Thread(target=_send, args=(server, [HOSTILE_BODIES[k]], 10_000, sent, stop), daemon=True)
        for k in ("zeros", "unknown-keys")
    ]
    for client in clients:
        client.start()
    probe = http.client.HTTPConnection(server.host, server.port, timeout=60)
    latencies = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        start = time.perf_counter()
        probe.request("GET", "/healthz")
        assert probe.getresponse().read() == b'{"status":"ok"}'
        latencies.append(time.perf_counter() - start)
        time.sleep(0.05)
    stop.set()
    for client in clients:
        client.join(120)
    median = statistics.median(latencies)
    print(f"/healthz: median {median * 1000:.1f} ms over {len(latencies)} probes, {len(sent)} bodies")
    assert len(sent) >= 20  # the bodies were being sent all along
    assert median < 0.15, f"/healthz median {median * 1000:.0f} ms while hostile bodies were parsed"
    still_serving(server)


def test_the_http_process_memory_levels_off_under_hostile_bodies(server):
    bodies = list(HOSTILE_BODIES.values())
    stop = threading.Event()

    def run(count: int) -> None:
        sent: list[int] = []
        clients = [
            threading.Thread(target=_send, args=(server, bodies[k::2], count // 2, sent, stop))
            for k in range(2)
        ]
        for client in clients:
            client.start()
        for client in clients:
            client.join(600)
        assert len(sent) == count // 2 * 2

    run(40)  # the allocator's pools and the first bodies' peak
    start = rss_mb(server.process.pid)
    marks = []
    for _ in range(8):
        run(50)
        marks.append(rss_mb(server.process.pid))
    print(f"HTTP process RSS: {start:.1f} MB after 40 bodies, then every 50: {[round(m, 1) for m in marks]}")
    # glibc keeps freed blocks of a 30 MB parse in whichever arena served it: the marks move up and down
    # by about 10 MB from round to round (CI, 9b0461d..00cb4f6: 74 -> 82 over the first 200, 91 at most
    # over the second). The leak this guards against grew 150 MB; 15 MB over 200 bodies is 0.075 MB each.
    assert max(marks[4:]) - max(marks[:4]) < 15, (start, marks)  # the second 200 took it little higher
    assert max(marks) - start < 60, (start, marks)
    still_serving(server)
