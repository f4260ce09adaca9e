"""How long the server waits on a client, as ASGI wrappers: a request body must keep pace
(:class:`BodyDeadline`), and a response must be taken (:class:`SendTimeout`); a client slower than
either holds neither a task nor a scoring worker for long. (The request's head has its own deadline,
before the app sees it: ``qe.serve.protocol``.)"""

from __future__ import annotations

import asyncio
import sys

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from qe.serve.errors import ApiError

BODY_RATE = 64 << 10
"""Bytes a second a body must average once its ``--body-seconds`` of grace are spent: each 64 KB
received earns another second, so an upload arriving at least this fast is never cut."""


class SlowBody(ApiError):
    """A request body that fell behind its deadline: 408, and the connection is closed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            408,
            f"the request body came too slowly (it must arrive within {seconds:g} s plus a second "
            f"per {BODY_RATE >> 10} KB)",
            {"Connection": "close"},
        )


class TimedWrapper:
    """An ASGI wrapper with a limit in ``seconds`` on each HTTP request (:meth:`http`); other scopes
    (lifespan) pass through untouched."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request within the limit."""
        raise NotImplementedError


class BodyDeadline(TimedWrapper):
    """Refuses (408) a request whose body is not complete ``seconds`` after the request began, plus a
    second per :data:`BODY_RATE` bytes received: a client trickling its body holds a connection and
    a task for at most that long."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        start, received, complete = loop.time(), 0, False

        async def receive_in_time() -> Message:
            nonlocal received, complete
            if complete:  # the body is in: waiting for a disconnect is not bounded here
                return await receive()
            left = start + self.seconds + received / BODY_RATE - loop.time()
            try:
                async with asyncio.timeout(max(left, 0.0)):
                    message = await receive()
            except TimeoutError:
                raise SlowBody(self.seconds) from None
            received += len(message.get("body", b""))
            complete = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await self.app(scope, receive_in_time, send)


class _Stalled(Exception):
    pass


class SendTimeout(TimedWrapper):
    """Ends a response whose client has not taken a piece of it for ``seconds`` (it stopped reading):
    the app stops there and the server closes the connection, so a stalled client holds neither a
    task nor a scoring worker for ever."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        stalled = False

        async def send_in_time(message: Message) -> None:
            nonlocal stalled
            try:
                await asyncio.wait_for(send(message), self.seconds)
            except TimeoutError:
                stalled = True
                raise _Stalled from None

        try:
            await self.app(scope, receive, send_in_time)
        except BaseException:
            if not stalled:
                raise
            print(
                f"qe serve: dropped a client that read nothing of its response for {self.seconds:g} s",
                file=sys.stderr,
                flush=True,
            )
