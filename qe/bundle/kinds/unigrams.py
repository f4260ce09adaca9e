"""``[unigrams.KEY]``: unigram counts read from a Moses truecase model (no corpus needed),
``unigrams.KEY.npz``, loaded as an order-1 ``qe.resources.ngrams.NgramCounts``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qe.bundle.kinds.ngrams import load_counts
from qe.bundle.members import SIDE, BuildContext, ConfigTable, MemberKind, register_member
from qe.config.rules import Fields, Str
from qe.infra.io import sha256_file
from qe.resources.ngrams import load_truecase_counts


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    side = table.get("side", key)
    model = context.path(table["truecase_model"])
    counts = load_truecase_counts(model)
    out = outputs[f"unigrams.{key}"]
    counts.save_binary(out)
    settings = {"truecase_model": table["truecase_model"], "truecase_model_sha256": sha256_file(model)}
    entry = context.entry("unigrams", out, side, [], settings)
    entry["summary"] = counts.info()
    return {f"unigrams.{key}": entry}


register_member(
    MemberKind(
        kind="unigrams",
        load=load_counts,
        section="unigrams",
        rule=Fields({"side": SIDE, "truecase_model": Str()}, required=("truecase_model",)),
        per_side=True,
        files=lambda key, table: {f"unigrams.{key}": f"unigrams.{key}.npz"},
        build=_build,
        inputs=lambda table: [table["truecase_model"]],
    )
)
