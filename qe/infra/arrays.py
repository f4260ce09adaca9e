"""Binary resource tables: named numpy arrays in one uncompressed ``.npz`` file, and word lists.

Bundle members are single files hashed in the manifest, so a table's arrays (entries, counts and
its vocabularies) go into one ``.npz`` archive. It is read with ``allow_pickle=False`` (no code
runs, object arrays are refused) and without decompression, so loading is a copy of the bytes
instead of parsing text; every array's dtype and shape are checked against what the table
expects, and any damage is one :class:`QEInputError` line naming the file. Word and n-gram
lists are stored as their UTF-8 bytes joined by newlines, in a ``uint8`` array.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write

NPZ_MAGIC = b"PK\x03\x04"  # a zip archive (what numpy.savez writes)
FORMAT_KEY = "format"


def damaged(reason: str, path: str | Path) -> QEInputError:
    """The one-line error for a binary table that is not what ``qe resources build`` wrote."""
    return QEInputError(f"damaged binary table: {reason}; rebuild the bundle", path)


def is_npz(path: str | Path) -> bool:
    """Whether a file starts like a zip archive (a binary table) rather than text."""
    with Path(path).open("rb") as handle:
        return handle.read(len(NPZ_MAGIC)) == NPZ_MAGIC


def pack_lines(items: Sequence[str], what: str, path: str | Path) -> np.ndarray:
    """Strings (words, or n-grams of words joined by spaces) as one ``uint8`` array of their UTF-8
    bytes joined by ``\n``; refuses an empty string or one holding a line break (it would not read
    back as itself)."""
    for item in items:
        if not item or "\n" in item:
            raise QEInputError(f"cannot save {what} {item!r}: empty or contains a line break", path)
    return np.frombuffer("\n".join(items).encode("utf-8"), dtype=np.uint8)


def unpack_lines(
    blob: np.ndarray, count: int, what: str, path: str | Path, first: int | None = None
) -> list[str]:
    """The strings of a :func:`pack_lines` array, which must hold ``count`` of them; with ``first``,
    only the first ones are decoded (the rest is not read)."""
    breaks = np.flatnonzero(blob == ord("\n"))
    if (len(breaks) + 1 if blob.size else 0) != count:
        raise damaged(f"{what} does not hold {count} entries", path)
    wanted = count if first is None else min(first, count)
    if wanted == 0:
        return []
    end = blob.size if wanted == count else int(breaks[wanted - 1])
    try:
        items = blob[:end].tobytes().decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise damaged(f"{what} is not UTF-8", path) from None
    if "" in items:
        raise damaged(f"{what} holds an empty entry", path)
    return items


def write_arrays(path: str | Path, format_name: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` and the table's format name into one uncompressed ``.npz`` (atomically)."""
    named = {FORMAT_KEY: np.frombuffer(format_name.encode(), dtype=np.uint8), **arrays}
    with atomic_write(path, "wb") as handle:
        np.savez(handle, **named)


def read_arrays(
    path: str | Path, format_name: str, expected: dict[str, tuple[str, int]], optional: Sequence[str] = ()
) -> dict[str, np.ndarray]:
    """The arrays of a :func:`write_arrays` file: each name in ``expected`` with its dtype and number
    of dimensions (names in ``optional`` may be missing). Never unpickles; a damaged, truncated or
    foreign file is one QEInputError (the bundle member is then rebuilt with ``qe resources build``)."""
    path = Path(path)
    out: dict[str, Any] = {}
    try:
        with np.load(path, allow_pickle=False) as archive:
            found = archive[FORMAT_KEY].tobytes() if FORMAT_KEY in archive.files else b""
            if found != format_name.encode():
                raise damaged(f"not a {format_name} table", path)
            for name, (dtype, ndim) in expected.items():
                if name not in archive.files:
                    if name in optional:
                        continue
                    raise damaged(f"no array {name!r}", path)
                array = archive[name]
                if array.dtype != np.dtype(dtype) or array.ndim != ndim:
                    found = f"{array.dtype}[{array.ndim}d]"
                    raise damaged(f"array {name!r} is {found}, expected {np.dtype(dtype)}[{ndim}d]", path)
                out[name] = array
    except QEInputError:
        raise
    except Exception as exc:  # zipfile, zlib and numpy's header parser raise many types for damage
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise damaged(f"unreadable ({reason})", path) from None
    return out
