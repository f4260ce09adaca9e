"""The 17 WMT12 baseline ("black-box") features, computed as QuEst computes them.

Text: each side is tokenized with the resource bundle's text settings (by default the ``wmt12``
Moses style, lower-cased; see ``qe.text.processing``), so n-gram and LM lookups use the same tokens the
resources were built from. Every feature is defined for empty, one-token and very long
sentences (a share over zero items is 0; no NaN).

Resources (bundle member names are settings):

- ``lm.src`` / ``lm.tgt``: KenLM models; the log10 probability includes ``</s>``. Unknown words
  are scored as ``<unk>`` (``lm_oov="score"``, the default); ``"skip"`` leaves them out of the sum
  as SRILM's ``-ppl`` did with the 2012 closed-vocabulary LM. With our small LMs (26k sentences)
  scoring them agrees better with the official values (r 0.97 / 0.99 against 0.96 / 0.96).
- ``ngrams.src``: source n-gram counts (orders 1-3) for the quartile features 11-14 (and 9, 10,
  15 with ``ngram_counts="corpus"``); n-grams seen fewer than ``quartile_min_count`` times count
  as unseen and are left out of the cut-offs (QuEst: 3).
- ``unigrams.src``: case-folded unigram counts of the original WMT12 SMT corpus, from its
  truecase model, used for features 8, 9, 10 and 15 with ``ngram_counts="truecase-model"``
  (``"auto"``, the default, uses it whenever the bundle has it). Moses' truecaser does not count
  sentence-initial words, so these counts are lower than the corpus counts QuEst used; with
  ``quartile_min_count="auto"`` the threshold is therefore 2 for them (3 for corpus counts),
  which agrees best with the official values (r 0.88 / 0.93 / 0.93 for features 9 / 10 / 15,
  against 0.43 / 0.87 / 0.89 with 3).
- ``ibm1.s2t`` / ``ibm1.t2s``: IBM Model 1 tables for features 7 and 8. ``lexicon="s2t"`` (the
  default) counts target words t with t(t|s) above the threshold, as the feature descriptions
  say. The official 2012 values (feature 7 averaging 214 translations per word) cannot come from
  such a table: the 2012 table was keyed the other way round. ``lexicon="t2s-inverted"`` mimics
  it: for a source word s it counts the target words t with p(s|t) above the threshold.

``quest_compat=True`` reproduces QuEst's punctuation count (features 16-17), which for each of
``, ; : ! ¡ ¿`` and the Arabic comma, semicolon and question mark that occurs in the sentence
adds the number of pieces Java's ``String.split`` returns (occurrences + 1, minus the pieces that
are empty at the end), and never counts ``.`` and ``?`` (a regex-escaping bug). It matches the
official values on all 2,254 rows. By default the same characters plus ``.`` and ``?`` are counted
once per occurrence.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any, ClassVar

import numpy as np

from qe.features.base import (
    FamilyExample,
    FeatureFamily,
    FeatureSpec,
    Pairs,
    choice,
    flag,
    integer,
    string,
    toml_table,
)
from qe.features.registry import register_family
from qe.infra.errors import QEInputError
from qe.resources.ngrams import DEFAULT_MIN_COUNT, NgramCounts
from qe.text.processing import TextConfig, TextProcessor

PUNCTUATION = ".,¿¡!?:;؟،؛"
"""The characters QuEst counts as punctuation (features 16 and 17)."""

_QUEST_SPLIT_CHARS = ",؟¿،؛¡!:;"  # QuEst's list minus '.' and '?', which its countChar never counts

SPECS = [
    FeatureSpec("src_tokens", "1001: number of source tokens", None),
    FeatureSpec("mt_tokens", "1002: number of target tokens", None),
    FeatureSpec("src_mean_token_length", "1006: mean character length of the source tokens", None),
    FeatureSpec("src_lm_logprob", "1009: source LM log10 probability of the sentence (with </s>)", "lm.src"),
    FeatureSpec("mt_lm_logprob", "1012: target LM log10 probability of the sentence (with </s>)", "lm.tgt"),
    FeatureSpec(
        "mt_type_token_ratio", "1015: target tokens / distinct target types (occurrences per type)", None
    ),
    FeatureSpec(
        "src_ibm1_translations_p0.2",
        "1022: mean number of IBM1 translations per source token with probability > 0.2",
        "ibm1.s2t",
    ),
    FeatureSpec(
        "src_ibm1_translations_p0.01_inv_freq",
        "1036: mean over source tokens of (IBM1 translations with p > 0.01) / corpus frequency",
        "ibm1.s2t+unigrams.src",
    ),
    FeatureSpec(
        "src_1gram_q1_share", "1046: share of source unigrams in frequency quartile 1", "unigrams.src"
    ),
    FeatureSpec(
        "src_1gram_q4_share", "1049: share of source unigrams in frequency quartile 4", "unigrams.src"
    ),
    FeatureSpec("src_2gram_q1_share", "1050: share of source bigrams in frequency quartile 1", "ngrams.src"),
    FeatureSpec("src_2gram_q4_share", "1053: share of source bigrams in frequency quartile 4", "ngrams.src"),
    FeatureSpec("src_3gram_q1_share", "1054: share of source trigrams in frequency quartile 1", "ngrams.src"),
    FeatureSpec("src_3gram_q4_share", "1057: share of source trigrams in frequency quartile 4", "ngrams.src"),
    FeatureSpec(
        "src_1gram_seen_share", "1058: share of distinct source unigrams seen in the corpus", "unigrams.src"
    ),
    FeatureSpec("src_punctuation", "1074: punctuation marks in the source", None),
    FeatureSpec("mt_punctuation", "1075: punctuation marks in the target", None),
]

SETTINGS = {
    "quest_compat": flag(False, "count punctuation (features 16, 17) as QuEst does, bug for bug"),
    "ngram_counts": choice(
        "auto", ("auto", "truecase-model", "corpus"), "where unigram counts come from (see module docstring)"
    ),
    "lexicon": choice("s2t", ("s2t", "t2s-inverted"), "IBM1 table for features 7 and 8"),
    "lm_oov": choice("score", ("score", "skip"), "unknown words: <unk> probability, or left out (SRILM)"),
    "quartile_min_count": integer(
        "auto", "n-grams seen fewer times count as unseen (auto: 2 truecase, 3 corpus)", 1, also=("auto",)
    ),
    "src_lm": string("lm.src", "bundle member: source KenLM model"),
    "tgt_lm": string("lm.tgt", "bundle member: target KenLM model"),
    "ngrams": string("ngrams.src", "bundle member: source n-gram counts"),
    "unigrams": string("unigrams.src", "bundle member: truecase-model unigram counts"),
    "ibm1_s2t": string("ibm1.s2t", "bundle member: IBM1 t(target | source)"),
    "ibm1_t2s": string("ibm1.t2s", "bundle member: IBM1 t(source | target)"),
    "src_text": toml_table(None, "a TextConfig table overriding the bundle's source text settings"),
    "tgt_text": toml_table(None, "the same for the target side"),
}
MEMBER_KINDS = {
    "src_lm": ("kenlm",),
    "tgt_lm": ("kenlm",),
    "ngrams": ("ngrams", "unigrams"),
    "unigrams": ("ngrams", "unigrams"),
    "ibm1_s2t": ("ibm1",),
    "ibm1_t2s": ("ibm1",),
}
TRUECASE_MIN_COUNT = 2
_CACHED_BUNDLES = 12  # a bundle, its fold views (5 by default) and a few more


def quest_punctuation_count(sentence: str) -> int:
    """QuEst's feature 1074/1075 value, bug for bug (see the module docstring)."""
    total = 0
    for char in _QUEST_SPLIT_CHARS:
        if char in sentence:
            pieces = sentence.split(char)
            while pieces and pieces[-1] == "":
                pieces.pop()
            total += len(pieces)
    return total


