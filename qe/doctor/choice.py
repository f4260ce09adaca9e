"""Which feature families a language pair can have here, and why each is in or out.

``qe init`` builds the strongest config the data and this machine support from this: every family whose
pieces exist offline for the pair (a KenLM ``lmplz`` for the language models, the encoder's languages,
a Hunspell dictionary for each side, an installed Apertium pair, spaCy pipelines for both sides), the
ones reading the user's extra files when given (post-edits, the NMT model's log-probabilities, decoder
logs), each with the settings it takes for the pair and the bundle members it reads. Every family is
listed with one line saying what it reads or what it lacks, so the written config and the terminal can
say which families are in, which are out and why.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from qe.infra.errors import refusal

EMBEDDING_PROJECTIONS = 64
"""Rotated coordinates of each sentence vector the embeddings family adds (chosen on MLQE-PE dev)."""


@dataclass(frozen=True)
class Choice:
    """One family for a pair: in or out, why, its settings and the bundle members it reads."""

    family: str
    chosen: bool
    why: str
    settings: dict[str, Any] = field(default_factory=dict)
    members: tuple[str, ...] = ()  # bundle tables it reads: "lm", "ngrams.src", "ibm1", "edits", "mt2", ...
    resource: str | None = None  # what a member is made of, where the family names it (the Apertium pair)


def apertium_pair(src: str, tgt: str) -> str | None:
    """An installed Apertium pair translating ``src`` into ``tgt`` (two-letter codes), or None."""
    from qe.resources.mt2 import installed_pairs, pair_languages

    return next((pair for pair in installed_pairs() if pair_languages(pair) == (src, tgt)), None)


def _missing(family: str, settings: dict[str, Any], pair: dict[str, str]) -> list[str]:
    """What the family with these settings lacks for the pair on this machine (nothing loaded)."""
    from qe.features.registry import make_families

    (made,) = make_families([family], {family: settings})
    return made.missing_pieces(pair)


def choose_families(
    src: str, tgt: str, *, post_edits: bool = False, inputs: Collection[str] = ()
) -> list[Choice]:
    """Every family considered for the pair ``src``-``tgt`` (language codes), in config order; ``inputs``
    are the per-pair inputs the user gives for every split (``nmt_logprobs``, a decoder ``nbest``...)."""
    from qe.embeddings.encoder import LANGUAGES
    from qe.resources.lm import find_kenlm_binary

    pair = {"src": src, "tgt": tgt}
    languages = {"src_lang": src, "tgt_lang": tgt}
    kenlm = refusal(lambda: (find_kenlm_binary("lmplz"), find_kenlm_binary("build_binary")))
    choices = [Choice("surface", True, "counts of words, characters and punctuation", languages)]
    if kenlm:
        lacking = f"needs KenLM's lmplz to build its language models ({kenlm})"
        choices += [Choice(name, False, lacking) for name in ("baseline17", "lm")]
    else:
        choices += [
            Choice(
                "baseline17",
                True,
                "QuEst's 17 baseline features, from LMs, n-grams and IBM1 built from your training split",
                members=("lm", "ngrams.src", "ibm1"),
            ),
            Choice(
                "lm", True, "word language-model scores of both sides (your training split)", members=("lm",)
            ),
        ]
    choices.append(
        Choice(
            "ibm1", True, "IBM Model 1 translation scores learnt from your training split", members=("ibm1",)
        )
    )
    choices.append(
        Choice(
            "edits", True, "how often your post-editors changed each word (cross-fitted)", members=("edits",)
        )
        if post_edits
        else Choice("edits", False, "reads the training post-edits: give --post-edits")
    )
    choices.append(_embeddings(src, tgt, LANGUAGES, pair))
    spelling = _missing("spelling", languages, pair)
    choices.append(
        Choice("spelling", True, "Hunspell's misspelt-word counts of both sides", languages)
        if not spelling
        else Choice("spelling", False, "; ".join(spelling).removeprefix("spelling: "))
    )
    apertium = apertium_pair(src, tgt)
    choices.append(
        Choice(
            "pseudoref",
            True,
            f"the MT scored against Apertium {apertium}'s translation",
            members=("mt2",),
            resource=apertium,
        )
        if apertium
        else Choice(
            "pseudoref", False, f"no Apertium pair {src}-{tgt} is installed (apt-cache search apertium)"
        )
    )
    linguistic = _missing("linguistic", languages, pair)
    vocabulary = {**languages, "vocabulary_member": "ngrams.tgt"}  # the training MT's words
    choices.append(
        Choice("linguistic", True, "spaCy parses of both sides", vocabulary, members=("ngrams.tgt",))
        if not linguistic
        else Choice("linguistic", False, "; ".join(linguistic).removeprefix("linguistic: "))
    )
    nmt = {} if "nmt_score" in inputs else {"model_score": False}  # the sentence score only when given
    choices.append(
        Choice("nmt", True, "the NMT model's token log-probabilities (your nmt_logprobs files)", nmt)
        if "nmt_logprobs" in inputs
        else Choice("nmt", False, "reads the NMT model's log-probabilities: give nmt_logprobs inputs")
    )
    choices.append(
        Choice("decoder", True, "the Moses decoder's n-best lists (your nbest files)")
        if "nbest" in inputs
        else Choice("decoder", False, "reads Moses decoder logs: give nbest inputs")
    )
    return choices


def _embeddings(src: str, tgt: str, known: Collection[str], pair: dict[str, str]) -> Choice:
    """The sentence encoder's cosines and coordinates: both sides when it knows both languages, the MT
    alone when it knows only the target's."""
    settings: dict[str, Any] = {"projections": EMBEDDING_PROJECTIONS, "src_lang": src, "tgt_lang": tgt}
    if tgt not in known:
        return Choice("embeddings", False, f"the sentence encoder does not know the target language {tgt!r}")
    if src not in known:
        settings["sides"] = "mt"
    missing = _missing("embeddings", settings, pair)
    if missing:
        return Choice("embeddings", False, "; ".join(missing).removeprefix("embeddings: "))
    what = "both sides" if src in known else f"the MT alone (the encoder does not know {src!r})"
    return Choice("embeddings", True, f"multilingual sentence-encoder vectors of {what}", settings)
