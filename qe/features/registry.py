"""The one registry of feature families: every module of ``qe.features`` plus installed plug-ins.

A module in ``qe/features/`` that defines a family registers it with ``@register_family`` when it is
imported; ``registered_families()`` imports them all (and the ``qe.feature_families`` entry points
of installed packages), so adding a family is adding one file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

from qe.config.rules import register_names
from qe.features.base import FeatureFamily, PairInput
from qe.infra.errors import QEInputError

ENTRY_POINT_GROUP = "qe.feature_families"
_INFRASTRUCTURE = {"base", "registry", "extractor", "cache", "annotations"}
_REGISTRY: dict[str, type[FeatureFamily]] = {}
_loaded = False


def register_family(cls: type[FeatureFamily]) -> type[FeatureFamily]:
    """Class decorator adding a family to the registry under its ``name``."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"feature family {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def registered_families() -> dict[str, type[FeatureFamily]]:
    """All families by name: the modules of ``qe.features`` and installed plug-ins (imported once)."""
    global _loaded
    if not _loaded:
        import qe.features as package

        for module in pkgutil.iter_modules(package.__path__):
            if module.name not in _INFRASTRUCTURE and not module.name.startswith("_"):
                importlib.import_module(f"qe.features.{module.name}")
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            entry.load()
        _loaded = True
    return dict(_REGISTRY)


def family_class(name: str) -> type[FeatureFamily]:
    """The class of one family, or one clear error listing the known ones."""
    registry = registered_families()
    if name not in registry:
        raise QEInputError(f"unknown feature family {name!r} (known: {', '.join(sorted(registry))})")
    return registry[name]


def make_families(
    names: Iterable[str], settings: dict[str, dict[str, Any]] | None = None
) -> list[FeatureFamily]:
    """Instantiate families by name with their per-family settings (settings of other families refused)."""
    names = list(names)
    settings = settings or {}
    for family in settings:
        family_class(family)  # a settings table for an unknown family is a typo, not a no-op
    return [family_class(name)(**settings.get(name, {})) for name in names]


def with_languages(
    names: Iterable[str], settings: dict[str, dict[str, Any]], languages: dict[str, str] | None
) -> dict[str, dict[str, Any]]:
    """``settings`` with the language pair filled in as ``src_lang`` / ``tgt_lang`` of the families
    that have such settings and leave them unset (for runs without a resource bundle, whose families
    would otherwise not know the languages)."""
    if not languages:
        return settings
    out = {family: dict(values) for family, values in settings.items()}
    for name in names:
        specs = family_class(name).setting_specs
        for side in ("src", "tgt"):
            key = f"{side}_lang"
            if key in specs and out.get(name, {}).get(key) is None and languages.get(side):
                out.setdefault(name, {})[key] = languages[side]
    return out


def declared_inputs(families: Iterable[type[FeatureFamily] | FeatureFamily] | None = None) -> list[PairInput]:
    """The per-pair inputs of the given families (default: all registered), one per name."""
    classes = registered_families().values() if families is None else families
    seen: dict[str, PairInput] = {}
    for family in classes:
        for item in family.inputs:
            seen.setdefault(item.name, item)
    return list(seen.values())


register_names("pair input", lambda: [item.name for item in declared_inputs()])


def route_inputs(
    families: list[str],
    given: dict[str, Any],
    settings: dict[str, dict[str, Any]],
    *,
    strict: bool = True,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Hand the given inputs to the families that declare them.

    Returns ``(lines, settings)``: the line-aligned inputs (read with source and MT), and the
    settings with each file input (e.g. a decoder log) set on every family that declares it.
    An input that none of ``families`` declares is refused with ``strict`` (on a command line it
    would be silently ignored), else skipped (a config's data may serve several feature sets).
    """
    declared = {item.name: item for name in families for item in family_class(name).inputs}
    lines: dict[str, Any] = {}
    routed = {family: dict(values) for family, values in settings.items()}
    for name, value in given.items():
        if value is None:
            continue
        if name not in declared:
            if not strict:
                continue
            users = sorted(
                f for f, cls in registered_families().items() if any(i.name == name for i in cls.inputs)
            )
            raise QEInputError(
                f"input {name!r} is given but none of the families {', '.join(families)} uses it"
                + (f" (it is for: {', '.join(users)})" if users else "")
            )
        item = declared[name]
        if item.kind == "lines":
            lines[name] = value
            continue
        for family in families:
            if any(i.name == name for i in family_class(family).inputs):
                routed.setdefault(family, {})[item.setting_name] = str(value)
    return lines, routed


def check_unread_inputs(families: list[FeatureFamily], lines: Iterable[str]) -> None:
    """Refuse a line input given on the command line that no family reads with its settings
    (``--back-translation`` without ``pseudoref.backtranslation = true``): it would be ignored."""
    for name in lines:
        if not any(item.name == name for family in families for item in family.read_inputs()):
            users = [family.name for family in families if any(i.name == name for i in type(family).inputs)]
            readers = ", ".join(users) or "none of these families"
            raise QEInputError(
                f"input {name!r} is given but {readers} does not read it with "
                "these settings (e.g. pseudoref.backtranslation, nmt.model_score); leave it out or "
                "change the setting"
            )


def check_line_inputs(families: list[FeatureFamily], lines: Iterable[str], resources: Any) -> None:
    """Refuse, before any work, a family whose line input is neither given nor provided by the bundle."""
    given = set(lines)
    for family in families:
        for item in family.needed_inputs():
            if item.kind != "lines" or item.name in given:
                continue
            if item.provider and resources is not None and item.provider in resources:
                continue
            hint = f" or a resource bundle with a {item.provider!r} member" if item.provider else ""
            raise QEInputError(f"{family.name} needs {item.name} ({item.help}): pass {item.flag} FILE{hint}")
