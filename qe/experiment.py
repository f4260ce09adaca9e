"""Config-driven runs: features -> learner (chosen by CV on train) -> test metrics, in a run directory."""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, PredefinedSplit, cross_val_predict

from qe import __version__
from qe.config import dump_config, load_config, split_settings
from qe.data import QEDataset, load_registered_features
from qe.errors import QEInputError
from qe.io import atomic_write, read_lines, sha256_file, write_text_atomic
from qe.learners.factory import AUTO, auto_choice, describe, make_learner
from qe.learners.progress import reporting, say
from qe.metrics import BOOTSTRAPPED, HEADLINE_METRICS, METRICS, evaluate, paired_bootstrap
from qe.model import QEModel
from qe.outputs import staged_dir
from qe.published import bootstrap_key, comparison_table, summary_columns
from qe.schema import SPLIT_COLUMNS, SPLIT_FILES, SPLITS
from qe.splits import (
    cache_label,
    check_overlap,
    has_dev,
    has_text,
    label_range,
    languages,
    load_split,
    repeated_pairs,
)
from qe.workers import exit_with_parent_everywhere

MIN_SCORED = 4  # DeltaAvg needs at least 4 sentences
BOOTSTRAP_METRICS = BOOTSTRAPPED


@dataclass
class SplitData:
    """One split ready for learning: the dataset and its feature table (rows aligned)."""

    dataset: QEDataset
    features: pd.DataFrame
    extraction_seconds: dict[str, float] = field(
        default_factory=dict
    )  # per family (cache hits: as first run)
    table_sha256: str | None = None  # of the split's precomputed feature table, if any


def load_split_dataset(config: dict[str, Any], split: str) -> QEDataset:
    """The sentences and labels of the ``train``, ``dev`` or ``test`` split named by the config."""
    return load_split(config, split).dataset


def build_split(
    config: dict[str, Any], split: str, progress: bool = True, resources: Any = None
) -> SplitData:
    """Load a split and compute or read every feature the config asks for (``resources``: the
    config's bundle when already open)."""
    loaded = load_split(config, split)
    dataset = loaded.dataset
    data, features = config["data"], config["features"]
    tables: list[pd.DataFrame] = []
    seconds: dict[str, float] = {}
    for feature_set in features["sets"]:
        if "dataset" not in data:
            raise QEInputError(f"feature set {feature_set!r} needs a registered dataset in [data]")
        tables.append(
            load_registered_features(
                data["dataset"], feature_set, data[f"{split}_split"], data.get("data_dir")
            )
        )
    if loaded.table is not None:
        tables.append(loaded.table.features)
    if features["families"]:
        if not has_text(dataset):
            raise QEInputError(
                f"[features] families need sentences, but [data.{split}] gives only a feature table "
                "(add src / mt files or a table, or drop the families)",
                config.get("config_file"),
            )
        table, seconds = _extract_families(config, dataset, split, progress, resources)
        tables.append(table)
    for table in tables:
        if len(table) != len(dataset):
            raise QEInputError(
                f"a feature table for {split} has {len(table)} rows but the data has {len(dataset)}"
            )
    table = pd.concat([t.reset_index(drop=True) for t in tables], axis=1)
    sha = loaded.table.sha256[:16] if loaded.table is not None else None
    return SplitData(dataset=dataset, features=table, extraction_seconds=seconds, table_sha256=sha)


def _extract_families(
    config: dict[str, Any], dataset: QEDataset, split: str, progress: bool, resources: Any
) -> tuple[pd.DataFrame, dict[str, float]]:
    from qe.features.cache import extract_cached

    resources = resources if resources is not None else open_bundle_of(config)
    families, inputs = bound_families(config, split, resources, dataset)
    extra, origins = dict(dataset.inputs), dict(dataset.input_origins)
    for name, path in inputs.items():  # files named in [data.<split>] replace the dataset's own
        extra[name] = read_lines(path)
        origins[name] = (str(path), 1)
        if len(extra[name]) != len(dataset):
            raise QEInputError(f"has {len(extra[name])} lines but the {split} data has {len(dataset)}", path)
    table, seconds = extract_cached(
        families,
        dataset.ids,
        dataset.src,
        dataset.mt,
        resources,
        dataset=cache_label(dataset, config),
        extra=extra,
        origins=origins,
        n_jobs=config["cv"]["n_jobs"],
        progress=progress,
    )
    return table, seconds


