"""Datasets: reading parallel files, TSV / JSONL tables and registered datasets, with validation.

Every text file is read through ``qe.io.read_lines``: strict UTF-8, CRLF accepted, a leading
byte-order mark dropped (so a BOM never sticks to the first sentence, label or TSV header).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from qe.errors import QEInputError
from qe.io import cache_root, is_blank, parse_label, plain_float, read_lines, sha256_file
from qe.mlqe_checksums import MLQE_SHA256
from qe.schema import first_repeated, register_names

if TYPE_CHECKING:  # tables are read by qe.tables (pandas), imported when one is loaded
    import pandas as pd


@dataclass
class QEDataset:
    """Sentence pairs with optional labels and supervision aligned by position.

    ``labels`` is a float array (post-editing effort, HTER, ...) or None for unlabelled data;
    ``annotator_scores`` is an ``(n, k)`` array of the individual judgements when known.
    """

    ids: list[str]
    src: list[str]
    mt: list[str]
    labels: np.ndarray | None = None
    post_edits: list[str] | None = None
    references: list[str] | None = None
    annotator_scores: np.ndarray | None = None
    name: str = "dataset"
    files: dict[str, str] = field(default_factory=dict)
    # Per-pair inputs of feature families that came with the dataset (e.g. MLQE-PE's NMT
    # log-probabilities), by input name, and where each (and src, mt) was read: (file, line of the
    # first pair), so that errors name the file and line.
    inputs: dict[str, list[str]] = field(default_factory=dict)
    input_origins: dict[str, tuple[str, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.src)

    def subset(self, indices: np.ndarray | list[int]) -> QEDataset:
        """A new dataset holding only the given rows (for cross-validation folds and samples)."""
        idx = list(map(int, indices))

        def pick(values):
            if values is None:
                return None
            if isinstance(values, np.ndarray):
                return values[idx]
            return [values[i] for i in idx]

        return QEDataset(
            ids=pick(self.ids),
            src=pick(self.src),
            mt=pick(self.mt),
            labels=pick(self.labels),
            post_edits=pick(self.post_edits),
            references=pick(self.references),
            annotator_scores=pick(self.annotator_scores),
            name=f"{self.name}[subset]",
            files=dict(self.files),
            inputs={key: pick(values) for key, values in self.inputs.items()},
        )

    def fingerprint(self) -> str:
        """A short hash of the sentences and labels, recorded in signatures and model manifests."""
        digest = hashlib.sha256()
        for s, t in zip(self.src, self.mt, strict=True):
            digest.update(s.encode())
            digest.update(b"\t")
            digest.update(t.encode())
            digest.update(b"\n")
        if self.labels is not None:
            digest.update(np.asarray(self.labels, dtype=np.float64).tobytes())
        return digest.hexdigest()[:16]


# --------------------------------------------------------------------------- labels


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


# --------------------------------------------------------------------------- parallel files and tables


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


def load_feature_table(path: str | Path, names: list[str] | None = None) -> pd.DataFrame:
    """Read a numeric feature table: CSV, TSV (with or without a header) or parquet, one row per
    sentence (see ``qe.tables``; headerless files such as the official ``*.qe.baseline.tsv`` get
    ``names`` or ``f1..fk``)."""
    from qe.tables import read_feature_table

    return read_feature_table(path, names=names).features


# --------------------------------------------------------------------------- registry

WMT12_UPSTREAM = "https://raw.githubusercontent.com/lspecia/QualityEstimation/master"
QUESTPP_UPSTREAM = "https://raw.githubusercontent.com/ghpaetzold/questplusplus/master/learning/data/features/wmt2012_qe_baseline"


@dataclass(frozen=True)
class RegisteredFile:
    """One file of a registered dataset: where it lives under the data dir, its checksum, its origin."""

    path: str
    sha256: str
    url: str  # a plain file, or "ARCHIVE_URL#member-basename" for files inside a .tar.gz


@dataclass(frozen=True)
class RegisteredDataset:
    """A known dataset: its splits (role -> file), label, languages and named feature sets.

    ``label_range`` is None for an unbounded label (z-scores): no range check, no clipping.
    ``split_aliases`` maps a config's split name to the real one (``test`` -> ``test20``).
    """

    name: str
    languages: tuple[str, str]
    label_range: tuple[float, float] | None
    splits: dict[str, dict[str, RegisteredFile]]
    feature_sets: dict[str, dict[str, RegisteredFile]] = field(default_factory=dict)
    feature_names: dict[str, list[str]] = field(default_factory=dict)
    folder: str = ""
    split_aliases: dict[str, str] = field(default_factory=dict)

    def split_name(self, split: str) -> str:
        """The real split a config's split name stands for (``test`` -> ``test20``), checked."""
        real = self.split_aliases.get(split, split)
        if real not in self.splits:
            known = ", ".join([*self.splits, *(f"{a} (= {b})" for a, b in self.split_aliases.items())])
            raise QEInputError(f"dataset {self.name} has no split {split!r} (known: {known})")
        return real

    @property
    def test_split(self) -> str:
        """The split holding the evaluation data (never used to build resources)."""
        return self.split_name("test")


