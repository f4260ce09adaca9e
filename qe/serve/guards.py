"""Who may ask, checked on a request's head before routing and before a byte of its body is read: the
Host must be one of the server's names (a page whose name resolves to 127.0.0.1 sends its own: DNS
rebinding), a ``/v1`` request from a browser must come from the page's own origin or a
``--cors-origin``, and with a token every ``/v1`` request must carry it. Each refusal is one JSON line."""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from qe.serve.errors import refuse

API = "/v1"


def host_name(value: str) -> str | None:
    """The name in a Host header (``localhost:8000`` -> ``localhost``, ``[::1]:8000`` -> ``::1``),
    lowercased; None when it is not one name with an optional numeric port."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not (rest[:1] == ":" and rest[1:].isdigit())):
            return None
        return name or None
    name, colon, port = value.partition(":")
    if colon and not port.isdigit():
        return None
    return name or None


class AllowedHosts:
    """400 for a request whose Host is missing or names none of ``names`` (ports are not compared: a
    tunnel or proxy may change them; the name is what a rebinding page cannot choose)."""

    def __init__(self, app: ASGIApp, names: frozenset[str]) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = Headers(scope=scope).getlist("host")
            if len(given) != 1 or host_name(given[0]) not in self.names:
                what = "has no Host header" if not given else "names a Host this server does not answer to"
                await refuse(
                    send, 400, f"the request {what} (it answers to its loopback names and --allowed-host)"
                )
                return
        await self.app(scope, receive, send)


class SameOrigin:
    """403 for a ``/v1`` request a browser sent from another origin (its ``Origin`` header names
    neither this server's Host nor a ``--cors-origin``): such a POST needs no preflight when it is
    ``text/plain``, so the browser alone would not stop it."""

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self.app = app
        self.origins = frozenset(origin.lower() for origin in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(API):
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            if origin is not None and not self._allowed(origin.lower(), headers.get("host", "").lower()):
                await refuse(
                    send,
                    403,
                    "a cross-origin request from an origin this server does not allow (--cors-origin)",
                )
                return
        await self.app(scope, receive, send)

    def _allowed(self, origin: str, host: str) -> bool:
        scheme, separator, place = origin.partition("://")
        own = separator and scheme in ("http", "https") and place == host
        return bool(own) or origin in self.origins


class CorsPolicy(CORSMiddleware):
    """Starlette's CORS for the ``--cors-origin`` origins, with a refused preflight answered in one
    JSON line (Starlette's is plain text) that names what was refused, never the origin given."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code == 200:
            return response
        refused = bytes(response.body).decode().removeprefix("Disallowed CORS ")  # origin, method, headers
        kept = {k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")}
        message = f"a cross-origin request this server does not allow (its {refused}; --cors-origin)"
        return JSONResponse({"error": message}, response.status_code, headers=kept)


class BearerToken:
    """401 for a ``/v1`` request (the OpenAPI schema included) without ``Authorization: Bearer
    TOKEN``, answered before the body is read or parsed; the token is compared in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(API):
            scheme, _, given = Headers(scope=scope).get("authorization", "").partition(" ")
            matches = hmac.compare_digest(given.encode("latin-1"), self.token)
            if scheme.lower() != "bearer" or not matches:
                await refuse(
                    send,
                    401,
                    "this server needs its bearer token: Authorization: Bearer TOKEN",
                    {"WWW-Authenticate": "Bearer"},
                )
                return
        await self.app(scope, receive, send)
