"""Safe file reading (strict UTF-8, a leading BOM dropped, line numbers in errors) and atomic writing."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from qe.infra.errors import QEInputError

UTF8_BOM = b"\xef\xbb\xbf"


def require_file(path: str | Path, what: str = "file") -> Path:
    """``path`` if it is a regular file; else one clear error: not found, a directory, or not a file."""
    path = Path(path)
    if path.is_file():
        return path
    if path.is_dir():
        raise QEInputError(f"is a directory, not a {what}", path)
    if path.exists():
        raise QEInputError(f"is not a regular {what}", path)
    raise QEInputError(f"{what} not found", path)


_HIDDEN = (  # none of them is stripped by str.strip
    r"\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
)
_INVISIBLE = r"\s" + _HIDDEN
"""Whitespace, control and format characters, and the fillers that render as nothing."""
HIDDEN_CHAR = re.compile(f"[{_HIDDEN}]")
"""Finds a control or format character (text without one is blank only if ``str.strip`` empties it)."""
_BLANK = re.compile(rf"[{_INVISIBLE}]*")
BLANK_LINES = re.compile(rf"(?m)^[{_INVISIBLE}]*$")
"""Finds a line (of several, ``\\n``-separated) with nothing visible on it."""


def is_blank(text: str) -> bool:
    """True for a line with nothing visible: only whitespace, control characters (NUL...) or
    invisible format characters (zero-width spaces, joiners, direction marks)."""
    return _BLANK.fullmatch(text) is not None


def read_lines(path: str | Path, *, allow_empty_lines: bool = False, digest: Any = None) -> list[str]:
    """Read a text file as UTF-8 lines (CRLF accepted), refusing invalid bytes and blank lines.

    A leading UTF-8 byte-order mark (as some editors write) is dropped, so it never becomes part
    of the first line's first word. ``digest`` (a ``hashlib`` object) is fed the file's bytes as
    read, so that a caller who also needs the file's hash does not read it again.
    """
    path = require_file(path)
    data = path.read_bytes()
    if digest is not None:
        digest.update(data)
    data = data.removeprefix(UTF8_BOM)
    if not data:
        raise QEInputError("file is empty", path)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [
        decode_line(raw, path, number, allow_blank=allow_empty_lines)
        for number, raw in enumerate(lines, start=1)
    ]


def decode_line(raw: bytes, path: Path, number: int, *, allow_blank: bool = False) -> str:
    """One line's bytes (without its newline) as text, by the rules of every line qe reads: the CR of
    a CRLF removed, strict UTF-8, and a line with nothing visible refused unless ``allow_blank``;
    errors name ``path:number``."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QEInputError(f"invalid UTF-8 at byte {exc.start}", path, number) from None
    if not allow_blank and is_blank(text):
        raise QEInputError("blank line", path, number)
    return text


def read_text_lines(path: str | Path, what: str = "corpus") -> list[str]:
    """All lines of a UTF-8 text file, blank ones (also those of only control or zero-width
    characters) kept as '' (corpora, evaluation files).

    Refuses a missing, empty or non-UTF-8 file naming it as ``what``; drops a leading BOM.
    """
    path = require_file(path, f"{what} file")
    data = path.read_bytes().removeprefix(UTF8_BOM)
    if not data.strip():
        raise QEInputError(f"{what} file is empty", path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QEInputError(
            f"{what} is not UTF-8 (invalid byte)", path, data.count(b"\n", 0, exc.start) + 1
        ) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if HIDDEN_CHAR.search(text):  # rare: only then look for lines with nothing visible
        lines = ["" if is_blank(line) else line for line in lines]
    return lines


_PLAIN_NUMBER = re.compile(
    r"[ \t]*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|nan|inf|infinity)[ \t]*", re.ASCII | re.IGNORECASE
)


def plain_float(text: str | bytes) -> float:
    """A number written the plain way (ASCII digits, optional sign, point and exponent; ``nan`` /
    ``inf`` words are returned for the caller to refuse). ``float`` alone also takes ``1_0``,
    full-width or Arabic-Indic digits and non-breaking spaces: those raise ``ValueError`` here."""
    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    if not _PLAIN_NUMBER.fullmatch(text):
        raise ValueError(f"not a plain number: {text!r}")
    return float(text)


def parse_label(
    text: str, path: str | Path, line: int, label_range: tuple[float, float] | None, what: str = "label"
) -> float:
    """Parse one label (or another number, named ``what`` in errors), refusing non-numbers,
    NaN / infinity and values outside ``label_range``."""
    try:
        value = plain_float(text.strip())
    except ValueError:
        raise QEInputError(f"{what} {text.strip()!r} is not a number", path, line) from None
    if not math.isfinite(value):
        raise QEInputError(f"{what} {text.strip()!r} is not a finite number", path, line)
    if label_range is not None and not (label_range[0] <= value <= label_range[1]):
        raise QEInputError(
            f"label {value:g} is outside the declared range [{label_range[0]:g}, {label_range[1]:g}]",
            path,
            line,
        )
    return value


MAX_SCORE = 1e100
"""A score (a prediction, a decoder score) beyond this is a damaged file: its square would overflow."""


def is_score(value: float) -> bool:
    """A finite number of at most ``MAX_SCORE`` in size."""
    return math.isfinite(value) and abs(value) <= MAX_SCORE


MAX_NESTING = 64
"""Arrays and tables nested deeper than this are refused in configs, manifests, state and member
files: none qe writes nests past 10, and parsers and checks recurse once or more per level."""


def nesting_depth(value: Any, limit: int = MAX_NESTING) -> int:
    """How deeply lists and dicts nest in ``value`` (a scalar: 0), counted without recursion and
    given up at ``limit + 1``. Only containers are stacked: a flat array of a million numbers costs
    one pass over it, not a million stack entries (64 MB)."""
    containers = dict | list | tuple
    if not isinstance(value, containers):
        return 0
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, containers))
    return deepest


