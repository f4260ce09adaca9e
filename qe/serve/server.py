"""Run the server: listen first (a busy port is one line, before any model loads), start the scoring
workers, serve with uvicorn until SIGTERM or Ctrl-C, then drain the requests in flight (up to the
drain limit), stop the workers and return 0."""

from __future__ import annotations

import asyncio
import ctypes
import signal
import socket
import sys
from typing import TYPE_CHECKING

from qe.infra.errors import QEInputError
from qe.serve.settings import Settings

if TYPE_CHECKING:
    import uvicorn


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port), or one line saying why not.

    It is made with ``IPPROTO_TCP`` named: asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only
    on sockets that say so, and with it on, a response written in two pieces (headers, body) waits
    for the client's delayed ACK: 40 ms a request."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise QEInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


LAST_WORDS_SECONDS = 5.0
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 128 << 10  # glibc's default, kept fixed


def give_back_large_blocks() -> bool:
    """Keep glibc's mmap threshold at 128 KB in this process, so that each block over it (a request
    body, its decoded text) is a mapping of its own, returned to the system when freed. glibc raises
    the threshold after freeing such a block, then serves the next ones from its heap, which does not
    shrink: under 1,000 hostile 2 MB bodies the HTTP process levelled off ~40 MB higher. False where the
    C library has no ``mallopt`` (not glibc)."""
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):
        return False


async def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
    """uvicorn's ``serve``, then up to :data:`LAST_WORDS_SECONDS` for the requests the drain cut off
    to send their last line (``qe.serve.stopping``): uvicorn returns as soon as it has cancelled
    them, and ``asyncio.run`` would cancel them again, mid-answer."""
    await server.serve(sockets=[sock])
    left = [task for task in server.server_state.tasks if not task.done()]
    if left:
        await asyncio.wait(left, timeout=LAST_WORDS_SECONDS)


def run(settings: Settings) -> int:
    """Serve ``settings`` until stopped; returns the exit code (0 after a drained SIGTERM or Ctrl-C)."""
    import uvicorn

    from qe.serve.api import create_app
    from qe.serve.pool import WorkerPool
    from qe.serve.protocol import guarded_protocol

    sock = listen(settings.host, settings.port)
    give_back_large_blocks()  # the workers are spawned: their allocator keeps its own settings
    pool = WorkerPool(
        settings.models,
        settings.workers,
        settings.limits.score_seconds,
        memo_entries=settings.limits.memo_entries,
    )
    try:
        pool.start()
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        names = ", ".join(entry.name for entry in settings.models)
        print(
            f"qe serve: {names} on http://{shown}:{port}/ ({settings.workers} worker"
            f"{'s' if settings.workers > 1 else ''}; SIGTERM or Ctrl-C drains and stops)",
            file=sys.stderr,
            flush=True,
        )
        config = uvicorn.Config(
            create_app(settings, pool),
            http=guarded_protocol(settings.limits.header_seconds),
            ws="none",  # no WebSocket route: an upgrade request is served (and refused) as plain HTTP
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=settings.limits.drain_seconds,
            server_header=False,
        )
        server = uvicorn.Server(config)
        # uvicorn drains on SIGTERM / SIGINT, then raises the signal again under the handlers it
        # found: these make that a no-op, so a drained stop returns 0.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: None)
        asyncio.run(_serve(server, sock))
    finally:
        pool.close()
        sock.close()
    print("qe serve: stopped", file=sys.stderr, flush=True)
    return 0
