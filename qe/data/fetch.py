"""Where data lives and how a registered file gets there: the data directory (``--data-dir``, then
``$QE_DATA_DIR``, then the cache) and the download of a missing file (or its extraction from the
upstream archive, whose member paths are never trusted), checked against its sha256."""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from qe.data.registry import RegisteredDataset, RegisteredFile
from qe.infra.errors import QEInputError
from qe.infra.io import cache_root, sha256_file


def resolve_data_dir(cli_value: str | Path | None = None) -> Path:
    """The data directory: ``--data-dir``, then ``$QE_DATA_DIR``, then the download cache."""
    if cli_value:
        path = Path(cli_value)
        if not path.is_dir():
            raise QEInputError("data directory not found (from --data-dir)", path)
        return path
    env = os.environ.get("QE_DATA_DIR")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise QEInputError("data directory not found (from $QE_DATA_DIR)", path)
        return path
    return cache_root() / "data"


def ensure_file(
    dataset: RegisteredDataset, entry: RegisteredFile, data_dir: Path, download: bool = True
) -> Path:
    """Return the local path of a registered file, downloading and verifying it if it is absent."""
    target = data_dir / dataset.folder / entry.path
    if target.is_file():
        return target
    if not download:
        raise QEInputError(f"missing file of dataset {dataset.name}", target)
    fetch_registered_file(entry, target)
    return target


def fetch_registered_file(entry: RegisteredFile, target: Path) -> None:
    """Download one registered file (or extract it from its upstream archive), check its sha256."""
    url, _, member = entry.url.partition("#")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        downloaded = Path(tmp) / "download"
        try:
            with urllib.request.urlopen(url, timeout=60) as response, downloaded.open("wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as exc:
            raise QEInputError(
                f"not found locally and could not be downloaded from {url} ({exc}); "
                "pass --data-dir or set QE_DATA_DIR to a folder holding it",
                target,
            ) from None
        source = downloaded
        if member:
            source = _extract_member(downloaded, member, Path(tmp) / "member", url)
        actual = sha256_file(source)
        if actual != entry.sha256:
            raise QEInputError(
                f"checksum mismatch for download from {url}: got sha256 {actual[:16]}...", target
            )
        os.replace(source, target)


def _extract_member(archive: Path, basename: str, out: Path, url: str) -> Path:
    """Extract the member whose base name is ``basename`` from a .tar.gz without trusting its paths."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar.getmembers():
                if member.isfile() and Path(member.name).name == basename:
                    handle = tar.extractfile(member)
                    assert handle is not None
                    with out.open("wb") as dest:
                        shutil.copyfileobj(handle, dest)
                    return out
    except tarfile.TarError as exc:
        raise QEInputError(f"downloaded archive is corrupt: {exc}", url) from None
    raise QEInputError(f"archive does not contain {basename}", url)
