"""The ``nmt`` family: glass-box features from the NMT model's own token log-probabilities.

How sure the model was of its translation predicts its quality (Fomicheva et al., TACL 2020):
the mean log-probability of the output tokens alone reaches Pearson 0.2-0.65 with MLQE-PE's
direct assessments. The inputs, in one of two ways:

- line inputs, one line per pair: ``nmt_logprobs`` (space-separated natural-log probabilities
  of the MT's tokens in the model's own subword tokenisation, the last one for ``</s>``, as
  MLQE-PE's ``word_probas`` files), ``nmt_score`` (the model's sentence score; not needed with
  ``model_score = false``) and optionally ``nmt_tokens`` (the MT in those tokens: then every
  log-probability line must hold one value per token plus one, else an error names the line);
- a decoder log matched by sentence id: ``fairseq`` (``fairseq-generate`` output, H-/P- lines;
  ``log_base = "auto"`` reads it as base 2, as fairseq >= 0.10 prints it) or ``marian`` (an
  n-best list decoded with ``--word-scores``); the hypothesis in the log gives the tokens
  (checked unless ``check_tokens = false``, for logs printed detokenized) and the score.

For the registered MLQE-PE datasets (``mlqe-pe/<pair>``, ``mlqe-da/<pair>``) the line inputs come
with the dataset. Every statistic is computed twice: over all values (with ``</s>``) and over the
tokens only (``_noeos``); a translation without tokens has log-probability statistics 0,
probability mean 1 and shares 0 there (nothing the model was unsure of), never NaN.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from qe.features.base import (
    FamilyExample,
    FeatureFamily,
    FeatureSpec,
    PairInput,
    Pairs,
    choice,
    flag,
    integer,
    path,
)
from qe.features.registry import register_family
from qe.infra.errors import QEInputError
from qe.infra.io import sha256_file
from qe.nmt import parse_logprobs, parse_number

RESOURCE = "NMT token log-probabilities"
THRESHOLDS = (("p0.1", math.log(0.1)), ("p0.5", math.log(0.5)))
QUANTILES = (10, 25, 50)


def _stat_specs(suffix: str, over: str) -> list[FeatureSpec]:
    specs = [
        FeatureSpec(f"lp_mean{suffix}", f"mean token log-probability over {over}", RESOURCE),
        FeatureSpec(f"lp_min{suffix}", f"lowest token log-probability over {over}", RESOURCE),
        FeatureSpec(f"lp_max{suffix}", f"highest token log-probability over {over}", RESOURCE),
        FeatureSpec(
            f"lp_std{suffix}", f"population std. dev. of the log-probabilities over {over}", RESOURCE
        ),
    ]
    specs += [
        FeatureSpec(
            f"lp_q{q}{suffix}", f"{q}th percentile (linear) of the log-probabilities over {over}", RESOURCE
        )
        for q in QUANTILES
    ]
    specs += [
        FeatureSpec(
            f"lp_sum{suffix}",
            f"sum of the log-probabilities (sequence log-probability) over {over}",
            RESOURCE,
        ),
        FeatureSpec(
            f"prob_mean{suffix}", f"mean token probability (exp of the log-probability) over {over}", RESOURCE
        ),
    ]
    specs += [
        FeatureSpec(
            f"share_below_{name}{suffix}",
            f"share of log-probabilities below ln {name[1:]} over {over}",
            RESOURCE,
        )
        for name, _ in THRESHOLDS
    ]
    return specs


STAT_SPECS = _stat_specs("", "the tokens and </s>") + _stat_specs("_noeos", "the tokens without </s>")
LENGTH_SPECS = [
    FeatureSpec("tokens", "number of NMT (subword) tokens of the translation, without </s>", RESOURCE),
    FeatureSpec("eos_lp", "log-probability of </s>", RESOURCE),
    FeatureSpec(
        "lp_sum_per_word",
        "sequence log-probability (with </s>) / (whitespace words of the MT + 1): length-normalised by words",
        RESOURCE,
    ),
    FeatureSpec("tokens_per_word", "NMT tokens per whitespace word of the MT (0 for an empty MT)", RESOURCE),
]
SCORE_SPEC = FeatureSpec(
    "model_score", "the NMT model's own sentence score (as given or as in the log)", RESOURCE
)


def token_statistics(logprobs: np.ndarray) -> list[float]:
    """The values of one ``STAT_SPECS`` half for one sentence's log-probabilities (defined if empty)."""
    if logprobs.size == 0:
        return [0.0] * (4 + len(QUANTILES)) + [0.0, 1.0] + [0.0] * len(THRESHOLDS)
    return [
        float(logprobs.mean()),
        float(logprobs.min()),
        float(logprobs.max()),
        float(logprobs.std()),
        *(float(v) for v in np.percentile(logprobs, QUANTILES)),
        float(logprobs.sum()),
        float(np.exp(logprobs).mean()),
        *(float(np.mean(logprobs < limit)) for _, limit in THRESHOLDS),
    ]


