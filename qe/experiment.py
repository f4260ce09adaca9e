"""Config-driven runs: features -> learner (chosen by CV on train) -> test metrics, in a run directory."""

from __future__ import annotations

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
from sklearn.model_selection import GridSearchCV, KFold, cross_val_predict

from qe import __version__
from qe.config import dump_config, load_config, split_settings
from qe.data import (
    DATASETS,
    QEDataset,
    load_feature_table,
    load_parallel,
    load_registered,
    load_registered_features,
    load_table,
)
from qe.errors import QEInputError
from qe.io import atomic_write, read_lines, write_text_atomic
from qe.learners.factory import describe, make_learner
from qe.metrics import evaluate, paired_bootstrap
from qe.model import QEModel
from qe.outputs import staged_dir
from qe.published import comparison_table
from qe.workers import exit_with_parent_everywhere

BOOTSTRAP_METRICS = ("MAE", "RMSE", "DeltaAvg", "Spearman")


@dataclass
class SplitData:
    """One split ready for learning: the dataset and its feature table (rows aligned)."""

    dataset: QEDataset
    features: pd.DataFrame
    extraction_seconds: dict[str, float] = field(
        default_factory=dict
    )  # per family (cache hits: as first run)


def label_range(config: dict[str, Any]) -> tuple[float, float] | None:
    """The declared label range: from the config, else from the registered dataset."""
    data = config["data"]
    if "label_range" in data:
        low, high = data["label_range"]
        return float(low), float(high)
    if "dataset" in data:
        return DATASETS[data["dataset"]].label_range if data["dataset"] in DATASETS else None
    return None


def load_split_dataset(config: dict[str, Any], split: str) -> QEDataset:
    """The sentences and labels of the ``train`` or ``test`` split named by the config."""
    data = config["data"]
    files = data.get(split)
    bounds = label_range(config)
    if files:
        if "table" in files:
            return load_table(files["table"], label_range=bounds)
        if "src" not in files or "mt" not in files:
            raise QEInputError(f"[data.{split}] needs src and mt files (or a table)")
        return load_parallel(
            files["src"],
            files["mt"],
            files.get("labels"),
            label_range=bounds,
            post_edits=files.get("post_edits"),
            references=files.get("references"),
            name=f"{config['name']}/{split}",
        )
    return load_registered(data["dataset"], data[f"{split}_split"], data.get("data_dir"))


def build_split(
    config: dict[str, Any], split: str, progress: bool = True, resources: Any = None
) -> SplitData:
    """Load a split and compute or read every feature the config asks for (``resources``: the
    config's bundle when already open)."""
    dataset = load_split_dataset(config, split)
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
    extra_table = data.get(split, {}).get("features")
    if extra_table:
        tables.append(load_feature_table(extra_table))
    if features["families"]:
        table, seconds = _extract_families(config, dataset, split, progress, resources)
        tables.append(table)
    for table in tables:
        if len(table) != len(dataset):
            raise QEInputError(
                f"a feature table for {split} has {len(table)} rows but the data has {len(dataset)}"
            )
    table = pd.concat([t.reset_index(drop=True) for t in tables], axis=1)
    return SplitData(dataset=dataset, features=table, extraction_seconds=seconds)


def _extract_families(
    config: dict[str, Any], dataset: QEDataset, split: str, progress: bool, resources: Any
) -> tuple[pd.DataFrame, dict[str, float]]:
    from qe.features.cache import extract_cached

    resources = resources if resources is not None else open_bundle_of(config)
    families, inputs = bound_families(config, split, resources)
    extra = {}
    for name, path in inputs.items():
        extra[name] = read_lines(path)
        if len(extra[name]) != len(dataset):
            raise QEInputError(f"has {len(extra[name])} lines but the {split} data has {len(dataset)}", path)
    table, seconds = extract_cached(
        families,
        dataset.ids,
        dataset.src,
        dataset.mt,
        resources,
        dataset=f"{dataset.name}-{dataset.fingerprint()}".replace("/", "_"),
        extra=extra,
        n_jobs=config["cv"]["n_jobs"],
        progress=progress,
    )
    return table, seconds


