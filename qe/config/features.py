"""``[features]``: feature sets, families, their settings and the resource bundle; its rule and its
typed view."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from qe.config.data import SPLITS
from qe.config.document import SHOWN, ReadOnlyTable, no_table, thaw
from qe.config.rules import (
    Anything,
    Fields,
    List,
    Mistake,
    Str,
    TablesOf,
    first_repeated,
)


def _families_once(features: dict[str, Any]) -> Mistake:
    twice = first_repeated(features.get("families", []))
    return (
        None
        if twice is None
        else ("families", features["families"], f"each family once, not {twice!r} twice")
    )


def _built_into_resources(features: dict[str, Any]) -> Mistake:
    if "resources_config" in features and "resources" not in features:
        return "resources_config", features["resources_config"], "a bundle config beside resources = DIR"
    return None


FEATURES = Fields(
    {
        "sets": List(Str()),
        "families": List(Str()),
        "resources": Str(),
        "resources_config": Str(),  # built into `resources` by qe run when that is not there yet
        "settings": TablesOf(Anything()),  # each family checks its own settings
    },
    rules=(_families_once, _built_into_resources),
)

POOLED_FAMILIES = ("finetuned", "crossencoder", "nmt")
"""The families whose features mean the same in every language pair, the only ones a pooled config
(``[data] datasets``) takes (the fine-tuned USE-M encoder and the e5 cross-encoder read any pair's text
with no language check): the others read resources built for one pair (lm, ibm1, ngrams, edits,
baseline17's tables) or one language's tools (spaCy, dictionaries, tokenizers, the encoder's
language check)."""


@dataclass(frozen=True, kw_only=True)
class FeaturesConfig:
    """``[features]``: registered feature sets, feature families, the resource bundle, family settings."""

    sets: tuple[str, ...] = field(default=(), metadata=SHOWN)
    families: tuple[str, ...] = field(default=(), metadata=SHOWN)
    # family -> its settings (and per-split tables)
    settings: ReadOnlyTable = field(default_factory=no_table, metadata=SHOWN)
    resources: str | None = None
    resources_config: str | None = None  # the bundle config `resources` is built from when missing


def split_settings(settings: Mapping[str, Mapping[str, Any]], split: str) -> dict[str, dict[str, Any]]:
    """Per-family settings for one split, as plain dicts: a family's ``train`` / ``dev`` / ``test``
    sub-table (e.g. the decoder logs of that split) overrides its shared settings."""
    resolved = {}
    for family, values in settings.items():
        merged = {k: thaw(v) for k, v in values.items() if k not in SPLITS}
        merged.update(thaw(values.get(split, {})))
        resolved[family] = merged
    return resolved