def sentence_values(logprobs: np.ndarray) -> list[float]:
    """Everything but the word-normalised values and the score: both statistic halves, tokens, </s>."""
    return [
        *token_statistics(logprobs),
        *token_statistics(logprobs[:-1]),
        float(logprobs.size - 1),
        float(logprobs[-1]),
    ]


LOGPROBS = PairInput(
    "nmt_logprobs",
    "the NMT model's natural-log probability of each MT token (its own subword tokens), "
    "space-separated, the last one for </s>; one line per pair",
)
SCORE = PairInput(
    "nmt_score",
    "the NMT model's sentence score, one number per line (without it set the nmt setting "
    "model_score = false)",
)
TOKENS = PairInput(
    "nmt_tokens",
    "the MT in the NMT model's own (subword) tokens, one line per pair; each nmt_logprobs line "
    "must then hold one value per token plus one for </s>",
)
FAIRSEQ = PairInput(
    "nmt_fairseq",
    "fairseq-generate output (H-/P- lines) of the dataset's sentences",
    "file",
    setting="fairseq",
)
MARIAN = PairInput(
    "nmt_marian",
    "Marian n-best list (--n-best --word-scores) of the dataset's sentences",
    "file",
    setting="marian",
)


SETTINGS = {
    "fairseq": path(None, FAIRSEQ.help),
    "marian": path(None, MARIAN.help),
    "model_score": flag(True, "add the model's sentence score (nmt_score input, or the log's score)"),
    "check_tokens": flag(
        True, "refuse a log-probability count that is not the token count + 1 (when tokens are known)"
    ),
    "log_base": choice(
        "auto", ("auto", "e", "2"), "base of the logs' scores: auto = 2 for fairseq logs, else e"
    ),
    "id_offset": integer(0, "decoder-log sentence id of dataset id 0"),
}


def example_inputs(src: list[str], mt: list[str]) -> dict[str, list[str]]:
    """The contract's line inputs: the MT as the model's tokens, one log-probability per token plus
    ``</s>``, a sentence score per pair."""
    return {
        "nmt_logprobs": [
            " ".join(f"-{k % 7 / 10 + 0.05:.2f}" for k in range(len(t.split()) + 1)) for t in mt
        ],
        "nmt_score": [f"-{(k + 1) / 4:g}" for k in range(len(mt))],
        "nmt_tokens": list(mt),
    }


