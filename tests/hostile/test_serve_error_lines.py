"""``qe serve`` (issue 33, main 3feb89b): errors that were not one JSON line. Malformed HTTP (conflicting
or negative Content-Length, a bad chunk size, a missing or doubled Host, a NUL in a header, a
Content-Length of 10^23) got uvicorn's ``400 text/plain``; a refused CORS preflight was plain text;
requests in flight when ``--drain-seconds`` ran out got ``500 text/plain "Internal Server Error"`` and
CancelledError tracebacks in the log (a stream of results already begun was cut without a word); a
client disconnecting mid-upload wrote two tracebacks (about 130 log lines) each time."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest

from tests.helpers.serve import (
    assert_one_line_error,
    json_error,
    raw_request,
    serving,
    start_server,
    still_serving,
    wait_until,
)
from tests.helpers.toy import EN, ES, sentences

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(surface_model):
    with serving([surface_model], "--cors-origin", "https://tool.example.org") as running:
        yield running


def _head(server, *lines: str, version: str = "HTTP/1.1") -> bytes:
    return (f"POST /v1/score {version}\r\n" + "".join(f"{line}\r\n" for line in lines) + "\r\n").encode()


MALFORMED = {
    "conflicting-content-length": lambda h: (
        _head(h, h.host_line, "Content-Length: 5", "Content-Length: 6") + b"{}{}{}"
    ),
    "negative-content-length": lambda h: _head(h, h.host_line, "Content-Length: -1"),
    "content-length-10^23": lambda h: _head(h, h.host_line, "Content-Length: 1" + "0" * 23),
    "bad-chunk-size": lambda h: (
        _head(h, h.host_line, "Transfer-Encoding: chunked") + b"zz\r\n{}\r\n0\r\n\r\n"
    ),
    "chunk-size-of-40-digits": lambda h: (
        _head(h, h.host_line, "Transfer-Encoding: chunked") + b"1" * 40 + b"\r\n"
    ),
    "no-host": lambda h: _head(h, "Content-Length: 2") + b"{}",
    "two-hosts": lambda h: _head(h, h.host_line, h.host_line, "Content-Length: 2") + b"{}",
    "nul-in-a-header": lambda h: _head(h, h.host_line, "X-Note: a\x00b", "Content-Length: 2") + b"{}",
    "header-without-a-colon": lambda h: _head(h, h.host_line, "Content-Length 2") + b"{}",
    "space-before-a-colon": lambda h: _head(h, h.host_line, "Content-Length : 2") + b"{}",
    "request-line-of-garbage": lambda h: (
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40 + b"\r\n\r\n"
    ),
}


class _Host:
    def __init__(self, server) -> None:
        self.host_line = f"Host: 127.0.0.1:{server.port}"


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_http_is_400_in_one_json_line(server, name):
    status, headers, data = raw_request(server, MALFORMED[name](_Host(server)), timeout=30)
    message = assert_one_line_error(*json_error(status, headers, data), 400, "HTTP")
    assert "Content-Length: 1" not in message and "\x00" not in message
    assert headers.get("connection") == "close"
    still_serving(server)


def test_a_refused_cors_preflight_is_one_json_line(server):
    preflight = {
        "Origin": "https://other.example.org",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    status, headers, data = server.request("OPTIONS", "/v1/score", headers=preflight)
    assert "access-control-allow-origin" not in headers
    message = assert_one_line_error(*json_error(status, headers, data), 400, "cross-origin")
    assert "other.example.org" not in message
    status, headers, _ = server.request(
        "OPTIONS", "/v1/score", headers={**preflight, "Origin": "https://tool.example.org"}
    )
    assert status == 200 and headers["access-control-allow-origin"] == "https://tool.example.org"


def _half_sent(server, path: str, kind: str, length: int, part: bytes) -> socket.socket:
    sock = socket.create_connection((server.host, server.port), timeout=120)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {length}\r\n\r\n".encode()
        + part
    )
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    import http.client

    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def test_requests_in_flight_when_the_drain_runs_out_get_a_503_line_and_no_traceback(surface_model):
    server = start_server([surface_model], "--drain-seconds", "1", "--score-seconds", "8")
    try:
        waiting = _half_sent(server, "/v1/score", "application/json", 100, b'{"model": "model", ')
        pairs = zip(sentences(5000, EN, 7), sentences(5000, ES, 8), strict=True)
        upload = "\n".join(json.dumps({"src": s, "mt": m}) for s, m in pairs).encode()
        streaming = server.connection()
        streaming.request("POST", "/v1/batch?model=model", upload, {"Content-Type": "application/x-ndjson"})
        stream = streaming.getresponse()
        assert json.loads(stream.readline())["index"] == 0  # the stream has begun
        (worker,) = server.worker_pids()
        os.kill(worker, signal.SIGSTOP)  # what is sent to it now waits: requests being scored
        scored: list = []
        thread = threading.Thread(
            target=lambda: scored.append(server.score("model", [{"src": "a", "mt": "b"}]))
        )
        thread.start()
        time.sleep(1.0)
        server.process.send_signal(signal.SIGTERM)
        assert_one_line_error(*json_error(*_answer(waiting)), 503, "stopping")
        thread.join(60)
        assert_one_line_error(*scored[0], 503, "stopping")
        last = json.loads(stream.read().decode().splitlines()[-1])
        assert_one_line_error(503, last, 503, "stopping")  # the stream's last line
        os.kill(worker, signal.SIGCONT)
        assert server.process.wait(120) == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
    log = "\n".join(server.log)
    assert "Traceback" not in log and "CancelledError" not in log, log[-3000:]
    assert "qe serve: stopped" in log


def test_a_client_that_disconnects_mid_upload_costs_at_most_one_log_line(server):
    for path, kind in (
        ("/v1/batch?model=model", "text/tab-separated-values"),
        ("/v1/score", "application/json"),
    ):
        before = len(server.log)
        for _ in range(3):
            sock = _half_sent(server, path, kind, 100_000, b"src\tmt\none two\tuno dos\n")
            time.sleep(0.3)
            sock.close()
        still_serving(server)
        assert wait_until(lambda: server.call("GET", "/healthz")[0] == 200)
        time.sleep(1.0)
        new = server.log[before:]
        assert len(new) <= 3 and not any("Traceback" in line for line in new), "\n".join(new[:40])
