"""Hand-made zip model files for the hostile-file tests: members written as given, ``.npy`` bytes of
any array (pickled objects allowed, so a test can plant one), a manifest with some keys changed, every
member flagged encrypted."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np


def write_zip(path: Path | io.BytesIO, members: dict[str, bytes]) -> Path | io.BytesIO:
    """``members`` (name -> bytes) as a deflated zip at ``path``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
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
