"""IBM Model 1 features: sentence scores in both directions, lexical coverage, one-to-one alignments.

Tables (bundle members, names are settings): ``ibm1.s2t`` holds t(target | source) and
``ibm1.t2s`` t(source | target). Tokens come from the bundle's text processor. With S source and
H MT tokens:

- ``mt_given_src_logprob_per_word`` = (1/H) ln P(mt | src), P as ``IBM1Table.sentence_log_prob``
  computes it (``block_log_prob``) with the s2t table: Popović's IBM1_hs,
  ``(S+1)^-H prod_i sum_j p(h_i | s_j)`` with the empty word among the s_j, as a length-normalized
  natural log; ``src_given_mt_logprob_per_word`` is IBM1_sh with the t2s table, divided by S. A
  word no table entry explains costs ln(1e-12); an empty side gives 0.
- ``mt_coverage``: share of MT tokens t for which some source token s has t(t | s) >
  ``coverage_threshold``; ``src_coverage``: share of source tokens s with some MT token t having
  t(s | t) above it (0 for an empty side).
- One-to-one (O2O) links (SDLLW LF11-LF13): ``alignment = "intersect"`` (default) keeps the links
  on which the two directional Viterbi alignments agree (target word j's best source word is i
  and source word i's best target word is j; copies of a repeated word tie, and the copy nearest
  the diagonal wins, see ``viterbi_alignment``; links to the empty word are dropped), which are
  one-to-one by construction. ``"s2t"`` / ``"t2s"`` take one directional alignment and keep the
  links whose word on the many side is aligned to nothing else. Features: ``o2o_count``,
  ``o2o_per_src_word`` (/S), ``o2o_per_mt_word`` (/H).
- POS agreement (LF14-LF17): O2O links whose two words have the same tag in the coarse shared
  tag set of ``qe.resources.pos.COARSE`` (noun, verb, adjective, adverb, preposition,
  determiner, number, punctuation; ``other`` never agrees), tags from spaCy UPOS:
  ``o2o_pos_agree_count``, ``..._per_o2o``, ``..._per_src_word``, ``..._per_mt_word``.

Setting ``pos``: ``False`` drops the POS-agreement features; ``True`` requires a tagger for both
languages (``bind`` names each missing one); ``"auto"`` (default) is decided by ``bind(bundle)``:
True iff both bundle languages can be tagged (``qe.resources.pos.tagger_for``: a spaCy pipeline,
else Hunspell word classes; checked without loading them), else skipped silently (``qe run`` says
once what is lost, ``qe.doctor.tagless``). A family never bound has no POS features.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from qe.features.base import (
    FamilyExample,
    FeatureFamily,
    FeatureSpec,
    Pairs,
    TextLimits,
    choice,
    number,
    string,
)
from qe.features.registry import register_family
from qe.infra.errors import QEInputError
from qe.infra.memo import make_room
from qe.resources import pos as pos_resources
from qe.words.ibm1 import MIN_PROB, NULL

ALIGNMENTS = ("intersect", "s2t", "t2s")
SETTINGS = {
    "pos": choice("auto", (True, False, "auto"), "POS-agreement features: on, off, or when both sides tag"),
    "coverage_threshold": number(
        0.1, "t(.|.) above which a word counts as covered", 0.0, 1.0, high_open=True
    ),
    "alignment": choice("intersect", ALIGNMENTS, "how one-to-one links are found"),
    "s2t": string("ibm1.s2t", "bundle member: IBM1 t(target | source)"),
    "t2s": string("ibm1.t2s", "bundle member: IBM1 t(source | target)"),
}

LIMITS = TextLimits(tokens=2_000)
"""Tokens of one side at most (docs/length-limits.md): the two alignment matrices grow with the
product of the sides (2,000 x 2,000 cells take seconds; 20,000 tokens a side took 9 GB and 142 s)."""
MEMO_WORDS = 10_000
"""Lexicon rows kept per direction (a few KB each) before the memo starts again."""

BASE_SPECS = [
    FeatureSpec(
        "mt_given_src_logprob_per_word",
        "IBM1 ln P(mt | src) / MT length (Popović IBM1_hs, length-normalized)",
        "ibm1.s2t",
    ),
    FeatureSpec(
        "src_given_mt_logprob_per_word",
        "IBM1 ln P(src | mt) / source length (Popović IBM1_sh, length-normalized)",
        "ibm1.t2s",
    ),
    FeatureSpec("mt_coverage", "share of MT tokens with a source token t(t|s) > threshold", "ibm1.s2t"),
    FeatureSpec("src_coverage", "share of source tokens with an MT token t(s|t) > threshold", "ibm1.t2s"),
    FeatureSpec("o2o_count", "one-to-one Viterbi IBM1 links (SDLLW LF11)", "ibm1.s2t+ibm1.t2s"),
    FeatureSpec("o2o_per_src_word", "one-to-one links / source tokens (LF12)", "ibm1.s2t+ibm1.t2s"),
    FeatureSpec("o2o_per_mt_word", "one-to-one links / MT tokens (LF13)", "ibm1.s2t+ibm1.t2s"),
]
POS_SPECS = [
    FeatureSpec(
        "o2o_pos_agree_count",
        "one-to-one links whose words share a coarse POS (LF14)",
        "ibm1.s2t+ibm1.t2s+spacy",
    ),
    FeatureSpec(
        "o2o_pos_agree_per_o2o",
        "POS-agreeing one-to-one links / one-to-one links (LF15)",
        "ibm1.s2t+ibm1.t2s+spacy",
    ),
    FeatureSpec(
        "o2o_pos_agree_per_src_word",
        "POS-agreeing one-to-one links / source tokens (LF16)",
        "ibm1.s2t+ibm1.t2s+spacy",
    ),
    FeatureSpec(
        "o2o_pos_agree_per_mt_word",
        "POS-agreeing one-to-one links / MT tokens (LF17)",
        "ibm1.s2t+ibm1.t2s+spacy",
    ),
]


def one_to_one_links(s2t: list[int], t2s: list[int], mode: str = "intersect") -> list[tuple[int, int]]:
    """(source index, target index) one-to-one links from two directional Viterbi alignments.

    ``s2t[j]`` is target word j's source index and ``t2s[i]`` source word i's target index (-1 =
    the empty word). See the module docstring for the modes.
    """
    if mode == "intersect":
        return [(i, j) for j, i in enumerate(s2t) if i >= 0 and t2s[i] == j]
    if mode == "s2t":
        fertility = np.bincount([i for i in s2t if i >= 0], minlength=len(t2s))
        return [(i, j) for j, i in enumerate(s2t) if i >= 0 and fertility[i] == 1]
    fertility = np.bincount([j for j in t2s if j >= 0], minlength=len(s2t))
    return sorted((i, j) for i, j in enumerate(t2s) if j >= 0 and fertility[j] == 1)


def viterbi_alignment(probs: np.ndarray, null: np.ndarray) -> list[int]:
    """Best source index per target word from an (H, S) matrix of t(tgt_j | src_i); -1 = NULL.

    As ``IBM1Table.viterbi_alignment``, a source word must reach max(t(tgt_j | NULL), 1e-12).
    IBM1 has no notion of position, so a repeated source word ties with itself: among equally
    probable source words the one nearest the diagonal ((i + 0.5) / S closest to (j + 0.5) / H)
    wins, then the later one. (Always taking the last copy would link every repeated word to one
    position and lose one-to-one links.)
    """
    n_tgt, n_src = probs.shape
    if n_tgt == 0:
        return []
    if n_src == 0:
        return [-1] * n_tgt
    best = probs.max(axis=1)
    offset = np.abs((np.arange(n_src) + 0.5) / n_src - ((np.arange(n_tgt) + 0.5) / n_tgt)[:, None])
    offset = np.where(probs == best[:, None], offset, np.inf)
    choice = n_src - 1 - np.argmin(offset[:, ::-1], axis=1)
    return np.where(best >= np.maximum(null, MIN_PROB), choice, -1).tolist()


def block_log_prob(block: np.ndarray, n_src: int, has_null: bool) -> float:
    """``IBM1Table.sentence_log_prob`` from the table's block of t(tgt_j | src_i) for one sentence
    pair (rows: target words; columns: NULL if the table has it, then the source words): the same
    operations on the same array, so the same float."""
    n_tgt = block.shape[0]
    if n_tgt == 0:
        return 0.0
    positions = n_src + (1 if has_null else 0)
    sums = np.maximum(block.sum(axis=1), MIN_PROB)
    return float(np.log(sums).sum() - n_tgt * math.log(max(positions, 1)))


def _split_null(block: np.ndarray, has_null: bool) -> tuple[np.ndarray, np.ndarray]:
    """The (H, S) word block and the H values t(tgt_j | NULL) (zeros for a table without NULL)."""
    if has_null:
        return block[:, 1:], block[:, 0]
    return block, np.zeros(block.shape[0])


def _share(count: float, total: int) -> float:
    return count / total if total else 0.0


@register_family
class IBM1Features(FeatureFamily):
    """IBM1 sentence scores (both directions), coverage and one-to-one alignment counts (SDLLW LF11-17)."""

    name = "ibm1"

    setting_specs = SETTINGS
    member_settings = ("s2t", "t2s")
    member_kinds: ClassVar[dict[str, tuple[str, ...]]] = {"s2t": ("ibm1",), "t2s": ("ibm1",)}
    needs_bundle = True
    annotations = ("tokens", "upos")
    limits = LIMITS
    tagger_loss = "its 4 POS-agreement features (o2o_pos_agree_*)"
    word_classes = True
    example = FamilyExample({"pos": False}, bundle=True)

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._pos_resolved: bool = self.settings["pos"] is True  # "auto" is resolved by bind
        self._taggers: dict[str, str] = {}

    def fresh_state(self) -> dict[str, Any]:
        """Memoised lexicon rows (rebuilt in each worker)."""
        return {"_cache": {}}

    @classmethod
    def catalogue(cls) -> list[FeatureSpec]:
        """Every feature the family can produce, POS agreement included."""
        return cls(pos=True).specs()

    def bind(self, resources: Any) -> IBM1Features:
        """Resolve ``pos`` against a bundle's languages (see the module docstring); returns self."""
        super().bind(resources)
        self._pos_resolved = pos_resources.pos_switch("ibm1", self.settings["pos"], resources)
        self._taggers = {}
        if self._pos_resolved and resources is not None:
            self._taggers = {
                side: pos_resources.describe_tagger(pos_resources.bundle_tagger(resources, side))
                for side in ("src", "tgt")
            }
        return self

    def missing_pieces(self, pair: Mapping[str, str], resources: Any = None) -> list[str]:
        """With ``pos = true``: the taggers of both sides."""
        missing = super().missing_pieces(pair, resources)
        if self.settings["pos"] is True:
            missing += [f"ibm1 (pos = true): {piece}" for piece in self.tagger_pieces(pair, resources)]
        return missing

    def asks_tagger(self, resources: Any) -> bool:
        """``pos = "auto"`` with a bundle."""
        return self.settings["pos"] == "auto" and resources is not None

    @property
    def use_pos(self) -> bool:
        """Whether the POS-agreement features are produced (after ``bind`` for ``pos="auto"``)."""
        return self._pos_resolved

    def needed_annotations(self) -> tuple[str, ...]:
        """Bundle tokens, and their UPOS tags when the POS-agreement features are on."""
        return self.annotations if self.use_pos else ("tokens",)

    def specs(self) -> list[FeatureSpec]:
        """The seven IBM1 features, then the four POS-agreement ones if ``use_pos``."""
        return BASE_SPECS + (POS_SPECS if self.use_pos else [])

    def signature_details(self) -> list[str]:
        """The resolved POS switch and, when used, the taggers."""
        parts = [f"pos_used={int(self.use_pos)}"]
        return parts + [f"tagger.{side}={name}" for side, name in sorted(self._taggers.items())]

    # ------------------------------------------------------------------ extraction

    def _block(self, table: Any, key: str, src: list[str], tgt: list[str]) -> np.ndarray:
        """(H, S) matrix of t(tgt_j | src_i), preceded by the column t(tgt_j | NULL) when the table
        has the empty word (as ``IBM1Table`` lays it out); lexicon rows memoised per source word."""
        memo: dict[str, dict[str, float]] = self._cache.setdefault((key, id(table)), {})
        words = [NULL, *src] if table.has_null else src
        make_room(memo, MEMO_WORDS, adding=0)  # a service sees ever more words: memory stays bounded
        for w in words:
            if w not in memo:
                memo[w] = table.translations(w)
        zeros = [0.0] * len(tgt)
        columns = [list(map(memo[w].get, tgt, zeros)) for w in words]  # dict.get(t, 0.0), looped in C
        return np.array(columns, dtype=np.float64).reshape(len(words), len(tgt)).T.copy()

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), len(self.specs()))`` float array."""
        if resources is None:
            raise QEInputError("ibm1 needs a resource bundle (ibm1.s2t, ibm1.t2s)")
        s = self.settings
        s2t, t2s = resources.get(s["s2t"]), resources.get(s["t2s"])
        src_tok = batch.annotations.tokens("src", resources.text_processor("src"))
        mt_tok = batch.annotations.tokens("tgt", resources.text_processor("tgt"))
        self.check_tokens(batch, "src", src_tok)
        self.check_tokens(batch, "mt", mt_tok)
        if self.use_pos:
            src_tags = batch.annotations.upos("src", resources)
            mt_tags = batch.annotations.upos("tgt", resources)
        threshold = float(s["coverage_threshold"])
        out = np.zeros((len(batch), len(self.specs())), dtype=np.float64)
        for k, (src, mt) in enumerate(zip(src_tok, mt_tok, strict=True)):
            n_src, n_mt = len(src), len(mt)
            row = out[k]
            forward_block = self._block(s2t, "s2t", src, mt)  # (n_mt, [NULL] + n_src)
            backward_block = self._block(t2s, "t2s", mt, src)  # (n_src, [NULL] + n_mt)
            row[0] = _share(block_log_prob(forward_block, n_src, s2t.has_null), n_mt)
            row[1] = _share(block_log_prob(backward_block, n_mt, t2s.has_null), n_src)
            forward, forward_null = _split_null(forward_block, s2t.has_null)
            backward, backward_null = _split_null(backward_block, t2s.has_null)
            if n_src and n_mt:
                row[2] = _share(int(np.count_nonzero(forward.max(axis=1) > threshold)), n_mt)
                row[3] = _share(int(np.count_nonzero(backward.max(axis=1) > threshold)), n_src)
            links = one_to_one_links(
                viterbi_alignment(forward, forward_null),
                viterbi_alignment(backward, backward_null),
                s["alignment"],
            )
            row[4] = len(links)
            row[5] = _share(len(links), n_src)
            row[6] = _share(len(links), n_mt)
            if self.use_pos:
                st, mtt = src_tags[k], mt_tags[k]
                agree = sum(
                    1
                    for i, j in links
                    if (c := pos_resources.coarse_tag(st[i])) != pos_resources.OTHER
                    and c == pos_resources.coarse_tag(mtt[j])
                )
                row[7] = agree
                row[8] = _share(agree, len(links))
                row[9] = _share(agree, n_src)
                row[10] = _share(agree, n_mt)
        return out
