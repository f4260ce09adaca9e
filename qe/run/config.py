"""Experiment configs: TOML files checked against ``qe.config.experiment.EXPERIMENT`` (unknown keys, wrong
types or ranges and missing files refused), paths resolved, learner and selector checked; read as the typed,
frozen ``qe.config.experiment.ExperimentConfig`` (whose fields hold the defaults)."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

from qe.config.data import SPLIT_COLUMNS, SPLITS
from qe.config.document import thaw
from qe.config.experiment import EXPERIMENT, ExperimentConfig
from qe.config.features import split_settings
from qe.config.rules import check, check_jobs, mistake
from qe.infra.errors import QEInputError
from qe.infra.io import parse_bounded, require_file


def _load_registries() -> None:
    """Import the registries whose names the schema checks a config against (datasets, learners,
    scorings, aux targets, selectors, feature-family inputs): importing one registers its names."""
    from qe import data, selection  # noqa: F401
    from qe.features import registry  # noqa: F401
    from qe.learners import aux, factory  # noqa: F401


def load_config(path: str | Path, *, check_learner: bool = True) -> ExperimentConfig:
    """Read, validate and complete a config; relative file paths are resolved against its folder.

    ``check_learner=False`` leaves building the learner and the selector (which checks their parameters)
    to the caller: a run's context makes them once, before any feature is extracted."""
    path = require_file(path, "config file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a leading BOM is dropped
        document = parse_bounded(tomllib.loads, text, path, "config")
    except UnicodeDecodeError:
        raise QEInputError("config is not valid UTF-8", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", path) from None
    _load_registries()
    check(EXPERIMENT, document, path)
    document.setdefault("name", path.stem)
    document["config_file"] = str(path.resolve())
    data = document.get("data", {})
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
    report = document.get("report", {})
    if "against" in report:
        report["against"] = [
            _against_entry(item, index, path) for index, item in enumerate(report["against"])
        ]
    features = document.get("features", {})
    resources = features.get("resources")
    if resources and not Path(resources).is_absolute():
        # Resource bundles are relative to the working directory (they are built there by default).
        features["resources"] = str(Path(resources))
    if "resources_config" in features:  # beside the config, as its data files
        built_from = _beside(path, features["resources_config"])
        if not built_from.is_file():
            raise QEInputError(
                mistake("features.resources_config", features["resources_config"], "an existing file"), path
            )
        features["resources_config"] = str(built_from)
    config = ExperimentConfig.from_document(document)
    _check_learner_and_selector(config, path, check_learner)
    check_family_settings(config.features.families, config.features.settings, path)
    return config


def check_family_settings(families: Iterable[str], settings: Mapping[str, Any], path: Path | None) -> None:
    """Each ``[features.settings.<family>]`` checked by its family (for every split), naming the key
    as ``features.settings.<family>.<key>`` and the config file."""
    from qe.features.registry import family_class

    def known(name: str, key: str) -> Any:
        try:
            return family_class(name)
        except QEInputError as exc:
            raise QEInputError(f"{key}: {exc.message}", path) from None

    for name in families:
        known(name, "features.families")
    for split in SPLITS:
        for family, values in split_settings(settings, split).items():
            where = f"features.settings.{family}"
            known(family, where).validate_settings(values, where, path)


def _check_learner_and_selector(config: ExperimentConfig, path: Path, check_learner: bool = True) -> None:
    """Build the learner and the selector once (unless the caller will; nothing is fitted), so that a bad
    name or parameter (checked against scikit-learn's parameter constraints) is reported now, naming the
    config file."""
    try:
        if check_learner:
            config_learner(config)
        if check_learner and config.selection is not None:
            from qe.selection import make_selector

            make_selector(config.selection.name, **thaw(config.selection.params))
    except QEInputError as exc:
        raise QEInputError(exc.message, path) from None


def config_learner(
    config: ExperimentConfig, *, n_jobs: int | None = None, cv: Any = None, n_rows: int | None = None
) -> Any:
    """The config's learner, unfitted (``qe.learners.factory.make_learner`` with its ``[learner]``,
    ``[cv]`` folds and seed); ``cv``: another tuning splitter, ``n_rows``: the training size, which
    decides what ``auto`` stands for (its parameters are checked for both choices all the same). A bad
    name or parameter raises ``QEInputError``."""
    from qe.learners.factory import AUTO, auto_choice, make_learner

    learner = config.learner
    if learner.name == AUTO:  # its parameters must suit both learners it may stand for
        if auto_choice(n_rows, learner.fast_above) == auto_choice(None):
            n_rows = None  # the same learner; built without the size, it is checked for both
        else:
            config_learner(config)  # checked for both without the size, then built for it
    return make_learner(
        learner.name,
        thaw(learner.params),
        thaw(learner.grid),
        scale=learner.scale,
        cv_folds=config.cv.folds,
        seed=config.seed,
        scoring=learner.scoring,
        n_jobs=n_jobs,
        cv=cv,
        n_rows=n_rows,
        fast_above=learner.fast_above,
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
    config: ExperimentConfig, data_dir: str | Path | None = None, jobs: int | None = None
) -> ExperimentConfig:
    """A loaded config with the command line's overrides: the data directory, the parallel jobs."""
    if data_dir:
        config = config.replace(data=dataclasses.replace(config.data, data_dir=str(data_dir)))
    if jobs is not None:
        config = config.replace(cv=dataclasses.replace(config.cv, n_jobs=check_jobs(jobs)))
    return config


def dump_config(config: ExperimentConfig) -> str:
    """The resolved config as TOML text (written to the run directory), in the user's key order."""
    return tomli_w.dumps(config.to_document())
