"""``[lm.KEY]``: a KenLM word language model of one side's tokenized corpora (``lm.KEY.bin`` or
``.arpa``), loaded as ``qe.resources.lm.LanguageModel``."""

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
from qe.config.rules import Bool, Fields, Int
from qe.infra.errors import QEInputError
from qe.resources.lm import MAX_ORDER, MIN_ORDER


def load_language_model(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> Any:
    """A KenLM model file (word or POS language model)."""
    from qe.resources.lm import LanguageModel

    return LanguageModel(path, **options)


DEFAULTS = {"order": 3, "binary": True}
"""What an ``[lm.KEY]`` table's keys are when it leaves them out."""


def _files(key: str, table: ConfigTable) -> dict[str, str]:
    binary = {**DEFAULTS, **table}["binary"]
    return {f"lm.{key}": f"lm.{key}.bin" if binary else f"lm.{key}.arpa"}


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    from qe.resources.lm import train_lm

    side, names = context.side_corpora(key, table)
    settings = {**DEFAULTS, **table}
    order, binary = int(settings["order"]), bool(settings["binary"])
    corpus_file = context.work / f".corpus.lm.{key}.txt"
    n_lines = 0
    with corpus_file.open("w", encoding="utf-8") as handle:
        for name in names:
            for tokens in context.tokens(name, side):
                if tokens:
                    handle.write(" ".join(tokens) + "\n")
                    n_lines += 1
    if n_lines == 0:
        raise QEInputError(f"[lm.{key}]: the corpora hold no non-empty sentence", context.config_path)
    out = Path(train_lm(corpus_file, outputs[f"lm.{key}"], order=order, binary=binary, label=f"lm.{key}"))
    corpus_file.unlink()
    entry = context.entry("kenlm", out, side, names, {"order": order, "binary": binary})
    entry["sentences"] = n_lines
    return {f"lm.{key}": entry}


register_member(
    MemberKind(
        kind="kenlm",
        load=load_language_model,
        section="lm",
        rule=Fields(
            {"side": SIDE, "order": Int(MIN_ORDER, MAX_ORDER), "corpora": CORPUS_LIST, "binary": Bool()}
        ),
        per_side=True,
        reads_corpora=True,
        files=_files,
        build=_build,
    )
)