def open_bundle_of(config: dict[str, Any]) -> Any:
    """The config's resource bundle (with the config's ``[mt2]`` attached), or None."""
    from qe.resources.bundle import open_bundle, with_mt2

    resources = config["features"].get("resources")
    bundle = open_bundle(resources) if resources else None
    if not config.get("mt2"):
        return bundle
    from qe.resources.mt2 import check_direction

    check_direction(config["mt2"]["pair"], languages(config, bundle), config.get("config_file"))
    try:
        return with_mt2(bundle, config["mt2"])
    except QEInputError as exc:  # a pair or engine that is not installed: name the config
        if exc.path is not None:
            raise
        raise QEInputError(f"[mt2]: {exc.message}", config.get("config_file")) from None


def bound_families(
    config: dict[str, Any], split: str, resources: Any, dataset: QEDataset | None = None
) -> tuple[list[Any], dict[str, str]]:
    """The config's families for one split, bound to the bundle, and the line inputs they read.

    Inputs named in ``[data.<split>]`` go to the families that declare them (file inputs such as
    decoder logs become settings); inputs the ``dataset`` brings (MLQE-PE's NMT log-probabilities)
    count as given; a line input that is neither given nor provided is refused.
    """
    from qe.features.registry import check_line_inputs, make_families, route_inputs, with_languages

    features = config["features"]
    given = dict(config["data"].get(split, {}))
    settings = split_settings(features["settings"], split)
    if resources is None:  # the families learn the language pair from the config
        settings = with_languages(features["families"], settings, languages(config))
    lines, settings = route_inputs(features["families"], given, settings, strict=False)
    families = [family.bind(resources) for family in make_families(features["families"], settings)]
    check_line_inputs(families, {*lines, *(dataset.inputs if dataset is not None else ())}, resources)
    return families, lines


TESTED_AGAINST = (
    *BOOTSTRAPPED,
    *(n for n, m in METRICS.items() if m.higher_is_better is not None and not m.bootstrap),
)
"""The test metrics kept of each ``[[report.against]]`` system: every quality metric, bootstrapped first."""
RANK_SCORINGS = tuple(name for name, metric in METRICS.items() if metric.ranking and metric.scorer)
"""Scorings that rank a fold's predictions: a fold of fewer than MIN_SCORED rows scores NaN."""


def check_folds(config: dict[str, Any], n_rows: int) -> None:
    """Refuse more cross-validation folds than training rows (a config error, named with its file)."""
    folds = config["cv"]["folds"]
    if folds > n_rows:
        raise QEInputError(
            f"cv.folds = {folds}: expected an integer from 2 to {n_rows} (the number of training rows)",
            config.get("config_file"),
        )
    scoring = config["learner"].get("scoring")
    if config["learner"].get("grid") and scoring in RANK_SCORINGS and n_rows // folds < MIN_SCORED:
        raise QEInputError(
            f"cv.folds = {folds}: folds of {n_rows // folds} rows cannot be scored by {scoring} (it needs "
            f"{MIN_SCORED}); use at most {n_rows // MIN_SCORED} folds or another scoring",
            config.get("config_file"),
        )


def select_features(config: dict[str, Any], train: SplitData) -> tuple[list[str], dict[str, Any]]:
    """Fit the configured selector on the training features only; the chosen columns and its report."""
    from qe.selection import make_selector, selection_report

    check_folds(config, len(train.dataset))
    spec = config["selection"]
    params = dict(spec.get("params", {}))
    if spec["name"] in ("forward", "backward"):
        params.setdefault("random_state", config["seed"])
        params.setdefault("cv", config["cv"]["folds"])
        params.setdefault("n_jobs", config["cv"]["n_jobs"])
    selector = make_selector(spec["name"], **params)
    try:
        selector.fit(train.features, train.dataset.labels)
    except ValueError as exc:  # the selector's own reasons (nothing selected, a constant label ...)
        raise QEInputError(f"[selection] {' '.join(str(exc).split())}") from None
    report = selection_report(selector)
    return [str(name) for name in report["selected"]], report


