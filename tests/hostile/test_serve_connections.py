"""``qe serve`` (issue 21, branch wt-serve): many clients at once and a client that stops reading. 64
connections scoring at the same moment each get their own pair's score; a client that stops reading a
large streamed answer holds neither a task nor the only scoring worker: others are served meanwhile,
and it is dropped after ``--send-seconds``."""

from __future__ import annotations

import socket
import threading

import pytest

from tests.helpers.serve import serving, still_serving, wait_until
from tests.helpers.toy import EN, ES, sentences

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(surface_model):
    with serving(
        [surface_model], "--workers", "1", "--send-seconds", "3", "--queue-seconds", "60"
    ) as running:
        yield running


def test_64_concurrent_connections_each_get_their_own_score(server):
    pairs = [{"src": s, "mt": m} for s, m in zip(sentences(64, EN, 70), sentences(64, ES, 71), strict=True)]
    _, expected = server.score("model", pairs)
    answers: dict[int, tuple] = {}
    start = threading.Barrier(64)

    def client(k: int) -> None:
        start.wait()
        answers[k] = server.score("model", [{**pairs[k], "id": k}])

    threads = [threading.Thread(target=client, args=(k,)) for k in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert sorted(answers) == list(range(64))
    for k, (status, body) in answers.items():
        assert status == 200 and body["results"][0]["id"] == k
        assert body["results"][0]["score"] == pytest.approx(expected["results"][k]["score"], abs=1e-9)
    still_serving(server)


def test_a_client_that_stops_reading_is_dropped_and_others_are_served(server):
    pairs = "\n".join(
        f'{{"src": "{s}", "mt": "{m}"}}'
        for s, m in zip(sentences(4000, EN, 80), sentences(4000, ES, 81), strict=True)
    ).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((server.host, server.port))
    head = (
        "POST /v1/batch?model=model&features=true HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/x-ndjson\r\nContent-Length: {len(pairs)}\r\n\r\n"
    )
    sock.sendall(head.encode() + pairs)
    assert sock.recv(64).startswith(b"HTTP/1.1 200")  # then it reads nothing more
    for _ in range(3):
        still_serving(server)  # the one worker is not held by the stalled answer
    assert wait_until(lambda: any("dropped a client" in line for line in server.log), 120)
    sock.settimeout(60)
    received = 0
    while chunk := sock.recv(1 << 16):  # what was in flight, then the end: the server closed it
        received += len(chunk)
    sock.close()
    assert received < 4000 * 1000  # far from the whole answer
    still_serving(server)
