"""What ``qe serve`` runs with: the models, the address, the workers and every limit, in one record
that the command line builds and the app, the pool and the page read."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from qe.serve.names import ModelEntry

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
"""The names a request's Host may give by default (``--allowed-host`` adds more)."""
HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*", re.IGNORECASE)


@dataclass(frozen=True)
class Limits:
    """Every bound on what one request may cost; each is a ``qe serve`` option (see its ``--help``)."""

    body_bytes: int = 2 << 20
    """Bytes of a ``POST /v1/score`` body."""
    upload_bytes: int = 50 << 20
    """Bytes of a ``POST /v1/batch`` upload."""
    pairs: int = 1_000
    """Pairs in one ``POST /v1/score`` request."""
    batch_pairs: int = 200_000
    """Pairs in one ``POST /v1/batch`` upload."""
    chars: int = 5_000
    """Characters of one source, MT or per-pair input text (a model's families may read fewer)."""
    queue_seconds: float = 30.0
    """How long a request waits for a free worker before it is answered 503."""
    score_seconds: float = 300.0
    """How long a worker may take over one request (or one chunk of an upload) before it is stopped."""
    send_seconds: float = 60.0
    """How long the server waits on a client that stopped reading its response before dropping it."""
    header_seconds: float = 10.0
    """How long a client may take to send a request's line and headers (then 408 and closed)."""
    body_seconds: float = 30.0
    """How long a request body may take, plus a second per 64 KB received (then 408 and closed)."""
    drain_seconds: float = 30.0
    """How long SIGTERM waits for the requests in flight before stopping them."""
    memo_entries: int = 2_000
    """Entries each per-word memo of a worker keeps (qe.infra.memo): a worker's memory then stops growing
    with the distinct words it has seen; a batch run keeps up to 1,000,000."""


@dataclass(frozen=True)
class Settings:
    """A server: the models it serves (requests name them, never a file), where it listens, how many
    worker processes score, the bearer token (None: no token), the origins allowed cross-origin
    requests (none by default), the names a request's Host may give (:func:`allowed_names`) and the
    limits."""

    models: tuple[ModelEntry, ...]
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    token: str | None = None
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_NAMES)
    limits: Limits = field(default_factory=Limits)
    batch_chunk: int = 100
    """Pairs a worker scores at a time for ``/v1/batch`` (results stream back chunk by chunk)."""


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_ip(host: str) -> bool:
    """True for an IPv4 or IPv6 address (brackets allowed)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def is_wildcard(host: str) -> bool:
    """True for an address that listens on every interface (``0.0.0.0``, ``::``)."""
    return is_ip(host) and ipaddress.ip_address(host.strip("[]")).is_unspecified


def is_host_name(text: str) -> bool:
    """True for a DNS name or an IP address (no port, no scheme): what ``--allowed-host`` takes."""
    return is_ip(text) or HOST_NAME.fullmatch(text) is not None


def allowed_names(bind: str, given: Iterable[str]) -> frozenset[str]:
    """The names a request's Host may give on a server bound to ``bind``: the loopback names, the
    bind address itself unless it is a wildcard, and ``given`` (``--allowed-host``), lowercased."""
    names = {*LOOPBACK_NAMES, *(name.strip("[]").lower() for name in given)}
    if not is_wildcard(bind):
        names.add(bind.strip("[]").lower())
    return frozenset(names)