def open_bundle_of(config: dict[str, Any]) -> Any:
    """The config's resource bundle (with the config's ``[mt2]`` attached), or None."""
    from qe.resources.bundle import open_bundle, with_mt2

    resources = config["features"].get("resources")
    bundle = open_bundle(resources) if resources else None
    return with_mt2(bundle, config["mt2"]) if config.get("mt2") else bundle


def bound_families(config: dict[str, Any], split: str, resources: Any) -> tuple[list[Any], dict[str, str]]:
    """The config's families for one split, bound to the bundle, and the line inputs they read.

    Inputs named in ``[data.<split>]`` go to the families that declare them (file inputs such as
    decoder logs become settings); a line input that is neither given nor provided is refused.
    """
    from qe.features.registry import check_line_inputs, make_families, route_inputs

    features = config["features"]
    given = dict(config["data"].get(split, {}))
    settings = split_settings(features["settings"], split)
    lines, settings = route_inputs(features["families"], given, settings, strict=False)
    families = [family.bind(resources) for family in make_families(features["families"], settings)]
    check_line_inputs(families, lines, resources)
    return families, lines


def check_folds(config: dict[str, Any], n_rows: int) -> None:
    """Refuse more cross-validation folds than training rows (a config error, named with its file)."""
    folds = config["cv"]["folds"]
    if folds > n_rows:
        raise QEInputError(
            f"cv.folds = {folds}: expected an integer from 2 to {n_rows} (the number of training rows)",
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
    selector.fit(train.features, train.dataset.labels)
    report = selection_report(selector)
    return [str(name) for name in report["selected"]], report


def signature(
    config: dict[str, Any], estimator_description: str, train: QEDataset, bundle: Any = None
) -> str:
    """Everything that changes a number, sacrebleu-style: features (each family's own signature),
    data, resources, learner, CV, versions."""
    features = config["features"]
    parts = [
        f"data:{config['data'].get('dataset', 'files')}@{train.fingerprint()}",
        f"features:{'+'.join(features['sets'] + features['families'])}",
    ]
    if config.get("selection"):
        parts.append(f"selection:{config['selection']['name']}")
    bundle = bundle if bundle is not None else open_bundle_of(config)
    if bundle is not None:
        parts.append(f"resources:{bundle.signature()}")
        if bundle.manifest.get("text"):
            parts.append(bundle.text_config("src").signature())
        if "mt2" in bundle:
            parts.append(f"mt2:{bundle.info('mt2').get('pair')}@{bundle.info('mt2').get('signature')}")
    if features["families"]:
        families, _ = bound_families(config, "train", bundle)
        parts += [f"family:{family.signature()}" for family in families]
    parts += [
        f"learner:{estimator_description}",
        f"select:cv{config['cv']['folds']}-{config['learner']['scoring']}",
        f"seed:{config['seed']}",
        f"qe:{__version__}",
        f"sklearn:{sklearn.__version__}",
        f"numpy:{np.__version__}",
        f"python:{platform.python_version()}",
    ]
    return "|".join(parts)


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
    walk([data.get("train", {}), data.get("test", {}), data.get("data_dir")])
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
    """A learner fitted on training features: its CV and test metrics and predictions."""

    estimator: Any  # as configured (a GridSearchCV when a grid is searched)
    chosen: Any  # the refitted best pipeline
    metrics: dict[str, Any]
    cv_pred: np.ndarray
    test_pred: np.ndarray


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


def fit_and_evaluate(config: dict[str, Any], train: SplitData, test: SplitData) -> FittedSystem:
    """Fit the configured learner (hyperparameters by CV on train), CV-predict train, predict test."""
    learner = config["learner"]
    seed, folds, n_jobs = config["seed"], config["cv"]["folds"], config["cv"]["n_jobs"]
    check_folds(config, len(train.dataset))
    x_train, y_train = train.features.to_numpy(), train.dataset.labels
    estimator = make_learner(
        learner["name"],
        learner.get("params"),
        learner.get("grid"),
        scale=learner.get("scale"),
        cv_folds=folds,
        seed=seed,
        scoring=learner["scoring"],
        n_jobs=n_jobs,
    )
    y_fit = _fit_target(learner, train.dataset, estimator)
    estimator.fit(x_train, y_fit)
    chosen = estimator.best_estimator_ if isinstance(estimator, GridSearchCV) else estimator
    bounds = label_range(config)

    def clip(pred: np.ndarray) -> np.ndarray:
        return np.clip(pred, *bounds) if bounds and learner["clip"] else pred

    # Cross-validated predictions on train with the chosen configuration (hyperparameters fixed).
    folds_split = KFold(folds, shuffle=True, random_state=seed)
    cv_pred = clip(cross_val_predict(clone(chosen), x_train, y_fit, cv=folds_split, n_jobs=n_jobs))
    metrics: dict[str, Any] = {"cv": evaluate(y_train, cv_pred)}
    metrics["cv"]["folds"] = folds
    if isinstance(estimator, GridSearchCV):
        best = {k.removeprefix("model__"): v for k, v in estimator.best_params_.items()}
        metrics["cv"]["grid_best_params"] = best
        metrics["cv"]["grid_best_score"] = float(estimator.best_score_)
    test_pred = clip(chosen.predict(test.features.to_numpy()))
    if test.dataset.labels is not None:
        metrics["test"] = evaluate(test.dataset.labels, test_pred)
    return FittedSystem(estimator, chosen, metrics, cv_pred, test_pred)


def fit_config(
    config: dict[str, Any], progress: bool = True, resources: Any = None
) -> tuple[SplitData, SplitData, FittedSystem, dict[str, Any] | None]:
    """Build both splits, select features (if configured) and fit: (train, test, fitted, selection)."""
    resources = resources if resources is not None else open_bundle_of(config)
    train = build_split(config, "train", progress, resources)
    test = build_split(config, "test", progress, resources)
    if train.dataset.labels is None:
        raise QEInputError("the training split has no labels")
    report = None
    if config.get("selection"):
        selected, report = select_features(config, train)
        train.features, test.features = train.features[selected], test.features[selected]
    return train, test, fit_and_evaluate(config, train, test), report


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
            "cv": {m: other.metrics["cv"][m] for m in ("MAE", "DeltaAvg")},
            "test": {m: other.metrics["test"][m] for m in BOOTSTRAP_METRICS},
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
    sig = signature(config, description, train.dataset, bundle)
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


def languages(config: dict[str, Any], bundle: Any = None) -> dict[str, str] | None:
    """The language pair: from the resource bundle, else from the registered dataset."""
    if bundle is not None and bundle.manifest.get("languages"):
        return dict(bundle.manifest["languages"])
    dataset = DATASETS.get(config["data"].get("dataset", ""))
    return {"src": dataset.languages[0], "tgt": dataset.languages[1]} if dataset else None


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
        "label_range": list(bounds) if bounds else None,
        "cv": {k: v for k, v in cv.items() if isinstance(v, int | float)},
    }


def summary_table(config: dict[str, Any], metrics: dict[str, Any]) -> str:
    """Our test metrics beside the published WMT12 systems, then the bootstrap tests (markdown)."""
    against = metrics.get("against", {})
    ours = {f"{config['name']} (ours, test)": metrics["test"]}
    ours.update({f"{name} (ours, test)": other["test"] for name, other in against.items()})
    lines = [comparison_table(ours, published=config["report"]["published"])]
    if against:
        lines += [
            "",
            f"Paired bootstrap of {config['name']} against each (1000 test resamples; "
            "p = share of resamples where it is not better):",
            "",
            "| vs | " + " | ".join(BOOTSTRAP_METRICS) + " |",
            "|---" * (len(BOOTSTRAP_METRICS) + 1) + "|",
        ]
        for name, other in against.items():
            cells = [
                f"{t['a']:.3f} vs {t['b']:.3f}, p {t['p_value']:.3f}"
                for t in (other["bootstrap"][m] for m in BOOTSTRAP_METRICS)
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
