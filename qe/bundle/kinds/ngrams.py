"""``[ngrams.KEY]``: n-gram counts up to ``max_order`` of one side's tokenized corpora
(``ngrams.KEY.npz``), loaded as ``qe.resources.ngrams.NgramCounts``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qe.bundle.members import (
    CORPUS_LIST,
    SIDE,
    BuildContext,
    ConfigTable,
    MemberKind,
    register_member,
)
from qe.config.rules import Fields, Int
from qe.resources.ngrams import NgramCounts


def load_counts(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> NgramCounts:
    """An n-gram count table (``.npz``, or the ``.tsv.gz`` of older bundles)."""
    return NgramCounts.load(path, **options)


DEFAULT_MAX_ORDER = 3
"""The longest n-grams counted when ``[ngrams.KEY]`` does not say."""


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    side, names = context.side_corpora(key, table)
    max_order = int(table.get("max_order", DEFAULT_MAX_ORDER))
    counts = NgramCounts.from_sentences(
        (tokens for name in names for tokens in context.tokens(name, side) if tokens), max_order=max_order
    )
    out = outputs[f"ngrams.{key}"]
    counts.save_binary(out)
    entry = context.entry("ngrams", out, side, names, {"max_order": max_order})
    entry["summary"] = counts.info()
    return {f"ngrams.{key}": entry}


register_member(
    MemberKind(
        kind="ngrams",
        load=load_counts,
        section="ngrams",
        rule=Fields({"side": SIDE, "max_order": Int(1, 6), "corpora": CORPUS_LIST}),
        per_side=True,
        reads_corpora=True,
        files=lambda key, table: {f"ngrams.{key}": f"ngrams.{key}.npz"},
        build=_build,
    )
)