def signature(
    config: dict[str, Any],
    estimator_description: str,
    train: QEDataset,
    bundle: Any = None,
    *,
    dev: QEDataset | None = None,
    tables: dict[str, str] | None = None,
) -> str:
    """Everything that changes a number, sacrebleu-style: data (and the dev split and precomputed
    feature tables, by content), features (each family's own signature), resources, learner, CV,
    versions."""
    features = config["features"]
    parts = [f"data:{config['data'].get('dataset', 'files')}@{train.fingerprint()}"]
    if dev is not None:
        parts.append(f"dev:{dev.fingerprint()}")
    parts += [f"table.{split}:{sha}" for split, sha in sorted((tables or {}).items())]
    parts += input_hashes(config)
    parts.append(f"features:{'+'.join(features['sets'] + features['families'])}")
    if config.get("selection"):
        parts.append(f"selection:{config['selection']['name']}")
    bundle = bundle if bundle is not None else open_bundle_of(config)
    if bundle is not None:
        parts.append(f"resources:{bundle.signature()}")
        if bundle.manifest.get("text"):
            parts.append(bundle.text_config("src").signature())
        if "mt2" in bundle:
            info = bundle.info("mt2")
            info = info.get("settings", info)  # built members keep it under settings, attached ones not
            parts.append(f"mt2:{info.get('engine')}-{info.get('pair')}@{info.get('signature')}")
    if features["families"]:
        families, _ = bound_families(config, "train", bundle, train)
        parts += [f"family:{family.signature()}" for family in families]
    tuned_on = "dev" if dev is not None else f"cv{config['cv']['folds']}"
    if dev is not None and config["data"].get("fit_on") == "train+dev":
        parts.append("fit:train+dev")
    learner = config["learner"]
    options = {
        k: learner[k] for k in ("scale", "clip", "aux_targets", "fast_above") if learner.get(k) is not None
    }
    bounds = label_range(config)
    if learner.get("aux_targets"):  # the aux targets are computed from the post-edits / references
        texts = "\n".join([*(train.post_edits or []), "\f", *(train.references or [])])
        parts.append(f"aux-data:{hashlib.sha256(texts.encode()).hexdigest()[:16]}")
    parts += [
        f"learner:{estimator_description}",
        f"learner-params:{compact(learner.get('params') or {})}",
        f"learner-options:{compact(options)}",
        f"label-range:{compact(list(bounds) if bounds else None)}",
        f"select:{tuned_on}-{config['learner']['scoring']}",
        f"seed:{config['seed']}",
        f"qe:{__version__}",
        f"sklearn:{sklearn.__version__}",
        f"numpy:{np.__version__}",
        f"python:{platform.python_version()}",
    ]
    return "|".join(parts)


