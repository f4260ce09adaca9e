"""A streamed response that lets go of what it holds the moment it ends, however it ends."""

from __future__ import annotations

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send


class ClosingStreamingResponse(StreamingResponse):
    """A ``StreamingResponse`` that closes its body's async generator when the response ends: done,
    the client gone, dropped by ``--send-seconds`` or cut off by the drain. Starlette leaves an
    unfinished generator to the garbage collector, and with it ``/v1/batch``'s temporary file (up
    to 50 MB, still open minutes later); closing it runs the generator's ``finally`` now."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()
