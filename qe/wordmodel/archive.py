"""The container of a saved word model: a zip of ``manifest.json`` and ``.npy`` arrays, read as data.

Writing (:func:`write_archive`) stores each array as a version 1.0 ``.npy`` member (never pickled),
uncompressed, with a fixed timestamp, and records in the manifest each member's size, sha256, dtype and
shape, so the same arrays and manifest give the same bytes. The file is written to a temporary file and
renamed into place (``qe.infra.io.atomic_write``).

Reading (:func:`read_archive`) trusts nothing in the file: its size is bounded (``MAX_FILE``) before it
is opened; member names are plain names (letters, digits, ``_ . -``, ending ``.npy``; no path, no
``..``), each at most once; members are stored uncompressed, so no member unpacks to more than its
share of the file; the manifest (at most 1 MB, JSON nested at most ``MAX_NESTING`` deep) names exactly
the members the zip holds, each with a declared size that is the member's, at most ``MAX_MEMBER``;
a member's bytes are read once, bounded, and must match its sha256 before its ``.npy`` header is read;
the header must give the declared dtype (one of ``DTYPES``), C order and the declared shape, and the data
exactly that many bytes. Any fault is one :class:`~qe.predictors.check.BadModel` reason, which
:func:`read_archive` turns into one ``QEInputError`` line naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from qe.infra.io import MAX_NESTING, atomic_write, nesting_depth, require_file
from qe.predictors.check import MAX_MANIFEST, BadModel, reading_model_archive

MAX_FILE = 1 << 30
"""The largest model file read (1 GB)."""
MAX_MEMBER = 1 << 29
"""The largest member (512 MB)."""
MAX_DIMENSION = 1 << 32
"""The largest length of one axis of an array (its bytes are bounded by ``MAX_MEMBER`` anyway)."""
DTYPES = ("<f8", "<i8", "<i4", "|u1")
"""The array types a word model holds."""
MEMBER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.npy")
MANIFEST = "manifest.json"
_HEADER = 4096  # an .npy member may exceed its data by at most this (its header)
_DATE = (1980, 1, 1, 0, 0, 0)


def _npy(value: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(value), version=(1, 0), allow_pickle=False)
    return buffer.getvalue()


def write_archive(path: str | Path, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write ``manifest`` (JSON values) and ``arrays`` (by member name without ``.npy``) atomically;
    the manifest gets a ``members`` entry describing every array member."""
    members, entries = {}, {}
    for name, value in arrays.items():
        member = f"{name}.npy"
        if not MEMBER_NAME.fullmatch(member) or ".." in member:
            raise ValueError(f"not a plain member name: {member!r}")
        if value.dtype.str not in DTYPES:
            raise ValueError(f"{member}: arrays of {value.dtype.str} are not saved")
        data = _npy(value)
        members[member] = data
        entries[member] = {
            "dtype": value.dtype.str,
            "shape": list(value.shape),
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
        }
    text = json.dumps({**manifest, "members": entries}, indent=1, sort_keys=True, allow_nan=False)
    with atomic_write(path, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(zipfile.ZipInfo(MANIFEST, date_time=_DATE), text.encode())
        for member in sorted(members):
            archive.writestr(zipfile.ZipInfo(member, date_time=_DATE), members[member])


def read_archive(path: str | Path, fmt: str, version: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The manifest and the arrays (by member name without ``.npy``) of a file :func:`write_archive`
    wrote with ``manifest["format"] == fmt`` and ``manifest["version"] == version``; a file that is not
    one is a single ``QEInputError`` line naming it."""
    path = require_file(path, "word model file")
    with reading_model_archive(path, "word model"):
        size = path.stat().st_size
        if size > MAX_FILE:
            raise BadModel(f"it is {size:,} bytes, more than the {MAX_FILE:,} a word model may be")
        with zipfile.ZipFile(path) as archive:
            return _read(archive, fmt, version, size)


def _read(
    archive: zipfile.ZipFile, fmt: str, version: int, file_size: int
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    infos = archive.infolist()
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        raise BadModel("a member name appears twice")
    for info in infos:
        if info.filename != MANIFEST and (not MEMBER_NAME.fullmatch(info.filename) or ".." in info.filename):
            raise BadModel(f"member {info.filename[:60]!r} is not a plain .npy name")
        if info.compress_type != zipfile.ZIP_STORED or info.file_size > min(file_size, MAX_MEMBER):
            raise BadModel(f"member {info.filename[:60]!r} is compressed or larger than the file")
    manifest = _manifest(archive, fmt, version)
    members = _members(manifest)
    by_name = {info.filename: info for info in infos}
    if set(by_name) != {MANIFEST, *members}:
        unexpected = sorted(set(by_name) - {MANIFEST, *members})[:3]
        missing = sorted(set(members) - set(by_name))[:3]
        raise BadModel(
            "its members are not those its manifest lists "
            f"(unexpected: {', '.join(unexpected) or 'none'}; missing: {', '.join(missing) or 'none'})"
        )
    arrays = {
        member.removesuffix(".npy"): _array(archive, by_name[member], entry)
        for member, entry in members.items()
    }
    return manifest, arrays


def _manifest(archive: zipfile.ZipFile, fmt: str, version: int) -> dict[str, Any]:
    info = archive.getinfo(MANIFEST) if MANIFEST in archive.namelist() else None
    if info is None or info.file_size > MAX_MANIFEST:
        raise BadModel("no manifest.json of at most 1 MB")
    with archive.open(info) as handle:
        data = handle.read(MAX_MANIFEST + 1)
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BadModel(f"manifest.json is not JSON ({str(exc)[:100]})") from None
    if nesting_depth(manifest) > MAX_NESTING:
        raise BadModel(f"manifest.json nests more than {MAX_NESTING} levels deep")
    if not isinstance(manifest, dict) or manifest.get("format") != fmt or manifest.get("version") != version:
        raise BadModel(f"manifest.json is not a {fmt} manifest of version {version}")
    return manifest


def _members(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest's ``members`` entries, each checked: size, sha256, dtype, shape."""
    members = manifest.get("members")
    if not isinstance(members, dict):
        raise BadModel("manifest.json lists no members")
    for member, entry in members.items():
        what = f"manifest.json: members.{str(member)[:60]}"
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "sha256", "size"}:
            raise BadModel(f"{what} is not a table of dtype, shape, sha256 and size")
        size, digest, dtype, shape = entry["size"], entry["sha256"], entry["dtype"], entry["shape"]
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_MEMBER:
            raise BadModel(f"{what}.size is not a size of at most {MAX_MEMBER:,} bytes")
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise BadModel(f"{what}.sha256 is not a sha256")
        if dtype not in DTYPES:
            raise BadModel(f"{what}.dtype is not one of {', '.join(DTYPES)}")
        if (
            not isinstance(shape, list)
            or len(shape) > 2
            or not all(
                isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_DIMENSION for n in shape
            )
        ):
            raise BadModel(f"{what}.shape is not a list of at most two lengths")
        data = math.prod(shape) * np.dtype(dtype).itemsize
        if not data <= size <= data + _HEADER:
            raise BadModel(f"{what}.size does not fit an array of that dtype and shape")
    return members


def _array(archive: zipfile.ZipFile, info: zipfile.ZipInfo, entry: dict[str, Any]) -> np.ndarray:
    """A member's array: its size and sha256 those of the manifest, then its header and data checked."""
    member, size = info.filename, entry["size"]
    if info.file_size != size:
        raise BadModel(f"{member} is {info.file_size:,} bytes, its manifest says {size:,}")
    with archive.open(info) as handle:
        data = handle.read(size + 1)
    if len(data) != size or hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise BadModel(f"{member} does not match its sha256 in manifest.json (changed or truncated)")
    handle = io.BytesIO(data)
    try:
        if np.lib.format.read_magic(handle) != (1, 0):
            raise BadModel(f"{member} is not an .npy file of version 1.0")
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    except ValueError as exc:
        raise BadModel(f"{member} is not an .npy array ({str(exc)[:100]})") from None
    expected = np.dtype(entry["dtype"])
    if dtype != expected or dtype.str != entry["dtype"] or fortran:
        raise BadModel(f"{member} is not a C-ordered array of {entry['dtype']}")
    if list(shape) != entry["shape"]:
        raise BadModel(f"{member} has shape {tuple(shape)}, its manifest says {tuple(entry['shape'])}")
    body = data[handle.tell() :]
    if len(body) != math.prod(shape) * dtype.itemsize:
        raise BadModel(f"{member} holds {len(body):,} bytes of data, not those of its shape")
    return np.frombuffer(body, dtype=dtype).reshape(shape)