def punctuation_count(sentence: str) -> int:
    """Occurrences of the punctuation characters ``. , ; : ! ? ¡ ¿`` and Arabic , ; ?."""
    return sum(sentence.count(char) for char in PUNCTUATION)


def _share_in(values: list[int], low: int, high: int) -> float:
    """Share of values with low < v <= high (0 for an empty list)."""
    if not values:
        return 0.0
    return sum(1 for v in values if low < v <= high) / len(values)


@register_family
class Baseline17(FeatureFamily):
    """QuEst's 17 baseline features (WMT12 shared-task baseline)."""

    name = "baseline17"

    setting_specs = SETTINGS
    member_kinds = MEMBER_KINDS
    needs_bundle = True
    annotations = ("tokens",)
    requires: ClassVar[dict[str, str]] = {"kenlm": "pip install 'qe[lm]'"}
    example = FamilyExample({"ngram_counts": "corpus"}, bundle=True)

    def fresh_state(self) -> dict[str, Any]:
        """Lookups prepared for one bundle (rebuilt in each worker)."""
        return {"_cache": {}, "_cache_owners": []}

    def required_members(self) -> list[str]:
        """LMs, n-gram counts, the IBM1 table of the chosen lexicon, and truecase unigrams if forced."""
        s = self.settings
        members = [s["src_lm"], s["tgt_lm"], s["ngrams"]]
        members.append(s["ibm1_s2t"] if s["lexicon"] == "s2t" else s["ibm1_t2s"])
        if s["ngram_counts"] == "truecase-model":
            members.append(s["unigrams"])
        return members

    def specs(self) -> list[FeatureSpec]:
        """The 17 features in the official column order."""
        return list(SPECS)

    # ------------------------------------------------------------------ resources

    def _bundle_key(self, resources: Any) -> int:
        # Prepared lookups belong to a few bundle objects (a bundle and its cross-fitting fold views);
        # a bundle beyond those starts a fresh cache (holding references also keeps id() from being
        # reused while the cache lives).
        if not any(owner is resources for owner in self._cache_owners):
            if len(self._cache_owners) >= _CACHED_BUNDLES:
                self._cache = {}
                self._cache_owners = []
            self._cache_owners.append(resources)
        return id(resources)

    def _processor(self, resources: Any, side: str) -> TextProcessor:
        key = ("proc", side, self._bundle_key(resources))
        if key not in self._cache:
            override = self.settings[f"{side}_text"]
            if override is not None:
                lang = None if resources is None else resources.text_config(side).lang
                self._cache[key] = TextProcessor(TextConfig.from_dict(override, lang=lang))
            elif resources is None:
                raise QEInputError("baseline17 needs a resource bundle (LMs, n-gram counts, IBM1 tables)")
            else:
                self._cache[key] = resources.text_processor(side)
        return self._cache[key]

    def _resources(self, resources: Any) -> dict[str, Any]:
        """Everything the features look up, as plain dicts and callables (prepared once per bundle)."""
        key = ("res", self._bundle_key(resources))
        if key in self._cache:
            return self._cache[key]
        if resources is None:
            raise QEInputError("baseline17 needs a resource bundle (LMs, n-gram counts, IBM1 tables)")
        s = self.settings
        mode = s["ngram_counts"]
        if mode == "auto":
            mode = "truecase-model" if s["unigrams"] in resources else "corpus"
        min_count = s["quartile_min_count"]
        if min_count == "auto":
            min_count = TRUECASE_MIN_COUNT if mode == "truecase-model" else DEFAULT_MIN_COUNT
        uni_min_count = min_count
        ngram_min_count = DEFAULT_MIN_COUNT if s["quartile_min_count"] == "auto" else min_count
        unigrams = s["unigrams"] if mode == "truecase-model" else s["ngrams"]
        full_unigrams = resources.get(unigrams, orders=(1,)).table(1)  # feature 8 uses raw frequencies
        # The quartile features count n-grams seen at least `keep` times: tables are pruned when
        # loaded (an in-memory bundle ignores load options: its tables are filtered here).
        quartiles: dict[int, tuple[NgramCounts, int]] = {
            1: (resources.get(unigrams, orders=(1,), min_count=uni_min_count), uni_min_count)
        }
        bigger = resources.get(s["ngrams"], orders=(2, 3), min_count=ngram_min_count)
        quartiles.update({n: (bigger, ngram_min_count) for n in (2, 3)})
        counts = {}
        cutoffs = {}
        for n, (table, keep) in quartiles.items():
            cutoffs[n] = table.cutoffs(n, keep)
            raw = table.table(n)
            counts[n] = raw if table.min_count >= keep else {g: c for g, c in raw.items() if c >= keep}
        prepared = {
            "src_lm": resources.get(s["src_lm"]),
            "tgt_lm": resources.get(s["tgt_lm"]),
            "freq": full_unigrams,
            "counts": counts,
            "cutoffs": cutoffs,
            "n02": self._translation_counts(resources, 0.2),
            "n001": self._translation_counts(resources, 0.01),
            "mode": mode,
            "min_counts": (uni_min_count, ngram_min_count),
        }
        self._cache[key] = prepared
        return prepared

    def _translation_counts(self, resources: Any, threshold: float) -> dict[str, int]:
        """Source word -> number of 'translations' above ``threshold`` under the chosen lexicon."""
        s = self.settings
        if s["lexicon"] == "s2t":
            return resources.get(s["ibm1_s2t"]).translation_counts(threshold)
        # t2s-inverted: for each source word s, the number of target words t with p(s | t) > threshold.
        table = resources.get(s["ibm1_t2s"])
        counts: dict[str, int] = {}
        for t in table.src_vocab:
            if t == "NULL":
                continue
            for word in table.translations(t, threshold):
                counts[word] = counts.get(word, 0) + 1
        return counts

    # ------------------------------------------------------------------ extraction

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), 17)`` float array."""
        res = self._resources(resources)
        src_tok = batch.annotations.tokens("src", self._processor(resources, "src"))
        tgt_tok = batch.annotations.tokens("tgt", self._processor(resources, "tgt"))
        skip_oov = self.settings["lm_oov"] == "skip"
        compat = bool(self.settings["quest_compat"])
        src_lm, tgt_lm = res["src_lm"], res["tgt_lm"]
        freq, counts, cutoffs = res["freq"], res["counts"], res["cutoffs"]
        n02, n001 = res["n02"], res["n001"]
        c1, c2, c3 = counts[1], counts[2], counts[3]
        k1, k2, k3 = cutoffs[1], cutoffs[2], cutoffs[3]
        out = np.zeros((len(batch), len(SPECS)), dtype=np.float64)
        for i, (src_raw, mt_raw, st, tt) in enumerate(
            zip(batch.src, batch.mt, src_tok, tgt_tok, strict=True)
        ):
            ns, nt = len(st), len(tt)
            row = out[i]
            row[0] = ns
            row[1] = nt
            row[2] = sum(map(len, st)) / ns if ns else 0.0
            row[3] = src_lm.log10_prob(st, skip_oov=skip_oov)
            row[4] = tgt_lm.log10_prob(tt, skip_oov=skip_oov)
            row[5] = nt / len({w.lower() for w in tt}) if nt else 0.0
            if ns:
                lowered = [w.lower() for w in st]
                row[6] = sum(n02.get(w, 0) for w in lowered) / ns
                inv = 0.0
                for w in st:
                    f = freq.get(w, 0)
                    if f > 0:
                        inv += n001.get(w, 0) / f
                row[7] = inv / ns
                uni = [c1.get(w, 0) for w in st]
                row[8] = _share_in(uni, 0, k1[0])
                row[9] = _share_in(uni, k1[2], k1[3])
                big = [c2.get(f"{a} {b}", 0) for a, b in pairwise(st)]
                row[10] = _share_in(big, 0, k2[0])
                row[11] = _share_in(big, k2[2], k2[3])
                tri = [c3.get(f"{a} {b} {c}", 0) for a, b, c in zip(st, st[1:], st[2:], strict=False)]
                row[12] = _share_in(tri, 0, k3[0])
                row[13] = _share_in(tri, k3[2], k3[3])
                distinct = set(st)
                row[14] = sum(1 for w in distinct if c1.get(w, 0) > 0) / len(distinct)
            if compat:  # QuEst saw the tokenized, lower-cased line
                row[15] = quest_punctuation_count(" ".join(st))
                row[16] = quest_punctuation_count(" ".join(tt))
            else:
                row[15] = punctuation_count(src_raw)
                row[16] = punctuation_count(mt_raw)
        return out
