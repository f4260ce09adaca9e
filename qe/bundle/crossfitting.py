"""Cross-fitting while a bundle is built: the folds of the QE training corpus, the corpus lines each
fold must not see, and each member built from them once more per fold (the manifest's ``folds``
entries), plus the fold map member. How the folds are used at scoring time: ``qe.resources.crossfit``.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np

from qe.bundle.corpora import Corpus
from qe.bundle.members import BuildContext, build_members, member_kinds
from qe.bundle.sections import BundleConfig
from qe.infra.errors import QEInputError
from qe.infra.expected import shown_duration
from qe.resources.crossfit import MEMBER, FoldMap
from qe.resources.folds import assign_folds, pair_key
from qe.resources.leakage import normalize_for_overlap


class SentenceFolds:
    """The folds each training sentence belongs to, as bit masks, to mask corpus lines by text."""

    def __init__(
        self,
        fold_of: dict[str, int],
        keys: Sequence[str],
        src: Sequence[str],
        targets: Sequence[Sequence[str]],
    ) -> None:
        self.src: dict[str, int] = {}
        self.tgt: dict[str, int] = {}
        for i, key in enumerate(keys):
            bit = 1 << fold_of[key]
            text = normalize_for_overlap(src[i])
            self.src[text] = self.src.get(text, 0) | bit
            for lines in targets:  # the MT and the post-edit of the pair
                text = normalize_for_overlap(lines[i])
                self.tgt[text] = self.tgt.get(text, 0) | bit

    def masks(self, lines: dict[str, Sequence[str]]) -> np.ndarray:
        """One mask per corpus line (bit k: the line shares a sentence with a fold-k training pair)."""
        n = len(next(iter(lines.values())))
        out = np.zeros(n, dtype=np.int64)
        for side, table in (("src", self.src), ("tgt", self.tgt)):
            if side in lines:
                out |= np.fromiter(
                    (table.get(normalize_for_overlap(line), 0) for line in lines[side]), np.int64, count=n
                )
        return out


def plan_cross_fitting(config: BundleConfig, corpora: dict[str, Corpus]) -> FoldMap | None:
    """The fold map of the cross-fitted QE corpus (None without one); masks the lines of it and of the
    plain corpora with ``cross_fit = true`` that repeat a training sentence."""
    tables = config.corpora
    fitted = [n for n, c in corpora.items() if c.qe is not None and tables[n].cross_fit]
    if not fitted:
        return None
    name = fitted[0]
    qe = corpora[name].qe
    folds, seed = int(tables[name].cross_fit), int(tables[name].seed)
    keys = [pair_key(s, m) for s, m in zip(qe.src, qe.mt, strict=True)]
    if len(set(keys)) < 2 * folds:
        raise QEInputError(
            f"[corpora.{name}]: {len(set(keys))} distinct training pairs are too few for cross_fit = {folds}"
        )
    fold_of = assign_folds(keys, folds, seed)
    targets = [qe.mt] + ([qe.post_edits] if qe.post_edits is not None else [])
    sentences = SentenceFolds(fold_of, keys, qe.src, targets)
    for other, table in tables.items():
        if other == name or (not table.is_qe and table.cross_fit):
            corpora[other].masks = sentences.masks(corpora[other].lines)
    per_fold = np.bincount(list(fold_of.values()), minlength=folds).tolist()
    return FoldMap(fold_of, folds, {"corpus": name, "seed": seed, "pairs": len(keys), "per_fold": per_fold})


def _fold_file(member: str, file: str, fold: int) -> str:
    """``lm.src.bin`` -> ``lm.src.fold2.bin``: the file of one fold's version of a member."""
    rest = file[len(member) :] if file.startswith(member) else "." + file
    return f"{member}.fold{fold}{rest}"


def _without_fold(corpus: Corpus, fold: int) -> Corpus:
    """The corpus without its lines masked for ``fold`` (tokens already computed are kept)."""
    keep = np.flatnonzero(((corpus.masks >> fold) & 1) == 0)
    return Corpus(
        corpus.name,
        corpus.files,
        {side: [lines[i] for i in keep] for side, lines in corpus.lines.items()},
        {side: [tokens[i] for i in keep] for side, tokens in corpus.tokens.items()},
    )


