"""Experiment configs: TOML files checked against ``qe.schema.EXPERIMENT`` (unknown keys, wrong types
or ranges and missing files refused), completed with defaults, learner and selector checked."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from qe.errors import QEInputError
from qe.io import parse_bounded, require_file
from qe.schema import EXPERIMENT, SPLIT_COLUMNS, SPLITS, check, check_jobs, mistake

DEFAULTS: dict[str, Any] = {
    "seed": 42,
    "data": {"train_split": "train", "test_split": "test"},
    "features": {"sets": [], "families": [], "settings": {}},
    "learner": {"params": {}, "scoring": "MAE", "clip": True},
    "cv": {"folds": 5, "n_jobs": 1},
    "report": {"published": True},
}


def _merge(defaults: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(defaults)
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _load_registries() -> None:
    """Import the registries whose names the schema checks a config against (datasets, learners,
    scorings, aux targets, selectors, feature-family inputs): importing one registers its names."""
    from qe import data, selection  # noqa: F401
    from qe.features import registry  # noqa: F401
    from qe.learners import aux, factory  # noqa: F401


def load_config(path: str | Path, *, check_learner: bool = True) -> dict[str, Any]:
    """Read, validate and complete a config; relative file paths are resolved against its folder.

    ``check_learner=False`` leaves building the learner and the selector (which checks their parameters)
    to the caller: a run's context makes them once, before any feature is extracted."""
    path = require_file(path, "config file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a leading BOM is dropped
        raw = parse_bounded(tomllib.loads, text, path, "config")
    except UnicodeDecodeError:
        raise QEInputError("config is not valid UTF-8", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", path) from None
    _load_registries()
    check(EXPERIMENT, raw, path)
    config = _merge(DEFAULTS, raw)
    config.setdefault("name", path.stem)
    config["config_file"] = str(path.resolve())
    data = config["data"]
    for split in SPLITS:
        for role, value in data.get(split, {}).items():
            if role in SPLIT_COLUMNS:
                continue
            resolved = _beside(path, value)
            if not resolved.exists():
                raise QEInputError(mistake(f"data.{split}.{role}", value, "an existing file"), path)
            data[split][role] = str(resolved)
    if "data_dir" in data:
        data["data_dir"] = str(_beside(path, data["data_dir"]))
    against = config["report"].get("against", [])
    config["report"]["against"] = [_against_entry(item, index, path) for index, item in enumerate(against)]
    resources = config["features"].get("resources")
    if resources and not Path(resources).is_absolute():
        # Resource bundles are relative to the working directory (they are built there by default).
        config["features"]["resources"] = str(Path(resources))
    _check_learner_and_selector(config, path, check_learner)
    check_family_settings(config["features"], path)
    return config


def check_family_settings(features: dict[str, Any], path: Path | None) -> None:
    """Each ``[features.settings.<family>]`` checked by its family (for every split), naming the key
    as ``features.settings.<family>.<key>`` and the config file."""
    from qe.features.registry import family_class

    def known(name: str, key: str) -> Any:
        try:
            return family_class(name)
        except QEInputError as exc:
            raise QEInputError(f"{key}: {exc.message}", path) from None

    for name in features["families"]:
        known(name, "features.families")
    for split in SPLITS:
        for family, values in split_settings(features["settings"], split).items():
            where = f"features.settings.{family}"
            known(family, where).validate_settings(values, where, path)


def split_settings(settings: dict[str, dict[str, Any]], split: str) -> dict[str, dict[str, Any]]:
    """Per-family settings for one split: a family's ``train`` / ``dev`` / ``test`` sub-table (e.g. the
    decoder logs of that split) overrides its shared settings."""
    resolved = {}
    for family, values in settings.items():
        merged = {k: v for k, v in values.items() if k not in SPLITS}
        merged.update(values.get(split, {}))
        resolved[family] = merged
    return resolved


def _check_learner_and_selector(config: dict[str, Any], path: Path, check_learner: bool = True) -> None:
    """Build the learner and the selector once (unless the caller will; nothing is fitted), so that a bad
    name or parameter (checked against scikit-learn's parameter constraints) is reported now, naming the
    config file."""
    try:
        if check_learner:
            config_learner(config)
        if check_learner and config.get("selection"):
            from qe.selection import make_selector

            make_selector(config["selection"]["name"], **config["selection"].get("params", {}))
    except QEInputError as exc:
        raise QEInputError(exc.message, path) from None


def config_learner(
    config: dict[str, Any], *, n_jobs: int | None = None, cv: Any = None, n_rows: int | None = None
) -> Any:
    """The config's learner, unfitted (``qe.learners.factory.make_learner`` with its ``[learner]``,
    ``[cv]`` folds and seed); ``cv``: another tuning splitter, ``n_rows``: the training size, which
    decides what ``auto`` stands for (its parameters are checked for both choices all the same). A bad
    name or parameter raises ``QEInputError``."""
    from qe.learners.factory import AUTO, auto_choice, make_learner

    learner = config["learner"]
    if learner["name"] == AUTO:  # its parameters must suit both learners it may stand for
        if auto_choice(n_rows, learner.get("fast_above")) == auto_choice(None):
            n_rows = None  # the same learner; built without the size, it is checked for both
        else:
            config_learner(config)  # checked for both without the size, then built for it
    return make_learner(
        learner["name"],
        learner.get("params"),
        learner.get("grid"),
        scale=learner.get("scale"),
        cv_folds=config["cv"]["folds"],
        seed=config["seed"],
        scoring=learner["scoring"],
        n_jobs=n_jobs,
        cv=cv,
        n_rows=n_rows,
        fast_above=learner.get("fast_above"),
    )


def _beside(config_path: Path, value: str) -> Path:
    """A path from a config: absolute as given, relative ones resolved against the config's folder."""
    return Path(value) if Path(value).is_absolute() else (config_path.parent / value).resolve()


def _against_entry(entry: dict[str, Any], index: int, path: Path) -> dict[str, Any]:
    """One ``[[report.against]]`` system (checked by the schema): ``config`` names another experiment
    config, resolved against this one's folder; ``features`` keeps this config's learner and replaces
    its feature sets and families (e.g. one family alone)."""
    if "features" in entry:
        return {"name": entry["name"], "features": dict(entry["features"])}
    other = _beside(path, entry["config"])
    if not other.is_file():
        where = f"report.against[{index}].config"
        raise QEInputError(mistake(where, entry["config"], "an existing config file"), path)
    return {"name": entry["name"], "config": str(other)}


def apply_overrides(
    config: dict[str, Any], data_dir: str | Path | None = None, jobs: int | None = None
) -> None:
    """Command-line overrides of a loaded config: the data directory and the number of parallel jobs."""
    if data_dir:
        config["data"]["data_dir"] = str(data_dir)
    if jobs is not None:
        config["cv"]["n_jobs"] = check_jobs(jobs)


def dump_config(config: dict[str, Any]) -> str:
    """The resolved config as TOML text (written to the run directory)."""
    return tomli_w.dumps(config)
