"""MLQE-PE's direct-assessment tables (``*.df.short.tsv``) and the NMT system's glass-box material
(per-token log-probabilities, its own tokens, its sentence score) attached to a dataset as the
``nmt`` family's inputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qe.data.dataset import QEDataset
from qe.infra.errors import QEInputError
from qe.infra.io import parse_label, read_lines

DA_COLUMNS = ("original", "translation", "z_mean", "model_scores")


@dataclass
class DATable:
    """An MLQE-PE direct-assessment table (``*.df.short.tsv``): columns by name, rows from line 2."""

    path: Path
    columns: dict[str, list[str]]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def texts(self, column: str) -> list[str]:
        """A text column, refusing an empty cell (naming its line)."""
        values = self.columns[column]
        for row, value in enumerate(values):
            if not value.strip():
                raise QEInputError(f"empty {column!r}", self.path, row + 2)
        return values

    def numbers(self, column: str, label_range: tuple[float, float] | None = None) -> np.ndarray:
        """A numeric column, each value checked like a label (finite, inside ``label_range``)."""
        return np.array(
            [parse_label(v, self.path, row + 2, label_range) for row, v in enumerate(self.columns[column])]
        )


def read_da_table(path: str | Path) -> DATable:
    """Read a direct-assessment TSV: a header naming at least ``DA_COLUMNS``, then one row per pair.

    Fields are split on every tab: quotes are ordinary characters in these files (translations
    contain them), so a quoted field holding a tab is refused as a row with too many fields.
    """
    path = Path(path)
    lines = read_lines(path)
    header = lines[0].split("\t")
    missing = [column for column in DA_COLUMNS if column not in header]
    if missing:
        raise QEInputError(
            f"not a direct-assessment table: the header lacks {', '.join(missing)} "
            f"(found: {', '.join(header)})",
            path,
            1,
        )
    columns: dict[str, list[str]] = {name: [] for name in header}
    for number, text in enumerate(lines[1:], start=2):
        fields = text.split("\t")
        if len(fields) != len(header):
            hint = (
                "; a field holds a tab (quotes do not protect tabs in this format)"
                if len(fields) > len(header) and '"' in text
                else ""
            )
            raise QEInputError(
                f"expected {len(header)} tab-separated fields, found {len(fields)}{hint}", path, number
            )
        for name, value in zip(header, fields, strict=True):
            columns[name].append(value)
    if len(lines) < 2:
        raise QEInputError("the table has a header but no rows", path)
    return DATable(path, columns)


def aligned(values: list[str], path: str | Path, dataset: QEDataset, first_line: int) -> list[str]:
    """``values`` if there is one per pair of ``dataset``, else an error naming the file."""
    if len(values) != len(dataset):
        raise QEInputError(
            f"has {len(values)} rows but {dataset.name} has {len(dataset)} sentences: the files must align",
            path,
            first_line + min(len(values), len(dataset)),
        )
    return values


def attach_nmt_inputs(dataset: QEDataset, table: DATable, paths: dict[str, Path]) -> None:
    """MLQE-PE's glass-box material as family inputs (``nmt`` family): the NMT log-probabilities
    (one per subword token plus ``</s>``), the NMT output in those tokens, the model's sentence score."""
    for name in ("nmt_logprobs", "nmt_tokens"):
        dataset.inputs[name] = aligned(read_lines(paths[name]), paths[name], dataset, 1)
        dataset.input_origins[name] = (str(paths[name]), 1)
    dataset.inputs["nmt_score"] = aligned(table.texts("model_scores"), table.path, dataset, 2)
    dataset.input_origins["nmt_score"] = (str(table.path), 2)
