"""An n-gram language model held as plain arrays, queried in Python: what the word ``lm`` family
saves in a ``.qwords`` file instead of a KenLM binary (a stranger's binary is never loaded).

:func:`train_arrays` runs KenLM's ``lmplz`` (``qe.resources.lm.train_lm``, modified Kneser-Ney) on
the sentences and reads the ARPA file it writes into an :class:`ArpaModel`: a vocabulary and, per
order, the n-grams' word indices, log10 probabilities and back-off weights. :meth:`ArpaModel.scores`
gives per token (then ``</s>``) what KenLM's ``full_scores`` gives: the log10 probability given
``<s>`` and the tokens before, the length of the n-gram matched (the back-off behaviour: 1 means it
fell back to the word alone) and whether the word is out of the vocabulary (scored as ``<unk>``).
Tokens are scored as written; the callers lowercase both sides. :func:`model_of` reads the arrays
back, checked: a vocabulary of distinct UTF-8 words with ``<s>``, ``</s>`` and ``<unk>``, indices inside
it, every value finite, probabilities at most 0, no n-gram twice.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qe.infra.arrays import pack_lines
from qe.infra.errors import QEInputError
from qe.predictors.check import F8, BadModel, check_array
from qe.wordmodel.state import words

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
RESERVED = frozenset((BOS, EOS, UNK))
MAX_ORDER = 6
I4 = np.dtype("<i4")


@dataclass
class ArpaModel:
    """``vocab`` (index -> word) and, per order n (1-based, ``grams[n - 1]``), the n-grams as an
    (count x n) int array with their log10 probabilities and back-off weights."""

    vocab: list[str]
    grams: list[np.ndarray]
    probs: list[np.ndarray]
    backoffs: list[np.ndarray]

    def __post_init__(self) -> None:
        self.index = {word: k for k, word in enumerate(self.vocab)}
        self.tables: list[dict[tuple[int, ...], tuple[float, float]]] = []
        for n, (grams, probs, backoffs) in enumerate(
            zip(self.grams, self.probs, self.backoffs, strict=True), start=1
        ):
            keys = map(tuple, grams.reshape(-1, n).tolist())
            table = dict(zip(keys, zip(probs.tolist(), backoffs.tolist(), strict=True), strict=True))
            if len(table) != len(grams):
                raise BadModel(f"the {n}-grams hold one n-gram twice")
            self.tables.append(table)

    @property
    def order(self) -> int:
        """The highest n-gram order."""
        return len(self.grams)

    def scores(self, tokens: list[str]) -> np.ndarray:
        """(len(tokens) + 1) x 3: log10 probability, matched n-gram length, OOV flag of each token and
        of ``</s>``, each given ``<s>`` and the tokens before it (as KenLM's ``full_scores``)."""
        unk = self.index[UNK]
        ids = [unk if word in RESERVED else self.index.get(word, unk) for word in tokens]
        ids.append(self.index[EOS])
        context = [self.index[BOS]]
        out = np.zeros((len(ids), 3))
        for position, word in enumerate(ids):
            backoff = 0.0
            prob, length = self.tables[0][(unk,)][0], 1
            for k in range(min(len(context), self.order - 1), -1, -1):
                history = tuple(context[len(context) - k :])
                found = self.tables[k].get((*history, word))
                if found is not None:
                    prob, length = found[0], k + 1
                    break
                if k:
                    backoff += self.tables[k - 1].get(history, (0.0, 0.0))[1]
            out[position] = (prob + backoff, length, word == unk)
            context.append(word)
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The model as named arrays (``vocab``, ``<n>_grams``, ``<n>_probs``, ``<n>_backoffs``)."""
        out = {"vocab": pack_lines(self.vocab, "LM word", "lm")}
        for n in range(1, self.order + 1):
            out[f"{n}_grams"] = self.grams[n - 1].astype(I4).reshape(-1, n)
            out[f"{n}_probs"] = self.probs[n - 1].astype(F8)
            out[f"{n}_backoffs"] = self.backoffs[n - 1].astype(F8)
        return out


def model_of(arrays: dict[str, np.ndarray], order: int, what: str) -> ArpaModel:
    """The :class:`ArpaModel` of :meth:`ArpaModel.arrays`' arrays, every value checked (``what``
    names it in a refusal)."""
    if not 1 <= order <= MAX_ORDER:
        raise BadModel(f"{what} has order {order}, not 1 to {MAX_ORDER}")
    expected = {"vocab", *(f"{n}_{a}" for n in range(1, order + 1) for a in ("grams", "probs", "backoffs"))}
    if set(arrays) != expected:
        raise BadModel(f"{what} is not the arrays of an order-{order} language model")
    vocab = words(arrays["vocab"], f"{what}_vocab")
    if not {BOS, EOS, UNK} <= set(vocab):
        raise BadModel(f"{what}_vocab lacks {BOS}, {EOS} or {UNK}")
    grams, probs, backoffs = [], [], []
    for n in range(1, order + 1):
        name = f"{what}_{n}"
        g = check_array(arrays[f"{n}_grams"], f"{name}_grams", I4, (None, n))
        p = check_array(arrays[f"{n}_probs"], f"{name}_probs", F8, (len(g),), finite=True)
        b = check_array(arrays[f"{n}_backoffs"], f"{name}_backoffs", F8, (len(g),), finite=True)
        if ((g < 0) | (g >= len(vocab))).any():
            raise BadModel(f"{name}_grams has a word index outside the vocabulary")
        if (p > 0).any() or (p < -100).any() or (b < -100).any() or (b > 100).any():
            raise BadModel(f"{name} has a log10 probability above 0 or a value out of range")
        grams.append(g)
        probs.append(p)
        backoffs.append(b)
    if not any(row == [vocab.index(UNK)] for row in grams[0].tolist()):
        raise BadModel(f"{what} has no {UNK} unigram")
    return ArpaModel(vocab, grams, probs, backoffs)


def read_arpa(path: str | Path) -> ArpaModel:
    """An ARPA file (as ``lmplz`` writes it) as an :class:`ArpaModel`."""
    vocab: dict[str, int] = {}
    counts: list[int] = []
    rows: list[list[tuple[tuple[str, ...], float, float]]] = []
    section = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line == "\\end\\":
                continue
            if line == "\\data\\":
                continue
            if line.startswith("ngram ") and section == 0:
                counts.append(int(line.split("=")[1]))
                continue
            if line.startswith("\\") and line.endswith("-grams:"):
                section = int(line[1:].split("-")[0])
                rows.append([])
                continue
            fields = line.split("\t")
            words = tuple(fields[1].split(" "))
            backoff = float(fields[2]) if len(fields) > 2 else 0.0
            rows[section - 1].append((words, float(fields[0]), backoff))
            if section == 1:
                vocab.setdefault(words[0], len(vocab))
    for word in (BOS, EOS, UNK):
        vocab.setdefault(word, len(vocab))
    grams, probs, backoffs = [], [], []
    for n, entries in enumerate(rows, start=1):
        grams.append(
            np.array([[vocab[w] for w in words] for words, _, _ in entries], dtype=I4).reshape(-1, n)
        )
        # lmplz gives <s> the log10 probability -99 as a unigram: it is only ever a context
        probs.append(np.array([max(p, -99.0) for _, p, _ in entries], dtype=F8))
        backoffs.append(np.array([b for _, _, b in entries], dtype=F8))
    return ArpaModel(list(vocab), grams, probs, backoffs)


def train_arrays(sentences: list[list[str]], order: int, label: str) -> ArpaModel:
    """An order-``order`` modified Kneser-Ney model of the (already lowercased) sentences, trained by
    ``lmplz`` in a temporary folder and read back from its ARPA file."""
    from qe.resources.lm import train_lm

    lines = [" ".join(words) for words in sentences if words]
    if not lines:
        raise QEInputError(f"{label}: no sentence to train a language model on")
    with tempfile.TemporaryDirectory(prefix="qe-wordlm-") as folder:
        arpa = train_lm(
            lines, Path(folder) / "lm.arpa", order=order, binary=False, memory="256M", label=label
        )
        return read_arpa(arpa)
