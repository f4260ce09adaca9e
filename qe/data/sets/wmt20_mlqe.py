"""MLQE-PE (the WMT20 QE shared task data), seven language pairs, each registered twice:
``mlqe-pe/<pair>`` with HTER labels from the post-editing half, ``mlqe-da/<pair>`` with the direct
assessments' z_mean; both carry the post-edits and the NMT system's glass-box material (the ``nmt``
family's inputs), and ``mlqe-pe/<pair>`` the word-level files (``qe.words.files`` reads them). Files
from ``sheffieldnlp/mlqe-pe`` at a fixed commit, checksums in ``qe.data.sets.mlqe_checksums``."""

from __future__ import annotations

from pathlib import Path

from qe.data.registry import RegisteredDataset, RegisteredFile, register_dataset
from qe.data.sets.mlqe_checksums import MLQE_SHA256

MLQE_UPSTREAM = "https://github.com/sheffieldnlp/mlqe-pe/raw/2a670a1140416cf80507b5a829659383c878feb8/data"
MLQE_PAIRS = ("en-de", "en-zh", "et-en", "ne-en", "ro-en", "ru-en", "si-en")
MLQE_SPLITS = ("train", "dev", "test20")
POST_EDITING = ("src", "mt", "hter", "pe")
WORD_LEVEL = {"word_tags": "tags", "source_tags": "source_tags", "src_mt_alignments": "src-mt.alignments"}
"""Role -> file kind of the word-level files, registered with ``mlqe-pe/<pair>`` only."""


def _mlqe_file(pair: str, split: str, role: str) -> RegisteredFile:
    """One file of an MLQE-PE split: post-editing (src, mt, hter, pe, the word-level tags,
    source_tags, src-mt.alignments) or direct-assessment half."""
    code = pair.replace("-", "")
    upstream_split = "test" if split == "test20" else split
    half = "post-editing" if role in (*POST_EDITING, *WORD_LEVEL.values()) else "direct-assessments"
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
        "pe": {"src": "src", "mt": "mt", "labels": "hter", "post_edits": "pe", **WORD_LEVEL},
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


for _label in ("pe", "da"):
    for _pair in MLQE_PAIRS:
        register_dataset(_mlqe_dataset(_pair, _label))
