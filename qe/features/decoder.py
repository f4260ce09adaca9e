"""The ``decoder`` family: glass-box features read from Moses' logs (SDLLW's MF1-MF8 and more).

Settings name the logs of one dataset (``nbest``, ``trace``, ``search_graph``, ``word_graph``);
only the features computable from the logs given are produced. Sentences are matched by id: the
dataset's id (an integer, by default its 0-based line index) plus ``id_offset`` is the Moses
sentence id. Each log is read once, streaming, into per-sentence summaries (``qe.decoder``), so any
id order works and memory grows with the number of sentences, not of n-best lines. A sentence with
no entry raises ``QEInputError`` (``missing="error"``, the default) or gets NaN (``missing="nan"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qe.decoder import LogIndex
from qe.decoder.nbest import FeatureMap, NBestStats, summarize_nbest
from qe.decoder.search_graph import (
    SearchGraphStats,
    WordGraphStats,
    summarize_search_graph,
    summarize_word_graph,
)
from qe.decoder.trace import TraceStats, count_untranslated, read_trace_phrases, summarize_trace
from qe.features.base import (
    FamilyExample,
    FeatureFamily,
    FeatureSpec,
    PairInput,
    Pairs,
    choice,
    integer,
    path,
    string,
    toml_table,
)
from qe.features.registry import register_family
from qe.infra.errors import QEInputError

NBEST = "moses n-best"
TRACE = "moses trace"
SEARCH_GRAPH = "moses search graph"
WORD_GRAPH = "moses word graph"

NBEST_SPECS: tuple[FeatureSpec, ...] = (
    FeatureSpec("mf1_distortion", "MF1: distortion score of the 1-best (feature_map mf1)", NBEST),
    FeatureSpec("mf2_word_penalty", "MF2: word-penalty score of the 1-best (feature_map mf2)", NBEST),
    FeatureSpec("mf3_lm", "MF3: language-model score of the 1-best (feature_map mf3)", NBEST),
    FeatureSpec(
        "mf4_phrase_st", "MF4: phrase translation score p(s|t) of the 1-best (feature_map mf4)", NBEST
    ),
    FeatureSpec("mf5_lex_st", "MF5: lexical weighting score lex(s|t) of the 1-best (feature_map mf5)", NBEST),
    FeatureSpec(
        "mf6_phrase_ts", "MF6: phrase translation score p(t|s) of the 1-best (feature_map mf6)", NBEST
    ),
    FeatureSpec("mf7_lex_ts", "MF7: lexical weighting score lex(t|s) of the 1-best (feature_map mf7)", NBEST),
    FeatureSpec("mf8_phrase_penalty", "MF8: phrase-penalty score of the 1-best (feature_map mf8)", NBEST),
    FeatureSpec("total_score", "total (weighted) model score of the 1-best", NBEST),
    FeatureSpec("nbest_size", "number of hypotheses in the n-best list (0: Moses produced none)", NBEST),
    FeatureSpec(
        "nbest_margin", "total score of the 1st minus that of the 2nd hypothesis (NaN if only one)", NBEST
    ),
    FeatureSpec("nbest_score_mean", "mean total score over the n-best list", NBEST),
    FeatureSpec(
        "nbest_score_std", "population standard deviation of the total scores in the n-best list", NBEST
    ),
    FeatureSpec("nbest_len_mean", "mean hypothesis length (words) over the n-best list", NBEST),
    FeatureSpec(
        "nbest_len_std", "population standard deviation of hypothesis lengths in the n-best list", NBEST
    ),
    FeatureSpec(
        "posterior_mean",
        "mean over 1-best tokens of the share of n-best hypotheses containing that word",
        NBEST,
    ),
    FeatureSpec(
        "posterior_min",
        "minimum over 1-best tokens of the share of n-best hypotheses containing that word",
        NBEST,
    ),
)
TRACE_SPECS: tuple[FeatureSpec, ...] = (
    FeatureSpec("trace_phrases", "number of phrases in the 1-best segmentation", TRACE),
    FeatureSpec("trace_src_phrase_len", "mean source words per phrase of the 1-best", TRACE),
    FeatureSpec("trace_tgt_phrase_len", "mean target words per phrase of the 1-best", TRACE),
    FeatureSpec(
        "trace_untranslated",
        "source words passed through untranslated (marked unknown, or copied one-word phrases)",
        TRACE,
    ),
)
SEARCH_GRAPH_SPECS: tuple[FeatureSpec, ...] = (
    FeatureSpec(
        "sg_hyps_per_word", "search-graph hypotheses (recombined included) per source word", SEARCH_GRAPH
    ),
    FeatureSpec("sg_recombined_per_word", "recombined search-graph hypotheses per source word", SEARCH_GRAPH),
    FeatureSpec(
        "sg_fanout_mean", "mean successors per search-graph hypothesis that has successors", SEARCH_GRAPH
    ),
    FeatureSpec("sg_fanout_max", "largest number of successors of one search-graph hypothesis", SEARCH_GRAPH),
    FeatureSpec("sg_fscore_std", "population std. dev. of the search-graph hypotheses' fscore", SEARCH_GRAPH),
)
WORD_GRAPH_SPECS: tuple[FeatureSpec, ...] = (
    FeatureSpec("wg_nodes_per_word", "word-graph nodes per source word", WORD_GRAPH),
    FeatureSpec("wg_arcs_per_word", "word-graph arcs per source word", WORD_GRAPH),
    FeatureSpec("wg_arc_density", "word-graph arcs per node", WORD_GRAPH),
    FeatureSpec(
        "wg_out_entropy",
        "mean entropy of the softmax of unweighted scores of each node's outgoing arcs",
        WORD_GRAPH,
    ),
)

# Setting name, and the resource it feeds, for each log, in column order.
LOGS: tuple[tuple[str, tuple[FeatureSpec, ...]], ...] = (
    ("nbest", NBEST_SPECS),
    ("trace", TRACE_SPECS),
    ("search_graph", SEARCH_GRAPH_SPECS),
    ("word_graph", WORD_GRAPH_SPECS),
)

_NBEST_SIZE = [spec.name for spec in NBEST_SPECS].index("nbest_size")

MISSING_POLICIES = ("error", "nan")

INPUTS = (
    PairInput(
        "nbest",
        "Moses n-best list (-n-best-list) of the dataset's sentences",
        "file",
        option="--decoder-nbest",
    ),
    PairInput(
        "trace",
        "Moses 1-best trace with segmentation marks (-t / -report-segmentation)",
        "file",
        option="--decoder-trace",
    ),
    PairInput(
        "search_graph", "Moses search graph (-output-search-graph)", "file", option="--decoder-search-graph"
    ),
    PairInput("word_graph", "Moses word graph (-output-word-graph)", "file", option="--decoder-word-graph"),
)
SETTINGS = {
    **{item.name: path(None, item.help) for item in INPUTS},
    "feature_map": toml_table(None, "MF1-MF8 score references (see qe.decoder.nbest.FeatureMap)"),
    "missing": choice("error", MISSING_POLICIES, "a sentence without a log entry: error, or NaN features"),
    "id_offset": integer(0, "Moses sentence id of dataset id 0"),
    "unknown_prefix": string(None, "Moses -mark-unknown prefix", optional=True),
    "moses_input": path(None, "the tokenized text Moses translated (for untranslated words)"),
    "base_dir": path(None, "folder that relative log paths are resolved against"),
}


def all_specs() -> list[FeatureSpec]:
    """Every feature the family can produce (the catalogue), whatever logs are configured."""
    return [spec for _, specs in LOGS for spec in specs]


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


EXAMPLE_NBEST = """\
0 ||| la casa es pequeña  ||| d: -2 lm: -18.5 w: -4 tm: -3.1 -5.2 -2.7 -4.9 2.99959 ||| -6.25
0 ||| la casa es pequeño  ||| d: -2 lm: -20.5 w: -4 tm: -3.5 -5.0 -2.9 -4.7 2.99959 ||| -6.75
0 ||| una casa pequeña  ||| d: 0 lm: -15.0 w: -3 tm: -4.0 -6.0 -3.0 -5.0 1.99973 ||| -7.5
1 ||| el gato y el perro  ||| d: -1 lm: -22.0 w: -5 tm: -6.0 -7.0 -5.5 -6.5 2.99959 ||| -9.0
2 ||| buenos días  ||| d: -1 -0.5 0 0 -0.25 0 0 lm: -10.0 -12.0 w: -2 tm: -1.0 -2.0 -1.5 -2.5 0.99995 ||| -3.0
2 ||| buenos días días  ||| d: 0 -1 0 0 0 0 0 lm: -14.0 -13.0 w: -3 tm: -2.0 -3.0 -2.5 -3.5 1.99990 ||| -4.0
"""
"""A Moses n-best list (old feature format) of sentences 0 to 2: the contract's example log."""


