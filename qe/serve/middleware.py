"""Small ASGI wrappers around the app: security headers on every response (the page loads nothing from
elsewhere) and a body over its limit refused before it is read. (Who may ask: ``qe.serve.guards``; how
long a client may take: ``qe.serve.deadlines``.)"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from qe.serve.errors import one_line, too_large

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data: blob:; object-src 'none'; "
        b"base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response: scripts, styles and requests only to this
    server (no CDN, no inline script), never framed, nothing cached."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class DeclaredLength:
    """Answers 413 at once, before anything reads the body, a request whose Content-Length is over
    its path's limit (``limit(path)``, bytes). A body sent without a length is counted as it arrives
    by the routes' own limits."""

    def __init__(self, app: ASGIApp, limit: Callable[[str], int]) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            limit = self.limit(scope["path"])
            declared = dict(scope["headers"]).get(b"content-length", b"")
            if declared.isdigit() and int(declared) > limit:
                message = one_line(too_large(scope["path"], limit))
                await JSONResponse({"error": message}, 413)(scope, receive, send)
                return
        await self.app(scope, receive, send)
