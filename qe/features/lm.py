"""Language-model features of the source and the MT output: word LMs and, optionally, POS LMs.

For each side (``src`` with ``lm.src``, ``mt`` with ``lm.tgt``; tokens from the bundle's text
processor, so the LM sees the tokens it was trained on), from KenLM's per-token full scores with
``<s>`` as context:

- ``logprob``: log10 P(sentence), ``</s>`` included, unknown words scored as ``<unk>`` (unlike
  baseline17's SRILM-style sum, which leaves them out);
- ``ppl`` = 10^(-logprob / (n + 1)) and ``ppl_no_eos`` = 10^(-(logprob - log10 p(</s>)) / n),
  the perplexity with and without the end-of-sentence event (1 for an empty sentence);
- ``oov_count`` and ``oov_ratio`` (= count / n);
- back-off profile ``ngram{k}_share``: the share of the n tokens scored by an n-gram of length k
  (the last bucket takes length ``orders`` or longer); unknown words are counted by ``oov_ratio``
  only, so the shares and ``oov_ratio`` sum to 1 (all 0 for an empty sentence);
- ``min_word_logprob``: the lowest log10 probability of a token (``</s>`` excluded; 0 if empty).

POS features (``pos_*``, same definitions, without OOVs: the 17 UPOS tags form a closed
vocabulary) score the spaCy UPOS sequence of each side with the bundle's POS LMs ``poslm.src`` /
``poslm.tgt`` (built by ``qe.resources.pos.build_pos_lm``). Setting ``pos``:

- ``False``: no POS features;
- ``True``: POS features; ``bind`` refuses with one error naming every missing piece (the POS
  LMs, spaCy, the pipeline of each language: ``qe.text.nlp.PIPELINES``, never another language's);
- ``"auto"`` (default): decided by ``bind(bundle)``: True iff the bundle has both POS LMs and
  both of its languages can be tagged (``qe.resources.pos.tagger_for``: an installed spaCy
  pipeline, else Hunspell word classes, ``qe.resources.wordclass``; checked without loading them);
  otherwise skipped silently: ``qe run`` says once, before extraction, what a language without a
  tagger loses (``qe.doctor.tagless``). A family never bound has no POS features. ``specs()``
  therefore depends only on the settings and the bound bundle (and the installed taggers), never
  on the sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, Pairs, choice, integer, string
from qe.features.registry import register_family
from qe.infra.errors import QEInputError
from qe.resources import pos as pos_resources

SIDES = (("src", "src"), ("mt", "tgt"))  # (feature prefix, bundle side)

SETTINGS = {
    "pos": choice("auto", (True, False, "auto"), "POS-LM features: on, off, or when the bundle can tag"),
    "orders": integer(3, "back-off profile buckets for the word LMs (last = orders or longer)", 1, 6),
    "pos_orders": integer(5, "the same for the POS LMs", 1, 6),
    "src_lm": string("lm.src", "bundle member: source word LM"),
    "tgt_lm": string("lm.tgt", "bundle member: target word LM"),
    "src_poslm": string("poslm.src", "bundle member: source POS LM"),
    "tgt_poslm": string("poslm.tgt", "bundle member: target POS LM"),
}


def lm_specs(prefix: str, resource: str, orders: int, *, pos: bool) -> list[FeatureSpec]:
    """The features of one side scored by one LM (word LM, or POS LM with ``pos=True``)."""
    what = "UPOS sequence" if pos else "sentence"
    p = f"{prefix}_pos" if pos else prefix
    specs = [
        FeatureSpec(f"{p}_logprob", f"log10 probability of the {what} (with </s>)", resource),
        FeatureSpec(f"{p}_ppl", f"perplexity of the {what}, </s> counted", resource),
        FeatureSpec(f"{p}_ppl_no_eos", f"perplexity of the {what} without </s> (1 if empty)", resource),
    ]
    if not pos:
        specs += [
            FeatureSpec(f"{p}_oov_count", "tokens unknown to the LM", resource),
            FeatureSpec(f"{p}_oov_ratio", "unknown tokens / tokens (0 if empty)", resource),
        ]
    for k in range(1, orders + 1):
        span = f"{k} or longer" if k == orders and k > 1 else f"{k}"
        unit = "tags" if pos else "known tokens"
        specs.append(
            FeatureSpec(
                f"{p}_ngram{k}_share", f"share of {unit} scored by an n-gram of length {span}", resource
            )
        )
    unit = "tag" if pos else "token"
    specs.append(
        FeatureSpec(
            f"{p}_min_{'tag' if pos else 'word'}_logprob",
            f"lowest log10 probability of a {unit} (0 if empty)",
            resource,
        )
    )
    return specs


def lm_values(scores: list[tuple[float, int, bool]], orders: int, *, oov: bool) -> list[float]:
    """Feature values (in ``lm_specs`` order) from KenLM full scores of the tokens then ``</s>``."""
    words, eos = scores[:-1], scores[-1]
    n = len(words)
    total = sum(s for s, _, _ in scores)
    words_total = total - eos[0]
    values = [total, 10.0 ** (-total / (n + 1)), 10.0 ** (-words_total / n) if n else 1.0]
    n_oov = sum(1 for _, _, is_oov in words if is_oov)
    if oov:
        values += [float(n_oov), n_oov / n if n else 0.0]
    shares = [0.0] * orders
    for _, length, is_oov in words:
        if not is_oov:
            shares[min(max(length, 1), orders) - 1] += 1.0
    values += [s / n if n else 0.0 for s in shares]
    values.append(min((s for s, _, _ in words), default=0.0))
    return values


@register_family
class LMFeatures(FeatureFamily):
    """Word-LM (and optionally POS-LM) scores, perplexities, OOVs and back-off profiles of source and MT."""

    name = "lm"

    setting_specs = SETTINGS
    member_settings = ("src_lm", "tgt_lm")
    member_kinds: ClassVar[dict[str, tuple[str, ...]]] = {"src_lm": ("kenlm",), "tgt_lm": ("kenlm",)}
    needs_bundle = True
    annotations = ("tokens", "upos")
    requires: ClassVar[dict[str, str]] = {"kenlm": "pip install 'qe[lm]'"}
    tagger_loss = "its POS-LM features (src_pos_*, mt_pos_*)"
    word_classes = True
    example = FamilyExample({"pos": False}, bundle=True)

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._pos_resolved: bool = self.settings["pos"] is True  # "auto" is resolved by bind
        self._taggers: dict[str, str] = {}

    @classmethod
    def catalogue(cls) -> list[FeatureSpec]:
        """Every feature the family can produce, POS features included."""
        return cls(pos=True).specs()

    def bind(self, resources: Any) -> LMFeatures:
        """Resolve ``pos`` against a bundle (see the module docstring): ``True`` with a missing tagger
        or POS LM is one error naming each; ``"auto"`` skips with one warning line. Returns self."""
        super().bind(resources)
        poslms = [self.settings[f"{side}_poslm"] for _, side in SIDES]
        self._pos_resolved = pos_resources.pos_switch("lm", self.settings["pos"], resources, poslms)
        self._taggers = {}
        if self._pos_resolved and resources is not None:
            self._taggers = {
                side: pos_resources.describe_tagger(pos_resources.bundle_tagger(resources, side))
                for _, side in SIDES
            }
        return self

    @property
    def use_pos(self) -> bool:
        """Whether the POS features are produced (after ``bind`` for ``pos="auto"``)."""
        return self._pos_resolved

    def _poslms(self) -> tuple[str, ...]:
        return tuple(self.settings[f"{side}_poslm"] for _, side in SIDES)

    def missing_pieces(self, pair: Mapping[str, str], resources: Any = None) -> list[str]:
        """kenlm and, with ``pos = true``, the taggers and POS LMs."""
        missing = super().missing_pieces(pair, resources)
        if self.settings["pos"] is True:
            pieces = self.tagger_pieces(pair, resources, self._poslms())
            missing += [f"lm (pos = true): {piece}" for piece in pieces]
        return missing

    def asks_tagger(self, resources: Any) -> bool:
        """``pos = "auto"`` with a bundle holding one of its POS LMs (without them it asks for nothing)."""
        return (
            self.settings["pos"] == "auto"
            and resources is not None
            and any(name in resources for name in self._poslms())
        )

    def bundle_losses(self, resources: Any) -> list[str]:
        """Each POS LM the bundle lacks."""
        return [
            f"lm loses {self.tagger_loss}: the bundle has no {name} (a [poslm.{side}] section builds it)"
            for _, side in SIDES
            if (name := self.settings[f"{side}_poslm"]) not in resources
        ]

    def needed_annotations(self) -> tuple[str, ...]:
        """Bundle tokens, and their UPOS tags when the POS features are on."""
        return self.annotations if self.use_pos else ("tokens",)

    def specs(self) -> list[FeatureSpec]:
        """Word-LM features of src then mt, then (if ``use_pos``) POS-LM features of src then mt."""
        s = self.settings
        specs = [
            spec
            for prefix, side in SIDES
            for spec in lm_specs(prefix, s[f"{side}_lm"], s["orders"], pos=False)
        ]
        if self.use_pos:
            specs += [
                spec
                for prefix, side in SIDES
                for spec in lm_specs(prefix, s[f"{side}_poslm"], s["pos_orders"], pos=True)
            ]
        return specs

    def signature_details(self) -> list[str]:
        """The resolved POS switch and, when used, the taggers."""
        parts = [f"pos_used={int(self.use_pos)}"]
        return parts + [f"tagger.{side}={name}" for side, name in sorted(self._taggers.items())]

    # ------------------------------------------------------------------ extraction

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), len(self.specs()))`` float array."""
        if resources is None:
            raise QEInputError("lm needs a resource bundle (lm.src, lm.tgt)")
        s = self.settings
        columns: list[np.ndarray] = []
        tokens = {side: batch.annotations.tokens(side, resources.text_processor(side)) for _, side in SIDES}
        for _, side in SIDES:
            model = resources.get(s[f"{side}_lm"])
            rows = [lm_values(model.full_scores(t), s["orders"], oov=True) for t in tokens[side]]
            columns.append(np.asarray(rows, dtype=np.float64).reshape(len(batch), 6 + s["orders"]))
        if self.use_pos:
            for _, side in SIDES:
                model = self._pos_lm(resources, side)
                tags = batch.annotations.upos(side, resources)
                rows = [lm_values(model.full_scores(t), s["pos_orders"], oov=False) for t in tags]
                columns.append(np.asarray(rows, dtype=np.float64).reshape(len(batch), 4 + s["pos_orders"]))
        return np.hstack(columns)

    def _pos_lm(self, resources: Any, side: str) -> Any:
        name = self.settings[f"{side}_poslm"]
        if name not in resources:
            raise QEInputError(
                f"lm: pos is on but the bundle has no POS language model {name!r} "
                "(build it with qe.resources.pos.build_pos_lm, or set pos = false)"
            )
        return resources.get(name)
