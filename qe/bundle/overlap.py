"""The bundle's leakage check: every file members are built from against the ``[leakage] eval_files``.

A resource (a plain corpus, another QE corpus, ``[edits]`` from other pairs) copying or nearly copying
evaluation sentences leaks them: refused, unless allowed or dropped. The bundle's QE training split
repeating a few of them is the data: kept and reported. The comparison itself is
``qe.resources.leakage``; this module decides which file is checked against what, and what is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qe.bundle.corpora import Corpus, resolve, shown_path
from qe.bundle.sections import BundleConfig
from qe.data import QEDataset
from qe.infra.errors import QEInputError
from qe.resources.leakage import DEFAULT_NEAR_CHRF, Overlap, Repeats, find_overlaps, load_eval_sentences

_EDITS = "[edits]"
"""How ``[edits]`` is named among the readers of a checked file (the others are corpus names)."""
_PAIR_ROLES = ("src", "mt", "post_edits")


def _section(reader: str) -> str:
    """The config section of a reader of a checked file: ``[corpora.NAME]`` or ``[edits]``."""
    return reader if reader == _EDITS else f"[corpora.{reader}]"


@dataclass
class _Split:
    """The bundle's QE training split and the members' sources that are exactly its pairs."""

    data: QEDataset
    readers: list[str]  # QE corpora, and _EDITS
    registered: bool  # a registered dataset's training split (not the user's files)


@dataclass
class _Checked:
    """A file members are built from, checked against the evaluation data."""

    readers: list[str]  # the corpora reading it, or _EDITS
    side: str  # src / tgt of a corpus, src / mt / post_edits of QE pairs
    path: Path
    lines: list[str]
    training: bool  # a file of the training split: its repeats of the evaluation data are the data
    overlap: Overlap | None = None
    repeats: Repeats | None = None  # of a training file's overlap

    @property
    def leaks(self) -> bool:
        """A resource's overlap, or a training file repeating so much it holds the evaluation data."""
        return self.overlap is not None and (self.repeats is None or self.repeats.holds_evaluation_data)

    def refusal(self, others: int) -> QEInputError:
        """The one line refusing the build for this file's overlap, naming its first line."""
        more = f" ({others} more corpus file(s) overlap too)" if others else ""
        if self.training or _EDITS in self.readers:
            label = " / ".join(map(_section, self.readers))
            advice = "remove those pairs, or pass --drop-overlap or --allow-overlap"
            reason = self.repeats.reason(advice) if self.repeats else self.overlap.reason(advice)
            message = f"{label} {self.side}: {reason}"
        else:
            message = self.overlap.reason("remove the corpus or pass --drop-overlap or --allow-overlap")
        return QEInputError(message + more, self.path, self.overlap.lines[0])


def _training_split(
    config: BundleConfig, corpora: dict[str, Corpus], edits: QEDataset | None
) -> _Split | None:
    """The pairs of the cross-fitted QE corpus (else of the first QE corpus, else of ``[edits]``), read
    by every QE corpus and ``[edits]`` holding exactly those pairs; None without QE pairs."""
    tables = config.corpora
    qe = sorted((n for n, c in corpora.items() if c.qe is not None), key=lambda n: not tables[n].cross_fit)
    if qe:
        data, registered = corpora[qe[0]].qe, tables[qe[0]].dataset is not None
    elif edits is not None:
        data, registered = edits, "dataset" in config.members["edits"]
    else:
        return None
    readers = [n for n in qe if corpora[n].qe.src == data.src and corpora[n].qe.mt == data.mt]
    if edits is not None and edits.src == data.src and edits.mt == data.mt:
        readers.append(_EDITS)
    return _Split(data, readers, registered)


def _pair_files(data: QEDataset, readers: list[str], training: bool) -> list[_Checked]:
    """The source, MT and post-edit lines of QE pairs (those it has), as files to check."""
    first = next(iter(data.files.values()))
    return [
        _Checked(readers, role, Path(data.files.get(role, first)), lines, training)
        for role in _PAIR_ROLES
        if (lines := getattr(data, role)) is not None
    ]


