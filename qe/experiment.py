"""Config-driven runs: features -> learner (chosen by CV on train) -> test metrics, in a run directory."""

from __future__ import annotations

import json
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_predict

from qe import __version__
from qe.config import dump_config, load_config
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
from qe.published import comparison_table

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


def build_split(config: dict[str, Any], split: str, progress: bool = True) -> SplitData:
    """Load a split and compute or read every feature the config asks for."""
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
        table, seconds = _extract_families(config, dataset, split, progress)
        tables.append(table)
    for table in tables:
        if len(table) != len(dataset):
            raise QEInputError(
                f"a feature table for {split} has {len(table)} rows but the data has {len(dataset)}"
            )
    table = pd.concat([t.reset_index(drop=True) for t in tables], axis=1)
    return SplitData(dataset=dataset, features=table, extraction_seconds=seconds)


def split_settings(settings: dict[str, dict[str, Any]], split: str) -> dict[str, dict[str, Any]]:
    """Per-family settings for one split: a family's ``train`` / ``test`` sub-table (e.g. the decoder
    logs of that split) overrides its shared settings."""
    resolved = {}
    for family, values in settings.items():
        merged = {k: v for k, v in values.items() if k not in ("train", "test")}
        merged.update(values.get(split, {}))
        resolved[family] = merged
    return resolved


def _extract_families(
    config: dict[str, Any], dataset: QEDataset, split: str, progress: bool
) -> tuple[pd.DataFrame, dict[str, float]]:
    from qe.features.cache import extract_cached
    from qe.features.extractor import make_families
    from qe.resources.bundle import open_bundle

    features = config["features"]
    families = make_families(features["families"], split_settings(features["settings"], split))
    resources = open_bundle(features["resources"]) if features.get("resources") else None
    extra = {}
    pseudo_ref = config["data"].get(split, {}).get("pseudo_ref")
    if pseudo_ref:
        extra["pseudo_ref"] = read_lines(pseudo_ref)
        if len(extra["pseudo_ref"]) != len(dataset):
            raise QEInputError(
                f"has {len(extra['pseudo_ref'])} lines but the {split} data has {len(dataset)}", pseudo_ref
            )
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


def signature(config: dict[str, Any], estimator_description: str, train: QEDataset) -> str:
    """Everything that changes a number, sacrebleu-style: features, data, learner, CV, versions."""
    features = config["features"]
    parts = [
        f"data:{config['data'].get('dataset', 'files')}@{train.fingerprint()}",
        f"features:{'+'.join(features['sets'] + features['families'])}",
    ]
    if config.get("selection"):
        parts.append(f"selection:{config['selection']['name']}")
    if features.get("resources"):
        from qe.resources.bundle import open_bundle

        bundle = open_bundle(features["resources"])
        parts.append(f"resources:{bundle.signature()}")
        parts.append(bundle.text_config("src").signature())
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


def prepare_output_dir(output_dir: Path, overwrite: bool) -> Path:
    """Refuse a directory that already holds a run (unless ``overwrite``); return a staging folder."""
    if output_dir.exists() and any(output_dir.iterdir()) and not overwrite:
        raise QEInputError("output directory already holds a run; pass --overwrite to replace it", output_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))


def publish_output_dir(staging: Path, output_dir: Path) -> None:
    """Move a finished staging folder into place, so an interrupted run leaves no half-written run."""
    if output_dir.exists():
        shutil.rmtree(output_dir)
    staging.rename(output_dir)


def run_experiment(
    config: dict[str, Any], output_dir: str | Path, *, overwrite: bool = False, progress: bool = True
) -> dict[str, Any]:
    """Train on the training split (choices by CV), evaluate on test, write the run directory."""
    output_dir = Path(output_dir)
    staging = prepare_output_dir(output_dir, overwrite)
    try:
        result = _run(config, staging, progress)
        publish_output_dir(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result


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
    config: dict[str, Any], progress: bool = True
) -> tuple[SplitData, SplitData, FittedSystem, dict[str, Any] | None]:
    """Build both splits, select features (if configured) and fit: (train, test, fitted, selection)."""
    train, test = build_split(config, "train", progress), build_split(config, "test", progress)
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
    train, test, fitted, selection = fit_config(config, progress)
    if selection is not None:
        write_text_atomic(out / "selection.json", json.dumps(selection, indent=2) + "\n")
    metrics, estimator, chosen, test_pred = fitted.metrics, fitted.estimator, fitted.chosen, fitted.test_pred
    if config["report"].get("against") and test.dataset.labels is not None:
        metrics["against"] = compare_against(config, test.dataset.labels, test_pred, progress)
    description = describe(estimator)
    sig = signature(config, description, train.dataset)
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
    QEModel(chosen, list(train.features.columns), model_manifest(config, sig, train, metrics["cv"])).save(
        out / "model.skops"
    )
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
) -> dict[str, Any]:
    """What a saved model needs to score raw text again: families, settings, resources, languages."""
    features = config["features"]
    bounds = label_range(config)
    bundle = None
    if features.get("resources"):
        from qe.resources.bundle import open_bundle

        bundle = open_bundle(features["resources"])
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
        if bundle
        else None,
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
