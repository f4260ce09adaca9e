"""Counting the hashing passes over a text: every ``hashlib`` constructor is wrapped, and each marked
text (a string that only one column holds) is counted once per hash object fed it (a ``copy()`` of a
hash object continues its pass, it is not a new one). Used by tests/test_run_counts.py."""

from __future__ import annotations

import collections
import functools
import hashlib
from typing import Any

import pytest

CONSTRUCTORS = ("sha256", "sha1", "sha224", "sha384", "sha512", "md5", "blake2b", "blake2s", "new")


class HashPasses:
    """The hash objects (passes) that were fed each marked text, by the text's label."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, markers: dict[str, str]) -> None:
        self.markers = {label: marker.encode("utf-8") for label, marker in markers.items()}
        self.passes: dict[str, set[int]] = collections.defaultdict(set)
        self.longest = max((len(m) for m in self.markers.values()), default=1)
        for name in CONSTRUCTORS:
            monkeypatch.setattr(hashlib, name, functools.partial(_Hasher, self, getattr(hashlib, name)))

    def counts(self) -> dict[str, int]:
        """How many passes hashed each marked text (labels of texts never hashed are left out)."""
        return {label: len(passes) for label, passes in sorted(self.passes.items())}

    def seen(self, owner: int, data: bytes) -> None:
        for label, marker in self.markers.items():
            if marker in data:
                self.passes[label].add(owner)


class _Hasher:
    """A hash object that reports what it is fed (the tail of the last update is kept, so that a text
    split across two updates is still seen)."""

    _passes = 0

    def __init__(self, counter: HashPasses, make: Any, *args: Any, **kwargs: Any) -> None:
        data = b""
        if make is _NEW:  # hashlib.new(name, data=b"", ...)
            make = functools.partial(make, args[0])
            args = args[1:]
        if args:
            data, args = args[0], args[1:]
        data = kwargs.pop("data", kwargs.pop("string", data))
        self._counter, self._hash, self._tail = counter, make(*args, **kwargs), b""
        _Hasher._passes += 1
        self._pass = _Hasher._passes
        if data:
            self.update(data)

    def update(self, data: Any) -> None:
        data = bytes(data)
        self._counter.seen(self._pass, self._tail + data)
        self._tail = data[-self._counter.longest :]
        self._hash.update(data)

    def copy(self) -> _Hasher:
        twin = object.__new__(_Hasher)
        twin.__dict__.update(self.__dict__)
        twin._hash = self._hash.copy()
        return twin

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hash, name)


_NEW = hashlib.new