def _wmt12_file(path: str, sha256: str) -> RegisteredFile:
    folder, base = path.split("/", 1)
    if folder == "baseline_features":
        return RegisteredFile(path, sha256, f"{QUESTPP_UPSTREAM}/{base}")
    return RegisteredFile(path, sha256, f"{WMT12_UPSTREAM}/{folder}.tar.gz#{base}")


BF17_NAMES = [
    "src_tokens",
    "mt_tokens",
    "src_mean_token_length",
    "src_lm_logprob",
    "mt_lm_logprob",
    "mt_type_token_ratio",
    "src_ibm1_translations_p0.2",
    "src_ibm1_translations_p0.01_inv_freq",
    "src_1gram_q1_share",
    "src_1gram_q4_share",
    "src_2gram_q1_share",
    "src_2gram_q4_share",
    "src_3gram_q1_share",
    "src_3gram_q4_share",
    "src_1gram_seen_share",
    "src_punctuation",
    "mt_punctuation",
]

WMT12 = RegisteredDataset(
    name="wmt12-en-es",
    languages=("en", "es"),
    label_range=(1.0, 5.0),
    folder="wmt12-qe",
    splits={
        "train": {
            "src": _wmt12_file(
                "training_set/source.eng", "4fd0ac297c4a60e39ac22c81e5b0f6870b10f4db4912e5736dff56a47e4469c9"
            ),
            "mt": _wmt12_file(
                "training_set/target_system.spa",
                "d00906a84df36e1dcf02f979c1f71d0243c63fb09395f4cf4d23ad1abf942172",
            ),
            "labels": _wmt12_file(
                "training_set_annotations/target_system.effort",
                "338dadbff1a553f9a9dc70f55798b7cda57ee8bfdc0a76ee91040e2494f0b726",
            ),
            "annotator_scores": _wmt12_file(
                "training_set_annotations/target_system.effort3scores",
                "c36034ad09133762192afde102d29cf375237cd21337d29bde12591c223ad2b6",
            ),
            "post_edits": _wmt12_file(
                "training_set_annotations/target_postedited.spa",
                "f7e1e66c0fae26e92d6e5075b4ab690493b0e321eb002820bffe1efc8c7183b7",
            ),
            "references": _wmt12_file(
                "training_set_annotations/target_reference.spa",
                "636db351ef503ec67ac089734e8902c5562dc887915f99f344840a6ff2e4d83f",
            ),
        },
        "test": {
            "src": _wmt12_file(
                "test_set/source.eng", "78d57e2d1449345641aac4a7fb3ad9f16fdb4f772613e283fea2fea83a6b6964"
            ),
            "mt": _wmt12_file(
                "test_set/target_system.spa",
                "640bb8b5c0a8e19ec74fe32e994033d3a3635f79ee6dbeef2a3b58fad70ae7a7",
            ),
            "labels": _wmt12_file(
                "test_set_annotations/target_system.effort",
                "7576eb8394e23be53df1386127aaff01d1e310c07ced966b58901e4a3c654dae",
            ),
            "annotator_scores": _wmt12_file(
                "test_set_annotations/target_system.effort3scores",
                "f71d598d5f220bae2c8ef92922947c5470c6f1f17a2c3a80558dbafde8a06bb7",
            ),
            "post_edits": _wmt12_file(
                "test_set_annotations/target_postedited.spa",
                "8a7cc174eecb132a654d9f6e5a486ed7ac6acec1b1de01f394821339f86fe146",
            ),
            "references": _wmt12_file(
                "test_set_annotations/target_reference.spa",
                "be38e2405945df9a95e9ab73a1a2dff7124a2ef7308d7e851e6912eaa751c228",
            ),
        },
    },
    feature_sets={
        "wmt12-official-bf17": {
            "train": _wmt12_file(
                "baseline_features/training.qe.baseline.tsv",
                "f8f99c479e5b433295ce0d33bb2d273ed2de5fa5eb5571ee1c99d99369974314",
            ),
            "test": _wmt12_file(
                "baseline_features/test.qe.baseline.tsv",
                "768bccae85a353cbe08ea51684bd910f513d653ef818e0e877ac63bec68a9b89",
            ),
        }
    },
    feature_names={"wmt12-official-bf17": [f"bf17.{name}" for name in BF17_NAMES]},
)

