"""The persist stage: the run's signature (everything that changes a number), the saved model and its
manifest, and the run directory's files (written atomically, in a staged directory)."""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import sklearn

from qe import __version__
from qe.config.data import SPLIT_COLUMNS, SPLIT_FILES, SPLITS, DataConfig
from qe.config.document import thaw
from qe.config.experiment import ExperimentConfig
from qe.data.splits import label_range, languages, pool_info
from qe.infra.io import atomic_write, write_text_atomic
from qe.model.file import QEModel
from qe.model.manifest import ModelManifest
from qe.run.config import dump_config
from qe.run.context import RunContext
from qe.run.extraction import SplitData
from qe.run.fit import FittedSystem


def signature(ctx: RunContext, estimator_description: str, tables: dict[str, str] | None = None) -> str:
    """Everything that changes a number, sacrebleu-style: data (and the dev split and precomputed
    feature tables, by content), features (each family's own signature), resources, learner, CV,
    versions."""
    config = ctx.config
    features = config.features
    dev = config.data.has_dev
    data = config.data
    if data.pooled:  # the pooled datasets and how their labels were scaled
        assert data.datasets is not None
        parts = [f"data:{'+'.join(data.datasets)}@{ctx.fingerprint('train')}", f"normalise:{data.normalise}"]
    else:
        parts = [f"data:{data.dataset or 'files'}@{ctx.fingerprint('train')}"]
    if dev:
        parts.append(f"dev:{ctx.fingerprint('dev')}")
    parts += [f"table.{split}:{sha}" for split, sha in sorted((tables or {}).items())]
    parts += input_hashes(config.data, ctx.input_digest)
    parts.append(f"features:{'+'.join(features.sets + features.families)}")
    if config.selection is not None:
        parts.append(f"selection:{config.selection.name}")
    bundle = ctx.bundle()
    if bundle is not None:
        parts.append(f"resources:{bundle.signature()}")
        if bundle.manifest.get("text"):
            parts.append(bundle.text_config("src").signature())
        if "mt2" in bundle:
            info = bundle.info("mt2")
            info = info.get("settings", info)  # built members keep it under settings, attached ones not
            parts.append(f"mt2:{info.get('engine')}-{info.get('pair')}@{info.get('signature')}")
    if features.families:
        families, _ = ctx.families("train")
        parts += [f"family:{family.signature()}" for family in families]
    tuned_on = "dev" if dev else f"cv{config.cv.folds}"
    if dev and config.data.fit_on == "train+dev":
        parts.append("fit:train+dev")
    learner = config.learner
    options = {
        k: thaw(getattr(learner, k))
        for k in ("scale", "clip", "aux_targets", "fast_above")
        if getattr(learner, k) is not None
    }
    bounds = label_range(config.data)
    if learner.aux_targets:  # the aux targets are computed from the post-edits / references
        train = ctx.dataset("train")
        texts = "\n".join([*(train.post_edits or []), "\f", *(train.references or [])])
        parts.append(f"aux-data:{hashlib.sha256(texts.encode()).hexdigest()[:16]}")
    parts += [
        f"learner:{estimator_description}",
        f"learner-params:{compact(thaw(learner.params))}",
        f"learner-options:{compact(options)}",
        f"label-range:{compact(list(bounds) if bounds else None)}",
        f"select:{tuned_on}-{learner.scoring}",
        f"seed:{config.seed}",
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


def input_hashes(data: DataConfig, digest: Callable[[str], str]) -> list[str]:
    """``input.<split>.<name>:<sha256>`` of every family input file named in ``[data.<split>]``
    (NMT log-probabilities, pseudo-references, decoder logs): they change the features. ``digest``:
    a file's sha256 (a run's context hashes each file once)."""
    parts = []
    for split in SPLITS:
        for name, value in sorted(data.files(split).items()):
            if name not in SPLIT_FILES and name not in SPLIT_COLUMNS and Path(value).is_file():
                parts.append(f"input.{split}.{name}:{digest(value)[:16]}")
    return parts


def config_inputs(config: ExperimentConfig) -> list[Path]:
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

    data, features = config.data, config.features
    walk(thaw([*(data.files(split) for split in SPLITS), data.data_dir]))
    walk(thaw([features.resources, features.settings]))
    walk([entry.config for entry in config.report.against])
    if data.dataset is not None or data.pooled:
        from qe.data import resolve_data_dir

        found.append(resolve_data_dir(data.data_dir))
    return found


def model_manifest(ctx: RunContext, sig: str, train: SplitData, cv: dict[str, Any]) -> ModelManifest:
    """What a saved model needs to score raw text again: families, settings, resources, languages."""
    config = ctx.config
    features = config.features
    bounds = label_range(config.data)
    bundle = ctx.bundle()
    return ModelManifest.from_document(
        {
            "signature": sig,
            "qe_version": __version__,
            "config_name": config.name,
            "languages": languages(config.data, bundle),
            "families": list(features.families),
            "family_settings": thaw(features.settings),
            "feature_sets": list(features.sets)
            + (["data tables"] if "features" in config.data.files("train") else []),
            "resources": {"path": str(Path(bundle.path).resolve()), "signature": bundle.signature()}
            if features.resources
            else None,
            "mt2": thaw(config.mt2),
            "training_data": ctx.fingerprint("train"),
            "fit_on": config.data.fit_on,
            "label_range": list(bounds) if bounds else None,
            **({"pooled": pool_info(config.data)} if config.data.pooled else {}),
            "cv": {k: v for k, v in cv.items() if isinstance(v, int | float)},
        }
    )


def write_run(
    ctx: RunContext, out: Path, sig: str, train: SplitData, test: SplitData, fitted: FittedSystem
) -> None:
    """The run directory: the resolved config, the signature, ``fitted.metrics``, the test predictions
    (``id<TAB>score`` in input order), the model (and its text form, for model trees)."""
    write_text_atomic(out / "config.toml", dump_config(ctx.config))
    write_text_atomic(out / "signature.txt", sig + "\n")
    write_text_atomic(out / "metrics.json", json.dumps(fitted.metrics, indent=2) + "\n")
    with atomic_write(out / "predictions.tsv") as handle:
        handle.write("id\tscore\n")
        for sentence_id, score in zip(test.dataset.ids, fitted.test_pred, strict=True):
            handle.write(f"{sentence_id}\t{score:.6f}\n")
    columns = list(train.features.columns)
    manifest = model_manifest(ctx, sig, train, fitted.metrics["cv"])
    QEModel(fitted.chosen, columns, manifest).save(out / "model.skops")
    model = fitted.chosen.steps[-1][1] if hasattr(fitted.chosen, "steps") else fitted.chosen
    if hasattr(model, "export_text"):
        write_text_atomic(out / "model.txt", model.export_text(columns) + "\n")
