"""Checked reading of the objects of a model file (:mod:`qe.predictors.reader`): every value a predictor uses
is checked (type, dtype, shape, range, finiteness) as it is read, and every array an object holds
must have been read or declared inert, so nothing in the file reaches a computation unchecked."""

from __future__ import annotations

import contextlib
import json
import math
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError

F8 = np.dtype("<f8")
I4 = np.dtype("<i4")
I8 = np.dtype("<i8")


class BadModel(Exception):
    """What makes a model file unusable, in a few words (the caller names the file)."""


@dataclass(eq=False)
class PlainObject:
    """An object of the model file: its class (``module.Class``) and attributes (``None``: opaque,
    e.g. a random generator, whose content no predictor reads). Reading an attribute marks it used;
    :meth:`done` refuses an object holding an array or object that was neither read nor declared."""

    cls: str
    state: dict[str, Any] | None
    used: set[str] = field(default_factory=set, repr=False)
    finished: bool = field(default=False, repr=False)

    @property
    def name(self) -> str:
        """The class name without its module, for messages."""
        return self.cls.rsplit(".", 1)[-1]

    def has(self, key: str) -> bool:
        return self.state is not None and key in self.state

    def raw(self, key: str) -> Any:
        """An attribute as read from the file (the caller checks it)."""
        if not self.has(key):
            raise BadModel(f"{self.name} has no {key}")
        self.used.add(key)
        return self.state[key]  # type: ignore[index]

    def array(
        self, key: str, dtype: np.dtype, shape: Sequence[int | None], *, finite: bool = False
    ) -> np.ndarray:
        """An array attribute of exactly ``dtype`` and ``shape`` (``None``: any length there)."""
        return check_array(self.raw(key), f"{self.name}.{key}", dtype, shape, finite=finite)

    def number(self, key: str, low: float = -math.inf, high: float = math.inf) -> float:
        """A finite number attribute in ``[low, high]`` (a numpy scalar or 0-d array too)."""
        return check_number(self.raw(key), f"{self.name}.{key}", low, high)

    def integer(self, key: str, low: int | None = None, high: int | None = None) -> int:
        """An integer attribute in ``[low, high]``."""
        value = self.raw(key)
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            raise BadModel(f"{self.name}.{key} is not an integer")
        if (low is not None and value < low) or (high is not None and value > high):
            raise BadModel(f"{self.name}.{key} = {value} is out of range")
        return int(value)

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if not isinstance(value, bool | np.bool_):
            raise BadModel(f"{self.name}.{key} is not true or false")
        return bool(value)

    def choice(self, key: str, options: Iterable[Any]) -> Any:
        """An attribute that must be one of ``options`` (strings, ``None``)."""
        value = self.raw(key)
        if not any(value is option or (isinstance(value, str) and value == option) for option in options):
            raise BadModel(f"{self.name}.{key} = {str(value)[:40]!r} is not supported")
        return value

    def features(self, key: str, n_features: int) -> None:
        """An attribute giving the number of input features, which must be ``n_features``."""
        if self.integer(key) != n_features:
            raise BadModel(f"{self.name}.{key} is not the {n_features} features its input has")

    def obj(self, key: str, *classes: str) -> PlainObject:
        """An object attribute of one of ``classes`` (``module.Class``)."""
        return check_object(self.raw(key), f"{self.name}.{key}", classes)

    def items(self, key: str, length: int | None = None) -> list[Any]:
        """A list (or tuple) attribute, of ``length`` items when given."""
        value = self.raw(key)
        if not isinstance(value, list | tuple) or (length is not None and len(value) != length):
            expected = "a list" if length is None else f"a list of {length}"
            raise BadModel(f"{self.name}.{key} is not {expected}")
        return list(value)

    def inert(self, *keys: str) -> None:
        """Attributes no predictor reads (training records, unfitted templates): present or not, they
        may hold plain numeric arrays and objects of plain values only."""
        for key in keys:
            if self.has(key):
                check_inert(self.raw(key), f"{self.name}.{key}")

    def done(self) -> None:
        """Refuse an attribute holding an array or object that was neither read nor declared inert."""
        for key, value in (self.state or {}).items():
            if key not in self.used and not is_plain(value):
                raise BadModel(f"{self.name} holds an unexpected {key}")
        self.finished = True


