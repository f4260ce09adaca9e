"""Every installed piece a config needs for its language pair, listed at once when some are missing.

A bundle config's are ``qe.bundle.pieces.bundle_pieces``'s (the builder refuses without
them). ``experiment_pieces(config, bundle)`` looks at an experiment config: the Apertium
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

from qe.bundle.pieces import missing_apertium
from qe.config.experiment import ExperimentConfig
from qe.infra.errors import refusal


def experiment_pieces(
    config: ExperimentConfig, bundle: Any = None, *, bind: bool = False, families: list[Any] | None = None
) -> list[str]:
    """What an experiment config's feature families need and this machine (or the bundle) lacks;
    with ``bind``, also what each family's ``bind`` refuses (bundle members, ...). ``families``: the
    config's families when already made (a run makes them once), not yet bound."""
    from qe.data.splits import languages
    from qe.features.registry import make_families

    features = config.features
    pair = languages(config.data, bundle) or {}
    missing: list[str] = []
    if config.mt2 and (problem := missing_apertium(config.mt2)):
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
    from qe.config.features import split_settings

    return split_settings(settings, "train")