def compact(value: Any) -> str:
    """A short stable text of a config value for signatures: its JSON, or a hash of it when long."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return text if len(text) <= 80 else f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def input_hashes(config: dict[str, Any]) -> list[str]:
    """``input.<split>.<name>:<sha256>`` of every family input file named in ``[data.<split>]``
    (NMT log-probabilities, pseudo-references, decoder logs): they change the features."""
    parts = []
    for split in SPLITS:
        for name, value in sorted(config["data"].get(split, {}).items()):
            if name not in SPLIT_FILES and name not in SPLIT_COLUMNS and Path(value).is_file():
                parts.append(f"input.{split}.{name}:{sha256_file(value)[:16]}")
    return parts


def config_inputs(config: dict[str, Any]) -> list[Path]:
    """The files and folders a run of ``config`` reads (data files and directory, resource bundle,
    decoder logs, other configs): an output directory must never hold one of them."""
    found: list[Path] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and value and Path(value).exists():
            found.append(Path(value))

    data, features = config["data"], config["features"]
    walk([*(data.get(split, {}) for split in SPLITS), data.get("data_dir")])
    walk([features.get("resources"), features.get("settings", {})])
    walk([entry.get("config") for entry in config["report"].get("against", [])])
    if "dataset" in data:
        from qe.data import resolve_data_dir

        found.append(resolve_data_dir(data.get("data_dir")))
    return found


def run_experiment(
    config: dict[str, Any],
    output_dir: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = True,
    inputs: Iterable[str | Path] = (),
) -> dict[str, Any]:
    """Train on the training split (choices by CV), evaluate on test, write the run directory.

    ``inputs`` are further files the run reads (e.g. the config file): the output never holds one.
    """
    exit_with_parent_everywhere()
    protected = [*inputs, *config_inputs(config)]
    with staged_dir(output_dir, "run", overwrite=overwrite, inputs=protected) as staging:
        return _run(config, staging, progress)


@dataclass
class FittedSystem:
    """A learner fitted on training features: its CV (and dev) and test metrics and predictions."""

    estimator: Any  # as configured (a GridSearchCV when a grid is searched)
    chosen: Any  # the refitted best pipeline
    metrics: dict[str, Any]
    cv_pred: np.ndarray
    test_pred: np.ndarray
    dev: SplitData | None = None  # the split hyperparameters were chosen on, if not CV


def refit_with_dev(
    learner: dict[str, Any], chosen: Any, estimator: Any, train: SplitData, dev: SplitData, y_fit: np.ndarray
) -> tuple[Any, dict[str, Any]]:
    """The chosen configuration fitted again on train and dev (``[data] fit_on = "train+dev"``),
    once the dev split has done its job (choosing, scoring); dev pairs that repeat a training pair
    are left out. Returns the model and what it was fitted on."""
    repeats = set(repeated_pairs(train.dataset, dev.dataset))
    keep = [k for k in range(len(dev.dataset)) if k not in repeats]
    y_dev = _fit_target(learner, dev.dataset.subset(keep), estimator)
    x_all = np.vstack([train.features.to_numpy(), dev.features.to_numpy()[keep]])
    refitted = clone(chosen).fit(x_all, np.concatenate([y_fit, y_dev], axis=0))
    say(f"refitted on train and dev: {len(x_all)} rows")
    info = {"splits": "train+dev", "rows": len(x_all), "dev_rows_left_out": len(dev.dataset) - len(keep)}
    return refitted, info


def _fit_target(learner: dict[str, Any], train: QEDataset, estimator: Any) -> np.ndarray:
    """The labels, or with ``aux_targets`` the labels plus the aux targets as extra columns."""
    names = learner.get("aux_targets")
    if not names:
        return train.labels
    from qe.learners.aux import aux_target_matrix, stack_targets
    from qe.learners.ensemble import accepts_aux

    if isinstance(estimator, GridSearchCV) or not accepts_aux(estimator):
        raise QEInputError(
            f"[learner] aux_targets needs an aux-aware learner without a grid (e.g. aux_stack), "
            f"not {learner['name']!r}" + (" with a grid" if isinstance(estimator, GridSearchCV) else "")
        )
    return stack_targets(train.labels, aux_target_matrix(train, list(names)))


def fit_and_evaluate(
    config: dict[str, Any],
    train: SplitData,
    test: SplitData,
    dev: SplitData | None = None,
    progress: bool = False,
) -> FittedSystem:
    """Fit the configured learner, CV-predict train, predict test. Hyperparameters (a grid) are
    chosen by CV on train, or with a ``dev`` split by fitting on train and scoring on dev; the
    chosen configuration is then fitted on train (and dev, with ``[data] fit_on = "train+dev"``,
    after dev has been scored). ``progress``: lines on stderr during the grid search and the CV
    predictions (:mod:`qe.learners.progress`)."""
    with reporting(progress):
        try:
            fitted = _fit_and_evaluate(config, train, test, dev)
        except (ValueError, TypeError, ArithmeticError) as exc:
            # parameters the config check cannot judge alone (scikit-learn checks them against the
            # data: cv larger than a fold, kernel = "precomputed", weights of the wrong length ...)
            reason = " ".join(str(exc).split())[:300]
            raise QEInputError(
                f"[learner] cannot be fitted with these parameters: {type(exc).__name__}: {reason}",
                config.get("config_file"),
            ) from None
    for what, values in (("CV", fitted.cv_pred), ("test", fitted.test_pred)):
        if not np.isfinite(values).all():
            raise QEInputError(
                f"[learner] predicted NaN or infinite {what} scores with these parameters "
                "(e.g. an empty alphas list)",
                config.get("config_file"),
            )
    return fitted


def _fit_and_evaluate(
    config: dict[str, Any], train: SplitData, test: SplitData, dev: SplitData | None
) -> FittedSystem:
    learner = config["learner"]
    seed, folds, n_jobs = config["seed"], config["cv"]["folds"], config["cv"]["n_jobs"]
    check_folds(config, len(train.dataset))
    x_train, y_train = train.features.to_numpy(), train.dataset.labels
    for name, split, least in (("training", train, max(MIN_SCORED, folds)), ("dev", dev, MIN_SCORED)):
        if split is not None and len(split.dataset) < least:
            raise QEInputError(
                f"the {name} split has {len(split.dataset)} sentences; at least {least} are needed "
                f"({folds}-fold CV, and DeltaAvg needs {MIN_SCORED} scored sentences)"
            )
    if test.dataset.labels is not None and len(test.dataset) < MIN_SCORED:
        raise QEInputError(f"the test split has {len(test.dataset)} sentences; scoring needs {MIN_SCORED}")
    tune_on = None
    if dev is not None:
        if dev.dataset.labels is None:
            raise QEInputError("the dev split has no labels, so it cannot choose hyperparameters")
        tune_on = PredefinedSplit(np.r_[np.full(len(x_train), -1), np.zeros(len(dev.dataset))])
    estimator = make_learner(
        learner["name"],
        learner.get("params"),
        learner.get("grid"),
        scale=learner.get("scale"),
        cv_folds=folds,
        seed=seed,
        scoring=learner["scoring"],
        n_jobs=n_jobs,
        cv=tune_on,
        n_rows=len(x_train),
        fast_above=learner.get("fast_above"),
    )
    y_fit = _fit_target(learner, train.dataset, estimator)
    if isinstance(estimator, GridSearchCV) and dev is not None:
        estimator.set_params(refit=False)
        estimator.fit(np.vstack([x_train, dev.features.to_numpy()]), np.r_[y_fit, dev.dataset.labels])
        chosen = clone(estimator.estimator).set_params(**estimator.best_params_).fit(x_train, y_fit)
        estimator.best_estimator_ = chosen
    else:
        estimator.fit(x_train, y_fit)
        chosen = estimator.best_estimator_ if isinstance(estimator, GridSearchCV) else estimator
    bounds = label_range(config)

    def clip(pred: np.ndarray) -> np.ndarray:
        return np.clip(pred, *bounds) if bounds and learner["clip"] else pred

    # Cross-validated predictions on train with the chosen configuration (hyperparameters fixed).
    folds_split = KFold(folds, shuffle=True, random_state=seed)
    started = time.perf_counter()
    say(f"CV predictions: {folds} folds of {len(x_train)} rows with the chosen parameters")
    cv_pred = clip(cross_val_predict(clone(chosen), x_train, y_fit, cv=folds_split, n_jobs=n_jobs))
    say(f"CV predictions: done in {time.perf_counter() - started:.0f} s")
    metrics: dict[str, Any] = {"cv": evaluate(y_train, cv_pred)}
    metrics["cv"]["folds"] = folds
    if learner["name"] == AUTO:
        chose = auto_choice(len(x_train), learner.get("fast_above"))
        metrics["learner"] = {"name": AUTO, "chosen": chose, "training_rows": len(x_train)}
    if isinstance(estimator, GridSearchCV):
        best = {k.removeprefix("model__"): v for k, v in estimator.best_params_.items()}
        metrics["cv"]["grid_best_params"] = best
        metrics["cv"]["grid_best_score"] = float(estimator.best_score_)
        metrics["cv"]["grid_chosen_on"] = "dev" if dev is not None else "cv"
        if getattr(estimator, "units", None):  # a default grid, resolved from the training data
            metrics["cv"]["grid_scaled_to"] = {
                "label_sd": estimator.label_sd_,
                "n_features": x_train.shape[1],
            }
    if dev is not None:
        dev_pred = clip(chosen.predict(dev.features.to_numpy()))
        metrics["dev"] = evaluate(dev.dataset.labels, dev_pred)
    if dev is not None and config["data"].get("fit_on") == "train+dev":
        chosen, metrics["fit_on"] = refit_with_dev(learner, chosen, estimator, train, dev, y_fit)
    test_pred = clip(chosen.predict(test.features.to_numpy()))
    if test.dataset.labels is not None:
        metrics["test"] = evaluate(test.dataset.labels, test_pred)
    return FittedSystem(estimator, chosen, metrics, cv_pred, test_pred, dev)


def fit_config(
    config: dict[str, Any], progress: bool = True, resources: Any = None
) -> tuple[SplitData, SplitData, FittedSystem, dict[str, Any] | None]:
    """Build the splits, select features (if configured) and fit: (train, test, fitted, selection)."""
    resources = resources if resources is not None else open_bundle_of(config)
    from qe.resources.check import experiment_pieces, require

    pair = "-".join((languages(config, resources) or {}).values()) or "this language pair"
    require(experiment_pieces(config, resources), f"features for {pair}", config.get("config_file"))
    from qe.resources import tagless

    tagless.say(tagless.config_losses(config, resources))  # once, before any extraction
    if has_dev(config):  # before any extraction: an overlapping dev split is refused at once
        allow = config["data"].get("allow_overlap", False)
        check_overlap(load_split_dataset(config, "train"), load_split_dataset(config, "dev"), allow)
    train = build_split(config, "train", progress, resources)
    if train.dataset.labels is None:
        given = config["data"].get("train", {})
        where = given.get("table") or given.get("features") or given.get("src") or config.get("config_file")
        hint = (
            " (a table's labels are in its 'score' column, or the one label_column names)"
            if "table" in given
            else ""
        )
        raise QEInputError(f"the training split has no labels{hint}", where)
    dev = build_split(config, "dev", progress, resources) if has_dev(config) else None
    test = build_split(config, "test", progress, resources)
    ours = list(train.features.columns)
    for name, other in (("dev", dev), ("test", test)):
        theirs = [] if other is None else list(other.features.columns)
        if other is not None and theirs != ours:
            at = next(
                (i for i, pair in enumerate(zip(theirs, ours, strict=False)) if pair[0] != pair[1]), None
            )
            first = (
                f"column {at + 1} is {theirs[at]!r} there and {ours[at]!r} in train"
                if at is not None
                else f"{len(theirs)} vs {len(ours)} columns"
            )
            raise QEInputError(
                f"the {name} split's feature columns differ from the training split's: {first} "
                "(do both name the same kind of feature table?)",
                config["data"].get(name, {}).get("features"),
            )
    report = None
    if config.get("selection"):
        selected, report = select_features(config, train)
        for split in (train, dev, test):
            if split is not None:
                split.features = split.features[selected]
    return train, test, fit_and_evaluate(config, train, test, dev, progress), report


def against_config(config: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """The config of one ``[[report.against]]`` system, sharing this run's data, seed and jobs."""
    if "config" in entry:
        other = load_config(entry["config"])
        other["data"], other["seed"], other["cv"] = config["data"], config["seed"], config["cv"]
    else:
        features = {"sets": [], "families": [], **entry["features"]}
        for inherited in ("resources", "settings"):
            if inherited in config["features"]:
                features.setdefault(inherited, config["features"][inherited])
        other = {**config, "features": features, "selection": None}
    return {**other, "name": entry["name"], "report": {"published": False, "against": []}}


