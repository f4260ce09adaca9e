"""The API's one kind of error: a status and one line (``{"error": "..."}``), naming the pair index and
field when a pair is at fault, never a file of the server's, a traceback or the client's own text (a
key, a name, a sentence: the message names where it is instead)."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import Send

from qe.infra.errors import LINE_BREAKS

MAX_MESSAGE = 400  # characters of an error line


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` as one line of at most ``limit`` characters (line breaks escaped, the rest cut)."""
    text = str(text).translate(LINE_BREAKS)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_body(message: str) -> bytes:
    """The JSON body of an error answer: ``{"error": "one line"}`` and a line break."""
    return json.dumps({"error": one_line(message)}).encode() + b"\n"


async def refuse(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    """Answer ``status`` with ``{"error": message}`` (one line)."""
    body = error_body(message)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(key.lower().encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


BODY_PATHS = ("/v1/score", "/v1/batch")  # the paths that take a body (any other is named "this path")


def too_large(path: str, limit: int) -> str:
    """The 413 line for a body over ``path``'s limit (a path the client made up is not named)."""
    named = path if path in BODY_PATHS else "this path"
    return f"the request body is larger than the {limit:,} bytes {named} takes"


class ApiError(HTTPException):
    """An answer other than 200: ``status`` and one line. (An HTTPException, so that FastAPI passes it
    through its body parsing untouched.)"""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status, detail=one_line(message), headers=headers)