def check_array(
    value: Any, what: str, dtype: np.dtype, shape: Sequence[int | None], *, finite: bool = False
) -> np.ndarray:
    """``value`` if it is an array of exactly ``dtype`` and ``shape`` (and all finite with ``finite``)."""
    if not isinstance(value, np.ndarray):
        raise BadModel(f"{what} is not an array")
    if value.dtype != dtype:
        if value.dtype.fields is not None and dtype.fields is not None:
            raise BadModel(f"{what} holds records of other fields than scikit-learn's")
        raise BadModel(f"{what} is an array of {_dtype_text(value.dtype)}, not {_dtype_text(dtype)}")
    if value.ndim != len(shape) or any(e not in (None, s) for e, s in zip(shape, value.shape, strict=True)):
        expected = tuple("n" if e is None else e for e in shape)
        raise BadModel(f"{what} has shape {value.shape}, not {expected}".replace("'n'", "n"))
    if finite and not np.isfinite(value).all():
        raise BadModel(f"{what} holds NaN or infinite values")
    return value


MAX_MANIFEST = 1 << 20
"""The largest ``manifest.json`` a model archive may hold (1 MB)."""


def read_manifest(archive: zipfile.ZipFile, fmt: str, version: int) -> dict[str, Any]:
    """The ``manifest.json`` of a model archive: at most 1 MB, JSON, a dict naming ``fmt`` and ``version``
    (``BadModel`` otherwise); its other fields are the caller's to check."""
    info = next((i for i in archive.infolist() if i.filename == "manifest.json"), None)
    if info is None or info.file_size > MAX_MANIFEST:
        raise BadModel("no manifest.json of at most 1 MB")
    try:
        manifest = json.loads(archive.read("manifest.json"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BadModel(f"manifest.json is not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt or manifest.get("version") != version:
        raise BadModel(f"manifest.json is not a {fmt} manifest of version {version}")
    return manifest


UNREADABLE_ARCHIVE = (
    OSError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    ValueError,
    NotImplementedError,  # a compression method zipfile lacks
    RuntimeError,  # an encrypted member
)
"""What reading a damaged or foreign zip can raise."""


@contextlib.contextmanager
def reading_model_archive(path: str | Path, what: str) -> Iterator[None]:
    """Around the reading of a model archive (a fine-tuned encoder, a cross-encoder, a word model):
    whatever it refuses (``BadModel``) or fails on becomes one ``QEInputError`` line naming the file
    and ``what`` it should have been (the failure's text cut at 200 characters)."""
    try:
        yield
    except BadModel as exc:
        raise QEInputError(f"not a usable {what}: {exc}", path) from None
    except UNREADABLE_ARCHIVE as exc:
        raise QEInputError(f"cannot read the {what} ({str(exc)[:200]})", path) from None


def check_number(value: Any, what: str, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` as a float if it is a finite number (not a bool) in ``[low, high]``."""
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iuf":
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise BadModel(f"{what} is not a number")
    number = float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise BadModel(f"{what} = {number:g} is out of range")
    return number


def check_object(value: Any, what: str, classes: Sequence[str]) -> PlainObject:
    if not isinstance(value, PlainObject) or value.cls not in classes:
        found = value.name if isinstance(value, PlainObject) else type(value).__name__
        raise BadModel(f"{what} is a {found}, not a {' or '.join(c.rsplit('.', 1)[-1] for c in classes)}")
    return value


def is_plain(value: Any) -> bool:
    """A JSON value (or a numeric numpy scalar), or a list / tuple / dict of them."""
    if value is None or isinstance(value, str | bool | int | float | np.bool_ | np.integer | np.floating):
        return True
    if isinstance(value, list | tuple):
        return all(is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(is_plain(item) for item in value.values())
    return False


def check_inert(value: Any, what: str) -> None:
    """Refuse anything but plain values, numeric arrays (or arrays of strings, read as lists) and
    objects made of them; the objects are marked finished (nothing reads them)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, np.ndarray):
            if item.dtype.kind not in "biuf" or item.dtype.fields is not None:
                raise BadModel(f"{what} holds an array of {_dtype_text(item.dtype)}")
        elif isinstance(item, PlainObject):
            item.finished = True
            stack.extend((item.state or {}).values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif not is_plain(item):
            raise BadModel(f"{what} holds a {type(item).__name__}")


def _dtype_text(dtype: np.dtype) -> str:
    return "records" if dtype.fields is not None else dtype.str
