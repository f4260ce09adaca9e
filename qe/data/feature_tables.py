"""Precomputed feature tables (CSV, TSV or parquet), optionally holding the label and sentence ids.

A user with features computed elsewhere trains on them without any text files: one row per
sentence, one column per feature, plus a named label column (and id column). The header is
detected explicitly: a first row whose cells are all non-numeric is a header, one whose cells
are all numbers is data (columns named ``f1..fk`` or as given), and a mixed first row is refused,
naming the line, rather than silently taken for either. CSV follows RFC 4180 quoting; in TSV a
trailing empty field (the official WMT12 ``*.qe.baseline.tsv`` files end rows with a tab) is
ignored. Every feature value must be a finite number.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from qe.infra.errors import QEInputError
from qe.infra.io import parse_label, plain_float, read_lines, require_file, sha256_file

if TYPE_CHECKING:  # pandas is imported when a table is read: importing qe.data needs no pandas
    import pandas as pd


@dataclass
class FeatureTable:
    """The feature columns, the label column and ids (when named), and the file's sha256."""

    features: pd.DataFrame
    labels: np.ndarray | None
    ids: list[str] | None
    path: Path
    sha256: str


def _is_number(cell: str) -> bool:
    try:
        plain_float(cell)
    except ValueError:
        return False
    return True


def _rows(path: Path) -> list[list[str]]:
    """The cells of every line: CSV (quoted fields allowed) for ``.csv``, else tab-separated."""
    lines = read_lines(path)
    if path.suffix.lower() == ".csv":
        rows = []
        for number, line in enumerate(lines, start=1):
            try:
                rows.append(next(csv.reader(io.StringIO(line), strict=True)))
            except csv.Error as exc:
                raise QEInputError(
                    f"malformed CSV ({exc}; a quoted field may not span lines)", path, number
                ) from None
        return rows
    return [line.rstrip("\t").split("\t") for line in lines]


def _parquet(path: Path) -> tuple[list[str], pd.DataFrame]:
    import pandas as pd

    require_file(path)
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise QEInputError(f"cannot read parquet file: {exc}", path) from None
    return [str(c) for c in frame.columns], frame


def read_feature_table(
    path: str | Path,
    *,
    names: list[str] | None = None,
    label_column: str | None = None,
    id_column: str | None = None,
    label_range: tuple[float, float] | None = None,
) -> FeatureTable:
    """Read a feature table; ``label_column`` / ``id_column`` name columns that are not features.

    ``names`` name the columns of a headerless table. Naming a label or id column needs a header.
    Errors name the file and line: a mixed first row, a ragged row, a non-numeric or non-finite
    value, a label outside ``label_range``, a named column that is absent.
    """
    import pandas as pd

    path = Path(path)
    if path.suffix.lower() == ".parquet":
        header, frame = _parquet(path)
        rows = frame.astype(str).to_numpy().tolist()
        start = 2
    else:
        rows = _rows(path)
        first = rows[0]
        numeric = [_is_number(cell) for cell in first]
        if all(numeric):
            header, start = None, 1
        elif not any(numeric):
            header, rows, start = [cell.strip() for cell in first], rows[1:], 2
        else:
            cells = ", ".join(repr(c) for c, n in zip(first, numeric, strict=True) if n)
            raise QEInputError(
                f"the first row mixes numbers ({cells}) with names: a header row must name every "
                "column, a data row must hold only numbers",
                path,
                1,
            )
    if not rows:
        raise QEInputError("the table has no data rows", path)
    width = len(header) if header else len(rows[0])
    if header is None:
        if label_column or id_column:
            named = label_column or id_column
            raise QEInputError(f"column {named!r} is named but the table has no header row", path, 1)
        header = list(names) if names is not None else [f"f{i}" for i in range(1, width + 1)]
        if len(header) != width:
            raise QEInputError(f"expected {len(header)} columns, found {width}", path, start)
    if len(set(header)) != len(header):
        raise QEInputError(f"the header names a column twice ({', '.join(header)})", path, 1)
    for column in (label_column, id_column):
        if column is not None and column not in header:
            raise QEInputError(f"no column {column!r} (found: {', '.join(header)})", path, 1)
    label_at = header.index(label_column) if label_column else None
    id_at = header.index(id_column) if id_column else None
    feature_at = [i for i in range(width) if i not in (label_at, id_at)]
    values = np.empty((len(rows), len(feature_at)))
    labels, ids = [], []
    for offset, row in enumerate(rows):
        line = offset + start
        if len(row) != width:
            raise QEInputError(f"expected {width} values, found {len(row)}", path, line)
        try:
            values[offset] = [plain_float(row[i]) for i in feature_at]
        except ValueError:
            bad = next(row[i] for i in feature_at if not _is_number(row[i]))
            raise QEInputError(f"non-numeric value {bad!r}", path, line) from None
        if not all(math.isfinite(v) for v in values[offset]):
            raise QEInputError("NaN or infinite value", path, line)
        if label_at is not None:
            labels.append(parse_label(row[label_at], path, line, label_range))
        if id_at is not None:
            ids.append(row[id_at].strip())
    if id_at is not None and len(set(ids)) != len(ids):
        raise QEInputError(f"id column {id_column!r} repeats an id", path)
    return FeatureTable(
        features=pd.DataFrame(values, columns=[header[i] for i in feature_at]),
        labels=np.array(labels) if label_at is not None else None,
        ids=ids if id_at is not None else None,
        path=path,
        sha256=sha256_file(path),
    )


def load_feature_table(path: str | Path, names: list[str] | None = None) -> pd.DataFrame:
    """Read a numeric feature table: CSV, TSV (with or without a header) or parquet, one row per
    sentence (headerless files such as the official ``*.qe.baseline.tsv`` get ``names`` or
    ``f1..fk``)."""
    return read_feature_table(path, names=names).features
