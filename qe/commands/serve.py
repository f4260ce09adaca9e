"""``qe serve --model NAME|PATH``: score pairs over HTTP (a JSON API and a web page) with saved models
loaded once; needs the ``[serve]`` extra (FastAPI, uvicorn)."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

from qe.commands import Command, register_command
from qe.infra.errors import QEInputError

MIN_TOKEN = 16  # characters of a bearer token
LIMIT_OPTIONS = (  # qe.serve.settings.Limits field, option, type, help
    ("body_bytes", "--max-body-bytes", int, "bytes of a /v1/score body"),
    ("upload_bytes", "--max-upload-bytes", int, "bytes of a /v1/batch upload"),
    ("pairs", "--max-pairs", int, "pairs in one /v1/score request"),
    ("batch_pairs", "--max-batch-pairs", int, "pairs in one /v1/batch upload"),
    ("chars", "--max-chars", int, "characters of one source, MT or per-pair input text"),
    ("queue_seconds", "--queue-seconds", float, "seconds a request waits for a free worker (then 503)"),
    ("score_seconds", "--score-seconds", float, "seconds a worker may take over one request (then 503)"),
    ("send_seconds", "--send-seconds", float, "seconds before a client that stopped reading is dropped"),
    ("drain_seconds", "--drain-seconds", float, "seconds SIGTERM waits for requests in flight"),
    (
        "header_seconds",
        "--header-seconds",
        float,
        "seconds a client may take to send a request's head (then 408)",
    ),
    (
        "body_seconds",
        "--body-seconds",
        float,
        "seconds a body may take, plus one per 64 KB received (then 408)",
    ),
    ("memo_entries", "--memo-entries", int, "entries a worker's per-word memos keep (memory stays flat)"),
)


def arguments(parser: argparse.ArgumentParser) -> None:
    from qe.serve.settings import Limits

    defaults = Limits()
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="NAME|PATH",
        help="a model to serve (repeatable); requests name it by its file name without .skops",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    parser.add_argument("--workers", type=int, default=1, help="scoring processes, each holding every model")
    parser.add_argument(
        "--token-file",
        type=Path,
        help="file holding a bearer token that every /v1 request must send (required off loopback)",
    )
    parser.add_argument(
        "--insecure-no-token",
        action="store_true",
        help="listen beyond loopback without a token (only behind a proxy that checks callers)",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow cross-origin requests from this origin (repeatable; default: none)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name clients reach the server by, which the Host header may give (repeatable; default: "
        "127.0.0.1, localhost, ::1 and the --host address; any other Host is refused: DNS rebinding)",
    )
    limits = parser.add_argument_group("limits")
    for name, flag, kind, text in LIMIT_OPTIONS:
        default = getattr(defaults, name)
        limits.add_argument(
            flag, dest=f"limit_{name}", type=kind, default=default, help=f"{text} ({default:,})"
        )


COMMAND = register_command(
    Command(
        name="serve",
        help="serve saved models over HTTP: a JSON API and a web page",
        description="Load saved models once per worker and score source / MT pairs sent over HTTP: "
        "POST /v1/score (JSON), POST /v1/batch (TSV or JSONL upload, streamed back), GET /v1/models, "
        "/healthz, /readyz, the page at /. Requests name models from this server's list only.",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def read_token(path: Path) -> str:
    """The bearer token in ``path`` (surrounding whitespace dropped): printable ASCII, at least
    :data:`MIN_TOKEN` characters; a file others can read is refused."""
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except OSError as exc:
        raise QEInputError(f"cannot read the token file: {exc.strerror or exc}", path) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise QEInputError("the token file can be read by others: chmod 600 it", path)
    try:
        token = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise QEInputError("the token must be printable ASCII", path) from None
    if len(token) < MIN_TOKEN or not token.isprintable() or " " in token:
        raise QEInputError(
            f"the token must be at least {MIN_TOKEN} printable characters without spaces", path
        )
    return token


def settings_from(args: argparse.Namespace):  # -> qe.serve.settings.Settings
    """The server's settings from the command line, every value checked."""
    from qe.serve.names import resolve_models
    from qe.serve.settings import Limits, Settings, allowed_names, is_host_name, is_loopback, is_wildcard

    for name, flag, _, _ in LIMIT_OPTIONS:
        value = getattr(args, f"limit_{name}")
        if not 0 < value < float("inf"):
            raise QEInputError(f"{flag} {value}: expected a positive number")
    limits = Limits(**{name: getattr(args, f"limit_{name}") for name, *_ in LIMIT_OPTIONS})
    if not 0 <= args.port <= 65535:
        raise QEInputError(f"--port {args.port}: expected 0 to 65535")
    if not 1 <= args.workers <= (os.cpu_count() or 1) * 4:
        raise QEInputError(f"--workers {args.workers}: expected 1 to {(os.cpu_count() or 1) * 4}")
    token = read_token(args.token_file) if args.token_file else None
    if token is None and not is_loopback(args.host) and not args.insecure_no_token:
        raise QEInputError(
            f"--host {args.host} is reachable from other machines: give --token-file, or "
            "--insecure-no-token if a proxy in front checks who calls"
        )
    if is_wildcard(args.host) and not args.allowed_host:
        raise QEInputError(
            f"--host {args.host} answers to any name: give --allowed-host NAME for each name clients use "
            "(a Host naming another is refused, against DNS rebinding)"
        )
    for name in args.allowed_host:
        if not is_host_name(name.strip("[]")):
            raise QEInputError(f"--allowed-host {name!r}: expected a host name or address, without a port")
    for origin in args.cors_origin:
        if origin == "*" or not origin.startswith(("http://", "https://")) or origin.count("/") != 2:
            raise QEInputError(
                f"--cors-origin {origin!r}: expected one origin such as https://tool.example.org"
            )
    return Settings(
        models=resolve_models(args.model),
        host=args.host,
        port=args.port,
        workers=args.workers,
        token=token,
        cors_origins=tuple(args.cors_origin),
        allowed_hosts=allowed_names(args.host, args.allowed_host),
        limits=limits,
    )


def run(args: argparse.Namespace) -> int:
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as exc:
        print(f"qe: error: qe serve needs {exc.name}: pip install 'qe[serve]'", file=sys.stderr)
        return 2
    from qe.serve.server import run as serve

    return serve(settings_from(args))
