"""Input files checked whole before any work: strict UTF-8, no blank line, as many lines as the first.

The checks are ``qe.infra.io.read_lines``'s: strict UTF-8, CRLF accepted, a leading BOM dropped, blank lines
refused, errors name ``file:line``. :func:`read_input` reads a whole file once, in blocks, before any
chunk is computed: a bad line near the end of a long input then fails at once instead of after hours of
scoring, the line count sizes the chunks and the progress bar, and the size and SHA-256 let a resumed
run check that its inputs did not change.

Each input is opened and read once: the scan keeps the checked bytes it read, and the chunked read
(``qe.stream.chunks``, which decodes with :func:`decode_lines`, so no unchecked line ever reaches a
family) is fed from them, while the inputs of a run hold at most :data:`MEMORY_BUDGET` bytes together.
A larger input is not kept (memory stays bounded): the chunked read opens it a second time.
"""

from __future__ import annotations

import codecs
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from qe.infra.errors import QEInputError
from qe.infra.io import BLANK_LINES, HIDDEN_CHAR, UTF8_BOM, decode_line, is_blank, require_file

SCAN_BLOCK = 1 << 20  # bytes read at a time by read_input
MEMORY_BUDGET = 256 << 20
"""Bytes of input text a streamed run keeps from the scan for its chunks (all inputs together); an input
beyond what is left of it is read a second time instead."""


@dataclass(frozen=True)
class InputInfo:
    """One checked input file: its path, size in bytes, SHA-256 and number of lines."""

    path: str
    size: int
    sha256: str
    lines: int


def _decode(raw: bytes, path: Path, number: int) -> str:
    """One line as text: strict UTF-8, the newline (LF or CRLF) removed, blank lines refused; a BOM
    at the start of line 1 is dropped (it would otherwise stick to the first word)."""
    if number == 1:
        raw = raw.removeprefix(UTF8_BOM)
    return decode_line(raw.removesuffix(b"\n"), path, number)


def decode_lines(raws: list[bytes], path: Path, first: int) -> list[str]:
    """:func:`_decode` for consecutive lines (``first`` is the first one's number), decoded at once;
    when something is wrong, line by line, so the error names the line."""
    try:
        joined = b"".join(raws).decode("utf-8")
    except UnicodeDecodeError:
        return [_decode(raw, path, first + k) for k, raw in enumerate(raws)]
    texts = joined.split("\n")
    if raws and raws[-1].endswith(b"\n"):
        texts.pop()  # the empty string after the last newline
    texts = [text[:-1] if text.endswith("\r") else text for text in texts]
    if first == 1 and texts and texts[0].startswith("\ufeff"):
        texts[0] = texts[0][1:]
    blank = not all(text.strip() for text in texts)  # str.strip is fast; hidden characters are rare
    if not blank and HIDDEN_CHAR.search(joined):
        blank = any(is_blank(text) for text in texts)
    if len(texts) != len(raws) or blank:
        return [_decode(raw, path, first + k) for k, raw in enumerate(raws)]
    return texts


def read_input(path: str | Path, keep: int = 0) -> tuple[InputInfo, bytes | None]:
    """Check a whole input file line by line (UTF-8, no blank line): its size, hash and lines, and its
    bytes as read and checked when they are at most ``keep`` (None when longer: the caller reads the
    file again).

    Read in blocks; a block that might hold a problem (invalid UTF-8, a line that might be blank, a
    BOM) sends the file to the line-by-line check (from its start, on the same handle), which names
    the line.
    """
    path = require_file(path)
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")()
    size = lines = 0
    last = b""
    kept: list[bytes] | None = []
    with open(path, "rb") as handle:
        while block := handle.read(SCAN_BLOCK):
            if size == 0 and block.startswith(UTF8_BOM):
                return _scan_lines(path, handle, keep)
            size += len(block)
            digest.update(block)
            lines += block.count(b"\n")
            last = block[-1:]
            kept = kept if kept is not None and size <= keep else None
            if kept is not None:
                kept.append(block)
            try:
                text = decoder.decode(block)
            except UnicodeDecodeError:
                return _scan_lines(path, handle, keep)
            if BLANK_LINES.search(text.removesuffix("\n")):
                return _scan_lines(path, handle, keep)
        if size == 0:
            raise QEInputError("file is empty", path)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return _scan_lines(path, handle, keep)
    if last != b"\n":
        lines += 1  # a last line without its newline
    info = InputInfo(str(path.resolve()), size, digest.hexdigest(), lines)
    return info, None if kept is None else b"".join(kept)


def _scan_lines(path: Path, handle: BinaryIO, keep: int) -> tuple[InputInfo, bytes | None]:
    """:func:`read_input` line by line, from the start of ``handle``: the first bad line raises,
    naming it."""
    digest = hashlib.sha256()
    size = lines = 0
    kept: list[bytes] | None = []
    handle.seek(0)
    for raw in handle:
        lines += 1
        size += len(raw)
        digest.update(raw)
        _decode(raw, path, lines)
        kept = kept if kept is not None and size <= keep else None
        if kept is not None:
            kept.append(raw)
    if size == 0:
        raise QEInputError("file is empty", path)
    info = InputInfo(str(path.resolve()), size, digest.hexdigest(), lines)
    return info, None if kept is None else b"".join(kept)


def check_aligned(paths: dict[str, Path], infos: dict[str, InputInfo]) -> None:
    """Refuse inputs whose line counts differ, naming the file and the first line where one ends."""
    first = next(iter(paths))
    for role, info in infos.items():
        reference = infos[first]
        if info.lines != reference.lines:
            line = min(info.lines, reference.lines) + 1
            raise QEInputError(
                f"has {info.lines} lines but {paths[first]} has {reference.lines}", paths[role], line
            )
