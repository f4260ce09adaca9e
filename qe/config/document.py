"""A checked config as a frozen, typed view and back: read-only tables (``freeze``), plain values
where they leave the config (``thaw``), a section built from its checked table (``from_table``), and a
section written back in the user's key order (``as_document``).

Tables that are open by design (a family's settings, learner or selector parameters, a split's files and
family inputs, ``[mt2]``) stay read-only mappings in the typed views.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import fields
from types import MappingProxyType
from typing import Any

ReadOnlyTable = Mapping[str, Any]
"""A read-only table of a config (a ``types.MappingProxyType`` whose lists are tuples)."""

EMPTY: ReadOnlyTable = MappingProxyType({})


def no_table() -> ReadOnlyTable:
    return EMPTY


SHOWN = MappingProxyType({"shown": True})
"""Field metadata: a written-back config always shows the key, first and in field order (``seed = 42``,
``[cv] folds = 5``), even when the user left it out."""


def freeze(value: Any) -> Any:
    """A parsed document's value made read-only: tables become mappings that cannot be changed,
    arrays tuples (at any depth)."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A config value as plain Python (dicts and lists, a section as the dict of its fields): what a
    family, a learner, ``json`` or ``tomli_w`` takes."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: thaw(getattr(value, f.name)) for f in fields(value) if f.name != "document"}
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value


def from_table(cls: type, table: Mapping[str, Any], **sections: Any) -> Any:
    """A section of ``cls`` from its checked table: its values frozen, its sub-sections given."""
    return cls(**{key: freeze(value) for key, value in table.items() if key not in sections}, **sections)


def as_document(section: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """A section as a document: the keys whose defaults are shown, then the user's keys in the user's
    order (``given``), then any other key set to something else than its default."""
    own = {f.name: f for f in fields(section) if f.name != "document"}
    shown = [name for name, f in own.items() if f.metadata.get("shown")]
    order = [*shown, *(key for key in given if key in own and key not in shown)]
    order += [name for name in own if name not in order]
    written: dict[str, Any] = {}
    for name in order:
        value, f = getattr(section, name), own[name]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if value is None or (name not in given and name not in shown and value == default):
            continue  # TOML has no null: an unset key is left out
        inner = given.get(name)
        if dataclasses.is_dataclass(value):
            written[name] = as_document(value, inner if isinstance(inner, Mapping) else {})
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            written[name] = [as_document(item, {}) for item in value]
        else:
            written[name] = thaw(value)
    return written
