"""``[poslm.KEY]``: a KenLM language model of one side's part-of-speech tags (spaCy,
``qe.resources.pos``), ``poslm.KEY.bin``, loaded like a word language model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qe.bundle.kinds.lm import load_language_model
from qe.bundle.members import (
    CORPUS_LIST,
    SIDE,
    BuildContext,
    ConfigTable,
    MemberKind,
    register_member,
)
from qe.config.rules import Bool, Fields, Int
from qe.resources.lm import MAX_ORDER

DEFAULT_ORDER = 5
"""A POS language model's order when ``[poslm.KEY]`` does not say (tags are few: longer contexts pay)."""


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    from qe.resources.pos import build_pos_lm

    side, names = context.side_corpora(key, table)
    order = int(table.get("order", DEFAULT_ORDER))
    lines = [line for name in names for line in context.corpora[name].lines[side]]
    out = outputs[f"poslm.{key}"]
    text = context.text[side]
    info = build_pos_lm(
        lines,
        text.lang,
        out,
        order=order,
        text=text,
        n_jobs=context.n_jobs,
        progress=context.progress,
        label=f"poslm.{key}",
    )
    entry = context.entry("kenlm", out, side, names, {"order": order, "binary": True})
    entry["summary"] = info
    return {f"poslm.{key}": entry}


register_member(
    MemberKind(
        kind="kenlm",
        load=load_language_model,
        section="poslm",
        rule=Fields({"side": SIDE, "order": Int(3, MAX_ORDER), "corpora": CORPUS_LIST, "binary": Bool()}),
        per_side=True,
        reads_corpora=True,
        files=lambda key, table: {f"poslm.{key}": f"poslm.{key}.bin"},
        build=_build,
    )
)
