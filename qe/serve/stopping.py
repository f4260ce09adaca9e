"""What a request still in flight gets when SIGTERM's drain (``--drain-seconds``) runs out. uvicorn then
cancels it, which answered ``500 text/plain`` and logged a CancelledError traceback; here the client
gets a 503 line (or, when its stream of results has begun, a last ``{"error"}`` line) and nothing is
logged beyond uvicorn's own one line. (``qe.serve.server`` gives these answers a few seconds before
the event loop closes.)"""

from __future__ import annotations

import asyncio
import contextlib

from starlette.types import Message, Receive, Scope, Send

from qe.serve.deadlines import TimedWrapper
from qe.serve.errors import error_body, refuse

STREAM_TYPE = b"application/x-ndjson"  # a response of JSON lines can end with an error line


class DrainCutoff(TimedWrapper):
    """Answers a cancelled request (the drain ran out) in one JSON line instead of a traceback."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = {"started": False, "complete": False, "lines": False}

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
                kind = dict(message.get("headers", [])).get(b"content-type", b"")
                state["lines"] = kind.startswith(STREAM_TYPE)
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["complete"] = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # handled here: the answer below is not cut short by it
            if not state["complete"]:
                with contextlib.suppress(asyncio.CancelledError):  # cancelled again: the loop is closing
                    await self._answer(send, state["started"], state["lines"])

    async def _answer(self, send: Send, started: bool, lines: bool) -> None:
        message = (
            f"the server is stopping: this request did not finish within --drain-seconds "
            f"({self.seconds:g} s); try again"
        )
        with contextlib.suppress(Exception):  # the client may be gone, or not reading
            if not started:
                await refuse(send, 503, message, {"Connection": "close"})
            else:
                await send({"type": "http.response.body", "body": error_body(message) if lines else b""})
