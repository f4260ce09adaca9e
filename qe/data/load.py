"""Loading a registered dataset: one split's files (fetched when absent) as a ``QEDataset``, or one of
its precomputed feature tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from qe.data.da import aligned, attach_nmt_inputs, read_da_table
from qe.data.dataset import QEDataset
from qe.data.feature_tables import load_feature_table
from qe.data.fetch import ensure_file, resolve_data_dir
from qe.data.files import load_parallel
from qe.data.registry import registered_dataset
from qe.infra.errors import QEInputError
from qe.infra.io import read_lines

if TYPE_CHECKING:
    import pandas as pd


def load_registered(name: str, split: str, data_dir: str | Path | None = None) -> QEDataset:
    """Load a split of a registered dataset such as ``wmt12-en-es`` (``train`` / ``test``) or
    ``mlqe-da/en-de`` (``train`` / ``dev`` / ``test20``, ``test`` standing for ``test20``)."""
    dataset = registered_dataset(name)
    split = dataset.split_name(split)
    root = resolve_data_dir(data_dir)
    paths = {role: ensure_file(dataset, entry, root) for role, entry in dataset.splits[split].items()}
    table = read_da_table(paths["da_table"]) if "da_table" in paths else None
    if "src" in paths or table is None:
        loaded = load_parallel(
            paths["src"],
            paths["mt"],
            paths.get("labels"),
            label_range=dataset.label_range,
            post_edits=paths.get("post_edits"),
            references=paths.get("references"),
            annotator_scores=paths.get("annotator_scores"),
            name=f"{name}/{split}",
        )
    else:  # the direct-assessment table holds the text and the label
        loaded = QEDataset(
            ids=[str(i) for i in range(len(table))],
            src=table.texts("original"),
            mt=table.texts("translation"),
            labels=table.numbers("z_mean", dataset.label_range),
            name=f"{name}/{split}",
            files={"da_table": str(paths["da_table"])},
            input_origins={role: (str(paths["da_table"]), 2) for role in ("src", "mt")},
        )
        if "post_edits" in paths:
            loaded.post_edits = aligned(read_lines(paths["post_edits"]), paths["post_edits"], loaded, 1)
            loaded.files["post_edits"] = str(paths["post_edits"])
    if table is not None:
        attach_nmt_inputs(loaded, table, paths)
    return loaded


def load_registered_features(
    dataset_name: str, feature_set: str, split: str, data_dir: str | Path | None = None
) -> pd.DataFrame:
    """Load a named precomputed feature table of a registered dataset (e.g. ``wmt12-official-bf17``)."""
    dataset = registered_dataset(dataset_name)
    if feature_set not in dataset.feature_sets:
        known = ", ".join(dataset.feature_sets) or "none"
        raise QEInputError(f"dataset {dataset_name} has no feature set {feature_set!r} (known: {known})")
    entry = dataset.feature_sets[feature_set][dataset.split_name(split)]
    path = ensure_file(dataset, entry, resolve_data_dir(data_dir))
    return load_feature_table(path, names=dataset.feature_names[feature_set])