@register_family
class NMTFamily(FeatureFamily):
    """Token log-probability statistics of the NMT model that produced the translation."""

    name = "nmt"

    setting_specs = SETTINGS
    inputs = (LOGPROBS, SCORE, TOKENS, FAIRSEQ, MARIAN)
    example = FamilyExample(inputs=example_inputs)

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        if self.settings["fairseq"] and self.settings["marian"]:
            raise QEInputError("nmt: set one decoder log, fairseq or marian, not both")
        log = self.settings["fairseq"] or self.settings["marian"]
        self.log_path: Path | None = Path(log) if log else None
        # The line inputs this configuration reads (a decoder log replaces them).
        self.inputs = (
            () if self.log_path else (LOGPROBS, SCORE) if self.settings["model_score"] else (LOGPROBS,)
        )

    def read_inputs(self) -> tuple[PairInput, ...]:
        """The line inputs read when given: the needed ones and, without a decoder log, the tokens."""
        return self.inputs if self.log_path else (*self.inputs, TOKENS)

    def fresh_state(self) -> dict[str, Any]:
        """The decoder log's per-sentence values and its content hash (read again in each worker)."""
        return {"_log": None, "_log_hash": None}

    def specs(self) -> list[FeatureSpec]:
        """The features in column order (``model_score`` last, when configured)."""
        return [*STAT_SPECS, *LENGTH_SPECS, *([SCORE_SPEC] if self.settings["model_score"] else [])]

    def signature_details(self) -> list[str]:
        """The decoder log's content hash, so a regenerated log at the same path is a new signature."""
        if self.log_path is None:
            return []
        if self._log_hash is None:
            if not self.log_path.is_file():
                raise QEInputError("nmt: decoder log not found", self.log_path)
            self._log_hash = sha256_file(self.log_path)[:16]
        return [f"log_sha256={self._log_hash}"]

    # -- decoder logs ---------------------------------------------------------------------------

    def _records(self) -> Any:
        from qe.nmt.fairseq import iter_fairseq
        from qe.nmt.marian import iter_marian

        assert self.log_path is not None
        if self.settings["fairseq"]:
            base = "2" if self.settings["log_base"] == "auto" else self.settings["log_base"]
            return iter_fairseq(self.log_path, base)
        if self.settings["log_base"] == "2":
            raise QEInputError("nmt: Marian word scores are natural logs; log_base must be auto or e")
        return iter_marian(self.log_path)

    def load(self) -> dict[int, tuple[list[float], float]]:
        """Read the decoder log once (streaming): sentence id -> (``sentence_values``, score)."""
        if self._log is None:
            log: dict[int, tuple[list[float], float]] = {}
            for record in self._records():
                self._check_count(record.logprobs, len(record.tokens), str(self.log_path), record.line)
                log[record.sent_id] = (sentence_values(record.logprobs), record.score)
            self._log = log
        return self._log

    def log_id(self, dataset_id: str) -> int:
        """The decoder's sentence id of a dataset id (an integer, shifted by ``id_offset``)."""
        try:
            return int(dataset_id) + self.settings["id_offset"]
        except (TypeError, ValueError):
            raise QEInputError(
                f"nmt: dataset sentence id {dataset_id!r} is not an integer; decoder logs are matched by "
                "the decoder's 0-based sentence number (the dataset's line index), shifted by id_offset"
            ) from None

    def check_ids(self, ids: list[str]) -> None:
        """With a decoder log: every log id must be a dataset sentence and every sentence in the log."""
        if self.log_path is None:
            return
        wanted = {self.log_id(i) for i in ids}
        have = set(self.load())
        extra, absent = sorted(have - wanted), sorted(wanted - have)
        if extra or absent:
            sample = ", ".join(map(str, (extra or absent)[:5]))
            problem = (
                f"{len(extra)} sentence id(s) that are not in the dataset (e.g. {sample})"
                if extra
                else f"no entry for {len(absent)} dataset sentence(s) (ids {sample})"
            )
            raise QEInputError(
                f"nmt: the decoder log has {problem}: is it the log of this dataset, and is id_offset "
                f"({self.settings['id_offset']}) right?",
                self.log_path,
            )

    # -- extraction -----------------------------------------------------------------------------

    def _check_count(
        self, logprobs: np.ndarray, tokens: int | None, where: str | None, line: int | None
    ) -> None:
        if logprobs.size == 0:
            raise QEInputError("nmt: no log-probabilities (at least the one of </s> is needed)", where, line)
        if tokens is not None and self.settings["check_tokens"] and logprobs.size != tokens + 1:
            raise QEInputError(
                f"nmt: {logprobs.size} log-probabilities for {tokens} NMT tokens: expected {tokens + 1}, one "
                "per token plus </s> (for a log printed detokenized set check_tokens = false)",
                where,
                line,
            )

    def _rows_from_lines(self, batch: Pairs) -> list[tuple[list[float], float]]:
        missing = [item for item in self.inputs if item.name not in batch.extra]
        if missing:
            names = ", ".join(item.name for item in missing)
            flags = ", ".join(f"{item.flag} FILE" for item in missing)
            raise QEInputError(f"nmt: no {names} input given (pass {flags}, or a fairseq / marian log)")
        lines = self.input_lines(batch, LOGPROBS.name)
        scores = self.input_lines(batch, SCORE.name) if self.settings["model_score"] else None
        tokens = self.input_lines(batch, TOKENS.name) if TOKENS.name in batch.extra else None
        rows = []
        for k, text in enumerate(lines):
            where, line = batch.where(LOGPROBS.name, k)
            try:
                logprobs = parse_logprobs(text)
            except ValueError as exc:
                raise QEInputError(f"nmt: {exc}", where, line) from None
            self._check_count(logprobs, None if tokens is None else len(tokens[k].split()), where, line)
            score = math.nan
            if scores is not None:
                try:
                    score = parse_number(scores[k], "model score")
                except ValueError as exc:
                    raise QEInputError(f"nmt: {exc}", *batch.where(SCORE.name, k)) from None
            rows.append((sentence_values(logprobs), score))
        return rows

    def _rows_from_log(self, batch: Pairs) -> list[tuple[list[float], float]]:
        given = [name for name in (LOGPROBS.name, SCORE.name, TOKENS.name) if name in batch.extra]
        if given:
            raise QEInputError(
                f"nmt: {', '.join(given)} given as well as a decoder log: give the log-probabilities one way"
            )
        log = self.load()
        rows = []
        for dataset_id in batch.ids:
            sent_id = self.log_id(dataset_id)
            if sent_id not in log:
                raise QEInputError(
                    f"nmt: the decoder log has no sentence {sent_id} (dataset id {dataset_id!r})",
                    self.log_path,
                )
            rows.append(log[sent_id])
        return rows

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), len(self.specs()))`` float array."""
        rows = self._rows_from_log(batch) if self.log_path else self._rows_from_lines(batch)
        out = np.empty((len(batch), len(self.specs())), dtype=np.float64)
        for k, ((values, score), mt) in enumerate(zip(rows, batch.mt, strict=True)):
            words = len(mt.split())
            tokens, total = values[-2], values[7]
            extra = [total / (words + 1), tokens / words if words else 0.0]
            out[k] = [*values, *extra, *([score] if self.settings["model_score"] else [])]
        return out


__all__ = ["LENGTH_SPECS", "SCORE_SPEC", "STAT_SPECS", "NMTFamily", "sentence_values", "token_statistics"]