def check_overlaps(
    config: BundleConfig,
    root: Path,
    corpora: dict[str, Corpus],
    edits: QEDataset | None,
    allow_overlap: bool,
    drop_overlap: bool,
) -> tuple[dict[str, Any], np.ndarray | None]:
    """Check every file members are built from against the ``[leakage] eval_files``.

    A resource (a plain corpus, another QE corpus, ``[edits]`` from other pairs) copying or nearly
    copying evaluation sentences leaks them: refused unless ``allow_overlap``. The training split
    (see :func:`_training_split`) repeating a few of them is the data: kept and reported (count,
    share), refused only past ``MAX_REPEAT_SHARE`` of an evaluation file (then it holds the
    evaluation data). ``drop_overlap`` leaves all of them out of every member reading them. Returns the
    manifest's ``leakage`` section and the ``[edits]`` pairs to learn from (None: all).
    """
    leakage = config.leakage
    eval_files = [resolve(root, f) for f in leakage.eval_files]
    near_chrf = DEFAULT_NEAR_CHRF if leakage.near_duplicate_chrf is None else leakage.near_duplicate_chrf
    evaluation = split_evaluation = load_eval_sentences(eval_files)
    split = _training_split(config, corpora, edits)
    if split is not None and split.registered:
        # a registered training split's own files listed as evaluation files (WMT12's config lists them
        # so that no external corpus holds a training sentence) are not its evaluation data
        own = {Path(f).resolve() for f in split.data.files.values()}
        if any(f.resolve() in own for f in eval_files):
            split_evaluation = load_eval_sentences([f for f in eval_files if f.resolve() not in own])
    readers = split.readers if split is not None else []
    checked = [
        _Checked([name], side, path, corpus.lines[side], False)
        for name, corpus in corpora.items()
        if name not in readers
        for side, path in corpus.files.items()
    ]
    if edits is not None and _EDITS not in readers:
        checked += _pair_files(edits, [_EDITS], False)
    if split is not None:
        checked += _pair_files(split.data, split.readers, True)
    for item in checked:
        against = split_evaluation if item.training else evaluation
        item.overlap = find_overlaps(item.path, item.lines, against, near_chrf)
        if item.training and item.overlap is not None:
            item.repeats = Repeats.of(item.overlap, len(item.lines), against)
    leaks = [item for item in checked if item.leaks]
    if leaks and not allow_overlap and not drop_overlap:
        raise leaks[0].refusal(len(leaks) - 1)
    dropped, keep_edits = (
        _drop_overlapping_lines(corpora, edits, checked, root) if drop_overlap else ({}, None)
    )
    repeats = [
        {
            **item.repeats.manifest_entry(),
            "readers": [_section(r) for r in item.readers],
            "side": item.side,
            "corpus": shown_path(root, item.path),
            "eval_file": shown_path(root, Path(item.repeats.eval_file)),
            "dropped": drop_overlap,
        }
        for item in checked
        if item.repeats is not None and not item.leaks
    ]
    section = {
        "eval_files": list(leakage.eval_files),
        "eval_sentences": len(evaluation),
        "near_duplicate_chrf": near_chrf,
        "overlaps": [item.overlap.manifest_entry() for item in leaks],
        "repeats": repeats,
        "allowed": bool(leaks) and allow_overlap and not drop_overlap,
        "dropped": dropped,
    }
    return section, keep_edits


def _drop_overlapping_lines(
    corpora: dict[str, Corpus], edits: QEDataset | None, checked: list[_Checked], root: Path
) -> tuple[dict[str, dict[str, Any]], np.ndarray | None]:
    """Leave the lines that copy or nearly copy evaluation sentences out of every member reading them
    (both sides of a parallel line; the whole pair of QE pairs); what the manifest records under
    ``leakage.dropped``, per reader, and the ``[edits]`` pairs kept (None: none left out)."""
    rows: dict[str, set[int]] = {}
    entries: dict[str, list[dict[str, Any]]] = {}
    for item in checked:
        if item.overlap is None:
            continue
        entry = {**item.overlap.manifest_entry(), "side": item.side, "corpus": shown_path(root, item.path)}
        for reader in item.readers:
            rows.setdefault(reader, set()).update(line - 1 for line in item.overlap.lines)
            entries.setdefault(reader, []).append(entry)
    dropped, keep_edits = {}, None
    for reader, gone in rows.items():
        total = len(edits.src) if reader == _EDITS else len(next(iter(corpora[reader].lines.values())))
        keep = np.ones(total, dtype=bool)
        keep[sorted(gone)] = False
        if reader == _EDITS:
            keep_edits = keep
        else:
            corpus = corpora[reader]
            corpus.lines = {
                side: [lines[i] for i in np.flatnonzero(keep)] for side, lines in corpus.lines.items()
            }
            if corpus.qe is not None:
                corpus.rows = np.flatnonzero(keep)
        dropped[reader] = {"lines": len(gone), "kept": int(keep.sum()), "files": entries[reader]}
    return dropped, keep_edits
