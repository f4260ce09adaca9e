"""Experiment configs: TOML files checked against a schema (unknown keys and missing files refused)."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from qe.errors import QEInputError

ANY = object()  # a leaf whose value is checked by the code that uses it

# The schema: a dict is a table with exactly these optional keys; a type is a leaf's type;
# ``ANY`` accepts any value; a ("table-of", schema) accepts any key names mapping to ``schema``.
SPLIT_FILES = {
    "src": str,
    "mt": str,
    "labels": str,
    "post_edits": str,
    "references": str,
    "table": str,
    "features": str,
}
# Column names of a ``table`` (TSV / JSONL) or ``features`` table: not paths.
SPLIT_COLUMNS = {
    "src_column": str,
    "mt_column": str,
    "label_column": str,
    "id_column": str,
    "post_edit_column": str,
}
SPLITS = ("train", "dev", "test")
SCHEMA: dict[str, Any] = {
    "name": str,
    "description": str,
    "seed": int,
    "data": {
        "dataset": str,
        "data_dir": str,
        "train_split": str,
        "dev_split": str,
        "test_split": str,
        "label_range": list,
        "allow_overlap": bool,
        "languages": {"src": str, "tgt": str},
        **{split: {**SPLIT_FILES, **SPLIT_COLUMNS} for split in SPLITS},
    },
    "features": {
        "sets": list,
        "families": list,
        "resources": str,
        "settings": ("table-of", ANY),
    },
    "learner": {
        "name": str,
        "params": ("table-of", ANY),
        "grid": ANY,
        "scale": bool,
        "scoring": str,
        "clip": bool,
        "aux_targets": list,  # training-only supervision for aux-aware learners (qe.learners.aux)
    },
    "selection": {"name": str, "params": ("table-of", ANY)},
    "cv": {"folds": int, "n_jobs": int},
    "report": {"published": bool, "against": list},
}

DEFAULTS: dict[str, Any] = {
    "seed": 42,
    "data": {"train_split": "train", "test_split": "test"},
    "features": {"sets": [], "families": [], "settings": {}},
    "learner": {"params": {}, "scoring": "MAE", "clip": True},
    "cv": {"folds": 5, "n_jobs": 1},
    "report": {"published": True},
}


def _check(table: dict[str, Any], schema: dict[str, Any], where: str, path: Path) -> None:
    for key, value in table.items():
        name = f"{where}.{key}" if where else key
        if key not in schema:
            known = ", ".join(sorted(schema))
            raise QEInputError(f"unknown key {name!r} (known here: {known})", path)
        expected = schema[key]
        if expected is ANY:
            continue
        if isinstance(expected, tuple):
            if not isinstance(value, dict):
                raise QEInputError(f"{name!r} must be a table", path)
            continue
        if isinstance(expected, dict):
            if not isinstance(value, dict):
                raise QEInputError(f"{name!r} must be a table", path)
            _check(value, expected, name, path)
            continue
        if (expected is int and isinstance(value, bool)) or not isinstance(value, expected):
            raise QEInputError(f"{name!r} must be of type {expected.__name__}", path)


def _schema_with_inputs() -> dict[str, Any]:
    """The schema, with every input a registered feature family declares allowed in ``[data.<split>]``."""
    from qe.features.registry import declared_inputs

    split = {**SPLIT_FILES, **SPLIT_COLUMNS, **{item.name: str for item in declared_inputs()}}
    return {**SCHEMA, "data": {**SCHEMA["data"], **dict.fromkeys(SPLITS, split)}}


def _merge(defaults: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(defaults)
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load_config(path: str | Path) -> dict[str, Any]:
    """Read, validate and complete a config; relative file paths are resolved against its folder."""
    path = Path(path)
    if not path.is_file():
        raise QEInputError("config file not found", path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise QEInputError("config is not valid UTF-8", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", path) from None
    _check(raw, _schema_with_inputs(), "", path)
    config = _merge(DEFAULTS, raw)
    config.setdefault("name", path.stem)
    data = config.setdefault("data", {})
    if "dataset" not in data and not ("train" in data and "test" in data):
        raise QEInputError(
            "[data] needs either dataset = NAME or both [data.train] and [data.test] files", path
        )
    if "learner" not in raw or "name" not in raw["learner"]:
        raise QEInputError("[learner] name is required", path)
    tables = all("features" in data.get(split, {}) for split in ("train", "test"))
    if not config["features"]["sets"] and not config["features"]["families"] and not tables:
        raise QEInputError(
            "[features] needs sets = [...] or families = [...] (or data.*.features tables)", path
        )
    label_range = data.get("label_range")
    if label_range is not None and (
        len(label_range) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in label_range)
        or label_range[0] >= label_range[1]
    ):
        raise QEInputError("data.label_range must be [low, high] with low < high", path)
    for split in SPLITS:
        _check_split_files(data, split, path)
        for role, value in data.get(split, {}).items():
            if role in SPLIT_COLUMNS:
                continue
            resolved = _beside(path, value)
            if not resolved.exists():
                raise QEInputError(f"data.{split}.{role} names a missing file: {value}", path)
            data[split][role] = str(resolved)
    if "dev" in data and "dev_split" in data:
        raise QEInputError(
            "[data] names a dev split twice: give dev_split or [data.dev] files, not both", path
        )
    if "dev_split" in data and "dataset" not in data:
        raise QEInputError("data.dev_split names a split of a registered dataset: set data.dataset", path)
    if "data_dir" in data:
        data["data_dir"] = str(_beside(path, data["data_dir"]))
    config["report"]["against"] = [_against_entry(item, path) for item in config["report"].get("against", [])]
    resources = config["features"].get("resources")
    if resources and not Path(resources).is_absolute():
        # Resource bundles are relative to the working directory (they are built there by default).
        config["features"]["resources"] = str(Path(resources))
    return config


def _check_split_files(data: dict[str, Any], split: str, path: Path) -> None:
    """A ``[data.<split>]`` table names its text (src and mt files, or a table) or a feature table;
    column names only go with a ``table`` or ``features`` file."""
    files = data.get(split)
    if files is None:
        return
    if not ({"src", "mt"} <= set(files) or "table" in files or "features" in files):
        raise QEInputError(
            f"[data.{split}] needs src and mt files, a table (TSV / JSONL), or a features table", path
        )
    if ("src" in files) != ("mt" in files):
        raise QEInputError(f"[data.{split}] needs both src and mt files (or neither)", path)
    columns = sorted(set(files) & set(SPLIT_COLUMNS))
    if columns and "table" not in files and "features" not in files:
        raise QEInputError(
            f"data.{split}.{columns[0]} names a column, but [data.{split}] has no table or features file",
            path,
        )
    if "table" in files and "src" in files:
        raise QEInputError(
            f"[data.{split}] gives a table and src / mt files: the text comes from one of them", path
        )


def _beside(config_path: Path, value: str) -> Path:
    """A path from a config: absolute as given, relative ones resolved against the config's folder."""
    return Path(value) if Path(value).is_absolute() else (config_path.parent / value).resolve()


