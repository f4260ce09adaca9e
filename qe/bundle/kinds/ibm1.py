"""``[ibm1]``: IBM Model 1 lexical translation tables of the parallel corpora, one per direction
(``ibm1.s2t.npz``, ``ibm1.t2s.npz``), loaded as ``qe.words.ibm1.IBM1Table``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qe.bundle.members import CORPUS_LIST, BuildContext, ConfigTable, MemberKind, register_member
from qe.bundle.sections import SIDES
from qe.config.rules import Fields, Int, List, Number, Str
from qe.infra.errors import QEInputError

DIRECTIONS = ("s2t", "t2s")


def _directions(table: ConfigTable) -> list[str]:
    """The directions built: both (trained together) when two are asked for, else the one."""
    directions = list(table.get("directions", list(DIRECTIONS)))
    return list(DIRECTIONS) if len(directions) == 2 else directions[:1]


def _load(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> Any:
    from qe.words.ibm1 import IBM1Table

    return IBM1Table.load(path, **options)


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    from qe.words.ibm1 import IBM1Table, train_both_directions

    names = context.corpus_names(table, SIDES)
    iterations = int(table.get("iterations", 5))
    min_prob = float(table.get("min_prob", 0.001))
    directions = _directions(table)
    src: list[list[str]] = []
    tgt: list[list[str]] = []
    for name in names:
        for s, t in zip(context.tokens(name, "src"), context.tokens(name, "tgt"), strict=True):
            if s and t:  # a pair with an empty side carries no alignment evidence
                src.append(s)
                tgt.append(t)
    if not src:
        raise QEInputError("[ibm1]: the parallel corpora hold no sentence pair")
    settings = {"iterations": iterations, "min_prob": min_prob, "null": True}
    if len(directions) == 2:
        s2t, t2s = train_both_directions(src, tgt, iterations, n_jobs=context.n_jobs, min_prob=min_prob)
        tables = {"s2t": s2t, "t2s": t2s}
    else:
        a, b = (src, tgt) if directions[0] == "s2t" else (tgt, src)
        tables = {
            directions[0]: IBM1Table.train(a, b, iterations, min_prob=min_prob, progress=context.progress)
        }
    entries = {}
    for direction, ibm in tables.items():
        out = outputs[f"ibm1.{direction}"]
        ibm.save_binary(out)
        entry = context.entry("ibm1", out, None, names, {**settings, "direction": direction})
        entry["pairs"] = len(src)
        entry["entries"] = len(ibm)
        entry["key_side"] = "src" if direction == "s2t" else "tgt"
        entries[f"ibm1.{direction}"] = entry
    return entries


register_member(
    MemberKind(
        kind="ibm1",
        load=_load,
        section="ibm1",
        rule=Fields(
            {
                "iterations": Int(1),
                "directions": List(Str(list(DIRECTIONS)), min_len=1),
                "corpora": CORPUS_LIST,
                "min_prob": Number(0.0, 1.0, open_high=True),
            }
        ),
        reads_corpora=True,
        files=lambda key, table: {f"ibm1.{d}": f"ibm1.{d}.npz" for d in _directions(table)},
        build=_build,
    )
)
