"""uvicorn's HTTP/1.1 protocol (h11) with two changes, for what happens before the app sees a request:
the request line and headers must arrive within ``--header-seconds`` (uvicorn bounds only the idle
time between requests, so a client sending its headers a byte a second held a connection for ever),
answered 408; HTTP that h11 refuses (a bad Content-Length or chunk size, a missing or doubled Host, a
NUL in a header, a head still arriving past 16 KB) is answered 400 with one JSON line instead of
uvicorn's plain text; and an ``Upgrade`` header is not logged. Everything else is uvicorn's own
(``H11Protocol``)."""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from qe.serve.errors import error_body
from qe.serve.middleware import SECURITY_HEADERS

MALFORMED = (
    "the request is not valid HTTP/1.1 (its request line, a header, its Content-Length or a chunk size; "
    "HTTP/1.1 needs exactly one Host header)"
)


def _headers(body: bytes) -> list[tuple[bytes, bytes]]:
    """The headers of an answer the protocol writes itself (the app's middleware never sees it)."""
    return [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *SECURITY_HEADERS,
    ]


class GuardedH11Protocol(H11Protocol):
    """``H11Protocol`` with a deadline on each request's head and JSON for the requests it refuses."""

    header_seconds = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._await_head(after=None)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._head_arrived()

    def on_response_complete(self) -> None:
        finished = self.cycle
        super().on_response_complete()  # may start the next request at once, if it was pipelined
        if not self.transport.is_closing():
            self._await_head(after=finished)
            self._head_arrived()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _unsupported_upgrade_warning(self) -> None:
        """Nothing: uvicorn logs two lines for every request with an ``Upgrade`` header (there are no
        WebSocket routes; the request is served as plain HTTP), a cheap way to flood the log."""

    def send_400_response(self, msg: str) -> None:
        """h11 refused the bytes (``msg`` is uvicorn's plain text): one JSON line, then close."""
        body = error_body(MALFORMED)
        try:
            output = self.conn.send(
                h11.Response(status_code=400, headers=_headers(body), reason=b"Bad Request")
            )
            output += self.conn.send(h11.Data(data=body)) + self.conn.send(h11.EndOfMessage())
            self.transport.write(output)
        except h11.LocalProtocolError:  # a response had begun: nothing more can be said on it
            pass
        self.transport.close()

    def _await_head(self, after: object) -> None:
        """Start the clock for the request that follows ``after`` (None: the connection's first):
        a new request cycle means its head has arrived."""
        self._stop_head_timer()
        self._awaited_after = after
        self._head_timer = self.loop.call_later(self.header_seconds, self._head_too_slow)

    def _head_arrived(self) -> None:
        if self._head_timer is not None and self.cycle is not self._awaited_after:
            self._stop_head_timer()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        """The head did not arrive in time: 408 (written as is: h11 answers only a request it has
        read), then close. (A client still sending the body of a request already answered is closed
        without a word.)"""
        self._head_timer = None
        if self.transport.is_closing() or self.cycle is not self._awaited_after:
            return
        if self.conn.our_state is not h11.IDLE:
            self.transport.close()
            return
        body = error_body(
            f"the request line and headers did not arrive within {self.header_seconds:g} s (--header-seconds)"
        )
        lines = [b"HTTP/1.1 408 Request Timeout"] + [name + b": " + value for name, value in _headers(body)]
        self.transport.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        self.transport.close()


def guarded_protocol(header_seconds: float) -> type[GuardedH11Protocol]:
    """The protocol class uvicorn is given (``uvicorn.Config(http=...)``) for ``header_seconds``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"header_seconds": header_seconds})
