"""uvicorn's HTTP/1.1 protocol (h11) with two changes, for what happens before the app sees a request:
HTTP that h11 refuses (a bad Content-Length or chunk size, a missing or doubled Host, a NUL in a
header, a head still arriving past 16 KB) is answered 400 with one JSON line instead of uvicorn's plain
text; and an ``Upgrade`` header is not logged. Everything else is uvicorn's own (``H11Protocol``)."""

from __future__ import annotations

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
    """``H11Protocol`` with JSON for the requests it refuses."""

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
