"""Features of every MT word, gap and source word of a word-level set, one matrix per kind.

- **MT word**: its form (length, punctuation, number, capitalised), its place (position, relative
  position, first, last), how often its type (lowercased) and its bigram with the previous word were
  BAD in training (smoothed, ``qe.wordmodel.typerates``) and how often the type was seen, the same rate
  and the punctuation flag of its left and right neighbours, whether it appears in the source, its
  IBM1 link (``qe.wordmodel.lexicon``): linked to NULL or not, t(mt | best source word), that source
  word's BAD rate and form, how many source words link to it the other way; number and punctuation
  mismatches (a number or punctuation mark the source lacks).
- **Gap**: its place, how often a gap after the word on its left (before the word on its right) was
  BAD in training, and the rate, form and IBM1 link of the words on both sides (NaN at the edges).
- **Source word**: its form and place, its BAD rate and how often it was seen (the log count, a
  frequency class), whether it appears in the MT, its t(src | mt) link and the linked MT word's rate
  and form, how many MT words link to it (and whether it is linked at all), the highest BAD rate and
  mean link probability of those MT words, number and punctuation mismatches with the MT.
- **Every row** also carries its sentence's lengths, length ratio, mean MT and source BAD rates, mean
  link probabilities and share of words linked to NULL.
- **NMT log-probabilities** (optional, ``nmt=`` a ``qe.wordmodel.nmtprobs.WordLogprobs``; columns
  ``NMT_NAMES`` after all the others, absent without it): an MT word's sum, lowest and mean piece
  log-probability, its piece count, the rank of its mean within the sentence (0 the least likely,
  relative), its mean less the sentence's, and its neighbours' mean and lowest; a gap's neighbours'
  mean and lowest (the ``</s>`` value right of the last gap); a source word's linked MT word's mean
  and lowest, and the lowest and mean of the MT words linked to it; every row, the sentence's mean
  and lowest piece log-probability and that of ``</s>``. How unsure the model was of a word is the
  strongest glass-box sign that it is wrong (Fomicheva et al., TACL 2020).
- **Further families** (optional, ``families=`` records of ``qe.wordmodel.families``: ``lm``,
  ``lmclass``, ``spelling``, ``mismatch``, ``pseudoref``, ``edits``, ``aligned``, ``sentence``,
  ``tokenhead``): their columns after all the others, each family fitted on the training set with the
  same folds and IBM1 links (and its own ``family_settings`` table, if any).

Rates are target encodings: on the training set (:meth:`WordFeaturizer.fit_transform`) each row gets
them from the other folds of a seeded split by sentence; a dev or test set
(:meth:`WordFeaturizer.transform`) gets them from all of training. The IBM1 links are cross-fitted the
same way, though they read no tag: tables trained on a sentence link its words far more surely than
on unseen text (en-de train: 0.3% of MT words linked to NULL, dev 18%), and a tagger fitted on such
rows would learn a relation that dev does not show. Missing values are NaN, which the
gradient-boosting tagger takes as such.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.wordmodel.family import Family, FamilyInput, quiet
from qe.wordmodel.lexicon import Lexicon, SentenceLinks
from qe.wordmodel.nmtprobs import WordLogprobs
from qe.wordmodel.typerates import TypeRates, out_of_fold
from qe.words.files import WordLevelData
from qe.words.tags import BAD, TAGS

KINDS = ("target", "gaps", "source")
"""MT words, gaps, source words: the WMT20 names of the three kinds of tags."""

FORM = ("length", "punct", "number", "capital")
SENTENCE = (
    "mt_length",
    "src_length",
    "length_ratio",
    "mean_mt_rate",
    "mean_src_rate",
    "mean_mt_link_prob",
    "mean_src_link_prob",
    "mt_null_share",
    "src_null_share",
)
LINKED = ("null_link", "link_prob", "linked_rate", "linked_punct", "linked_number", "linked_length")
NAMES = {
    "target": (
        *FORM,
        *("position", "relative_position", "first", "last"),
        *("rate", "seen_log", "bigram_rate", "left_rate", "right_rate", "left_punct", "right_punct"),
        "in_source",
        *LINKED,
        *("reverse_links", "number_not_in_source", "punct_not_in_source"),
        *SENTENCE,
    ),
    "gaps": (
        *("position", "relative_position", "first", "last", "after_rate", "before_rate"),
        *(f"left_{name}" for name in ("rate", *FORM, "null_link", "link_prob")),
        *(f"right_{name}" for name in ("rate", *FORM, "null_link", "link_prob")),
        *SENTENCE,
    ),
    "source": (
        *FORM,
        *("position", "relative_position", "first", "last", "rate", "seen_log", "in_mt"),
        *LINKED,
        *("reverse_links", "aligned", "reverse_max_rate", "reverse_mean_prob"),
        *("number_not_in_mt", "punct_not_in_mt"),
        *SENTENCE,
    ),
}
"""The column names of each kind's matrix, in order (without NMT log-probabilities)."""

