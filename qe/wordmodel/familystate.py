"""The further word families' state in a ``.qwords`` model: written beside the core state, read back
checked.

Each family's arrays are members named ``fam_<family>_<array>`` and its numbers sit in the manifest's
``families`` table (``{"lm": {"order": 3}, ...}``), with the featurizer's ``languages`` (source,
target). A model without further families has neither key, so files written before families existed
load as they did. Reading accepts only families this qe knows (``qe.wordmodel.families.FAMILIES``);
each family's own ``load`` checks its arrays (the exact set it needs, dtypes, shapes, values) and
numbers, so nothing read from the file reaches a program other than numpy: the ``lm`` family's models
are n-gram arrays queried in Python, never a KenLM binary.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from qe.predictors.check import BadModel
from qe.wordmodel.families import FAMILIES
from qe.wordmodel.family import Family
from qe.wordmodel.features import WordFeaturizer

PREFIX = "fam_"
_LANG = re.compile(r"[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?")


def family_arrays(featurizer: WordFeaturizer) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays (``fam_<family>_<name>``) and manifest entries (``families``, ``languages``) of a
    fitted featurizer's further families."""
    arrays, numbers = {}, {}
    for family in featurizer.families:
        assert family.save is not None
        table, numbers[family.name] = family.save(featurizer.family_states_[family.name])
        arrays |= {f"{PREFIX}{family.name}_{name}": values for name, values in table.items()}
    return arrays, {"families": numbers, "languages": list(featurizer.languages)}


def family_state(
    manifest: dict[str, Any], arrays: dict[str, np.ndarray]
) -> tuple[tuple[Family, ...], tuple[str | None, str | None], dict[str, Any], set[str]]:
    """The families, languages and fitted states a manifest and its arrays hold, checked, and the
    member names they account for."""
    numbers = manifest.get("families")
    if numbers is None:
        if "languages" in manifest:
            raise BadModel("manifest.json: languages without families")
        return (), (None, None), {}, set()
    if not isinstance(numbers, dict) or not numbers:
        raise BadModel("manifest.json: families is not a table of word feature families")
    unknown = sorted(set(numbers) - set(FAMILIES))
    if unknown:
        raise BadModel(f"manifest.json: families holds {unknown[0][:40]!r}, which this qe does not know")
    languages = manifest.get("languages")
    if (
        not isinstance(languages, list)
        or len(languages) != 2
        or not all(lang is None or (isinstance(lang, str) and _LANG.fullmatch(lang)) for lang in languages)
    ):
        raise BadModel("manifest.json: languages is not two language codes (or null)")
    families = tuple(family for name, family in FAMILIES.items() if name in numbers)
    states, members = {}, set()
    for family in families:
        prefix = f"{PREFIX}{family.name}_"
        mine = {
            name.removeprefix(prefix): values for name, values in arrays.items() if name.startswith(prefix)
        }
        members |= {prefix + name for name in mine}
        assert family.load is not None
        states[family.name] = family.load(mine, numbers[family.name])
    return families, (languages[0], languages[1]), states, members
