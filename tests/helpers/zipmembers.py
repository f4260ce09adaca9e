"""Hand-made zip model files for the hostile-file tests: members read and written as given, ``.npy``
bytes of any array (pickled objects allowed, so a test can plant one), a manifest with some keys
changed, every member flagged encrypted, and the hostile cases the e5 layered model files share."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np


def write_zip(
    path: Path | io.BytesIO, members: dict[str, bytes | str], method: int = zipfile.ZIP_DEFLATED
) -> Path | io.BytesIO:
    """``members`` (name -> bytes, in order) as a zip at ``path``, deflated unless ``method`` says."""
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, value in members.items():
            archive.writestr(name, value)
    return path


def npy_bytes(value: np.ndarray) -> bytes:
    """The ``.npy`` file of ``value`` (an object array is pickled, as an attacker's file could be)."""
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, value, allow_pickle=True)
    return buffer.getvalue()


def with_manifest(members: dict[str, bytes], **change) -> dict[str, bytes]:
    """``members`` with ``manifest.json``'s keys in ``change`` replaced."""
    manifest = json.loads(members["manifest.json"]) | change
    return {**members, "manifest.json": json.dumps(manifest).encode()}


def encrypted_zip(members: dict[str, bytes]) -> bytes:
    """The zip of ``members`` with every member flagged encrypted (bit 0 of each header's flags)."""
    buffer = io.BytesIO()
    write_zip(buffer, members)
    data = bytearray(buffer.getvalue())
    for magic, flags in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(magic)
        while at >= 0:
            data[at + flags] |= 1
            at = data.find(magic, at + 4)
    return bytes(data)


def read_members(path: Path | io.BytesIO) -> dict[str, bytes]:
    """The members of the zip at ``path`` (name -> bytes)."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_crafted(path: Path, crafted: dict[str, bytes] | bytes) -> Path:
    """A crafted model file at ``path``: members zipped, or raw bytes as they are."""
    if isinstance(crafted, bytes):
        path.write_bytes(crafted)
        return path
    return write_zip(path, crafted)


def layered_hostile(members: dict[str, bytes], case: str, weights: str) -> dict[str, bytes] | bytes | None:
    """The hostile ``case`` every e5 model file with trained layers and a head refuses alike (a
    ``.qxenc`` cross-encoder, a ``.qxtok`` token head), made from a good file's ``members``;
    ``weights``: the head's weight member the array cases spoil. None: the case is not one of these."""
    array = np.lib.format.read_array(io.BytesIO(members[weights]))
    if case == "extra member":
        return {**members, "code.py": b"import os"}
    if case == "missing member":
        return {k: v for k, v in members.items() if k != "layers/0/qkv.npy"}
    if case == "NaN":
        array[2, 1] = np.nan
        return {**members, weights: npy_bytes(array)}
    if case == "pickled object":
        return {**members, weights: npy_bytes(np.array([{"a": 1}] * 4, dtype=object))}
    if case == "huge member":
        return {**members, "head/b.npy": members["head/b.npy"] + bytes(50 << 20)}
    if case == "short data":
        return {**members, weights: members[weights][:-8]}
    if case == "wrong base model":
        return with_manifest(members, base_model="e5small-q4-0123456789abcdef-numpy-f32")
    if case == "13 layers":
        return with_manifest(members, top_layers=13)
    if case == "manifest not JSON":
        return {**members, "manifest.json": b"{not json"}
    if case == "encrypted":
        return encrypted_zip(members)
    if case == "not a zip":
        return b"PK\x03\x04 this is not a zip file"
    return None
