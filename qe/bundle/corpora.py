"""The corpora a bundle is built from, read once and checked: plain text (one or both sides) or a QE
training split (a registered dataset's split or the user's files) as a parallel corpus of its sources
and post-edits (or MT)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from qe.bundle.sections import SIDES, BundleConfig, CorpusConfig
from qe.data import QEDataset, load_parallel, load_registered
from qe.data.pooled import check_poolable, load_pooled, pair_scales
from qe.infra.errors import QEInputError
from qe.infra.io import read_text_lines


@dataclass
class Corpus:
    """One ``[corpora.NAME]``: its files and lines per side, tokenized per side once a member needs it."""

    name: str
    files: dict[str, Path]  # side -> path
    lines: dict[str, list[str]]
    tokens: dict[str, list[list[str]]] = field(default_factory=dict)  # side -> tokenized lines
    qe: QEDataset | None = None  # the QE training split when the corpus is one
    target: str | None = None  # its target side: "post_edits" or "mt"
    masks: np.ndarray | None = None  # cross-fitting: bit k set = the line repeats a fold-k sentence
    rows: np.ndarray | None = None  # the rows of ``qe`` its lines hold, when the leakage check dropped some


def resolve(root: Path, value: str) -> Path:
    """A config path: absolute, or relative to the data directory ``root``."""
    path = Path(value)
    return path if path.is_absolute() else root / path


def shown_path(root: Path, path: Path) -> str:
    """A corpus path as the manifest shows it: relative to the data directory when inside it."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def read_corpora(config: BundleConfig, root: Path) -> dict[str, Corpus]:
    """Every ``[corpora.NAME]`` of a checked config, read; the two sides of a parallel corpus must
    have the same number of lines."""
    corpora: dict[str, Corpus] = {}
    for name, table in config.corpora.items():
        if table.is_qe:
            corpora[name] = _qe_corpus(name, table, root)
            continue
        files = {side: resolve(root, path) for side in SIDES if (path := getattr(table, side)) is not None}
        lines = {side: read_text_lines(path) for side, path in files.items()}
        if len(lines) == 2 and len(lines["src"]) != len(lines["tgt"]):
            raise QEInputError(
                f"parallel corpus {name!r}: {len(lines['src'])} source lines but {len(lines['tgt'])} "
                f"target lines in {files['tgt']}",
                files["src"],
            )
        corpora[name] = Corpus(name, files, lines)
    return corpora


def _qe_corpus(name: str, table: CorpusConfig, root: Path) -> Corpus:
    """A QE training split as a parallel corpus: its sources and its post-edits (or MT)."""
    if table.datasets is not None:
        names = list(table.datasets)
        check_poolable(names, table.normalise)
        scales = pair_scales(names, root) if table.normalise == "pair" else None
        dataset = load_pooled(names, table.split, root, scales)
    elif table.dataset is not None:
        dataset = load_registered(table.dataset, table.split, root)
    else:
        assert table.src is not None and table.mt is not None  # the schema's corpus rule
        post_edits = resolve(root, table.post_edits) if table.post_edits is not None else None
        dataset = load_parallel(
            resolve(root, table.src), resolve(root, table.mt), post_edits=post_edits, name=name
        )
    target = table.target or ("post_edits" if dataset.post_edits is not None else "mt")
    if target == "post_edits" and dataset.post_edits is None:
        raise QEInputError(f'[corpora.{name}]: {dataset.name} has no post-edits (set target = "mt")')
    first = next(iter(dataset.files.values()))
    files = {"src": Path(dataset.files.get("src", first)), "tgt": Path(dataset.files.get(target, first))}
    tgt = dataset.post_edits if target == "post_edits" else dataset.mt
    lines = {"src": list(dataset.src), "tgt": list(tgt)}
    return Corpus(name, files, lines, qe=dataset, target=target)