NMT_SENTENCE = ("nmt_sentence_mean", "nmt_sentence_min", "nmt_eos")
NMT_NAMES = {
    "target": (
        *("nmt_sum", "nmt_min", "nmt_mean", "nmt_pieces", "nmt_rank", "nmt_mean_vs_sentence"),
        *("left_nmt_mean", "left_nmt_min", "right_nmt_mean", "right_nmt_min"),
        *NMT_SENTENCE,
    ),
    "gaps": ("left_nmt_mean", "left_nmt_min", "right_nmt_mean", "right_nmt_min", *NMT_SENTENCE),
    "source": ("linked_nmt_mean", "linked_nmt_min", "reverse_nmt_min", "reverse_nmt_mean", *NMT_SENTENCE),
}
"""The columns appended to each kind's matrix when NMT log-probabilities are given, in order."""


def column_names(kind: str, nmt: bool = False, families: tuple[Family, ...] = ()) -> tuple[str, ...]:
    """The column names of a kind's matrix, with or without the NMT log-probability columns, then
    those of the further ``families`` (``qe.wordmodel.families``) in the order given."""
    names = (*NAMES[kind], *NMT_NAMES[kind]) if nmt else NAMES[kind]
    return (*names, *(name for family in families for name in family.names(kind)))


RATES = ("mt_word", "mt_bigram", "src_word", "gap_after", "gap_before")
START, END = "<s>", "</s>"


@dataclass(frozen=True)
class FeatureTables:
    """``tables[kind]``: one row per tag of that kind, sentences in order; ``lengths[kind][k]``: how many
    rows sentence k has (to cut predictions back into sentences)."""

    tables: dict[str, np.ndarray]
    lengths: dict[str, np.ndarray]

    def sentences(self, kind: str, values: np.ndarray) -> list[np.ndarray]:
        """``values`` (one per row of ``kind``) cut into sentences."""
        values, rows = np.asarray(values), int(self.lengths[kind].sum())
        if len(values) != rows:
            raise QEInputError(f"{kind}: {len(values)} values for {rows} rows")
        return np.split(values, np.cumsum(self.lengths[kind])[:-1])


def tag_labels(data: WordLevelData) -> dict[str, np.ndarray]:
    """Per kind, True for each BAD tag, flattened in row order (the tags must be present and fit)."""
    check_tags(data)
    return {
        kind: np.array([tag == BAD for line in lines for tag in line], dtype=bool)
        for kind, lines in zip(KINDS, (data.mt_tags, data.gap_tags, data.src_tags), strict=True)
    }


def check_tags(data: WordLevelData) -> None:
    """Refuse (one ``QEInputError`` line) a set without its three kinds of tags, or whose tags do not
    fit its sentences: N MT tags, N+1 gap tags, one tag per source word, OK or BAD only."""
    lines = {"MT": data.mt_tags, "gap": data.gap_tags, "source": data.src_tags}
    missing = [name for name, tags in lines.items() if tags is None]
    if missing:
        raise QEInputError(
            f"word-level training needs MT, gap and source tags; missing: {', '.join(missing)}"
        )
    if len(data.mt) != len(data.src):
        raise QEInputError(f"{len(data.src)} source sentences but {len(data.mt)} MT sentences")
    for name, tags in lines.items():
        if len(tags) != len(data.src):
            raise QEInputError(f"{len(tags)} lines of {name} tags for {len(data.src)} sentences")
    for k, (src, mt) in enumerate(zip(data.src, data.mt, strict=True)):
        want = {"MT": len(mt), "gap": len(mt) + 1, "source": len(src)}
        for name, tags in lines.items():
            if len(tags[k]) != want[name]:
                raise QEInputError(f"sentence {k + 1}: {len(tags[k])} {name} tags where {want[name]} fit")
            unknown = next((tag for tag in tags[k] if tag not in TAGS), None)
            if unknown is not None:
                raise QEInputError(f"sentence {k + 1}: unknown {name} tag {str(unknown)[:40]!r}")