@register_family
class DecoderFamily(FeatureFamily):
    """Glass-box features from Moses logs; see ``docs/decoder.md``.

    Settings: ``nbest``, ``trace``, ``search_graph``, ``word_graph`` (paths, relative ones resolved
    against ``base_dir``); ``feature_map`` (MF1-MF8 score references, see
    :class:`qe.decoder.nbest.FeatureMap`); ``missing`` (``"error"`` or ``"nan"``; with ``"nan"`` a
    truncated log's cut sentence also becomes NaN); ``id_offset`` (Moses id of dataset id 0);
    ``unknown_prefix`` (Moses ``-mark-unknown`` prefix) and ``moses_input`` (the tokenized text
    Moses translated) for counting untranslated words.
    """

    name = "decoder"

    setting_specs = SETTINGS
    inputs = INPUTS
    example = FamilyExample(
        {"nbest": "example.nbest", "missing": "nan"}, files={"example.nbest": EXAMPLE_NBEST}
    )

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        settings = self.settings
        base = Path(settings["base_dir"]) if settings["base_dir"] else None
        self.paths: dict[str, Path] = {}
        for key, _ in LOGS:
            if settings[key]:
                log_path = Path(settings[key])
                self.paths[key] = (
                    base / log_path if base is not None and not log_path.is_absolute() else log_path
                )
        self.missing = settings["missing"]
        self.id_offset = settings["id_offset"]
        self.feature_map = FeatureMap(settings["feature_map"])
        self.unknown_prefix: str | None = settings["unknown_prefix"] or None
        moses_input = settings["moses_input"]
        if moses_input and base is not None and not Path(moses_input).is_absolute():
            moses_input = base / moses_input
        self.moses_input: Path | None = Path(moses_input) if moses_input else None

    def fresh_state(self) -> dict[str, Any]:
        """The per-sentence log summaries (read again in each worker)."""
        return {"_indexes": None}

    # -- catalogue ------------------------------------------------------------------------------

    def specs(self) -> list[FeatureSpec]:
        """Features of the configured logs, in column order (the whole catalogue if none is set)."""
        if not self.paths:
            return all_specs()
        return [spec for key, specs in LOGS if key in self.paths for spec in specs]

    # -- reading --------------------------------------------------------------------------------

    def load(self) -> dict[str, LogIndex]:
        """Read every configured log once (streaming) and keep the per-sentence summaries."""
        if self._indexes is None:
            truncated = "drop" if self.missing == "nan" else "error"
            indexes: dict[str, LogIndex] = {}
            if "nbest" in self.paths:
                indexes["nbest"] = summarize_nbest(self.paths["nbest"], self.feature_map, truncated=truncated)
            if "trace" in self.paths:
                indexes["trace"] = summarize_trace(
                    self.paths["trace"],
                    unknown_prefix=self.unknown_prefix,
                    moses_input=self.moses_input,
                    truncated=truncated,
                )
            if "search_graph" in self.paths:
                indexes["search_graph"] = summarize_search_graph(
                    self.paths["search_graph"], truncated=truncated
                )
            if "word_graph" in self.paths:
                indexes["word_graph"] = summarize_word_graph(self.paths["word_graph"], truncated=truncated)
            self._indexes = indexes
        return self._indexes

    def moses_id(self, dataset_id: str | int) -> int:
        """The Moses sentence id of a dataset id (an integer, shifted by ``id_offset``)."""
        try:
            return int(dataset_id) + self.id_offset
        except (TypeError, ValueError):
            raise QEInputError(
                f"dataset sentence id {dataset_id!r} is not an integer; decoder logs are matched by "
                "Moses' 0-based sentence number (dataset line index), shifted by id_offset"
            ) from None

    def check_ids(self, ids: Sequence[str | int]) -> None:
        """Check a whole dataset's ids against the logs: every log id must belong to the dataset
        (else the log is for another input, or ``id_offset`` is wrong) and, with
        ``missing="error"``, every dataset sentence must have an entry."""
        wanted = {self.moses_id(i) for i in ids}
        for index in self.load().values():
            extra = sorted(set(index.stats) - wanted)
            if extra:
                raise QEInputError(
                    f"{index.kind} has {len(extra)} sentence id(s) that are not in the dataset "
                    f"(e.g. {', '.join(map(str, extra[:5]))}): is it the log of this dataset, and is "
                    f"id_offset ({self.id_offset}) right?",
                    index.path,
                )
            if self.missing == "error":
                absent = sorted(wanted - set(index.stats))
                if absent:
                    raise QEInputError(
                        f"{index.kind} has no entry for {len(absent)} dataset sentence(s) "
                        f"(Moses ids {', '.join(map(str, absent[:5]))}); set missing='nan' to accept",
                        index.path,
                    )

    # -- extraction -----------------------------------------------------------------------------

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """One row per sentence of ``batch``, columns as in :meth:`specs`."""
        if not self.paths:
            raise QEInputError(
                "decoder features need at least one Moses log: set nbest, trace, search_graph or "
                "word_graph (CLI: --decoder-nbest / --decoder-trace / --decoder-search-graph)"
            )
        indexes = self.load()
        out = np.full((len(batch), len(self.specs())), np.nan, dtype=np.float64)
        for row, dataset_id in enumerate(batch.ids):
            sent_id = self.moses_id(dataset_id)
            values: list[float] = []
            for key, _specs in LOGS:
                if key not in indexes:
                    continue
                index = indexes[key]
                stats = self._lookup(index, sent_id, dataset_id)
                if key == "nbest":
                    values += self._nbest_values(stats, index, sent_id)
                elif key == "trace":
                    values += self._trace_values(stats, index, batch.src[row] if batch.src else "")
                elif key == "search_graph":
                    values += self._sg_values(stats)
                else:
                    values += self._wg_values(stats, batch.src[row] if batch.src else "")
            out[row] = values
        return out

    def _lookup(self, index: LogIndex, sent_id: int, dataset_id: str | int) -> Any:
        """The sentence's summary, ``None`` (NaN values), or a clear error in ``missing="error"``."""
        status = index.status(sent_id)
        if status == "present":
            return index.stats[sent_id]
        if self.missing == "nan":
            return None
        where = f"sentence {dataset_id!r} (Moses id {sent_id})"
        if status == "empty":
            message = (
                f"{index.kind} has no entry for {where} although it has later sentences: Moses produced "
                "nothing for it, or the log belongs to another input; set missing='nan' to accept"
            )
        elif sent_id in index.dropped:
            message = f"{index.kind} entry for {where} was cut off: the file is truncated"
        else:
            last = f"ids 0..{index.max_id}" if index.max_id >= 0 else "no entries"
            message = (
                f"{index.kind} has no entry for {where} (it has {last}): is it the log of this "
                f"dataset, and is id_offset ({self.id_offset}) right? Set missing='nan' to accept"
            )
        raise QEInputError(message, index.path)

    @staticmethod
    def _nbest_values(stats: NBestStats | None, index: LogIndex, sent_id: int) -> list[float]:
        if stats is None:
            values = [math.nan] * len(NBEST_SPECS)
            if index.status(sent_id) == "empty":
                values[_NBEST_SIZE] = 0.0  # Moses produced no hypotheses for this sentence
            return values
        return [
            *stats.mf,
            stats.total,
            float(stats.size),
            stats.margin,
            stats.score_mean,
            stats.score_std,
            stats.len_mean,
            stats.len_std,
            stats.posterior_mean,
            stats.posterior_min,
        ]

    def _trace_values(self, stats: TraceStats | None, index: LogIndex, source: str) -> list[float]:
        if stats is None:
            return [math.nan] * len(TRACE_SPECS)
        untranslated = stats.untranslated
        if untranslated is None:
            phrases = read_trace_phrases(index.path, stats.offset)
            try:
                untranslated = count_untranslated(phrases, source.split())
            except ValueError as exc:
                if self.missing == "error":
                    raise QEInputError(str(exc), index.path, stats.line) from None
                untranslated = math.nan
        return [float(stats.phrases), stats.src_phrase_len, stats.tgt_phrase_len, float(untranslated)]

    @staticmethod
    def _sg_values(stats: SearchGraphStats | None) -> list[float]:
        if stats is None:
            return [math.nan] * len(SEARCH_GRAPH_SPECS)
        return [
            _ratio(stats.hypotheses, stats.source_words),
            _ratio(stats.recombined, stats.source_words),
            stats.fanout_mean,
            stats.fanout_max,
            stats.fscore_std,
        ]

    @staticmethod
    def _wg_values(stats: WordGraphStats | None, source: str) -> list[float]:
        if stats is None:
            return [math.nan] * len(WORD_GRAPH_SPECS)
        words = stats.source_words if stats.source_words is not None else len(source.split())
        return [
            _ratio(stats.nodes, words),
            _ratio(stats.arcs, words),
            _ratio(stats.arcs, stats.nodes),
            stats.out_entropy,
        ]


__all__ = [
    "NBEST_SPECS",
    "SEARCH_GRAPH_SPECS",
    "TRACE_SPECS",
    "WORD_GRAPH_SPECS",
    "DecoderFamily",
    "all_specs",
]
