"""Datasets: sentence pairs read from line-aligned files, TSV / JSONL tables or the registered datasets.

One module per job: ``dataset`` (``QEDataset``), ``digest`` (what its columns hash to, each hashed
once: its fingerprint and the feature cache's key), ``files`` (line-aligned text files, labels),
``tables`` (TSV / JSONL sentence tables), ``features`` (precomputed feature tables), ``registry``
(the known datasets; one record per dataset in ``qe.data.sets``), ``fetch`` (the data directory,
downloads checked against their sha256), ``da`` (MLQE-PE direct-assessment tables, NMT inputs) and
``load`` (a registered dataset's split or feature set). Every text file is read through
``qe.infra.io.read_lines``: strict UTF-8, CRLF accepted, a leading byte-order mark dropped.
"""

from __future__ import annotations

from qe.data.da import DA_COLUMNS, DATable, read_da_table
from qe.data.dataset import QEDataset
from qe.data.feature_tables import FeatureTable, load_feature_table, read_feature_table
from qe.data.fetch import ensure_file, fetch_registered_file, resolve_data_dir
from qe.data.files import load_parallel, read_labels, read_score_matrix
from qe.data.load import load_registered, load_registered_features
from qe.data.registry import DATASETS, RegisteredDataset, RegisteredFile, register_dataset
from qe.data.tables import load_table

__all__ = [
    "DATASETS",
    "DA_COLUMNS",
    "DATable",
    "FeatureTable",
    "QEDataset",
    "RegisteredDataset",
    "RegisteredFile",
    "ensure_file",
    "fetch_registered_file",
    "load_feature_table",
    "load_parallel",
    "load_registered",
    "load_registered_features",
    "load_table",
    "read_da_table",
    "read_feature_table",
    "read_labels",
    "read_score_matrix",
    "register_dataset",
    "resolve_data_dir",
]
