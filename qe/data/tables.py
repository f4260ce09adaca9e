"""Sentence tables: a TSV file with a header row, or JSONL, one pair per row in named columns.

Read through ``qe.infra.io.read_lines`` (strict UTF-8, a byte-order mark never sticks to the header);
a row lacking a column, an id given twice, a key given twice in a JSON object are refused naming
the file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from qe.config.rules import first_repeated
from qe.data.dataset import QEDataset
from qe.infra.errors import QEInputError
from qe.infra.io import is_blank, parse_label, read_lines


def load_table(
    path: str | Path,
    *,
    src_column: str = "src",
    mt_column: str = "mt",
    label_column: str | None = "score",
    id_column: str | None = "id",
    label_range: tuple[float, float] | None = None,
    post_edit_column: str | None = None,
) -> QEDataset:
    """Read a dataset from a TSV (with a header row) or JSONL file with named columns
    (``post_edit_column``: a column of post-edits, required in every row when named)."""
    path = Path(path)
    records = _read_records(path)
    if not records:
        raise QEInputError("file has no data rows", path)
    columns = set(records[0][1])
    for required in (src_column, mt_column):
        if required not in columns:
            raise QEInputError(f"missing column {required!r} (found: {', '.join(sorted(columns))})", path, 1)
    if id_column is not None and id_column != "id" and id_column not in columns:
        raise QEInputError(f"no id column {id_column!r} (found: {', '.join(sorted(columns))})", path, 1)
    has_labels = label_column is not None and label_column in columns
    src, mt, ids, labels, post_edits = [], [], [], [], []
    first_line: dict[str, int] = {}  # id -> the line it first came on
    text_columns = (src_column, mt_column) + ((post_edit_column,) if post_edit_column else ())
    for index, (line, row) in enumerate(records):
        for column in text_columns:
            value = row.get(column)
            if not isinstance(value, str) or is_blank(value):
                raise QEInputError(f"empty or missing {column!r}", path, line)
        src.append(row[src_column])
        mt.append(row[mt_column])
        ids.append(_row_id(row.get(id_column) if id_column else None, index, path, line))
        if ids[-1] in first_line:
            raise QEInputError(
                f"id {ids[-1]!r} appears twice (first on line {first_line[ids[-1]]})", path, line
            )
        first_line[ids[-1]] = line
        if has_labels:
            labels.append(parse_label(str(row.get(label_column, "")), path, line, label_range))
        if post_edit_column:
            post_edits.append(row[post_edit_column])
    return QEDataset(
        ids=ids,
        src=src,
        mt=mt,
        labels=np.array(labels) if has_labels else None,
        post_edits=post_edits if post_edit_column else None,
        name=path.stem,
        files={"table": str(path)},
        input_origins={role: (str(path), records[0][0]) for role in ("src", "mt")},
    )


def _row_id(value: object, index: int, path: Path, line: int) -> str:
    """A row's id as text (its position when absent): a string or an integer, without tabs or line
    breaks, since ids are written one per row into predictions.tsv."""
    if value is None or value == "":
        return str(index)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise QEInputError(f"id {value!r} is not a string or an integer", path, line)
    text = str(value)
    if any(char in text for char in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        raise QEInputError(f"id {text!r} holds a tab or a line break", path, line)
    return text


def _json_object(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object, refusing a key given twice (``json`` would keep the last silently)."""
    row: dict = {}
    for key, value in pairs:
        if key in row:
            raise ValueError(f"key {key!r} appears twice")
        row[key] = value
    return row


def _check_text(value: object) -> None:
    """Refuse strings that cannot be written as UTF-8 (a lone surrogate such as ``\\ud800``)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)
    elif isinstance(value, list):
        for item in value:
            _check_text(item)


def _check_same_columns(records: list[tuple[int, dict]], path: Path) -> None:
    """Refuse a JSONL row lacking a column other rows have: the table's columns are those of all its
    rows (a first row without ``score`` made every label be ignored, silently)."""
    first: dict[str, int] = {}  # column -> the first line that has it
    for number, row in records:
        for column in row:
            first.setdefault(column, number)
    for number, row in records:
        if len(row) < len(first):
            column = next(column for column in first if column not in row)
            raise QEInputError(
                f"lacks the column {column!r}, which line {first[column]} has (every row needs every column)",
                path,
                number,
            )


def _read_records(path: Path) -> list[tuple[int, dict]]:
    """Rows of a TSV-with-header or JSONL file as (line number, dict)."""
    lines = read_lines(path)
    if path.suffix.lower() in {".jsonl", ".json", ".ndjson"}:
        records = []
        for number, text in enumerate(lines, start=1):
            try:
                row = json.loads(text, object_pairs_hook=_json_object)
                _check_text(row)
            except json.JSONDecodeError as exc:
                raise QEInputError(f"invalid JSON: {exc.msg}", path, number) from None
            except RecursionError:
                raise QEInputError("invalid JSON: nested too deeply", path, number) from None
            except UnicodeEncodeError:
                raise QEInputError(
                    "a string holds a lone surrogate escape (not text)", path, number
                ) from None
            except ValueError as exc:  # a key given twice
                raise QEInputError(f"invalid JSON object: {exc}", path, number) from None
            if not isinstance(row, dict):
                raise QEInputError("each line must be a JSON object", path, number)
            records.append((number, row))
        _check_same_columns(records, path)
        return records
    header = lines[0].split("\t")
    twice = first_repeated(header)
    if twice is not None:
        raise QEInputError(f"the header names column {twice!r} twice", path, 1)
    records = []
    for number, text in enumerate(lines[1:], start=2):
        fields = text.split("\t")
        if len(fields) != len(header):
            raise QEInputError(
                f"expected {len(header)} tab-separated fields, found {len(fields)}", path, number
            )
        records.append((number, dict(zip(header, fields, strict=True))))
    return records
