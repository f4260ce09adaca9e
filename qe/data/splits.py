"""The run's first stage: a config's data splits, from a registered dataset or the user's own files,
tables and feature tables (a run loads each split once, through its ``qe.run.context.RunContext``).

``[data] dataset = NAME`` loads registered splits (``train_split`` / ``dev_split`` /
``test_split``); otherwise ``[data.train]``, ``[data.test]`` (and optionally ``[data.dev]``) name
files: ``src`` + ``mt`` (+ ``labels``, ``post_edits``, ``references``) line-aligned text, or a
``table`` (TSV with a header, or JSONL) whose columns ``src_column`` / ``mt_column`` /
``label_column`` / ``id_column`` name (defaults ``src``, ``mt``, ``score``, ``id``; a
``post_edit_column`` only when named), and/or a ``features`` table (CSV/TSV/parquet,
``qe.data.feature_tables``). A split with only a ``features`` table needs no text at all: its labels come
from its ``label_column`` (or a ``labels`` file). See ``docs/own-data.md``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from qe.config.data import DataConfig
from qe.config.document import ReadOnlyTable
from qe.data import (
    DATASETS,
    QEDataset,
    RegisteredDataset,
    load_parallel,
    load_registered,
    load_table,
    read_labels,
)
from qe.data.feature_tables import FeatureTable, read_feature_table
from qe.data.pooled import check_poolable, load_pooled, pair_scales
from qe.infra.errors import QEInputError

TABLE_DEFAULTS = {"src_column": "src", "mt_column": "mt", "label_column": "score", "id_column": "id"}


def registered_dataset(data: DataConfig) -> RegisteredDataset | None:
    """The config's registered dataset, if it names a known one."""
    return DATASETS.get(data.dataset or "")


def label_range(data: DataConfig) -> tuple[float, float] | None:
    """The declared label range: from the config, else from the registered dataset (None: unbounded)."""
    if data.label_range is not None:
        low, high = data.label_range
        return float(low), float(high)
    dataset = registered_dataset(data)
    return dataset.label_range if dataset is not None else None


def languages(data: DataConfig, bundle: Any = None) -> dict[str, str] | None:
    """The language pair: from the resource bundle, else ``[data] languages``, else the registered
    dataset's."""
    if bundle is not None and bundle.manifest.get("languages"):
        return dict(bundle.manifest["languages"])
    if data.languages is not None:
        return dict(data.languages)
    dataset = registered_dataset(data)
    return {"src": dataset.languages[0], "tgt": dataset.languages[1]} if dataset else None


@dataclass
class LoadedSplit:
    """A split's sentences and labels, and its precomputed feature table (if the config names one)."""

    dataset: QEDataset
    table: FeatureTable | None = None


def load_split(data: DataConfig, split: str) -> LoadedSplit:
    """Load the ``train``, ``dev`` or ``test`` split the config's ``[data]`` names."""
    if data.pooled:
        return LoadedSplit(load_pooled_split(data, split))
    files = data.files(split)
    if files:
        return _load_files(files, split, label_range(data))
    name = data.split_name(split)
    if data.dataset is None or name is None:
        raise QEInputError(f"[data] names no {split} split (give [data.{split}] files or a dataset)")
    return LoadedSplit(load_registered(data.dataset, name, data.data_dir))


def load_pooled_split(data: DataConfig, split: str) -> QEDataset:
    """A split of pooled datasets (``qe.data.pooled``): every dataset's train (dev) split in one, and
    for ``test`` the ``test_dataset``'s alone or each dataset's; labels scaled per dataset as
    ``normalise`` says (the same scales for every split)."""
    assert data.datasets is not None
    names = list(data.datasets)
    check_poolable(names, data.normalise)
    name = data.split_name(split)
    if name is None:
        raise QEInputError(f"[data] names no {split} split (dev_split = ...)")
    scales = pair_scales(names, data.data_dir, data.train_split) if data.normalise == "pair" else None
    if split == "test" and data.test_dataset is not None:
        names = [data.test_dataset]
    return load_pooled(names, name, data.data_dir, scales)


def pool_info(data: DataConfig) -> dict[str, Any] | None:
    """What ``metrics.json`` and the model manifest say of a pooled config: the datasets, the tested
    one, and per dataset the scale its labels were divided by (a prediction for that pair maps back as
    ``score * std + mean``); None for a single dataset."""
    if not data.pooled:
        return None
    assert data.datasets is not None
    scales = pair_scales(data.datasets, data.data_dir, data.train_split) if data.normalise == "pair" else {}
    return {
        "datasets": list(data.datasets),
        "test_dataset": data.test_dataset,
        "normalise": data.normalise,
        "scales": {name: {"mean": s.mean, "std": s.std} for name, s in scales.items()},
    }


