"""Leakage check for resource bundles: corpus sentences that copy, or nearly copy, evaluation sentences.

Two tests, both against every sentence of the ``[leakage] eval_files``:

* exact: the same text once lower-cased and whitespace-collapsed;
* near-duplicate: after also folding Unicode compatibility forms, replacing every digit by ``0``
  and punctuation / symbols by spaces, a chrF (character 1-6-grams, beta 2, as sacreBLEU computes
  it) of at least ``near_chrf`` (default 0.9; 0 turns this test off). chrF is only computed for
  candidate pairs: the corpus line must contain at least half of the evaluation sentence's *key
  words* (its words that are rare in the evaluation data, or all its words when it has fewer than
  three rare ones). Candidates come from one sparse matrix product per block of corpus lines, so
  ~26k corpus pairs are checked against ~9k evaluation lines in a few seconds.

A resource corpus holding such lines leaks the evaluation data; the bundle's QE training split
holding them is the data itself (real QE data repeats sentences across its splits): its
:class:`Repeats` say how much of the evaluation data it repeats, and only a training split repeating
more than ``MAX_REPEAT_SHARE`` of an evaluation file is taken for the evaluation data itself.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from qe.infra.io import read_text_lines

if TYPE_CHECKING:  # scipy.sparse is imported where the index is built: qe predict never needs it
    from scipy import sparse

DEFAULT_NEAR_CHRF = 0.9
MIN_NEAR_CHRF = 0.5  # lower thresholds call unrelated sentences near-duplicates
CHRF_ORDER = 6
CHRF_BETA = 2.0
KEY_SHARE = 0.5  # a candidate holds at least this share of the evaluation sentence's key words
MIN_NEAR_WORDS = 4  # shorter evaluation sentences are only compared exactly
MIN_KEYS = 3  # evaluation sentences with fewer rare words use all their words as keys
BLOCK = 4096  # corpus lines per sparse product (bounds memory)
SHOWN = 3  # matches quoted in the refusal message and kept in the manifest
MAX_REPEAT_SHARE = 0.2
"""A training split repeating more of an evaluation file's sentences holds the evaluation data (real
splits repeat a few per cent: MLQE-PE ne-en train repeats 4.5 % of test20, see docs/own-data.md)."""


def normalize_for_overlap(line: str) -> str:
    """Lower-cased, whitespace-collapsed form used for the exact comparison."""
    return " ".join(line.lower().split())


def _near_table(texts: Iterable[str]) -> dict[int, str]:
    """``str.translate`` table for the characters of ``texts``: digits -> 0, punctuation / symbols -> ' '."""
    table: dict[int, str] = {}
    for char in set("".join(texts)):
        category = unicodedata.category(char)
        if category == "Nd":
            table[ord(char)] = "0"
        elif category[0] in "PS":
            table[ord(char)] = " "
    return table


def normalize_many_for_near(lines: Sequence[str]) -> list[str]:
    """The near-duplicate forms of ``lines`` (NFKC, lower case, digits -> 0, no punctuation, one space)."""
    folded = [unicodedata.normalize("NFKC", line).lower() for line in lines]
    table = _near_table(folded)
    return [" ".join(text.translate(table).split()) for text in folded]


def normalize_for_near(line: str) -> str:
    """The near-duplicate form of one line (see :func:`normalize_many_for_near`)."""
    return normalize_many_for_near([line])[0]


def char_ngrams(text: str, order: int = CHRF_ORDER) -> tuple[Counter[str], int]:
    """Character 1..``order``-gram counts of ``text`` with whitespace removed (chrF's statistics; the
    orders share one counter since n-grams of different orders are different strings) and its length."""
    text = "".join(text.split())
    size = len(text)
    return Counter(text[i : i + n] for n in range(1, order + 1) for i in range(size - n + 1)), size


def chrf_from_ngrams(
    hyp: tuple[Counter[str], int], ref: tuple[Counter[str], int], beta: float = CHRF_BETA
) -> float:
    """chrF in [0, 1] from :func:`char_ngrams` of both sides: precision and recall averaged over the
    orders both sides have, then their F-beta (sacreBLEU 2's default, ``eps_smoothing=False``)."""
    (hyp_counts, hyp_size), (ref_counts, ref_size) = hyp, ref
    orders = min(CHRF_ORDER, hyp_size, ref_size)
    if not orders:
        return 0.0
    small, large = hyp_counts, ref_counts
    if len(small) > len(large):
        small, large = large, small
    matched = [0] * (CHRF_ORDER + 1)
    for gram, count in small.items():
        other = large.get(gram)
        if other:
            matched[len(gram)] += min(count, other)
    precision = sum(matched[n] / (hyp_size - n + 1) for n in range(1, orders + 1)) / orders
    recall = sum(matched[n] / (ref_size - n + 1) for n in range(1, orders + 1)) / orders
    if not precision + recall:
        return 0.0
    factor = beta * beta
    return (1 + factor) * precision * recall / (factor * precision + recall)


def chrf(hyp: str, ref: str) -> float:
    """Sentence chrF (character 6-grams, beta 2, whitespace ignored) of ``hyp`` against ``ref``, in [0, 1]."""
    return chrf_from_ngrams(char_ngrams(hyp), char_ngrams(ref))


def length_ratio_bounds(threshold: float, beta: float = CHRF_BETA) -> tuple[float, float]:
    """Length ratios (hyp / ref, whitespace removed) outside which chrF is below ``threshold``.

    For a shorter hypothesis every order's recall is at most the ratio r (and precision at most 1),
    so chrF <= (1 + b²) r / (b² + r); for a longer one precision is at most 1 / r.
    """
    factor = beta * beta
    return threshold * factor / (1 + factor - threshold), (1 + factor) / threshold - factor


@dataclass
class EvalSentences:
    """The evaluation sentences, indexed for the exact and the near-duplicate test."""

    texts: list[str]  # as read (stripped)
    sources: list[tuple[str, int]]  # (file, 1-based line) of each
    exact: dict[str, int] = field(init=False)  # exact key -> first index
    near: list[str] = field(init=False)  # near-duplicate forms
    spaceless: dict[str, int] = field(init=False)  # near form without spaces -> first index (chrF 1)
    _ngram_cache: dict[int, tuple[Counter[str], int]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.exact = {}
        for index, text in enumerate(self.texts):
            self.exact.setdefault(normalize_for_overlap(text), index)
        self.near = normalize_many_for_near(self.texts)
        self.spaceless = {}
        for index, text in enumerate(self.near):
            if len(text.split()) >= MIN_NEAR_WORDS:
                self.spaceless.setdefault(text.replace(" ", ""), index)

    def __len__(self) -> int:
        return len(self.texts)

    @cached_property
    def _index(self) -> tuple[dict[str, int], sparse.csr_matrix, np.ndarray, np.ndarray]:
        """Word vocabulary, the (vocabulary x sentence) key-word matrix, each sentence's number of keys
        (0: too short for the near-duplicate test) and its length without spaces."""
        from scipy import sparse

        words = [set(text.split()) for text in self.near]
        frequency = Counter(word for sentence in words for word in sentence)
        rare_limit = max(20, len(words) // 100)  # a word in at most 1 % of the sentences is rare
        vocabulary: dict[str, int] = {}
        rows, cols = [], []
        counts = np.zeros(len(words), dtype=np.int64)
        for column, (text, sentence) in enumerate(zip(self.near, words, strict=True)):
            if len(text.split()) < MIN_NEAR_WORDS:
                continue
            keys = [w for w in sentence if frequency[w] <= rare_limit]
            if len(keys) < MIN_KEYS:
                keys = list(sentence)
            counts[column] = len(keys)
            for word in keys:
                rows.append(vocabulary.setdefault(word, len(vocabulary)))
                cols.append(column)
        matrix = sparse.csr_matrix(
            (np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(len(vocabulary), len(words))
        )
        sizes = np.array([len(text.replace(" ", "")) for text in self.near], dtype=np.float64)
        return vocabulary, matrix, counts, sizes

    @cached_property
    def _positions(self) -> dict[tuple[str, int], int]:
        """(file, line) -> index of each sentence."""
        return {source: index for index, source in enumerate(self.sources)}

    def covered(self, overlap: Overlap) -> tuple[str, int, int]:
        """The evaluation file whose sentences ``overlap``'s lines cover most: (file, its sentences
        copied or nearly copied, its sentences). A sentence counts when it is a matched one or has the
        same exact (near-duplicate) form as an exactly (nearly) matched one, so repeats inside the
        evaluation file count once per line."""
        exact = {
            normalize_for_overlap(self.texts[self._positions[m.eval_file, m.eval_line]])
            for m in overlap.exact
        }
        near = {self.near[self._positions[m.eval_file, m.eval_line]] for m in overlap.near}
        totals: Counter[str] = Counter()
        repeated: Counter[str] = Counter()
        for index, (file, _) in enumerate(self.sources):
            totals[file] += 1
            if self.near[index] in near or normalize_for_overlap(self.texts[index]) in exact:
                repeated[file] += 1
        file = max(repeated, key=lambda f: (repeated[f] / totals[f], repeated[f]))
        return file, repeated[file], totals[file]

    def ngrams(self, index: int) -> tuple[Counter[str], int]:
        """chrF statistics of one evaluation sentence (computed once)."""
        if index not in self._ngram_cache:
            self._ngram_cache[index] = char_ngrams(self.near[index])
        return self._ngram_cache[index]

    def candidates(self, texts: Sequence[str], threshold: float) -> Iterator[tuple[int, int]]:
        """(text index, evaluation index) pairs worth a chrF: the text holds at least ``KEY_SHARE`` of
        the sentence's key words and its length allows a chrF of ``threshold``."""
        from scipy import sparse

        vocabulary, matrix, counts, sizes = self._index
        needed = np.maximum(1, np.ceil(KEY_SHARE * counts))
        low, high = length_ratio_bounds(threshold)
        for begin in range(0, len(texts), BLOCK):
            block = texts[begin : begin + BLOCK]
            indptr, indices = [0], []
            for text in block:
                indices.extend({vocabulary[w] for w in text.split() if w in vocabulary})
                indptr.append(len(indices))
            present = sparse.csr_matrix(
                (np.ones(len(indices), dtype=np.int32), indices, indptr), shape=(len(block), len(vocabulary))
            )
            shared = (present @ matrix).tocoo()
            block_sizes = np.array([len(text.replace(" ", "")) for text in block], dtype=np.float64)
            ratio = block_sizes[shared.row] / np.maximum(sizes[shared.col], 1.0)
            keep = (counts[shared.col] > 0) & (shared.data >= needed[shared.col])
            keep &= (ratio >= low) & (ratio <= high)
            yield from zip((shared.row[keep] + begin).tolist(), shared.col[keep].tolist(), strict=True)


def load_eval_sentences(files: Iterable[Path]) -> EvalSentences:
    """Every non-blank line of the evaluation files, with where it comes from."""
    texts: list[str] = []
    sources: list[tuple[str, int]] = []
    for path in files:
        for number, line in enumerate(read_text_lines(path, what="evaluation file"), start=1):
            if line.strip():
                texts.append(line.strip())
                sources.append((str(path), number))
    return EvalSentences(texts, sources)


@dataclass(frozen=True)
class Match:
    """One corpus line that copies (chrF 1.0, ``exact``) or nearly copies an evaluation sentence."""

    line: int  # 1-based line of the corpus file
    text: str
    eval_file: str
    eval_line: int
    chrf: float
    exact: bool

    def describe(self) -> str:
        """``line N 'text' ~ file:line (chrF x)`` for messages."""
        text = self.text if len(self.text) <= 50 else self.text[:47] + "..."
        how = "same sentence" if self.exact else f"chrF {self.chrf:.2f}"
        return f"line {self.line} {text!r} ~ {self.eval_file}:{self.eval_line} ({how})"


@dataclass
class Overlap:
    """The lines of one corpus file that copy or nearly copy evaluation sentences."""

    corpus: str
    exact: list[Match]
    near: list[Match]
    near_chrf: float

    @property
    def matches(self) -> list[Match]:
        """Every match, in corpus line order."""
        return sorted(self.exact + self.near, key=lambda m: m.line)

    @property
    def lines(self) -> list[int]:
        """The 1-based corpus lines involved, in order."""
        return [m.line for m in self.matches]

    def reason(self, advice: str = "remove the corpus or pass --allow-overlap") -> str:
        """What is wrong, for an error naming ``corpus`` and the first matching line, then ``advice``."""
        parts = []
        if self.exact:
            parts.append(f"{len(self.exact)} sentence(s)")
        if self.near:
            parts.append(f"{len(self.near)} near-duplicate(s) (chrF >= {self.near_chrf:g})")
        shown = "; ".join(m.describe() for m in self.matches[:SHOWN])
        more = f"; {len(self.lines) - SHOWN} more" if len(self.lines) > SHOWN else ""
        return f"corpus shares {' and '.join(parts)} with the evaluation data ({shown}{more}); {advice}"

    def manifest_entry(self) -> dict[str, Any]:
        """What the bundle manifest records: counts, the first lines and the first matches."""
        return {
            "corpus": self.corpus,
            "count": len(self.lines),
            "exact": len(self.exact),
            "near_duplicates": len(self.near),
            "first_line": self.lines[0],
            "first_lines": self.lines[:10],
            "eval_files": sorted({m.eval_file for m in self.matches}),
            "examples": [
                {"line": m.line, "eval": f"{m.eval_file}:{m.eval_line}", "chrf": round(m.chrf, 4)}
                for m in self.matches[:SHOWN]
            ],
        }


@dataclass
class Repeats:
    """The lines of one file of the bundle's QE training split that repeat evaluation sentences, and
    how much of the evaluation data they cover (on the evaluation file they cover most)."""

    overlap: Overlap
    lines: int  # lines of the training file
    eval_file: str
    eval_repeated: int  # sentences of ``eval_file`` the training file repeats
    eval_sentences: int  # sentences of ``eval_file``

    @classmethod
    def of(cls, overlap: Overlap, lines: int, evaluation: EvalSentences) -> Repeats:
        """The repeats of a training file with ``lines`` lines whose overlap is ``overlap``."""
        return cls(overlap, lines, *evaluation.covered(overlap))

    @property
    def share(self) -> float:
        """The share of ``eval_file``'s sentences repeated."""
        return self.eval_repeated / self.eval_sentences

    @property
    def holds_evaluation_data(self) -> bool:
        """More than ``MAX_REPEAT_SHARE`` repeated: the evaluation data, not the repeats of real data."""
        return self.share > MAX_REPEAT_SHARE

    def reason(self, advice: str) -> str:
        """Why a training file repeating this much is refused, then ``advice``."""
        return self.overlap.reason(
            f"they are {self.eval_repeated} of the {self.eval_sentences} sentences of {self.eval_file} "
            f"({self.share:.0%}), where a training split repeats at most {MAX_REPEAT_SHARE:.0%} of its "
            f"evaluation data: it holds the evaluation data; {advice}"
        )

    def manifest_entry(self) -> dict[str, Any]:
        """The overlap's manifest entry plus the training file's lines and the evaluation data covered."""
        return {
            **self.overlap.manifest_entry(),
            "lines": self.lines,
            "eval_file": self.eval_file,
            "eval_sentences": self.eval_sentences,
            "eval_repeated": self.eval_repeated,
            "eval_share": round(self.share, 6),
        }


def describe_repeats(leakage: dict[str, Any]) -> list[str]:
    """What ``qe resources build`` prints about the repeats of the evaluation data a bundle's training
    split kept (its manifest's ``leakage.repeats``): one line per file, with the count and the share."""
    kept = [entry for entry in leakage.get("repeats", []) if not entry["dropped"]]
    if not kept:
        return []
    lines = [
        f"the training split ({', '.join(kept[0]['readers'])}) repeats evaluation sentences, as real QE "
        "data does (kept; drop_overlap = true leaves them out of every member):"
    ]
    for e in kept:
        found = f"{e['count'] / e['lines']:.2%}; {e['exact']} same, {e['near_duplicates']} near-duplicate(s)"
        covered = f"{e['eval_repeated']} of the {e['eval_sentences']} sentences of {e['eval_file']}"
        lines.append(
            f"  {e['side']} {e['corpus']}: {e['count']} of {e['lines']} lines ({found}) repeat "
            f"{covered} ({e['eval_share']:.1%})"
        )
    return lines


def find_overlaps(
    corpus: Path | str, lines: Sequence[str], evaluation: EvalSentences, near_chrf: float = DEFAULT_NEAR_CHRF
) -> Overlap | None:
    """The lines of one corpus file that copy (exact) or nearly copy (chrF >= ``near_chrf``, unless 0)
    evaluation sentences, or None."""
    exact: list[Match] = []
    rest: dict[str, list[int]] = {}  # near form -> 0-based lines not matched exactly
    near_forms = normalize_many_for_near(lines) if near_chrf else [""] * len(lines)
    for index, line in enumerate(lines):
        hit = evaluation.exact.get(normalize_for_overlap(line))
        if hit is not None:
            exact.append(Match(index + 1, line.strip(), *evaluation.sources[hit], 1.0, True))
        elif near_forms[index]:
            rest.setdefault(near_forms[index], []).append(index)
    near: list[Match] = []
    if near_chrf and rest:
        forms = list(rest)
        best: dict[int, tuple[float, int]] = {}  # form index -> (chrF, eval index)
        for form, text in enumerate(forms):
            same = evaluation.spaceless.get(text.replace(" ", ""))
            if same is not None:  # only spacing, case, digits or punctuation differ: chrF 1
                best[form] = (1.0, same)
        form_ngrams: dict[int, tuple[Counter[str], int]] = {}
        for form, candidate in evaluation.candidates(forms, near_chrf):
            if best.get(form, (0.0, 0))[0] == 1.0:
                continue
            if form not in form_ngrams:
                form_ngrams[form] = char_ngrams(forms[form])
            score = chrf_from_ngrams(form_ngrams[form], evaluation.ngrams(candidate))
            if score >= near_chrf and score > best.get(form, (-1.0, 0))[0]:
                best[form] = (score, candidate)
        for form, (score, candidate) in best.items():
            for index in rest[forms[form]]:
                source = evaluation.sources[candidate]
                near.append(Match(index + 1, lines[index].strip(), *source, score, False))
        near.sort(key=lambda m: m.line)
    if not exact and not near:
        return None
    return Overlap(str(corpus), exact, near, near_chrf)


def check_leakage(
    corpora: Iterable[tuple[Path | str, Sequence[str]]],
    eval_files: Iterable[Path],
    near_chrf: float = DEFAULT_NEAR_CHRF,
) -> tuple[EvalSentences, list[Overlap]]:
    """Check every (path, lines) corpus file against the evaluation files; the overlapping ones."""
    evaluation = load_eval_sentences(eval_files)
    overlaps = [
        overlap
        for path, lines in corpora
        if (overlap := find_overlaps(path, lines, evaluation, near_chrf)) is not None
    ]
    return evaluation, overlaps
