"""Hand-made resources with values worked out by hand (tests/test_baseline17.py, tests/fuzz)."""

from __future__ import annotations

from pathlib import Path

# Unigram ARPA models: log10 probabilities chosen by hand, so sentence scores are plain sums.
SRC_ARPA = {"<unk>": -1.0, "</s>": -0.5, "the": -0.3, "house": -0.7, ".": -0.4}
TGT_ARPA = {"<unk>": -2.0, "</s>": -0.4, "la": -0.2, "casa": -0.6, ".": -0.3}

S2T = "the la 0.5\nthe el 0.3\nthe las 0.15\nhouse casa 0.9\nhouse hogar 0.05\ncat gato 0.6\ncat gata 0.25\n"
T2S = "la the 0.6\nla a 0.3\nel the 0.7\ngato cat 0.9\ngata cat 0.15\ncasa house 0.95\nNULL the 0.5\n"

# Truecase-style unigram counts; with min_count 2 the kept counts are 2 3 3 20 50 80 100 (N = 7),
# cut-offs at indices floor((j + 1) * 6 / 4) = 1, 3, 4, 6 -> (3, 20, 50, 100).
TRUECASE = {"the": 100, "house": 3, ",": 50, ".": 80, "a": 3, "b": 2, "c": 1, "d": 20}
# Corpus n-gram counts. Unigrams >= 3: 3 5 7 9 -> cut-offs (3, 5, 7, 9). Bigrams >= 3: 3 4 5 7 12
# -> indices 1, 2, 3, 4 -> (4, 5, 7, 12). Trigrams >= 3: 3 3 3 9 -> indices 0..3 -> (3, 3, 3, 9).
CORPUS = {
    1: {"the": 9, "house": 3, ",": 5, ".": 7, "cat": 1},
    2: {"the house": 5, "house ,": 3, ", the": 4, "the cat": 12, "cat .": 1, "x y": 7},
    3: {"the house ,": 3, "house , the": 3, ", the cat": 3, "the cat .": 9},
}


def write_arpa(path: Path, probs: dict[str, float]) -> Path:
    """A bigram ARPA file whose only bigram ('zz zz') never occurs in the tests: every score is a
    unigram log10 probability (all back-off weights are 0)."""
    lines = ["\\data\\", f"ngram 1={len(probs) + 2}", "ngram 2=1", "", "\\1-grams:", "-99\t<s>\t0"]
    lines += [f"{p}\t{w}\t0" for w, p in probs.items()]
    lines += ["-3\tzz\t0", "", "\\2-grams:", "-0.1\tzz zz", "", "\\end\\", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def handmade_bundle(folder: Path, text: dict, t2s: bool = True):
    """The resources above as an in-memory bundle (files in ``folder``; ``t2s``: with ibm1.t2s)."""
    from qe.bundle import ResourceBundle
    from qe.resources.lm import LanguageModel
    from qe.resources.ngrams import NgramCounts
    from qe.words.ibm1 import IBM1Table

    (folder / "s2t.txt").write_text(S2T)
    members = {
        "lm.src": LanguageModel(write_arpa(folder / "src.arpa", SRC_ARPA)),
        "lm.tgt": LanguageModel(write_arpa(folder / "tgt.arpa", TGT_ARPA)),
        "ngrams.src": NgramCounts(CORPUS),
        "unigrams.src": NgramCounts({1: TRUECASE}),
        "ibm1.s2t": IBM1Table.load(folder / "s2t.txt"),
    }
    if t2s:
        (folder / "t2s.txt").write_text(T2S)
        members["ibm1.t2s"] = IBM1Table.load(folder / "t2s.txt")
    return ResourceBundle.in_memory(members, text)
