"""The ``wordtags`` family: the word tagger's predictions summed up per pair, as sentence-level features.

Reads the bundle's ``wordtags`` member (``[wordtags]`` in the bundle config,
``qe.bundle.kinds.wordtags``): a ``.qwords`` word model (``qe.wordmodel``) trained on the
bundle's word-level training data; training pairs are tagged by the model of their cross-fitting fold,
which never saw their tags, every other pair by the model of all of them. Source and MT are split at
whitespace (MLQE-PE's text is tokenized). A model trained with NMT log-probabilities reads the pair's
``nmt_tokens`` and ``nmt_logprobs`` inputs (those of the ``nmt`` family; MLQE-PE brings them).

Per pair: the share of MT words tagged BAD (probability at least the model's threshold), their mean
BAD probability, its population std and max, the share of BAD gaps, the share of BAD source words and
their mean BAD probability. A pair with no source or no MT word is not tagged: all 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, PairInput, Pairs, TextLimits
from qe.features.nmt import LOGPROBS, TOKENS
from qe.features.registry import register_family
from qe.infra.errors import QEInputError
from qe.nmt import parse_logprobs

MEMBER = "wordtags"
MAX_TOKENS = 2000  # qe.wordmodel.tagging.MAX_TOKENS: the IBM1 links cost source x MT tokens
COLUMNS = (
    ("mt_bad_share", "share of MT words the word tagger tags BAD"),
    ("mt_bad_prob_mean", "mean BAD probability of the MT words"),
    ("mt_bad_prob_std", "population std. dev. of the MT words' BAD probabilities"),
    ("mt_bad_prob_max", "highest BAD probability of an MT word"),
    ("gap_bad_share", "share of gaps (before, between and after MT words) tagged BAD"),
    ("src_bad_share", "share of source words tagged BAD"),
    ("src_bad_prob_mean", "mean BAD probability of the source words"),
)


def summarise(mt: np.ndarray, gaps: np.ndarray, src: np.ndarray, thresholds: dict[str, float]) -> list[float]:
    """One pair's columns from its BAD probabilities per kind (empty arrays give 0)."""

    def share(values: np.ndarray, kind: str) -> float:
        return float((values >= thresholds[kind]).mean()) if len(values) else 0.0

    def stat(values: np.ndarray, how: Any) -> float:
        return float(how(values)) if len(values) else 0.0

    return [
        share(mt, "target"),
        stat(mt, np.mean),
        stat(mt, np.std),
        stat(mt, np.max),
        share(gaps, "gaps"),
        share(src, "source"),
        stat(src, np.mean),
    ]


@register_family
class WordTagsFamily(FeatureFamily):
    """The word tagger's BAD shares and probabilities per pair, cross-fitted on the training pairs."""

    name = "wordtags"
    needs_bundle = True
    limits = TextLimits(tokens=MAX_TOKENS)
    inputs = (LOGPROBS, TOKENS)
    example = FamilyExample(bundle=True)

    def needed_inputs(self) -> tuple[PairInput, ...]:
        """None always: the NMT inputs are read when the member's model was trained with them."""
        return ()

    def read_inputs(self) -> tuple[PairInput, ...]:
        """The NMT pieces and log-probabilities, when given."""
        return self.inputs

    def required_members(self) -> list[str]:
        """The bundle's word model."""
        return [MEMBER]

    def specs(self) -> list[FeatureSpec]:
        """The seven columns."""
        return [FeatureSpec(name, f"{doc} (cross-fitted word tagger)", MEMBER) for name, doc in COLUMNS]

    def _nmt(self, batch: Pairs, rows: np.ndarray, mt: list[list[str]]) -> Any:
        """The NMT log-probabilities of the pairs ``rows`` mapped onto their MT words."""
        from qe.wordmodel.nmtprobs import PieceLine, word_logprobs

        if LOGPROBS.name not in batch.extra or TOKENS.name not in batch.extra:
            raise QEInputError(
                "wordtags: the bundle's word model reads NMT log-probabilities: give the nmt_tokens and "
                "nmt_logprobs inputs"
            )
        tokens = self.input_lines(batch, TOKENS.name)
        logprobs = self.input_lines(batch, LOGPROBS.name)
        lines = []
        for row in rows:
            pieces = tokens[row].split()
            try:
                values = parse_logprobs(logprobs[row])
            except ValueError as exc:
                path, line = batch.where(LOGPROBS.name, int(row))
                raise QEInputError(f"wordtags: {exc}", path, line) from None
            if len(values) != len(pieces) + 1:
                path, line = batch.where(LOGPROBS.name, int(row))
                raise QEInputError(
                    f"wordtags: {len(values)} log-probabilities for {len(pieces)} NMT tokens (one per "
                    "token plus one for </s>)",
                    path,
                    line,
                )
            lines.append(PieceLine(pieces, values))
        return word_logprobs(lines, mt)

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), 7)`` float array, every value finite."""
        from qe.wordmodel.features import KINDS
        from qe.words.files import WordLevelData

        model = self.bundle_member(resources, MEMBER)
        src = [text.split() for text in batch.src]
        mt = [text.split() for text in batch.mt]
        self.check_tokens(batch, "src", src)
        self.check_tokens(batch, "mt", mt)
        out = np.zeros((len(batch), len(COLUMNS)), dtype=np.float64)
        rows = np.array([k for k in range(len(batch)) if src[k] and mt[k]], dtype=np.int64)
        if not len(rows):
            return out
        data = WordLevelData([src[k] for k in rows], [mt[k] for k in rows])
        nmt = self._nmt(batch, rows, data.mt) if model.nmt else None
        tables, probability = model.tag(data, nmt)
        per = {kind: tables.sentences(kind, probability[kind]) for kind in KINDS}
        for i, row in enumerate(rows):
            out[row] = summarise(per["target"][i], per["gaps"][i], per["source"][i], model.thresholds)
        if not np.isfinite(out).all():
            raise QEInputError("wordtags: the word model gave a probability that is not a finite number")
        return out