# --------------------------------------------------------------------------- MLQE-PE

MLQE_UPSTREAM = "https://github.com/sheffieldnlp/mlqe-pe/raw/2a670a1140416cf80507b5a829659383c878feb8/data"
MLQE_PAIRS = ("en-de", "en-zh", "et-en", "ne-en", "ro-en", "ru-en", "si-en")
MLQE_SPLITS = ("train", "dev", "test20")


def _mlqe_file(pair: str, split: str, role: str) -> RegisteredFile:
    """One file of an MLQE-PE split: post-editing (src, mt, hter, pe) or direct-assessment half."""
    code = pair.replace("-", "")
    upstream_split = "test" if split == "test20" else split
    half = "post-editing" if role in ("src", "mt", "hter", "pe") else "direct-assessments"
    archive = f"{MLQE_UPSTREAM}/{half}/{upstream_split}/{pair}-{upstream_split}.tar.gz"
    name = {
        "da": f"{split}.{code}.df.short.tsv",
        "logprobs": f"word-probas/word_probas.{split}.{code}",
        "nmt_mt": f"word-probas/mt.{split}.{code}",
    }.get(role, f"{split}.{role}")
    return RegisteredFile(
        f"{half}/{pair}-{split}/{name}", MLQE_SHA256[f"{pair} {split} {role}"], f"{archive}#{Path(name).name}"
    )


def _mlqe_dataset(pair: str, label: str) -> RegisteredDataset:
    """``mlqe-pe/<pair>`` (HTER from the post-editing half) or ``mlqe-da/<pair>`` (z_mean of DA)."""
    roles = {
        "pe": {"src": "src", "mt": "mt", "labels": "hter", "post_edits": "pe"},
        "da": {"post_edits": "pe"},
    }
    shared = {"da_table": "da", "nmt_logprobs": "logprobs", "nmt_tokens": "nmt_mt"}
    splits = {
        split: {role: _mlqe_file(pair, split, kind) for role, kind in {**roles[label], **shared}.items()}
        for split in MLQE_SPLITS
    }
    src, tgt = pair.split("-")
    if label == "pe":
        return RegisteredDataset(
            name=f"mlqe-pe/{pair}",
            languages=(src, tgt),
            label_range=(0.0, 1.0),
            splits=splits,
            folder="mlqe-pe",
            split_aliases={"test": "test20"},
        )
    return RegisteredDataset(
        name=f"mlqe-da/{pair}",
        languages=(src, tgt),
        label_range=None,  # z-scores are unbounded: nothing to check, predictions are not clipped
        splits=splits,
        folder="mlqe-pe",
        split_aliases={"test": "test20"},
    )


DATASETS: dict[str, RegisteredDataset] = {
    WMT12.name: WMT12,
    **{f"mlqe-{kind}/{pair}": _mlqe_dataset(pair, kind) for kind in ("pe", "da") for pair in MLQE_PAIRS},
}
register_names("dataset", DATASETS)


def resolve_data_dir(cli_value: str | Path | None = None) -> Path:
    """The data directory: ``--data-dir``, then ``$QE_DATA_DIR``, then the download cache."""
    if cli_value:
        path = Path(cli_value)
        if not path.is_dir():
            raise QEInputError("data directory not found (from --data-dir)", path)
        return path
    env = os.environ.get("QE_DATA_DIR")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise QEInputError("data directory not found (from $QE_DATA_DIR)", path)
        return path
    return cache_root() / "data"


def ensure_file(
    dataset: RegisteredDataset, entry: RegisteredFile, data_dir: Path, download: bool = True
) -> Path:
    """Return the local path of a registered file, downloading and verifying it if it is absent."""
    target = data_dir / dataset.folder / entry.path
    if target.is_file():
        return target
    if not download:
        raise QEInputError(f"missing file of dataset {dataset.name}", target)
    fetch_registered_file(entry, target)
    return target


