"""``qe serve`` (issue 33, main 3feb89b): slow clients and what they leave behind. Nothing closed a
connection that sent its headers one byte a second (20 such sockets stayed open as long as they were
fed), nor a body sent at 4 bytes/s (accepted after 27 s); a client dropped by ``--send-seconds`` left its
upload's temporary file (up to 50 MB) open until a later garbage collection; ``HEAD /healthz`` was 405.
Now a request's head must arrive within ``--header-seconds``, its body keep pace with
``--body-seconds``, and a dropped client's file is closed at once."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import pytest

from tests.helpers.serve import (
    assert_one_line_error,
    deleted_files_open,
    serving,
    still_serving,
    wait_until,
)
from tests.helpers.toy import EN, ES, sentences

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(surface_model):
    with serving(
        [surface_model], "--header-seconds", "2", "--body-seconds", "2", "--send-seconds", "2"
    ) as running:
        yield running


def _closed(sock: socket.socket) -> bool:
    """True once the server has closed ``sock`` (what it sent before closing is read and dropped)."""
    try:
        while data := sock.recv(4096):
            del data
        return True
    except (TimeoutError, BlockingIOError):
        return False
    except OSError:
        return True


def test_connections_sending_their_headers_a_byte_a_second_are_closed(server):
    head = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Slow: ".encode()
    socks = [socket.create_connection((server.host, server.port), timeout=30) for _ in range(20)]
    silent = socket.create_connection((server.host, server.port), timeout=30)  # sends nothing at all
    open_after = []
    for k in range(10):  # a byte a second for 10 s, five times the limit
        for sock in socks:
            with contextlib.suppress(OSError):  # closed by the server already
                sock.sendall(head[k : k + 1])
        time.sleep(1.0)
        if k == 5:
            still_serving(server)  # others are served meanwhile
    for sock in [*socks, silent]:
        sock.settimeout(0.5)
        open_after.append(not _closed(sock))
        sock.close()
    assert not any(open_after), f"{sum(open_after)} of 21 connections still open after 10 s"
    still_serving(server)


def test_a_slow_headers_connection_is_told_why_in_one_json_line(server):
    sock = socket.create_connection((server.host, server.port), timeout=30)
    sock.sendall(b"GET /healthz HTTP/1.1\r\n")
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"application/json" in head, data
    assert_one_line_error(408, json.loads(body), 408, "headers")


def test_a_body_sent_at_4_bytes_a_second_is_408(server):
    sock = socket.create_connection((server.host, server.port), timeout=30)
    sock.sendall(
        f"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
        "Content-Length: 200\r\n\r\n".encode()
    )
    answer = b""
    stop = threading.Event()

    def trickle() -> None:
        for k in range(50):  # 200 bytes at 4 bytes/s: 50 s
            if stop.wait(1.0):
                return
            try:
                sock.sendall(b'{"a":'[:4] if k == 0 else b"    ")
            except OSError:
                return

    feeder = threading.Thread(target=trickle, daemon=True)
    feeder.start()
    started = time.monotonic()
    try:
        while chunk := sock.recv(4096):
            answer += chunk
    except OSError:
        pass
    stop.set()
    took = time.monotonic() - started
    sock.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), answer[:300]
    assert_one_line_error(408, json.loads(body), 408, "body")
    assert took < 15, took
    still_serving(server)


def test_a_client_dropped_by_send_seconds_leaves_no_temporary_file_open(server):
    pid = server.process.pid
    before = len(deleted_files_open(pid))
    pairs = "\n".join(
        json.dumps({"src": s, "mt": m})
        for s, m in zip(sentences(4000, EN, 90), sentences(4000, ES, 91), strict=True)
    ).encode()
    for _ in range(3):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((server.host, server.port))
        drops = _drops(server)
        sock.sendall(
            f"POST /v1/batch?model=model&features=true HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Content-Type: application/x-ndjson\r\nContent-Length: {len(pairs)}\r\n\r\n".encode()
            + pairs
        )
        assert sock.recv(64).startswith(b"HTTP/1.1 200")  # then it reads nothing more
        assert wait_until(lambda drops=drops: _drops(server) > drops, 120)
        time.sleep(0.5)
        assert len(deleted_files_open(pid)) == before, deleted_files_open(pid)
        sock.close()
    still_serving(server)


def _drops(server) -> int:
    return sum("dropped a client" in line for line in server.log)


def test_head_on_the_health_endpoints(server):
    for path in ("/healthz", "/readyz"):
        status, headers, data = server.request("HEAD", path)
        assert status == 200 and data == b"", (path, status)
        assert headers["content-type"] == "application/json"