def _fitted_tables(config: BundleConfig, fitted: list[str]) -> BundleConfig:
    """``config`` with only the member tables that built a member of ``fitted``."""
    sub: dict[str, Any] = {}
    for kind in member_kinds():
        if not kind.reads_corpora or kind.files is None:
            continue
        chosen = {
            key: table for key, table in kind.tables(config) if set(kind.files(key, table)) & set(fitted)
        }
        if chosen:
            sub[kind.section] = MappingProxyType(chosen) if kind.per_side else chosen[""]
    return replace(config, members=MappingProxyType(sub))


_FOLD_ENTRY_DROPPED = ("kind", "corpora", "settings", "side", "key_side", "build_seconds")


def _expected_folds(members: dict[str, dict[str, Any]], fitted: list[str], folds: int) -> str:
    """``expected to take about 2 min``: each fitted member once per fold on (folds - 1) / folds of the
    lines, as long as it took on all of them (the time grows at least as fast as the lines)."""
    took = sum(float(members[name].get("build_seconds", 0.0)) for name in fitted)
    return f"expected to take {shown_duration(took * (folds - 1))}"


def cross_fit_members(
    config: BundleConfig,
    context: BuildContext,
    members: dict[str, dict[str, Any]],
    fold_map: FoldMap | None,
) -> dict[str, Any]:
    """Build each member that read a masked corpus once more per fold (its ``folds`` entries) and the
    ``cross_fit`` member; returns the manifest's ``cross_fit`` section (also naming in-sample members)."""
    section: dict[str, Any] = {}
    tables, corpora, work = config.corpora, context.corpora, context.work
    in_sample = sorted(n for n, c in corpora.items() if c.qe is not None and not tables[n].cross_fit)
    if in_sample:
        section["in_sample"] = {
            "corpora": in_sample,
            "members": sorted(m for m, e in members.items() if set(e.get("corpora", [])) & set(in_sample)),
        }
    if fold_map is None:
        return section
    context.started = time.perf_counter()
    masked = sorted(n for n, c in corpora.items() if c.masks is not None and c.masks.any())
    fitted = sorted(m for m, e in members.items() if set(e.get("corpora", [])) & set(masked))
    path = work / f"{MEMBER}.json.gz"
    fold_map.save(path)
    entry = context.entry("folds", path, None, [fold_map.info["corpus"]], {"folds": fold_map.folds})
    members[MEMBER] = {**entry, "summary": fold_map.info}
    sub = _fitted_tables(config, fitted)
    from tqdm.auto import tqdm

    if context.progress:
        expected = _expected_folds(members, fitted, fold_map.folds)
        print(f"cross-fitting: {', '.join(fitted)} once per fold, {expected}", file=sys.stderr, flush=True)
    bar = tqdm(range(fold_map.folds), desc="cross-fitting", unit="fold", disable=not context.progress)
    for fold in bar:
        fold_corpora = {n: _without_fold(c, fold) if n in masked else c for n, c in corpora.items()}
        fold_dir = work / f".fold{fold}"
        fold_dir.mkdir()
        fold_context = replace(context, corpora=fold_corpora, work=fold_dir, progress=False, edits=None)
        for member, fold_entry in build_members(sub, fold_context).items():
            file = _fold_file(member, fold_entry["file"], fold)
            os.replace(fold_dir / fold_entry["file"], work / file)
            excluded = {
                n: int(((corpora[n].masks >> fold) & 1).sum()) for n in masked if n in fold_entry["corpora"]
            }
            kept = {k: v for k, v in fold_entry.items() if k not in _FOLD_ENTRY_DROPPED}
            members[member].setdefault("folds", []).append({**kept, "file": file, "excluded_lines": excluded})
        shutil.rmtree(fold_dir)
    section.update(
        corpus=fold_map.info["corpus"],
        folds=fold_map.folds,
        seed=fold_map.info["seed"],
        masked_corpora=masked,
        members=fitted,
    )
    return section
