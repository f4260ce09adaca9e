"""What the POS-based features lose for a language no installed tagger covers, said once per config.

Each feature family declares what it loses there (``FeatureFamily.tagger_loss``): ``lm`` its POS-LM
features and ``ibm1`` its POS-agreement features (they need tags on both sides, so one language
without a tagger turns them off for the pair with ``pos = "auto"``; ``pos = true`` is refused by
``bind``), ``linguistic`` the whole family (it parses both sides with spaCy and refuses such a pair).
Instead of a warning from each family while features are extracted, ``losses`` gives one line per
language without a tagger: which families lose what, and what would bring it back (a pipeline's pip
command when PyPI has it, else "none offline"), or that Hunspell word classes stand in for it
(``FeatureFamily.word_classes``, ``qe.resources.wordclass``). ``qe run`` and ``qe features`` print
the lines for their families once, before any extraction (``config_losses``, ``family_losses``);
``qe init`` prints them for the languages it is given.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from qe.config.experiment import ExperimentConfig
from qe.text import nlp

ROLE = {"src": "source", "tgt": "target"}


def remedy(lang: str) -> str:
    """What would bring a language's POS tags back: pip commands, or why none works offline."""
    name = nlp.PIPELINES.get(nlp.language_of(lang))
    if name is None:
        return "none (spaCy has no pipeline for this language)"
    hint = nlp.install_hint(name)
    if importlib.util.find_spec("spacy") is None and nlp.offline(name):
        return f"pip install {nlp.SPACY_REQUIREMENT}, then {hint}"
    return hint


def losses(pair: Mapping[str, str], families: Iterable[str] | None = None) -> list[str]:
    """One line per language of ``pair`` (side -> language) without an installed spaCy pipeline,
    naming what each of ``families`` (default: every registered family that tags) loses there (or
    tags with Hunspell word classes instead) and what would bring spaCy's tags back (nothing if no
    family of ``families`` uses them)."""
    from qe.features.registry import family_class, registered_families
    from qe.resources import wordclass

    names = sorted(registered_families()) if families is None else dict.fromkeys(families)
    tagging = [cls for cls in map(family_class, names) if cls.tagger_loss]
    lines = []
    for side, lang in pair.items():
        if not tagging or nlp.missing_pipeline(lang, ROLE.get(side, side)) is None:
            continue
        replaced = [cls for cls in tagging if cls.word_classes and wordclass.available(lang)]
        parts = [f"{cls.name} loses {cls.tagger_loss}" for cls in tagging if cls not in replaced]
        if replaced:
            dictionary = wordclass.CLASSES[nlp.language_of(lang)].dictionary
            verb = "uses" if len(replaced) == 1 else "use"
            named = " and ".join(cls.name for cls in replaced)
            parts.insert(0, f"{named} {verb} Hunspell word classes ({dictionary}) instead")
        where = f"{ROLE[side]} language" if side in ROLE else side
        lines.append(
            f"no spaCy POS tagger for {lang!r} ({where}): {'; '.join(parts)}; "
            f"what would bring spaCy's tags back: {remedy(lang)}"
        )
    return lines


def asked_families(families: Iterable[Any], resources: Any) -> list[str]:
    """The names of the families (``FeatureFamily`` objects) whose POS features depend on the
    installed taggers with this bundle (``FeatureFamily.asks_tagger``: ``lm`` / ``ibm1`` with
    ``pos = "auto"``)."""
    return [family.name for family in families if family.asks_tagger(resources)]


def family_losses(families: Iterable[Any], resources: Any) -> list[str]:
    """``losses`` for the languages of a bundle and the families that would tag them, after what
    they lose to bundle members the bundle lacks (``lm``'s POS LMs)."""
    families = list(families)
    asked = asked_families(families, resources)
    if not asked:
        return []
    lines = [line for family in families if family.name in asked for line in family.bundle_losses(resources)]
    pair = {side: resources.text_config(side).lang for side in ROLE if f"tagger.{side}" not in resources}
    return lines + losses(pair, asked)  # a bundle's own tagger member tags its side


def config_losses(config: ExperimentConfig, resources: Any = None) -> list[str]:
    """``family_losses`` for an experiment config's families and bundle."""
    from qe.doctor.pieces import _plain_settings
    from qe.features.registry import make_families

    settings = _plain_settings(config.features.settings)
    return family_losses(make_families(list(config.features.families), settings), resources)


_SAID: set[str] = set()  # lines already printed by this process


def say(lines: Iterable[str], file: TextIO | None = None) -> None:
    """Print each line not printed before in this process (to stderr by default), as a note."""
    for line in lines:
        if line not in _SAID:
            _SAID.add(line)
            print(f"note: {line}", file=file or sys.stderr)
