"""The rules every file qe reads is checked against: each key's type, range and allowed values, and
checks across keys, with one wording of a mistake everywhere.

A config section's rule stands beside its frozen dataclass (``qe.config.data``, ``features``,
``learner``, ``selection``, ``cv``, ``report``, composed in ``qe.config.experiment``; a bundle config's
in ``qe.bundle.sections``). The files qe writes and reads back are described with the same
rules beside their readers: the model manifest (``qe.model.manifest``), the bundle manifest
(``qe.bundle.runtime``), the resume state (``qe.stream.state``), ``metrics.json`` and
``ablation.json`` (``qe.report.rundir``). A mistake is one line in one wording everywhere (``mistake``):
the file, the key, the value and what is allowed, e.g. ``configs/x.toml: cv.folds = 0: expected an
integer >= 2``. Checks across keys are a table's ``rules`` (``Fields(rules=...)``).

Registries hand in what the rules may not import: the names a key may take (``register_names``:
datasets, learners, scorings, ...) and the tables they own (``register_tables``: each bundle-member
kind its section).

Values checked elsewhere, on purpose: ``[features.settings]`` (each feature family checks its own
settings), learner parameters (checked against scikit-learn's parameter constraints when the
learner is built, ``qe.learners.factory``), selector parameters (by the selector), and checks that
need the data (``cv.folds`` at most the number of training rows).
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError

MAX_SEED = 2**32 - 1  # numpy's RandomState accepts seeds 0 .. 2**32 - 1


QUOTED = 60
"""A value is quoted in an error up to this many characters (a crafted file's value may be huge)."""


def _show(value: Any) -> str:
    """A value as a TOML / JSON file spells it (``true``, not ``True``), shortened to about ``QUOTED``."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    shown = repr(value)
    half = (QUOTED - 3) // 2  # the middle is cut: a path's file name stays
    return shown if len(shown) <= QUOTED else shown[:half] + "..." + shown[-half:]


def mistake(key: str, value: Any, allowed: str) -> str:
    """The one wording of a wrong value, in every file qe reads: ``key.path = value: expected ...``."""
    return f"{key} = {_show(value)}: expected {allowed}"


class Rule:
    """One key's expected value; ``check`` returns the value or raises a one-line error."""

    allowed = "any value"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        return value

    def fail(self, value: Any, key: str, path: Path | None) -> QEInputError:
        return QEInputError(mistake(key or "the whole file", value, self.allowed), path)


class Anything(Rule):
    """Any value (checked by the code that uses it)."""


class Finite(Anything):
    """Any value (checked by the code that uses it) holding no infinite or NaN number, at any depth:
    TOML reads ``1e400`` as infinity, which scikit-learn's open-ended ranges accept (``C = inf``)."""

    allowed = "a finite number"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(value, key, path)
        if isinstance(value, dict):
            for name, item in value.items():
                self.check(item, f"{key}.{name}", path)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.check(item, f"{key}[{index}]", path)
        return value


class Bool(Rule):
    allowed = "true or false"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if not isinstance(value, bool):
            raise self.fail(value, key, path)
        return value


def is_count(value: Any, low: int = 0) -> bool:
    """An integer (not a boolean) of at least ``low``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low


def first_repeated(values: Sequence[Any]) -> Any | None:
    """The first value (in sorted order) that ``values`` holds more than once, else None."""
    repeated = sorted({value for value in values if values.count(value) > 1})
    return repeated[0] if repeated else None


MAX_JOBS = 256
"""More parallel jobs than this is a typo, not a machine: each is a process (100,000 exhausted memory)."""


class Int(Rule):
    """An integer (not a boolean) in ``[low, high]``, or one of ``also``."""

    def __init__(self, low: int | None = None, high: int | None = None, also: tuple[int, ...] = ()) -> None:
        self.low, self.high, self.also = low, high, also
        if low is not None and high is not None:
            self.allowed = f"an integer from {low} to {high}"
        elif low is not None:
            self.allowed = f"an integer >= {low}"
        else:
            self.allowed = "an integer"
        if also:
            self.allowed += " or " + " or ".join(map(str, also))

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(value, key, path)
        if value in self.also:
            return value
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise self.fail(value, key, path)
        return value


JOBS = Int(1, MAX_JOBS, also=(-1,))
"""A number of parallel jobs: 1 to ``MAX_JOBS`` processes, or -1 for one per core."""


def check_jobs(jobs: int, option: str = "--jobs") -> int:
    """A number of parallel jobs from the command line (``JOBS``), refused in the one wording:
    ``--jobs = 0: expected an integer from 1 to 256 or -1``."""
    return JOBS.check(jobs, option, None)


class Number(Rule):
    """A finite number (integer or float, not a boolean) in a range with open or closed ends."""

    def __init__(
        self, low: float | None = None, high: float | None = None, *, open_low: bool = False, open_high=False
    ) -> None:
        self.low, self.high, self.open_low, self.open_high = low, high, open_low, open_high
        if low is not None and high is not None:
            self.allowed = (
                f"a number in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
            )
        elif low is not None:
            self.allowed = f"a number {'>' if open_low else '>='} {low:g}"
        else:
            self.allowed = "a number"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(value, key, path)
        low_bad = self.low is not None and (value <= self.low if self.open_low else value < self.low)
        high_bad = self.high is not None and (value >= self.high if self.open_high else value > self.high)
        if low_bad or high_bad:
            raise self.fail(value, key, path)
        return value


class Str(Rule):
    """A string, optionally one of ``choices`` (a collection, or a function giving one, for registries
    that are imported only when needed); ``noun`` words the error (``unknown learner 'x'``)."""

    def __init__(
        self, choices: Iterable[str] | Callable[[], Iterable[str]] | None = None, noun: str = ""
    ) -> None:
        self._choices = choices
        self.noun = noun

    @property
    def choices(self) -> list[str] | None:
        if self._choices is None:
            return None
        return list(self._choices() if callable(self._choices) else self._choices)

    @property
    def allowed(self) -> str:  # type: ignore[override]
        choices = self.choices
        if choices is None:
            return "a string"
        return repr(choices[0]) if len(choices) == 1 else "one of " + ", ".join(map(repr, choices))

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if not isinstance(value, str):
            raise self.fail(value, key, path)
        choices = self.choices
        if choices is not None and value not in choices:
            if self.noun:
                raise QEInputError(
                    f"{key}: unknown {self.noun} {value!r} (allowed: {', '.join(choices)})", path
                )
            raise self.fail(value, key, path)
        return value


class List(Rule):
    """An array whose items follow ``item``, with at least ``min_len`` items."""

    def __init__(self, item: Rule, min_len: int = 0) -> None:
        self.item, self.min_len = item, min_len

    @property
    def allowed(self) -> str:  # type: ignore[override]
        # worded on demand: an item's choices may come from a registry imported only when needed
        allowed = "a non-empty list" if self.min_len else "a list"
        return allowed if isinstance(self.item, Anything) else f"{allowed} of {self.item.allowed}"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if not isinstance(value, list) or len(value) < self.min_len:
            raise self.fail(value, key, path)
        return [self.item.check(v, f"{key}[{i}]", path) for i, v in enumerate(value)]


class Either(Rule):
    """The first of ``rules`` that accepts the value; when one of them fails inside the value (a
    table's key, a list's item), that more precise error is reported."""

    def __init__(self, *rules: Rule) -> None:
        self.rules = rules

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return " or ".join(rule.allowed for rule in self.rules)

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        deeper = None
        for rule in self.rules:
            try:
                return rule.check(value, key, path)
            except QEInputError as exc:
                if not exc.message.startswith(f"{key} = "):
                    deeper = exc
        raise deeper or self.fail(value, key, path)


Mistake = tuple[str, Any, str] | None
"""What a table-level rule finds: ``(key, value, expected)`` of the first mistake, or None."""
CrossRule = Callable[[dict[str, Any]], Mistake]
"""A table-level rule (a check across a table's keys), worded as every other mistake (``mistake``)."""


def _follow_rules(rules: tuple[CrossRule, ...], value: dict[str, Any], key: str, path: Path | None) -> Any:
    """``value`` once every table-level rule accepts it; the first mistake found raised as one line."""
    for rule in rules:
        found = rule(value)
        if found is not None:
            name, item, allowed = found
            raise QEInputError(mistake(f"{key}.{name}" if key else name, item, allowed), path)
    return value


class Fields(Rule):
    """A table with these keys (``required`` ones must be present); a key it does not name follows
    ``others``, or is refused when ``others`` is None; then its table-level ``rules`` run, in order."""

    allowed = "a table"
    others: Rule | None = None
    rules: tuple[CrossRule, ...] = ()

    def __init__(
        self,
        fields: dict[str, Rule],
        required: tuple[str, ...] = (),
        *,
        others: Rule | None = None,
        rules: tuple[CrossRule, ...] = (),
    ) -> None:
        self.fields, self.required, self.others, self.rules = fields, required, others, rules

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        where = f"[{key}]" if key else "the top level"
        if not isinstance(value, dict):
            raise self.fail(value, key, path)
        fields = self.fields
        for name, item in value.items():
            full = f"{key}.{name}" if key else str(name)
            rule = fields.get(name, self.others)
            if rule is None:
                raise QEInputError(
                    f"unknown key {full!r} (known in {where}: {', '.join(sorted(fields))})", path
                )
            value[name] = rule.check(item, full, path)
        for name in self.required:
            if name not in value:
                raise QEInputError(f"{where} needs {name} = ... ({fields[name].allowed})", path)
        return _follow_rules(self.rules, value, key, path)


class TablesOf(Rule):
    """A table of freely named entries, each following ``item`` (e.g. ``[corpora.NAME]``), then the
    table-level ``rules`` across them."""

    allowed = "a table"

    def __init__(self, item: Rule, *, rules: tuple[CrossRule, ...] = ()) -> None:
        self.item, self.rules = item, rules

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if not isinstance(value, dict):
            raise self.fail(value, key, path)
        for name, item in value.items():
            value[name] = self.item.check(item, f"{key}.{name}" if key else str(name), path)
        return _follow_rules(self.rules, value, key, path)


class Choice(Rule):
    """One of a few literal values of any type (``true``, ``false`` and ``"auto"``, say); booleans
    never stand in for numbers."""

    def __init__(self, options: Iterable[Any]) -> None:
        self.options = tuple(options)
        shown = [_show(option) for option in self.options]
        self.allowed = shown[0] if len(shown) == 1 else "one of " + ", ".join(shown)

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if not any(value == o and type(value) is type(o) for o in self.options):
            raise self.fail(value, key, path)
        return value


class Unset(Rule):
    """No value (Python's None): an optional setting left to its default behaviour."""

    allowed = "unset"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if value is not None:
            raise self.fail(value, key, path)
        return value


class Optional(Rule):
    """``rule``'s value, or nothing (JSON's null, Python's None): a field a document may leave out."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return self.rule.allowed

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        return None if value is None else self.rule.check(value, key, path)


class Text(Rule):
    """A non-blank string (names, language codes); with ``path_like`` also a path object."""

    def __init__(self, path_like: bool = False) -> None:
        self.path_like = path_like
        self.allowed = "a path" if path_like else "a non-empty string"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        kinds = (str, os.PathLike) if self.path_like else (str,)
        if not isinstance(value, kinds) or not str(value).strip():
            raise self.fail(value, key, path)
        return value


LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})?")
"""An ISO 639 code, optionally with a region or script (en, eng, pt-BR, zh-Hans)."""


class Language(Rule):
    """A language code (``LANGUAGE_CODE``): ``{`` or ``English`` would silently select no language."""

    allowed = "a language code like en or pt-BR"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if not isinstance(value, str) or not LANGUAGE_CODE.fullmatch(value):
            raise self.fail(value, key, path)
        return value


class AnyTable(Rule):
    """A table with any keys (checked further by the code that uses it)."""

    allowed = "a table"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if not isinstance(value, dict):
            raise self.fail(value, key, path)
        return value


class Off(Rule):
    """``false`` or ``0``: a check switched off (returned as 0.0)."""

    allowed = "false or 0 (off)"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        if value is False or (not isinstance(value, bool) and isinstance(value, int | float) and value == 0):
            return 0.0
        raise self.fail(value, key, path)


class LabelRange(Rule):
    allowed = "[low, high]: two numbers with low < high"

    def check(self, value: Any, key: str, path: Path | None) -> Any:
        number = Number()
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(value, key, path)
        try:
            low, high = (number.check(v, key, path) for v in value)
        except QEInputError:
            raise self.fail(value, key, path) from None
        if not low < high:
            raise self.fail(value, key, path)
        return value


def check(schema: Rule, document: Any, path: str | Path | None, key: str = "") -> Any:
    """Check a parsed config or document (a manifest, a state file) against its rules, in place, under
    ``key`` (``manifest``: its keys are named ``manifest.KEY``); raises the first mistake as one line
    ``file: key.path = value: expected ...``."""
    return schema.check(document, key, None if path is None else Path(path))


# ====================================================================== registered names

_NAMES: dict[str, Callable[[], Iterable[str]]] = {}
"""Kind (``"dataset"``, ``"learner"``, ...) -> the names a registry offers, written by the registry."""


def register_names(kind: str, names: Iterable[str] | Callable[[], Iterable[str]]) -> None:
    """A registry hands in the names a config key may take (a live collection, or a function giving
    one, for registries that are loaded only when needed), so that the schema imports no registry."""
    _NAMES[kind] = names if callable(names) else lambda: names


def registered(kind: str) -> Callable[[], list[str]]:
    """The names registered as ``kind``, looked up when a config is checked (``Str``'s choices)."""

    def names() -> list[str]:
        if kind not in _NAMES:  # a programming error: the checker did not import the registry
            raise RuntimeError(f"no {kind} names are registered: import their registry before checking")
        return list(_NAMES[kind]())

    return names


# ====================================================================== shared by several configs


SEED = Int(0, MAX_SEED)
MT2 = Fields({"engine": Str(["apertium"]), "pair": Text()}, required=("pair",))
"""``[mt2]``: a second MT system (bundle or experiment config), e.g. engine = "apertium", pair = "eng-spa"."""


# ====================================================================== tables a registry owns


_TABLES: dict[str, dict[str, Rule]] = {}
"""Kind (``"bundle member"``) -> the config tables a registry owns, by name, with their rules."""


def register_tables(kind: str, tables: dict[str, Rule]) -> None:
    """A registry hands in the rules of the config tables it owns (each bundle-member kind its section,
    ``qe.bundle.members``), so that the schema checks them without importing the registry."""
    _TABLES.setdefault(kind, {}).update(tables)


def registered_tables(kind: str) -> dict[str, Rule]:
    """The tables handed in as ``kind`` so far, by name (none: empty)."""
    return dict(_TABLES.get(kind, {}))


class FieldsAndTables(Fields):
    """A table of fixed ``fields`` plus the tables a registry hands in as ``kind`` (looked up when a
    config is checked), then its table-level ``rules``."""

    def __init__(
        self,
        fields: dict[str, Rule],
        kind: str,
        required: tuple[str, ...] = (),
        *,
        rules: tuple[CrossRule, ...] = (),
    ) -> None:
        self.own, self.kind, self.required, self.rules = fields, kind, required, rules

    @property
    def fields(self) -> dict[str, Rule]:  # type: ignore[override]
        if self.kind not in _TABLES:  # a programming error: the checker did not import the registry
            raise RuntimeError(f"no {self.kind} tables are registered: import their registry before checking")
        return {**self.own, **_TABLES[self.kind]}
