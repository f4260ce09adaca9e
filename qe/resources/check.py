"""Every installed piece a config needs for its language pair, listed at once when some are missing.

``bundle_pieces(config)`` looks at a bundle config (``qe resources build``): the tokenizer of each
language (a word segmenter for Chinese, none for Japanese / Thai), KenLM's ``lmplz`` and
``build_binary`` for language models, a spaCy pipeline for each side with a POS LM, the Apertium
pair of ``[mt2]``. ``experiment_pieces(config, bundle)`` looks at an experiment config's feature
families: the ``kenlm`` module (word LMs), spaCy pipelines (``linguistic``; ``lm`` / ``ibm1`` with
``pos = true``), Hunspell dictionaries (``spelling``), the sentence encoder's languages
(``embeddings``), the Apertium pair of ``[mt2]``, the bundle and its members. Each returns one
line per missing piece, ``"who: what is missing, and how to get it"``; nothing is loaded.
``qe resources check CONFIG`` prints them; ``qe resources build`` and ``qe run`` refuse a config
with missing pieces in one line naming each.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from qe.errors import QEInputError

SIDES = ("src", "tgt")
ROLE = {"src": "the source language", "tgt": "the target language"}


def _problem(call: Callable[[], Any]) -> str | None:
    """The message of the QEInputError ``call`` raises, or None."""
    try:
        call()
    except QEInputError as exc:
        return exc.message
    return None


def _kenlm_tools() -> list[str]:
    from qe.resources.lm import find_kenlm_binary

    return [p for tool in ("lmplz", "build_binary") if (p := _problem(lambda t=tool: find_kenlm_binary(t)))]


def _apertium(settings: dict[str, Any]) -> str | None:
    from qe.resources.mt2 import SecondMT

    return _problem(lambda: SecondMT(settings.get("engine", "apertium"), settings["pair"]).forward())


def bundle_pieces(config: dict[str, Any]) -> list[str]:
    """What building a (checked) bundle config needs and this machine lacks."""
    from qe.resources import pos
    from qe.text import bundle_text_configs

    missing: list[str] = []
    try:
        for side, text in bundle_text_configs(config, None).items():
            if text.segmenter != "none":
                problem = _problem(lambda t=text: t.signature())  # names the segmenter package
                if problem:
                    missing.append(f"text.{side}: {problem}")
    except QEInputError as exc:
        missing.append(exc.message)
    if config.get("lm") or config.get("poslm"):
        missing += [f"lm: {p}" for p in _kenlm_tools()]
    for key, table in config.get("poslm", {}).items():
        side = table.get("side", key)
        problem = pos.missing_language_tagger(config["languages"][side], ROLE[side])
        if problem:
            missing.append(f"poslm.{key}: {problem}")
    if "mt2" in config and (problem := _apertium(config["mt2"])):
        missing.append(f"mt2: {problem}")
    return list(dict.fromkeys(missing))


def experiment_pieces(
    config: dict[str, Any], bundle: Any = None, *, bind: bool = False, families: list[Any] | None = None
) -> list[str]:
    """What an experiment config's feature families need and this machine (or the bundle) lacks;
    with ``bind``, also what each family's ``bind`` refuses (bundle members, ...). ``families``: the
    config's families when already made (a run makes them once), not yet bound."""
    from qe.features.registry import make_families
    from qe.run.splits import languages

    features = config["features"]
    pair = languages(config, bundle) or {}
    missing: list[str] = []
    if config.get("mt2") and (problem := _apertium(config["mt2"])):
        missing.append(f"mt2: {problem}")
    if families is None:
        families = make_families(features["families"], _plain_settings(features.get("settings", {})))
    for family in families:
        found = _family_pieces(family, pair, bundle)
        if bind and not found:  # anything else the family's own bind refuses (bundle members, ...)
            found = [p for p in [_problem(lambda f=family: f.bind(bundle))] if p]
        missing += found
    return list(dict.fromkeys(missing))


def _plain_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Family settings without per-split tables (``[features.settings.<family>.train]``)."""
    from qe.config import split_settings

    return split_settings(settings, "train")


def _family_pieces(family: Any, pair: dict[str, str], bundle: Any) -> list[str]:
    """The installed pieces one built-in family lacks (none listed for other families)."""
    from qe import nlp
    from qe.resources import pos

    name, settings = family.name, family.settings
    lang = {side: settings.get(f"{side}_lang") or pair.get(side) for side in SIDES}
    missing: list[str] = []
    if name in ("lm", "baseline17") and importlib.util.find_spec("kenlm") is None:
        missing.append(f"{name}: the kenlm Python module (pip install 'qe[lm]')")
    if name == "linguistic":
        for side in SIDES:
            if settings[f"{side}_model"] != "auto":
                problem = _problem(lambda m=settings[f"{side}_model"]: nlp.resolve_pipeline(m))
            elif lang[side] is None:
                problem = f"{ROLE[side]} (set {side}_lang or [data] languages)"
            else:
                problem = nlp.missing_pipeline(lang[side], ROLE[side])
            if problem:
                missing.append(f"linguistic: {problem}")
    if name in ("lm", "ibm1") and settings.get("pos") is True:
        members = [settings[f"{side}_poslm"] for side in SIDES] if name == "lm" else []
        if bundle is not None:
            missing += [f"{name} (pos = true): {p}" for p in pos.pos_pieces(bundle, members)]
        else:
            missing += [
                f"{name} (pos = true): {p}"
                for s in SIDES
                if lang[s] and (p := pos.missing_language_tagger(lang[s], ROLE[s]))
            ]
    if name == "spelling":
        from qe.resources.spelling import find_dictionary

        for side in SIDES:
            if lang[side] and (problem := _problem(lambda x=lang[side]: find_dictionary(x))):
                missing.append(f"spelling: {problem}")
    if name == "embeddings":
        from qe.embeddings.encoder import check_language
        from qe.features.embeddings import encoded_sides

        for side in encoded_sides(settings):
            if lang[side] and (problem := _problem(lambda x=lang[side]: check_language(x))):
                missing.append(f"embeddings: {problem}")
    return missing


def require(missing: list[str], what: str, path: Any = None) -> None:
    """One QEInputError naming every missing piece (nothing when none is)."""
    if missing:
        raise QEInputError(f"{what}: {len(missing)} missing piece(s): " + " | ".join(missing), path)