def _against_entry(entry: Any, path: Path) -> dict[str, Any]:
    """Check one ``[[report.against]]`` system: ``name`` and either ``config`` (a file) or ``features``.

    ``config`` names another experiment config (relative to this one); ``features`` keeps this
    config's learner and replaces its feature sets and families (e.g. one family alone).
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise QEInputError('every [[report.against]] entry needs name = "..."', path)
    name = entry["name"]
    unknown = set(entry) - {"name", "config", "features"}
    if unknown or ("config" in entry) == ("features" in entry):
        raise QEInputError(
            f"[[report.against]] {name!r} needs exactly one of config = FILE or features = {{...}}", path
        )
    if "features" in entry:
        if not isinstance(entry["features"], dict):
            raise QEInputError(f"[[report.against]] {name!r}: features must be a table", path)
        _check(entry["features"], SCHEMA["features"], f"report.against.{name}.features", path)
        return {"name": name, "features": dict(entry["features"])}
    other = _beside(path, entry["config"])
    if not other.is_file():
        raise QEInputError(f"[[report.against]] {name!r} names a missing config: {entry['config']}", path)
    return {"name": name, "config": str(other)}


def apply_overrides(
    config: dict[str, Any], data_dir: str | Path | None = None, jobs: int | None = None
) -> None:
    """Command-line overrides of a loaded config: the data directory and the number of parallel jobs."""
    if data_dir:
        config["data"]["data_dir"] = str(data_dir)
    if jobs:
        config["cv"]["n_jobs"] = jobs


def dump_config(config: dict[str, Any]) -> str:
    """The resolved config as TOML text (written to the run directory)."""
    return tomli_w.dumps(config)
