"""``[edits]``: word-level post-editing statistics (``qe.resources.edits.EditModel``, ``edits.json.gz``)
learned from training pairs with post-edits and labels: a registered dataset's *training* split (any
with post-edits: ``wmt12-en-es``, ``mlqe-pe/<pair>``, ``mlqe-da/<pair>``; its test split is refused)
or the user's line-aligned files, cross-fitted so that training pairs never see their own post-edit.
The pairs take part in the bundle's leakage check (``qe.bundle.overlap``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qe.bundle.config import check_dataset_languages
from qe.bundle.corpora import resolve
from qe.bundle.members import BuildContext, ConfigTable, MemberKind, register_member
from qe.bundle.sections import BundleConfig
from qe.config.rules import SEED, Fields, Int, Mistake, Str, mistake, registered
from qe.data import DATASETS, QEDataset, load_parallel, load_registered
from qe.infra.errors import QEInputError

FILES = ("src", "mt", "post_edits", "labels")
"""The user's training files, all four or none (then ``dataset``)."""


def _one_source(edits: dict[str, Any]) -> Mistake:
    """``[edits]`` learns from a registered dataset or from all four training files, not both."""
    files = [key for key in FILES if key in edits]
    if "dataset" in edits and files:
        return files[0], edits[files[0]], "nothing beside dataset: give dataset or the training files"
    if "dataset" not in edits and len(files) != len(FILES):
        missing = next(key for key in ("dataset", *FILES) if key not in edits)
        return (
            missing,
            None,
            'a registered dataset with post-edits (e.g. "mlqe-pe/en-de") or all of src, mt, post_edits '
            "and labels (training files)",
        )
    return None


def _check(config: BundleConfig, key: str, table: ConfigTable, config_path: Path) -> dict[str, Any]:
    """A registered dataset's training split (of the bundle's language pair); defaults filled."""
    check_dataset_languages("edits", table.get("dataset"), config, config_path)
    edits = {**table, "folds": table.get("folds", 5), "seed": table.get("seed", 0)}
    if "dataset" in edits:
        dataset = DATASETS[edits["dataset"]]
        edits.setdefault("split", "train")
        if dataset.split_name(edits["split"]) == dataset.test_split:
            allowed = "a training split (the test post-edits and labels would leak)"
            raise QEInputError(mistake("edits.split", edits["split"], allowed), config_path)
    return edits


def edits_dataset(table: Mapping[str, Any] | None, root: Path) -> QEDataset | None:
    """The training pairs ``[edits]`` learns from (a registered dataset's split or the user's files,
    relative to the data directory), None without ``[edits]``; they need post-edits and labels."""
    if not table:
        return None
    if "dataset" in table:
        dataset = load_registered(table["dataset"], table["split"], root)
        source = f"dataset {table['dataset']}"
    else:
        paths = {key: resolve(root, table[key]) for key in FILES}
        dataset = load_parallel(paths["src"], paths["mt"], paths["labels"], post_edits=paths["post_edits"])
        source = f"files {paths['src']} ..."
    if dataset.post_edits is None or dataset.labels is None:
        raise QEInputError(f"[edits]: {source} has no post-edits or labels for learning edits")
    return dataset


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """Post-editing statistics of the ``[edits]`` pairs (those the leakage check kept)."""
    from qe.resources.edits import EditModel, pair_key

    assert context.edits is not None  # read before the leakage check, which says which rows to keep
    dataset, keep = context.edits
    processors = context.processors
    model = EditModel.build(
        processors["src"].tokenize_many(dataset.src),
        processors["tgt"].tokenize_many(dataset.mt),
        processors["tgt"].tokenize_many(dataset.post_edits),
        dataset.labels,
        [pair_key(s, t) for s, t in zip(dataset.src, dataset.mt, strict=True)],
        folds=int(table["folds"]),
        seed=int(table["seed"]),
        keep=keep,
    )
    out = outputs["edits"]
    model.save(out)
    where = {k: table[k] for k in ("dataset", "split", *FILES) if k in table}
    settings = {
        **where,
        "data_fingerprint": dataset.fingerprint(),
        "folds": model.info["folds"],
        "seed": model.info["seed"],
    }
    entry = context.entry("edits", out, None, [], settings)
    entry["summary"] = model.info
    return {"edits": entry}


def _load(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> Any:
    from qe.resources.edits import EditModel

    return EditModel.load(path)


register_member(
    MemberKind(
        kind="edits",
        load=_load,
        section="edits",
        rule=Fields(
            {
                "dataset": Str(registered("dataset"), noun="dataset"),
                "split": Str(),
                "folds": Int(2),
                "seed": SEED,
                **{role: Str() for role in FILES},  # or the user's files
            },
            rules=(_one_source,),
        ),
        files=lambda key, table: {"edits": "edits.json.gz"},
        build=_build,
        check=_check,
    )
)