def fetch_registered_file(entry: RegisteredFile, target: Path) -> None:
    """Download one registered file (or extract it from its upstream archive), check its sha256."""
    url, _, member = entry.url.partition("#")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        downloaded = Path(tmp) / "download"
        try:
            with urllib.request.urlopen(url, timeout=60) as response, downloaded.open("wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as exc:
            raise QEInputError(
                f"not found locally and could not be downloaded from {url} ({exc}); "
                "pass --data-dir or set QE_DATA_DIR to a folder holding it",
                target,
            ) from None
        source = downloaded
        if member:
            source = _extract_member(downloaded, member, Path(tmp) / "member", url)
        actual = sha256_file(source)
        if actual != entry.sha256:
            raise QEInputError(
                f"checksum mismatch for download from {url}: got sha256 {actual[:16]}...", target
            )
        os.replace(source, target)


def _extract_member(archive: Path, basename: str, out: Path, url: str) -> Path:
    """Extract the member whose base name is ``basename`` from a .tar.gz without trusting its paths."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar.getmembers():
                if member.isfile() and Path(member.name).name == basename:
                    handle = tar.extractfile(member)
                    assert handle is not None
                    with out.open("wb") as dest:
                        shutil.copyfileobj(handle, dest)
                    return out
    except tarfile.TarError as exc:
        raise QEInputError(f"downloaded archive is corrupt: {exc}", url) from None
    raise QEInputError(f"archive does not contain {basename}", url)


def load_registered(name: str, split: str, data_dir: str | Path | None = None) -> QEDataset:
    """Load a split of a registered dataset such as ``wmt12-en-es`` (``train`` / ``test``) or
    ``mlqe-da/en-de`` (``train`` / ``dev`` / ``test20``, ``test`` standing for ``test20``)."""
    dataset = _registered(name)
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
            loaded.post_edits = _aligned(read_lines(paths["post_edits"]), paths["post_edits"], loaded, 1)
            loaded.files["post_edits"] = str(paths["post_edits"])
    if table is not None:
        _attach_nmt_inputs(loaded, table, paths)
    return loaded


def _aligned(values: list[str], path: str | Path, dataset: QEDataset, first_line: int) -> list[str]:
    """``values`` if there is one per pair of ``dataset``, else an error naming the file."""
    if len(values) != len(dataset):
        raise QEInputError(
            f"has {len(values)} rows but {dataset.name} has {len(dataset)} sentences: the files must align",
            path,
            first_line + min(len(values), len(dataset)),
        )
    return values


def _attach_nmt_inputs(dataset: QEDataset, table: DATable, paths: dict[str, Path]) -> None:
    """MLQE-PE's glass-box material as family inputs (``nmt`` family): the NMT log-probabilities
    (one per subword token plus ``</s>``), the NMT output in those tokens, the model's sentence score."""
    for name in ("nmt_logprobs", "nmt_tokens"):
        dataset.inputs[name] = _aligned(read_lines(paths[name]), paths[name], dataset, 1)
        dataset.input_origins[name] = (str(paths[name]), 1)
    dataset.inputs["nmt_score"] = _aligned(table.texts("model_scores"), table.path, dataset, 2)
    dataset.input_origins["nmt_score"] = (str(table.path), 2)


# --------------------------------------------------------------------------- MLQE-PE DA tables

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


def load_registered_features(
    dataset_name: str, feature_set: str, split: str, data_dir: str | Path | None = None
) -> pd.DataFrame:
    """Load a named precomputed feature table of a registered dataset (e.g. ``wmt12-official-bf17``)."""
    dataset = _registered(dataset_name)
    if feature_set not in dataset.feature_sets:
        known = ", ".join(dataset.feature_sets) or "none"
        raise QEInputError(f"dataset {dataset_name} has no feature set {feature_set!r} (known: {known})")
    entry = dataset.feature_sets[feature_set][dataset.split_name(split)]
    path = ensure_file(dataset, entry, resolve_data_dir(data_dir))
    return load_feature_table(path, names=dataset.feature_names[feature_set])


def _registered(name: str) -> RegisteredDataset:
    if name not in DATASETS:
        raise QEInputError(f"unknown dataset {name!r} (known: {', '.join(DATASETS)})")
    return DATASETS[name]