class WordFeaturizer:
    """Fitted on a tagged training set (IBM1 tables both ways, the type BAD rates); then makes the
    feature tables of any set with the same kind of tokens."""

    def __init__(
        self,
        folds: int = 5,
        seed: int = 0,
        strength: float = 2.0,
        iterations: int = 5,
        families: tuple[Family, ...] = (),
        languages: tuple[str | None, str | None] = (None, None),
        family_settings: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if folds < 2:
            raise QEInputError(f"cross-fitting needs at least 2 folds, not {folds}")
        self.folds = folds
        self.seed = seed
        self.strength = strength
        self.iterations = iterations
        self.families = tuple(families)
        """Further families (``qe.wordmodel.families``) whose columns follow the core (and NMT) ones."""
        self.languages = languages
        """(source, target) language codes, for the families that need them."""
        self.family_settings = dict(family_settings or {})
        """Family name -> its own settings (``[words.tokenhead]``), read when it is fitted."""

    def fit_transform(
        self,
        data: WordLevelData,
        nmt: WordLogprobs | None = None,
        say: Callable[[str], None] = quiet,
    ) -> FeatureTables:
        """Fit on ``data`` (tagged) and return its tables, its rates cross-fitted over sentence folds;
        with ``nmt`` (its MT words' log-probabilities) the NMT columns too, and every later set must
        then bring its own. ``say`` takes the further families' progress lines (a long training)."""
        labels = tag_labels(data)
        _check_nmt(data, nmt)
        self.nmt_ = nmt is not None
        self.lexicon_ = Lexicon.train(data.src, data.mt, self.iterations)
        keys = _rate_keys(data)
        targets = {name: labels[_RATE_KIND[name]] for name in RATES}
        self.rates_ = {name: TypeRates.fit(keys[name], targets[name], self.strength) for name in RATES}
        sentence_fold = np.random.default_rng(self.seed).permutation(len(data)) % self.folds
        lengths = _lengths(data)
        rates = {
            name: out_of_fold(
                keys[name],
                targets[name],
                np.repeat(sentence_fold, lengths[_RATE_KIND[name]]),
                self.strength,
            )
            for name in RATES
        }
        scale = self.folds / (self.folds - 1)  # counts on the other folds, to the scale of all of training
        rates = {name: (rate, seen * scale) for name, (rate, seen) in rates.items()}
        links = [None] * len(data)
        for fold in range(self.folds):
            inside = np.flatnonzero(sentence_fold == fold)
            outside = np.flatnonzero(sentence_fold != fold)
            lexicon = Lexicon.train(
                [data.src[k] for k in outside], [data.mt[k] for k in outside], self.iterations
            )
            for k in inside.tolist():
                links[k] = lexicon.links(data.src[k], data.mt[k])
        tables = self._tables(data, rates, links, nmt)
        inp = self._input(data, links, nmt, sentence_fold, labels, say)
        self.family_states_ = {}
        extra = []
        for family in self.families:
            assert family.fit is not None, f"{family.name} is built in"
            settings = self.family_settings.get(family.name, {})
            self.family_states_[family.name], columns = family.fit(replace(inp, settings=settings))
            extra.append(columns)
        return _appended(tables, extra)

    def transform(self, data: WordLevelData, nmt: WordLogprobs | None = None) -> FeatureTables:
        """The tables of ``data`` (tags not needed), rates from all of the training set; ``nmt``
        exactly when the featurizer was fitted with NMT log-probabilities."""
        if not hasattr(self, "rates_"):
            raise QEInputError("the word featurizer is not fitted: call fit_transform on a training set")
        if len(data.mt) != len(data.src):
            raise QEInputError(f"{len(data.src)} source sentences but {len(data.mt)} MT sentences")
        fitted_with_nmt = getattr(self, "nmt_", False)
        if (nmt is not None) != fitted_with_nmt:
            raise QEInputError(
                "the word featurizer was fitted "
                + (
                    "with NMT log-probabilities: give them"
                    if fitted_with_nmt
                    else "without NMT log-probabilities"
                )
            )
        _check_nmt(data, nmt)
        keys = _rate_keys(data)
        links = [self.lexicon_.links(src, mt) for src, mt in zip(data.src, data.mt, strict=True)]
        rates = {name: self.rates_[name].rates(keys[name]) for name in RATES}
        tables = self._tables(data, rates, links, nmt)
        inp = self._input(data, links, nmt)
        extra = []
        for family in self.families:
            assert family.transform is not None, f"{family.name} is built in"
            extra.append(family.transform(self.family_states_[family.name], inp))
        return _appended(tables, extra)

    def _input(
        self,
        data: WordLevelData,
        links: list[SentenceLinks],
        nmt: WordLogprobs | None,
        folds: np.ndarray | None = None,
        bad: dict[str, np.ndarray] | None = None,
        say: Callable[[str], None] = quiet,
    ) -> FamilyInput:
        """What the further families read of a set (folds and tags on training only)."""
        src_lang, tgt_lang = self.languages
        n_folds = self.folds if folds is not None else 0
        return FamilyInput(data, links, nmt, src_lang, tgt_lang, folds, n_folds, bad or {}, say=say)

    def _tables(
        self,
        data: WordLevelData,
        rates: dict[str, tuple[np.ndarray, np.ndarray]],
        links: list[SentenceLinks],
        nmt: WordLogprobs | None,
    ) -> FeatureTables:
        lengths = _lengths(data)
        starts = {kind: np.concatenate([[0], np.cumsum(lengths[kind])]) for kind in KINDS}
        rows: dict[str, list[np.ndarray]] = {kind: [] for kind in KINDS}
        for k, (src, mt) in enumerate(zip(data.src, data.mt, strict=True)):
            cut = {kind: slice(starts[kind][k], starts[kind][k + 1]) for kind in KINDS}
            mine = {
                name: (r[cut[_RATE_KIND[name]]], c[cut[_RATE_KIND[name]]]) for name, (r, c) in rates.items()
            }
            sentence = _Sentence(src, mt, links[k], mine)
            made = {"target": sentence.target(), "gaps": sentence.gaps(), "source": sentence.source()}
            if nmt is not None:
                extra = _nmt_columns(nmt.words[k], nmt.sentence[k], links[k], len(src))
                made = {kind: np.hstack([made[kind], extra[kind]]) for kind in KINDS}
            for kind in KINDS:
                rows[kind].append(made[kind])
        width = {kind: len(column_names(kind, nmt is not None)) for kind in KINDS}
        tables = {
            kind: np.concatenate(rows[kind]) if rows[kind] else np.zeros((0, width[kind])) for kind in KINDS
        }
        return FeatureTables(tables, lengths)


def _appended(tables: FeatureTables, extra: list[dict[str, np.ndarray]]) -> FeatureTables:
    """``tables`` with the further families' columns after their own (unchanged when none)."""
    if not extra:
        return tables
    out = {}
    for kind in KINDS:
        rows = len(tables.tables[kind])
        parts = [np.asarray(columns[kind], dtype=np.float64).reshape(rows, -1) for columns in extra]
        out[kind] = np.hstack([tables.tables[kind], *parts])
    return FeatureTables(out, tables.lengths)


_RATE_KIND = {
    "mt_word": "target",
    "mt_bigram": "target",
    "src_word": "source",
    "gap_after": "gaps",
    "gap_before": "gaps",
}
"""The kind of tags each rate counts (and whose rows it is given to)."""


def _check_nmt(data: WordLevelData, nmt: WordLogprobs | None) -> None:
    """Refuse NMT log-probabilities that do not fit the set: one line per sentence, one row per MT word."""
    if nmt is None:
        return
    if len(nmt.words) != len(data.mt) or len(nmt.sentence) != len(data.mt):
        raise QEInputError(
            f"NMT log-probabilities for {len(nmt.words)} sentences, the set has {len(data.mt)}"
        )
    for k, (table, words) in enumerate(zip(nmt.words, data.mt, strict=True)):
        if len(table) != len(words):
            raise QEInputError(
                f"sentence {k + 1}: NMT log-probabilities for {len(table)} MT words, the MT has {len(words)}"
            )


def _nmt_columns(
    words: np.ndarray, sentence: np.ndarray, links: SentenceLinks, m: int
) -> dict[str, np.ndarray]:
    """One sentence's NMT columns of each kind (``NMT_NAMES``) from its words' (sum, min, mean,
    pieces) and its (mean, min, eos) log-probabilities."""
    n = len(words)
    words = np.asarray(words, dtype=np.float64).reshape(n, 4)
    mean, low = words[:, 2], words[:, 1]
    rank = np.full(n, np.nan)
    known = np.flatnonzero(~np.isnan(mean))
    rank[known[np.argsort(mean[known], kind="stable")]] = np.arange(len(known)) / max(len(known) - 1, 1)
    pair = np.column_stack([mean, low])
    common = np.asarray(sentence, dtype=np.float64)
    before, after = np.arange(n) - 1, np.arange(n) + 1
    target = np.column_stack(
        [words, rank, mean - common[0], _pick(pair, before).reshape(n, 2), _pick(pair, after).reshape(n, 2)]
    )
    eos = np.array([[common[2], common[2]]])
    gaps = np.hstack([_pick(pair, np.arange(n + 1) - 1).reshape(n + 1, 2), np.vstack([pair, eos])])
    reverse_min, reverse_sum = np.full(m, np.nan), np.full(m, np.nan)
    reverse_count = np.zeros(m)
    linked = (links.mt_to_src >= 0) & ~np.isnan(mean)
    if linked.any():
        to = links.mt_to_src[linked]
        np.fmin.at(reverse_min, to, low[linked])
        reverse_sum[np.unique(to)] = 0.0
        np.add.at(reverse_sum, to, mean[linked])
        np.add.at(reverse_count, to, 1.0)
    source = np.column_stack(
        [_pick(pair, links.src_to_mt).reshape(m, 2), reverse_min, reverse_sum / np.maximum(reverse_count, 1)]
    )
    return {
        kind: np.hstack([table.reshape(rows, -1), np.tile(common, (rows, 1))])
        for kind, table, rows in (("target", target, n), ("gaps", gaps, n + 1), ("source", source, m))
    }


def _lengths(data: WordLevelData) -> dict[str, np.ndarray]:
    """Rows per sentence of each kind: N MT words, N+1 gaps, the source words."""
    return {
        "target": np.array([len(m) for m in data.mt], dtype=np.int64),
        "gaps": np.array([len(m) + 1 for m in data.mt], dtype=np.int64),
        "source": np.array([len(s) for s in data.src], dtype=np.int64),
    }


def _rate_keys(data: WordLevelData) -> dict[str, list[str]]:
    """The key of each row for each rate: lowercased MT word, (previous, this) MT bigram, lowercased
    source word, the word before a gap and the word after it (sentence edges as <s> and </s>)."""
    keys: dict[str, list[str]] = {name: [] for name in RATES}
    for src, mt in zip(data.src, data.mt, strict=True):
        low = [w.lower() for w in mt]
        padded = [START, *low, END]
        keys["mt_word"] += low
        keys["mt_bigram"] += [f"{a} {b}" for a, b in zip(padded[:-2], low, strict=True)]
        keys["src_word"] += [w.lower() for w in src]
        keys["gap_after"] += padded[:-1]
        keys["gap_before"] += padded[1:]
    return keys


@lru_cache(maxsize=1 << 18)
def _form(token: str) -> tuple[int, int, int, int]:
    """(length, all punctuation or symbols, holds a digit, starts with a capital) of one token."""
    punct = all(unicodedata.category(c)[0] in "PS" for c in token)
    return len(token), int(punct), int(any(c.isdigit() for c in token)), int(token[:1].isupper())


def _forms(tokens: list[str]) -> np.ndarray:
    return np.array([_form(t) for t in tokens], dtype=np.float64).reshape(len(tokens), len(FORM))


def _place(n: int) -> np.ndarray:
    """(position, relative position, first, last) of each of n slots."""
    position = np.arange(n, dtype=np.float64)
    return np.column_stack([position, position / max(n - 1, 1), position == 0, position == n - 1])


def _pick(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]`` along the first axis, NaN where ``index`` is -1 (or out of range)."""
    values = np.asarray(values, dtype=np.float64)
    ok = (index >= 0) & (index < len(values))
    out = np.full((len(index), *values.shape[1:]), np.nan)
    out[ok] = values[index[ok]]
    return out


def _mean(values: np.ndarray) -> float:
    """The mean, NaN for no value (a sentence with an empty side)."""
    return float(values.mean()) if len(values) else np.nan


class _Sentence:
    """One sentence's rows of the three kinds, from its tokens, IBM1 links and rates."""

    def __init__(
        self,
        src: list[str],
        mt: list[str],
        links: SentenceLinks,
        rates: dict[str, tuple[np.ndarray, np.ndarray]],
    ) -> None:
        self.n, self.m = len(mt), len(src)
        self.links = links
        self.rates = rates
        self.mt_form, self.src_form = _forms(mt), _forms(src)
        low_src, low_mt = [w.lower() for w in src], [w.lower() for w in mt]
        src_types, mt_types = set(low_src), set(low_mt)
        self.in_src = np.array([w in src_types for w in low_mt], dtype=np.float64)
        self.in_mt = np.array([w in mt_types for w in low_src], dtype=np.float64)
        mt_rate, src_rate = rates["mt_word"][0], rates["src_word"][0]
        self.mt_links_in = np.bincount(links.src_to_mt[links.src_to_mt >= 0], minlength=self.n).astype(float)
        self.src_links_in = np.bincount(links.mt_to_src[links.mt_to_src >= 0], minlength=self.m).astype(float)
        self.common = np.array(
            [
                self.n,
                self.m,
                self.n / max(self.m, 1),
                _mean(mt_rate),
                _mean(src_rate),
                _mean(links.mt_prob),
                _mean(links.src_prob),
                _mean(links.mt_to_src < 0),
                _mean((links.src_to_mt < 0) & (self.src_links_in == 0)),
            ]
        )

    def _linked(self, to: np.ndarray, prob: np.ndarray, rate: np.ndarray, form: np.ndarray) -> np.ndarray:
        """The LINKED columns: NULL link, link probability, the linked word's rate, punct, number, length."""
        return np.column_stack([to < 0, prob, _pick(rate, to), _pick(form[:, [1, 2, 0]], to)])

    def _with_common(self, kind: str, columns: np.ndarray, rows: int) -> np.ndarray:
        """The sentence's columns after each row's own (``rows`` fixes the shape of an empty sentence)."""
        columns = columns.reshape(rows, len(NAMES[kind]) - len(SENTENCE))
        return np.hstack([columns, np.tile(self.common, (rows, 1))])

    def target(self) -> np.ndarray:
        n, form, links = self.n, self.mt_form, self.links
        rate, seen = self.rates["mt_word"]
        before, after = np.arange(n) - 1, np.arange(n) + 1
        columns = np.column_stack(
            [
                form,
                _place(n),
                rate,
                np.log1p(seen),
                self.rates["mt_bigram"][0],
                _pick(rate, before),
                _pick(rate, after),
                _pick(form[:, 1], before),
                _pick(form[:, 1], after),
                self.in_src,
                self._linked(links.mt_to_src, links.mt_prob, self.rates["src_word"][0], self.src_form),
                self.mt_links_in,
                (form[:, 2] == 1) & (self.in_src == 0),
                (form[:, 1] == 1) & (self.in_src == 0),
            ]
        )
        return self._with_common("target", columns, n)

    def gaps(self) -> np.ndarray:
        n, form, links = self.n, self.mt_form, self.links
        rate = self.rates["mt_word"][0]
        word = np.column_stack([rate, form, links.mt_to_src < 0, links.mt_prob]).reshape(n, 7)
        left, right = np.arange(n + 1) - 1, np.arange(n + 1)
        columns = np.column_stack(
            [
                _place(n + 1),
                self.rates["gap_after"][0],
                self.rates["gap_before"][0],
                _pick(word, left),
                _pick(word, right),
            ]
        )
        return self._with_common("gaps", columns, n + 1)

    def source(self) -> np.ndarray:
        m, form, links = self.m, self.src_form, self.links
        rate, seen = self.rates["src_word"]
        mt_rate = self.rates["mt_word"][0]
        linked_here = links.mt_to_src >= 0
        reverse_max = np.full(m, np.nan)
        reverse_prob = np.full(m, np.nan)
        if linked_here.any():
            to = links.mt_to_src[linked_here]
            np.fmax.at(reverse_max, to, mt_rate[linked_here])
            reverse_prob[self.src_links_in > 0] = 0.0
            np.add.at(reverse_prob, to, links.mt_prob[linked_here])
            reverse_prob /= np.maximum(self.src_links_in, 1)
        columns = np.column_stack(
            [
                form,
                _place(m),
                rate,
                np.log1p(seen),
                self.in_mt,
                self._linked(links.src_to_mt, links.src_prob, mt_rate, self.mt_form),
                self.src_links_in,
                (self.src_links_in > 0) | (links.src_to_mt >= 0),
                reverse_max,
                reverse_prob,
                (form[:, 2] == 1) & (self.in_mt == 0),
                (form[:, 1] == 1) & (self.in_mt == 0),
            ]
        )
        return self._with_common("source", columns, m)