def parse_bounded(parse: Callable[[Any], Any], text: str | bytes, path: str | Path | None, what: str) -> Any:
    """``parse(text)`` (``json.loads``, ``tomllib.loads``), refusing with one line naming ``path`` a
    value nested more than :data:`MAX_NESTING` deep (a ``RecursionError`` in the parser or in any
    check after it). The parser's own errors are the caller's."""
    try:
        value = parse(text)
    except RecursionError:
        value = None
    else:
        if nesting_depth(value) <= MAX_NESTING:
            return value
    raise QEInputError(f"{what} nests arrays or tables more than {MAX_NESTING} levels deep", path)


def atomic_temporary_of(name: str) -> str | None:
    """The file name whose interrupted atomic write left the temporary ``name``
    (``.NAME.xxxxxxxx.tmp``, as ``atomic_write`` names them), else None."""
    match = _ATOMIC_TEMPORARY.match(name)
    return match.group(1) if match else None


_ATOMIC_TEMPORARY = re.compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")
"""``tempfile.mkstemp`` names: the prefix, eight characters of ``[a-z0-9_]``, the suffix."""


def _umask() -> int:
    """The process's file-creation mask (read by setting it, then restored at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path`` and rename it into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would create it (mkstemp makes it private)
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a whole text file atomically."""
    with atomic_write(path) as handle:
        handle.write(text)


def sha256_file(path: str | Path) -> str:
    """The hex SHA-256 of a file, read in 1 MiB blocks (checksums, manifests)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_disk_caches = True


def allow_disk_caches(allowed: bool) -> None:
    """Whether this process may keep what it computes from texts on disk (the sentence-vector,
    translation, token and feature caches). A server turns them off: nothing a client sent, nor
    anything made from it, is written to the file system (and its disk does not fill with one-off
    requests)."""
    global _disk_caches
    _disk_caches = bool(allowed)


def disk_caches_allowed() -> bool:
    """False in a process that called ``allow_disk_caches(False)`` (a ``qe serve`` worker)."""
    return _disk_caches


def cache_root() -> Path:
    """The root of qe's caches (datasets, tokens, features, vectors, translations, tokenizer specs):
    ``$QE_CACHE_DIR`` when set and not empty, else ``~/.cache/qe``."""
    root = os.environ.get("QE_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "qe"


# What reading a damaged or foreign gzip JSON file can raise (its text may quote the file, so callers
# show only the class).
UNREADABLE_JSON = (OSError, EOFError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError)


def write_gzip_json(path: str | Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as gzip JSON, atomically and reproducibly (sorted keys, no gzip time stamp)."""
    with atomic_write(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8"))


def read_gzip_json(path: str | Path, fmt: str, what: str) -> dict[str, Any]:
    """The payload of a :func:`write_gzip_json` file whose ``format`` is ``fmt``; any other JSON is
    refused as "not a qe ``what``". Read errors are the caller's (see :data:`UNREADABLE_JSON`)."""
    with gzip.open(path, "rb") as handle:
        payload = parse_bounded(json.loads, handle.read().decode("utf-8"), path, what)
    if not isinstance(payload, dict) or payload.get("format") != fmt:
        raise QEInputError(f"not a qe {what} (expected the format {fmt})", path)
    return payload