def compare_against(
    config: dict[str, Any], gold: np.ndarray, predictions: np.ndarray, progress: bool = True
) -> dict[str, Any]:
    """Fit every ``[[report.against]]`` system; paired bootstrap of ours against each on the test set."""
    result: dict[str, Any] = {}
    for entry in config["report"].get("against", []):
        _, _, other, _ = fit_config(against_config(config, entry), progress)
        result[entry["name"]] = {
            "cv": {m: other.metrics["cv"][m] for m in HEADLINE_METRICS},
            "test": {m: other.metrics["test"][m] for m in TESTED_AGAINST},
            "bootstrap": {
                metric: paired_bootstrap(gold, predictions, other.test_pred, metric).as_dict()
                for metric in BOOTSTRAP_METRICS
            },
        }
    return result


def _run(config: dict[str, Any], out: Path, progress: bool) -> dict[str, Any]:
    started = time.perf_counter()
    bundle = open_bundle_of(config)
    train, test, fitted, selection = fit_config(config, progress, bundle)
    if selection is not None:
        write_text_atomic(out / "selection.json", json.dumps(selection, indent=2) + "\n")
    metrics, estimator, chosen, test_pred = fitted.metrics, fitted.estimator, fitted.chosen, fitted.test_pred
    if config["report"].get("against") and test.dataset.labels is not None:
        metrics["against"] = compare_against(config, test.dataset.labels, test_pred, progress)
    description = describe(estimator)
    dev = fitted.dev
    splits = (("train", train), ("dev", dev), ("test", test))
    tables = {name: split.table_sha256 for name, split in splits if split is not None and split.table_sha256}
    sig = signature(
        config,
        description,
        train.dataset,
        bundle,
        dev=dev.dataset if dev is not None else None,
        tables=tables,
    )
    metrics["signature"] = sig
    metrics["seconds"] = round(time.perf_counter() - started, 3)
    metrics["extraction_seconds"] = {"train": train.extraction_seconds, "test": test.extraction_seconds}

    write_text_atomic(out / "config.toml", dump_config(config))
    write_text_atomic(out / "signature.txt", sig + "\n")
    write_text_atomic(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    with atomic_write(out / "predictions.tsv") as handle:
        handle.write("id\tscore\n")
        for sentence_id, score in zip(test.dataset.ids, test_pred, strict=True):
            handle.write(f"{sentence_id}\t{score:.6f}\n")
    QEModel(
        chosen, list(train.features.columns), model_manifest(config, sig, train, metrics["cv"], bundle)
    ).save(out / "model.skops")
    model = chosen.steps[-1][1] if hasattr(chosen, "steps") else chosen
    if hasattr(model, "export_text"):
        write_text_atomic(out / "model.txt", model.export_text(list(train.features.columns)) + "\n")
    return metrics


def model_manifest(
    config: dict[str, Any],
    sig: str,
    train: SplitData,
    cv: dict[str, Any],
    bundle: Any = None,
) -> dict[str, Any]:
    """What a saved model needs to score raw text again: families, settings, resources, languages."""
    features = config["features"]
    bounds = label_range(config)
    return {
        "signature": sig,
        "qe_version": __version__,
        "config_name": config["name"],
        "languages": languages(config, bundle),
        "families": list(features["families"]),
        "family_settings": features["settings"],
        "feature_sets": list(features["sets"])
        + (["data tables"] if "features" in config["data"].get("train", {}) else []),
        "resources": {"path": str(Path(bundle.path).resolve()), "signature": bundle.signature()}
        if features.get("resources")
        else None,
        "mt2": config.get("mt2"),
        "training_data": train.dataset.fingerprint(),
        "fit_on": config["data"].get("fit_on", "train"),
        "label_range": list(bounds) if bounds else None,
        "cv": {k: v for k, v in cv.items() if isinstance(v, int | float)},
    }


def summary_table(config: dict[str, Any], metrics: dict[str, Any]) -> str:
    """Our test metrics (beside the published systems, for WMT12 only), then the bootstrap tests
    (markdown); the metric columns are the dataset's (``qe.published.summary_columns``)."""
    against = metrics.get("against", {})
    dataset = config["data"].get("dataset")
    ours = {f"{config['name']} (ours, test)": metrics["test"]}
    ours.update({f"{name} (ours, test)": other["test"] for name, other in against.items()})
    lines = [comparison_table(ours, dataset, published=config["report"]["published"])]
    if against:
        shown = [(title, bootstrap_key(key)) for title, key in summary_columns(dataset)]
        lines += [
            "",
            f"Paired bootstrap of {config['name']} against each (1000 test resamples; "
            "p = share of resamples where it is not better):",
            "",
            "| vs | " + " | ".join(title for title, _ in shown) + " |",
            "|---" * (len(shown) + 1) + "|",
        ]
        for name, other in against.items():
            tests = [other["bootstrap"].get(key) for _, key in shown]
            cells = [f"{t['a']:.3f} vs {t['b']:.3f}, p {t['p_value']:.3f}" if t else "n/a" for t in tests]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
