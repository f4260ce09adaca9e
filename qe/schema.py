"""Typed schemas of the TOML configs: every key's type, range and allowed values, checked in one place.

``EXPERIMENT`` describes an experiment config (``qe run`` / ``qe ablate``: data, features, learner,
selection, cv, report) and ``BUNDLE`` a resource-bundle config (``qe resources build``: languages,
text, leakage, corpora, and the member tables lm, poslm, ngrams, ... whose rules the bundle-member
kinds hand in, ``register_tables``). Checks across keys are table-level rules of the same schema
(``Table(rules=...)``). The files qe writes and reads back are described with the same rules beside
their readers: the model manifest (``qe.model``), the bundle manifest (``qe.resources.bundle.runtime``),
the resume state (``qe.stream.state``), ``metrics.json`` and ``ablation.json`` (``qe.report.run``).
A mistake is one line in one wording everywhere (``mistake``): the file, the key, the value and what
is allowed, e.g. ``configs/x.toml: cv.folds = 0: expected an integer >= 2``.

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

from qe.errors import QEInputError

MAX_SEED = 2**32 - 1  # numpy's RandomState accepts seeds 0 .. 2**32 - 1


SHOWN = 60
"""A value is quoted in an error up to this many characters (a crafted file's value may be huge)."""


def _show(value: Any) -> str:
    """A value as a TOML / JSON file spells it (``true``, not ``True``), shortened to about ``SHOWN``."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    shown = repr(value)
    half = (SHOWN - 3) // 2  # the middle is cut: a path's file name stays
    return shown if len(shown) <= SHOWN else shown[:half] + "..." + shown[-half:]


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
TableRule = Callable[[dict[str, Any]], Mistake]
"""A table-level rule (a check across a table's keys), worded as every other mistake (``mistake``)."""


def _follow_rules(rules: tuple[TableRule, ...], value: dict[str, Any], key: str, path: Path | None) -> Any:
    """``value`` once every table-level rule accepts it; the first mistake found raised as one line."""
    for rule in rules:
        found = rule(value)
        if found is not None:
            name, item, allowed = found
            raise QEInputError(mistake(f"{key}.{name}" if key else name, item, allowed), path)
    return value


class Table(Rule):
    """A table with these keys (``required`` ones must be present); a key it does not name follows
    ``others``, or is refused when ``others`` is None; then its table-level ``rules`` run, in order."""

    allowed = "a table"
    others: Rule | None = None
    rules: tuple[TableRule, ...] = ()

    def __init__(
        self,
        fields: dict[str, Rule],
        required: tuple[str, ...] = (),
        *,
        others: Rule | None = None,
        rules: tuple[TableRule, ...] = (),
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

    def __init__(self, item: Rule, *, rules: tuple[TableRule, ...] = ()) -> None:
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


# ====================================================================== experiment configs


SEED = Int(0, MAX_SEED)
MT2 = Table({"engine": Str(["apertium"]), "pair": Text()}, required=("pair",))
"""``[mt2]``: a second MT system (bundle or experiment config), e.g. engine = "apertium", pair = "eng-spa"."""
SPLITS = ("train", "dev", "test")
SPLIT_FILES = ("src", "mt", "labels", "post_edits", "references", "table", "features")
"""The files a ``[data.<split>]`` table may name (besides the inputs feature families declare)."""
SPLIT_COLUMNS = ("src_column", "mt_column", "label_column", "id_column", "post_edit_column")
"""Column names of a ``table`` (TSV / JSONL) or ``features`` table: not paths."""


class SplitFiles(Table):
    """``[data.<split>]``: the dataset's files, plus every input a feature family declares (e.g.
    ``pseudo_ref``, a decoder ``nbest`` log), known only once the families are registered."""

    def __init__(self) -> None:
        self.required = ()

    @property
    def fields(self) -> dict[str, Rule]:  # type: ignore[override]
        names = (*SPLIT_FILES, *SPLIT_COLUMNS, *registered("pair input")())
        return {name: Str() for name in names}


def _families_once(features: dict[str, Any]) -> Mistake:
    twice = first_repeated(features.get("families", []))
    return (
        None
        if twice is None
        else ("families", features["families"], f"each family once, not {twice!r} twice")
    )


FEATURES = Table(
    {
        "sets": List(Str()),
        "families": List(Str()),
        "resources": Str(),
        "settings": TablesOf(Anything()),  # each family checks its own settings
    },
    rules=(_families_once,),
)


def _split_files(data: dict[str, Any]) -> Mistake:
    """A ``[data.<split>]`` table names its text (src and mt files, or a table) or a feature table;
    column names only go with a ``table`` or ``features`` file; labels come from one place."""
    for split in SPLITS:
        files = data.get(split)
        registered = "dataset" in data or "datasets" in data
        if files is None or (registered and not set(files) & {*SPLIT_FILES, *SPLIT_COLUMNS}):
            continue  # none, or only inputs of feature families (a pseudo-reference) for a dataset
        given = set(files)
        if not ({"src", "mt"} <= given or given & {"table", "features"}):
            return f"{split}.src", None, "src and mt files, a table (TSV / JSONL), or a features table"
        if ("src" in files) != ("mt" in files):
            missing = "mt" if "src" in files else "src"
            return (
                f"{split}.{missing}",
                None,
                f"{missing} = FILE beside {({'src', 'mt'} - {missing}).pop()} (both or neither)",
            )
        columns = sorted(given & set(SPLIT_COLUMNS))
        if columns and not given & {"table", "features"}:
            return (
                f"{split}.{columns[0]}",
                files[columns[0]],
                "a column of a table or features file (none given)",
            )
        if "table" in files and "src" in files:
            return f"{split}.src", files["src"], "no src / mt files beside a table: the text comes from one"
        if "labels" in files and ("table" in files or "label_column" in files):
            where = (
                "the table's label column" if "table" in files else f"the column {files['label_column']!r}"
            )
            return f"{split}.labels", files["labels"], f"no labels file beside {where}: labels come from one"
        empty = sorted(key for key, value in files.items() if not value.strip())
        if empty:
            return f"{split}.{empty[0]}", files[empty[0]], "a file (or a column) name"
    return None


def _one_dev_split(data: dict[str, Any]) -> Mistake:
    if "dev" in data and "dev_split" in data:
        return (
            "dev_split",
            data["dev_split"],
            "no dev_split beside [data.dev] files: one of them names the dev split",
        )
    if data.get("fit_on") == "train+dev" and "dev" not in data and "dev_split" not in data:
        return "fit_on", "train+dev", "'train' when there is no dev split (dev_split or [data.dev])"
    if "dev_split" in data and "dataset" not in data and "datasets" not in data:
        return "dev_split", data["dev_split"], "a split of data.dataset, which is not set"
    return None


POOLED_FAMILIES = ("finetuned", "nmt")
"""The families whose features mean the same in every language pair, the only ones a pooled config
(``[data] datasets``) takes: the others read resources built for one pair (lm, ibm1, ngrams, edits,
baseline17's tables) or one language's tools (spaCy, dictionaries, tokenizers, the encoder's
language check)."""


def _pooled_data(data: dict[str, Any]) -> Mistake:
    """``datasets`` pools registered datasets: never beside ``dataset`` or files of the split it gives;
    ``test_dataset`` and ``normalise`` go with it; each dataset once."""
    if "datasets" not in data:
        for key in ("test_dataset", "normalise"):
            if key in data:
                return key, data[key], "nothing without data.datasets (it goes with pooled datasets)"
        return None
    if "dataset" in data:
        return "dataset", data["dataset"], "nothing beside datasets: one dataset, or several pooled"
    twice = first_repeated(data["datasets"])
    if twice is not None:
        return "datasets", data["datasets"], f"each dataset once, not {twice!r} twice"
    for split in SPLITS:
        if set(data.get(split) or {}) & {*SPLIT_FILES, *SPLIT_COLUMNS}:
            return split, data[split], "no files beside datasets: each split comes from the datasets"
    return None


def _feature_tables(config: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The config's ``[features]`` and each ``[[report.against]]`` entry's, with the key naming each."""
    tables = [("features", config.get("features", {}))]
    tables += [
        (f"report.against[{index}].features", entry.get("features") or {})
        for index, entry in enumerate(config.get("report", {}).get("against", []))
    ]
    return tables


def _pooled_features(config: dict[str, Any]) -> Mistake:
    """A pooled config's families (its own and each ``[[report.against]]`` one's) are language-agnostic."""
    if "datasets" not in config.get("data", {}):
        return None
    for where, features in _feature_tables(config):
        per_pair = [name for name in features.get("families", []) if name not in POOLED_FAMILIES]
        if per_pair:
            return (
                f"{where}.families",
                per_pair[0],
                f"a language-agnostic family with data.datasets ({', '.join(POOLED_FAMILIES)}): "
                f"{per_pair[0]!r} reads resources or tools of one language pair",
            )
    return None


def _against_source(entry: dict[str, Any]) -> Mistake:
    """A ``[[report.against]]`` system takes another config's, or this config's with other features."""
    if ("config" in entry) == ("features" in entry):
        return "config", entry.get("config"), "exactly one of config = FILE or features = {...}"
    return None


def _against_once(report: dict[str, Any]) -> Mistake:
    twice = first_repeated([entry["name"] for entry in report.get("against", [])])
    return None if twice is None else ("against", twice, "each name once (the second would hide the first)")


def _has_data(config: dict[str, Any]) -> Mistake:
    data = config.get("data", {})
    if "dataset" not in data and "datasets" not in data and not ("train" in data and "test" in data):
        return "data.dataset", None, "a registered dataset, or both [data.train] and [data.test] files"
    return None


def _has_features(config: dict[str, Any]) -> Mistake:
    """Features come from sets or families, or from feature tables (for this system and each
    ``[[report.against]]`` one that replaces them)."""
    data = config.get("data", {})
    if all("features" in data.get(split, {}) for split in ("train", "test")):
        return None
    features = config.get("features", {})
    if not features.get("sets") and not features.get("families"):
        return "features.families", None, "feature sets or families (or data.*.features tables)"
    for index, entry in enumerate(config.get("report", {}).get("against", [])):
        other = entry.get("features")
        if other is not None and not other.get("sets") and not other.get("families"):
            where = f"report.against[{index}].features"
            return where, other, "a table naming feature sets or families (the data has no feature tables)"
    return None


def _sets_need_a_dataset(config: dict[str, Any]) -> Mistake:
    """Registered feature sets are a registered dataset's (for this system and each ``[[report.against]]``
    one that replaces its features)."""
    if "dataset" in config.get("data", {}):
        return None
    for where, features in _feature_tables(config):
        if features.get("sets"):
            return (
                f"{where}.sets",
                features["sets"],
                "no feature sets without data.dataset (they are a dataset's)",
            )
    return None


def _params_not_in_grid(learner: dict[str, Any]) -> Mistake:
    grid = learner.get("grid")
    both = sorted(set(grid if isinstance(grid, dict) else {}) & set(learner.get("params", {})))
    if both:
        return f"params.{both[0]}", learner["params"][both[0]], "no value: learner.grid gives it (once)"
    return None


EXPERIMENT = Table(
    {
        "name": Str(),
        "description": Str(),
        "config_file": Str(),  # set by qe.config.load_config: where the config was read from
        "seed": SEED,
        "data": Table(
            {
                "dataset": Str(registered("dataset"), noun="dataset"),
                "datasets": List(Str(registered("dataset"), noun="dataset"), min_len=1),
                "test_dataset": Str(registered("dataset"), noun="dataset"),
                "normalise": Str(["none", "pair"]),
                "data_dir": Str(),
                "train_split": Str(),
                "dev_split": Str(),
                "test_split": Str(),
                "label_range": LabelRange(),
                "allow_overlap": Bool(),
                "fit_on": Str(["train", "train+dev"]),
                "languages": Table({"src": Language(), "tgt": Language()}),
                **{split: SplitFiles() for split in SPLITS},
            },
            rules=(_split_files, _one_dev_split, _pooled_data),
        ),
        "features": FEATURES,
        "learner": Table(
            {
                "name": Str(registered("learner"), noun="learner"),
                "params": TablesOf(Finite()),  # checked when the learner is built
                "grid": Either(Str(["default"]), TablesOf(List(Finite(), min_len=1))),
                "scale": Bool(),
                "scoring": Str(registered("scoring"), noun="scoring"),
                "clip": Bool(),
                "aux_targets": List(Str(registered("aux target"), noun="aux target")),
                "fast_above": Int(1),  # name = "auto": the exact SVR up to this many training rows
            },
            required=("name",),
            rules=(_params_not_in_grid,),
        ),
        "selection": Table(
            {"name": Str(registered("selector"), noun="selector"), "params": TablesOf(Finite())}, ("name",)
        ),
        "cv": Table({"folds": Int(2), "n_jobs": JOBS}),
        "report": Table(
            {
                "published": Bool(),
                "against": List(
                    Table(
                        {"name": Str(), "config": Str(), "features": FEATURES},
                        ("name",),
                        rules=(_against_source,),
                    )
                ),
            },
            rules=(_against_once,),
        ),
        "mt2": MT2,
    },
    ("learner",),
    rules=(_has_data, _has_features, _sets_need_a_dataset, _pooled_features),
)
"""An experiment config (``qe run`` / ``qe ablate``); its table-level rules are the checks across keys."""


# ====================================================================== resource-bundle configs


_TABLES: dict[str, dict[str, Rule]] = {}
"""Kind (``"bundle member"``) -> the config tables a registry owns, by name, with their rules."""


def register_tables(kind: str, tables: dict[str, Rule]) -> None:
    """A registry hands in the rules of the config tables it owns (each bundle-member kind its section,
    ``qe.resources.bundle.members``), so that the schema checks them without importing the registry."""
    _TABLES.setdefault(kind, {}).update(tables)


class WithTables(Table):
    """A table of fixed ``fields`` plus the tables a registry hands in as ``kind`` (looked up when a
    config is checked), then its table-level ``rules``."""

    def __init__(
        self,
        fields: dict[str, Rule],
        kind: str,
        required: tuple[str, ...] = (),
        *,
        rules: tuple[TableRule, ...] = (),
    ) -> None:
        self.own, self.kind, self.required, self.rules = fields, kind, required, rules

    @property
    def fields(self) -> dict[str, Rule]:  # type: ignore[override]
        if self.kind not in _TABLES:  # a programming error: the checker did not import the registry
            raise RuntimeError(f"no {self.kind} tables are registered: import their registry before checking")
        return {**self.own, **_TABLES[self.kind]}


SIDES = ("src", "tgt")
"""The two sides of a bundle: source and target language."""


def is_qe_corpus(table: dict[str, Any]) -> bool:
    """Whether a ``[corpora.NAME]`` table is a QE training split (a dataset, several pooled, or src / mt
    files)."""
    return "dataset" in table or "datasets" in table or "mt" in table


PLAIN_CORPUS_KEYS = (*SIDES, "cross_fit")
"""The keys of a plain (parallel or monolingual) corpus; the others belong to a QE training split."""


def _corpus_kind(table: dict[str, Any]) -> Mistake:
    """A ``[corpora.NAME]`` is a plain corpus (src and/or tgt) or a QE training split (a dataset, or
    src / mt / post_edits files), never a mixture."""
    if not is_qe_corpus(table):
        if not any(side in table for side in SIDES):
            return "src", None, "src and/or tgt files (or dataset / mt for a QE training split)"
        extra = sorted(set(table) - set(PLAIN_CORPUS_KEYS))
        if extra:
            return extra[0], table[extra[0]], "nothing on a plain corpus: it belongs to a QE training split"
        if not isinstance(table.get("cross_fit", False), bool):
            return (
                "cross_fit",
                table["cross_fit"],
                "true or false on a plain corpus (the folds come from the QE training corpus)",
            )
        if "src" in table and table.get("src") == table.get("tgt"):
            return "tgt", table["tgt"], "another file than src: a parallel corpus pairs two languages"
        return None
    if "tgt" in table:
        return (
            "tgt",
            table["tgt"],
            'nothing on a QE training split: its target side is target = "post_edits" or "mt"',
        )
    files = [key for key in ("src", "mt", "post_edits") if key in table]
    if "datasets" in table and ("dataset" in table or files):
        key = "dataset" if "dataset" in table else files[0]
        return key, table[key], "nothing beside datasets: the pooled datasets give the text"
    if "normalise" in table and "datasets" not in table:
        return "normalise", table["normalise"], "nothing without datasets (it scales pooled labels)"
    if "datasets" in table:
        return None
    if "dataset" in table and files:
        return (
            files[0],
            table[files[0]],
            "nothing beside dataset: give dataset or files (src, mt, post_edits)",
        )
    if "dataset" not in table and "src" not in table:
        return "src", None, "src and mt files (a QE training split from files)"
    if "dataset" not in table and "split" in table:
        return "split", table["split"], "nothing without dataset (split goes with dataset)"
    return None


def _folds(table: dict[str, Any]) -> Any:
    """A corpus's ``cross_fit`` as given (a QE training split cross-fits unless it says otherwise)."""
    return table.get("cross_fit", is_qe_corpus(table))


def _one_fold_source(corpora: dict[str, Any]) -> Mistake:
    """At most one QE training corpus defines the cross-fitting folds, and a plain corpus masked by
    them (``cross_fit = true``) needs one."""
    fitted = [name for name, table in corpora.items() if is_qe_corpus(table) and _folds(table)]
    if len(fitted) > 1:
        where = f"only one QE training corpus defines the folds (corpora.{fitted[0]} does)"
        return f"{fitted[1]}.cross_fit", _folds(corpora[fitted[1]]), f"false: {where}"
    asked = [name for name, table in corpora.items() if not is_qe_corpus(table) and _folds(table)]
    if asked and not fitted:
        return (
            f"{asked[0]}.cross_fit",
            True,
            "false without a QE training corpus to take the folds from (a [corpora.NAME] with "
            'dataset = "..." or src / mt files)',
        )
    return None


def _known_corpora(config: dict[str, Any]) -> Mistake:
    """The corpora a member table names are ``[corpora]`` entries."""
    known = config.get("corpora", {})
    for section, rule in _TABLES.get("bundle member", {}).items():
        tables = config.get(section)
        if not isinstance(tables, dict):
            continue
        keyed = tables.items() if isinstance(rule, TablesOf) else [("", tables)]
        for key, table in keyed:
            for index, corpus in enumerate(table.get("corpora", []) if isinstance(table, dict) else []):
                if corpus not in known:
                    where = f"{section}.{key}" if key else section
                    listed = ", ".join(known) or "none"
                    return f"{where}.corpora[{index}]", corpus, f"a corpus of [corpora] ({listed})"
    return None


TEXT_FIELDS: dict[str, Rule] = {
    "style": Str(registered("text style")),
    "case": Str(registered("text case")),
    "normalize": Bool(),
    "truecase_model": Str(),
    "segmenter": Str(registered("segmenter")),
}
BUNDLE = WithTables(
    {
        "name": Str(),
        "description": Str(),
        "languages": Table({"src": Language(), "tgt": Language()}, required=("src", "tgt")),
        "text": Table({**TEXT_FIELDS, "src": Table(TEXT_FIELDS), "tgt": Table(TEXT_FIELDS)}),
        "leakage": Table(
            {
                "eval_files": List(Str()),
                # 0 or false: no near-duplicate search; below 0.5 unrelated sentences would match
                "near_duplicate_chrf": Either(Off(), Number(0.5, 1.0)),
                "drop_overlap": Bool(),  # leave the overlapping lines out instead of refusing
            }
        ),
        "corpora": TablesOf(
            Table(
                {
                    "src": Str(),
                    "tgt": Str(),
                    # a QE training split (qe.resources.crossfit): a registered dataset or files
                    "dataset": Str(registered("dataset"), noun="dataset"),
                    # several pooled (qe.data.pooled): read by [finetuned] alone
                    "datasets": List(Str(registered("dataset"), noun="dataset"), min_len=1),
                    "normalise": Str(["none", "pair"]),
                    "split": Str(),
                    "mt": Str(),
                    "post_edits": Str(),
                    "target": Str(["post_edits", "mt"]),
                    "cross_fit": Either(Bool(), Int(2, 50)),
                    "seed": SEED,
                },
                rules=(_corpus_kind,),
            ),
            rules=(_one_fold_source,),
        ),
    },
    "bundle member",  # the member tables ([lm.KEY], [ibm1], [edits], ...): qe.resources.bundle.kinds
    ("languages",),
    rules=(_known_corpora,),
)
