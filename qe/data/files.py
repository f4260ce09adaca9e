"""Line-aligned text files: one sentence, label or row of annotator scores per line.

Every text file is read through ``qe.infra.io.read_lines``: strict UTF-8, CRLF accepted, a leading
byte-order mark dropped (so a BOM never sticks to the first sentence or label).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qe.data.dataset import QEDataset
from qe.infra.errors import QEInputError
from qe.infra.io import parse_label, plain_float, read_lines


def read_labels(path: str | Path, label_range: tuple[float, float] | None = None) -> np.ndarray:
    """Read one label per line."""
    lines = read_lines(path)
    return np.array([parse_label(text, path, i, label_range) for i, text in enumerate(lines, 1)])


def read_score_matrix(path: str | Path) -> np.ndarray:
    """Read a whitespace-separated numeric matrix (e.g. per-annotator scores), refusing ragged rows."""
    rows: list[list[float]] = []
    for number, text in enumerate(read_lines(path), start=1):
        try:
            row = [plain_float(x) for x in text.split()]
        except ValueError:
            raise QEInputError(f"non-numeric value in {text!r}", path, number) from None
        if rows and len(row) != len(rows[0]):
            raise QEInputError(f"expected {len(rows[0])} values, found {len(row)}", path, number)
        rows.append(row)
    return np.array(rows)


def _check_same_length(named: dict[str, tuple[str | Path, int]]) -> None:
    """Refuse parallel files whose line counts differ, naming both files and counts."""
    items = list(named.values())
    first_path, first_len = items[0]
    for path, length in items[1:]:
        if length != first_len:
            raise QEInputError(
                f"has {length} lines but {first_path} has {first_len}: parallel files must align",
                path,
                min(length, first_len) + 1,
            )


def load_parallel(
    src: str | Path,
    mt: str | Path,
    labels: str | Path | None = None,
    *,
    label_range: tuple[float, float] | None = None,
    post_edits: str | Path | None = None,
    references: str | Path | None = None,
    annotator_scores: str | Path | None = None,
    name: str | None = None,
) -> QEDataset:
    """Read a dataset from line-aligned text files (one sentence or label per line)."""
    src_lines = read_lines(src)
    mt_lines = read_lines(mt)
    files = {"src": str(src), "mt": str(mt)}
    lengths: dict[str, tuple[str | Path, int]] = {"src": (src, len(src_lines)), "mt": (mt, len(mt_lines))}
    label_values = None
    if labels is not None:
        label_values = read_labels(labels, label_range)
        lengths["labels"] = (labels, len(label_values))
        files["labels"] = str(labels)
    optional: dict[str, list[str] | None] = {}
    for key, path in (("post_edits", post_edits), ("references", references)):
        optional[key] = None
        if path is not None:
            optional[key] = read_lines(path)
            lengths[key] = (path, len(optional[key]))
            files[key] = str(path)
    scores = None
    if annotator_scores is not None:
        scores = read_score_matrix(annotator_scores)
        lengths["annotator_scores"] = (annotator_scores, len(scores))
        files["annotator_scores"] = str(annotator_scores)
    _check_same_length(lengths)
    return QEDataset(
        ids=[str(i) for i in range(len(src_lines))],
        src=src_lines,
        mt=mt_lines,
        labels=label_values,
        post_edits=optional["post_edits"],
        references=optional["references"],
        annotator_scores=scores,
        name=name or Path(src).stem,
        files=files,
        input_origins={"src": (str(src), 1), "mt": (str(mt), 1)},
    )
