"""``[data]``: where a run's pairs, labels and inputs come from; its rule and its typed view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qe.config.document import EMPTY, SHOWN, ReadOnlyTable
from qe.config.rules import (
    Bool,
    Fields,
    LabelRange,
    Language,
    List,
    Mistake,
    Rule,
    Str,
    first_repeated,
    registered,
)

SPLITS = ("train", "dev", "test")
SPLIT_FILES = ("src", "mt", "labels", "post_edits", "references", "table", "features")
"""The files a ``[data.<split>]`` table may name (besides the inputs feature families declare)."""
SPLIT_COLUMNS = ("src_column", "mt_column", "label_column", "id_column", "post_edit_column")
"""Column names of a ``table`` (TSV / JSONL) or ``features`` table: not paths."""


class SplitFiles(Fields):
    """``[data.<split>]``: the dataset's files, plus every input a feature family declares (e.g.
    ``pseudo_ref``, a decoder ``nbest`` log), known only once the families are registered."""

    def __init__(self) -> None:
        self.required = ()

    @property
    def fields(self) -> dict[str, Rule]:  # type: ignore[override]
        names = (*SPLIT_FILES, *SPLIT_COLUMNS, *registered("pair input")())
        return {name: Str() for name in names}


def _split_files(data: dict[str, Any]) -> Mistake:
    """A ``[data.<split>]`` table names its text (src and mt files, or a table) or a feature table;
    column names only go with a ``table`` or ``features`` file; labels come from one place."""
    for split in SPLITS:
        files = data.get(split)
        registered = "dataset" in data or "datasets" in data
        if files is None or (registered and not set(files) & {*SPLIT_FILES, *SPLIT_COLUMNS}):
            continue  # none, or only inputs of feature families (a pseudo-reference) for a dataset
        given = set(files)
        if not ({"src", "mt"} <= given or given & {"table", "features"}):
            return f"{split}.src", None, "src and mt files, a table (TSV / JSONL), or a features table"
        if ("src" in files) != ("mt" in files):
            missing = "mt" if "src" in files else "src"
            return (
                f"{split}.{missing}",
                None,
                f"{missing} = FILE beside {({'src', 'mt'} - {missing}).pop()} (both or neither)",
            )
        columns = sorted(given & set(SPLIT_COLUMNS))
        if columns and not given & {"table", "features"}:
            return (
                f"{split}.{columns[0]}",
                files[columns[0]],
                "a column of a table or features file (none given)",
            )
        if "table" in files and "src" in files:
            return f"{split}.src", files["src"], "no src / mt files beside a table: the text comes from one"
        if "labels" in files and ("table" in files or "label_column" in files):
            where = (
                "the table's label column" if "table" in files else f"the column {files['label_column']!r}"
            )
            return f"{split}.labels", files["labels"], f"no labels file beside {where}: labels come from one"
        empty = sorted(key for key, value in files.items() if not value.strip())
        if empty:
            return f"{split}.{empty[0]}", files[empty[0]], "a file (or a column) name"
    return None


def _one_dev_split(data: dict[str, Any]) -> Mistake:
    if "dev" in data and "dev_split" in data:
        return (
            "dev_split",
            data["dev_split"],
            "no dev_split beside [data.dev] files: one of them names the dev split",
        )
    if data.get("fit_on") == "train+dev" and "dev" not in data and "dev_split" not in data:
        return "fit_on", "train+dev", "'train' when there is no dev split (dev_split or [data.dev])"
    if "dev_split" in data and "dataset" not in data and "datasets" not in data:
        return "dev_split", data["dev_split"], "a split of data.dataset, which is not set"
    return None


def _pooled_data(data: dict[str, Any]) -> Mistake:
    """``datasets`` pools registered datasets: never beside ``dataset`` or files of the split it gives;
    ``test_dataset`` and ``normalise`` go with it; each dataset once."""
    if "datasets" not in data:
        for key in ("test_dataset", "normalise"):
            if key in data:
                return key, data[key], "nothing without data.datasets (it goes with pooled datasets)"
        return None
    if "dataset" in data:
        return "dataset", data["dataset"], "nothing beside datasets: one dataset, or several pooled"
    twice = first_repeated(data["datasets"])
    if twice is not None:
        return "datasets", data["datasets"], f"each dataset once, not {twice!r} twice"
    for split in SPLITS:
        if set(data.get(split) or {}) & {*SPLIT_FILES, *SPLIT_COLUMNS}:
            return split, data[split], "no files beside datasets: each split comes from the datasets"
    return None


DATA = Fields(
    {
        "dataset": Str(registered("dataset"), noun="dataset"),
        "datasets": List(Str(registered("dataset"), noun="dataset"), min_len=1),
        "test_dataset": Str(registered("dataset"), noun="dataset"),
        "normalise": Str(["none", "pair"]),
        "data_dir": Str(),
        "train_split": Str(),
        "dev_split": Str(),
        "test_split": Str(),
        "label_range": LabelRange(),
        "allow_overlap": Bool(),
        "fit_on": Str(["train", "train+dev"]),
        "languages": Fields({"src": Language(), "tgt": Language()}),
        **{split: SplitFiles() for split in SPLITS},
    },
    rules=(_split_files, _one_dev_split, _pooled_data),
)
"""``[data]``: a registered dataset, several pooled, or the user's files per split."""


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """``[data]``: a registered dataset (and its split names), several pooled (``datasets``: one model for
    many language pairs, ``qe.data.pooled``), or the user's files per split."""

    train_split: str = field(default="train", metadata=SHOWN)
    test_split: str = field(default="test", metadata=SHOWN)
    dataset: str | None = None
    datasets: tuple[str, ...] | None = None  # pooled: each one's train (and dev) split, one model
    test_dataset: str | None = None  # pooled: the one dataset tested (unset: each pooled one's test)
    normalise: str = "none"  # pooled labels: "none", or "pair" (z-scored per dataset on its train labels)
    data_dir: str | None = None
    dev_split: str | None = None
    label_range: tuple[float, float] | None = None
    allow_overlap: bool = False
    fit_on: str = "train"  # or "train+dev": the chosen configuration refitted on both
    languages: ReadOnlyTable | None = None  # src / tgt codes, when neither the bundle nor the dataset says
    train: ReadOnlyTable | None = None  # [data.<split>]: file roles (src, mt, table, ...) and family inputs
    dev: ReadOnlyTable | None = None
    test: ReadOnlyTable | None = None

    def files(self, split: str) -> ReadOnlyTable:
        """The files ``[data.<split>]`` names (none: an empty table)."""
        return getattr(self, split) or EMPTY

    def split_name(self, split: str) -> str | None:
        """The registered dataset's name of ``train`` / ``dev`` / ``test``."""
        return getattr(self, f"{split}_split")

    @property
    def pooled(self) -> bool:
        """Whether several datasets are pooled (``datasets``)."""
        return self.datasets is not None

    @property
    def has_dev(self) -> bool:
        """Whether a dev split is named (``dev_split`` or ``[data.dev]``)."""
        return self.dev is not None or self.dev_split is not None