def _load_files(files: ReadOnlyTable, split: str, bounds: tuple[float, float] | None) -> LoadedSplit:
    table = None
    if "features" in files:
        named = "table" not in files  # label / id columns belong to the text table when there is one
        table = read_feature_table(
            files["features"],
            label_column=files.get("label_column") if named else None,
            id_column=files.get("id_column") if named else None,
            label_range=bounds,
        )
    if "table" in files:
        columns = {key: files.get(key, default) for key, default in TABLE_DEFAULTS.items()}
        dataset = load_table(
            files["table"], label_range=bounds, post_edit_column=files.get("post_edit_column"), **columns
        )
        if "label_column" in files and dataset.labels is None:
            raise QEInputError(f"no label column {files['label_column']!r}", files["table"], 1)
    elif "src" in files:
        dataset = load_parallel(
            files["src"],
            files["mt"],
            files.get("labels"),
            label_range=bounds,
            post_edits=files.get("post_edits"),
            references=files.get("references"),
            name=split,
        )
    else:  # a feature table alone: no text
        assert table is not None
        n = len(table.features)
        labels = table.labels
        if labels is None and "labels" in files:
            labels = read_labels(files["labels"], bounds)
            if len(labels) != n:
                raise QEInputError(
                    f"has {len(labels)} labels but the feature table has {n} rows", files["labels"]
                )
        dataset = QEDataset(
            ids=table.ids or [str(i) for i in range(n)],
            src=[""] * n,
            mt=[""] * n,
            labels=labels,
            name=split,
            files={"features": str(table.path)},
        )
    if table is not None:
        if len(table.features) != len(dataset):
            raise QEInputError(
                f"has {len(table.features)} rows but the {split} data has {len(dataset)} sentences",
                table.path,
            )
        if table.ids is not None and "features" not in dataset.files and table.ids != dataset.ids:
            raise QEInputError(
                "the feature table's ids are not the data's ids, in the same order", table.path
            )
        if table.labels is not None:  # a labels file beside a label column is refused by the config
            dataset.labels = table.labels
    return LoadedSplit(dataset, table)


def has_text(dataset: QEDataset) -> bool:
    """False for a split given only as a feature table (no sentences to extract features from)."""
    return any(dataset.src) or any(dataset.mt)


def repeated_pairs(train: QEDataset, dev: QEDataset) -> list[int]:
    """The positions of the dev pairs (source and MT, exact strings) that are also training pairs."""
    seen = set(zip(train.src, train.mt, strict=True))
    return [k for k, pair in enumerate(zip(dev.src, dev.mt, strict=True)) if pair in seen]


MAX_DEV_REPEATS = 0.05
"""The largest share of a dev split that may repeat training pairs: they are left out, and said; more
is refused (the files are likely mixed up) unless ``[data] allow_overlap = true``."""


def dev_repeats(train: QEDataset, dev: QEDataset, allow: bool) -> list[int]:
    """The dev pairs (positions) that repeat a training pair (source and MT) and are to be left out of
    choosing, scoring and refitting on dev, said once on stderr with their share; none with ``allow``
    (they stay). A dev split repeating more than ``MAX_DEV_REPEATS`` of its pairs is refused."""
    if allow or not has_text(dev):
        return []
    hits = repeated_pairs(train, dev)
    if not hits:
        return []
    share = len(hits) / len(dev)
    if share > MAX_DEV_REPEATS:
        first = hits[0]
        path = next((dev.files[k] for k in ("src", "table", "da_table") if k in dev.files), None)
        line = first + (2 if path and path.endswith((".tsv", ".txt")) and "src" not in dev.files else 1)
        raise QEInputError(
            f"the dev split shares {len(hits)} of its {len(dev)} sentence pairs ({share:.1%}) with the "
            f"training split (the first here), more than the {MAX_DEV_REPEATS:.0%} left out on their own: "
            "tuning on them overstates the dev score; remove them or set [data] allow_overlap = true",
            path,
            line,
        )
    print(
        f"qe: the dev split repeats {len(hits)} of its {len(dev)} pairs ({share:.1%}) from the training "
        "split: they are left out of choosing, scoring and refitting on dev",
        file=sys.stderr,
    )
    return hits
