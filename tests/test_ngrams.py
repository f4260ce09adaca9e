"""N-gram counting, QuEst's quartile cut-offs, the file format and the truecase-model reader."""

from __future__ import annotations

import gzip

import pytest

from qe.infra.errors import QEInputError
from qe.resources.ngrams import NgramCounts, load_truecase_counts, ngrams, quartile_cutoffs


def test_ngrams_of_a_sentence():
    toks = ["a", "b", "a", "b"]
    assert ngrams(toks, 1) == toks
    assert ngrams(toks, 2) == ["a b", "b a", "a b"]
    assert ngrams(toks, 3) == ["a b a", "b a b"]
    assert ngrams(["a"], 2) == []


def test_counts_by_hand():
    counts = NgramCounts.from_sentences([["a", "b", "a"], ["b", "a"], []], max_order=3)
    assert counts.count("a") == 3
    assert counts.count("b") == 2
    assert counts.count("b a") == 2
    assert counts.count(["a", "b"]) == 1
    assert counts.count("a b a") == 1
    assert counts.count("c") == 0
    assert counts.count("a b a b") == 0  # order 4 is not counted
    assert counts.sentences == 3
    assert counts.tokens == 5


def test_quartile_cutoffs_by_hand():
    # Kept (>= 3): 3..10, N = 8; indices floor((j + 1) * 7 / 4) = 1, 3, 5, 7 -> 4, 6, 8, 10.
    assert quartile_cutoffs([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) == (4, 6, 8, 10)
    # With min_count 1 all ten are kept: indices floor((j + 1) * 9 / 4) = 2, 4, 6, 9.
    assert quartile_cutoffs([10, 9, 8, 7, 6, 5, 4, 3, 2, 1], min_count=1) == (3, 5, 7, 10)
    assert quartile_cutoffs([5], min_count=3) == (5, 5, 5, 5)
    assert quartile_cutoffs([1, 2], min_count=3) == (0, 0, 0, 0)


def test_pruned_counts_treat_rare_ngrams_as_unseen():
    counts = NgramCounts({1: {"a": 5, "b": 2, "c": 3}})
    pruned = counts.pruned(3)
    assert pruned.count("b") == 0
    assert pruned.count("c") == 3
    # Kept: 3, 5 (N = 2): indices floor((j + 1) / 4) = 0, 0, 0, 1.
    assert pruned.cutoffs(1) == counts.cutoffs(1, 3) == (3, 3, 3, 5)


def test_save_and_load_round_trip(tmp_path):
    counts = NgramCounts.from_sentences([["x", "y", "z"], ["x", "y"], ["x"]], max_order=2)
    path = tmp_path / "counts.tsv.gz"
    counts.save(path)
    loaded = NgramCounts.load(path)
    assert loaded.tables == counts.tables
    assert (loaded.sentences, loaded.tokens) == (3, 6)
    only_frequent = NgramCounts.load(path, min_count=2)
    assert only_frequent.table(1) == {"x": 3, "y": 2}
    assert only_frequent.table(2) == {"x y": 2}
    unigrams_only = NgramCounts.load(path, orders=[1])
    assert sorted(unigrams_only.tables) == [1]


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(QEInputError, match="not found"):
        NgramCounts.load(tmp_path / "missing.tsv.gz")
    not_gzip = tmp_path / "plain.tsv.gz"
    not_gzip.write_text("a\t1\n")
    with pytest.raises(QEInputError, match="gzip") as info:
        NgramCounts.load(not_gzip)
    assert info.value.path == str(not_gzip)
    bad_line = tmp_path / "bad.tsv.gz"
    with gzip.open(bad_line, "wt", encoding="utf-8") as handle:
        handle.write('{"format": "qe-ngram-counts/1"}\n\\1-grams:\na\t1\nb\tmany\n')
    with pytest.raises(QEInputError, match="not an integer") as info:
        NgramCounts.load(bad_line)
    assert info.value.line == 4
    latin1 = tmp_path / "latin1.tsv.gz"
    with gzip.open(latin1, "wb") as handle:
        handle.write(b'{"format": "qe-ngram-counts/1"}\n\\1-grams:\ncaf\xe9\t1\n')
    with pytest.raises(QEInputError, match="UTF-8") as info:
        NgramCounts.load(latin1)
    assert info.value.line == 3


def test_truecase_counts_are_case_folded(tmp_path):
    model = tmp_path / "truecase-model.en"
    model.write_text("richer (322/323) Richer (1)\nÉl (5/5)\nél (3/3)\nthe (10/10)\n", encoding="utf-8")
    counts = load_truecase_counts(model)
    assert counts.count("richer") == 323
    assert counts.count("él") == 8
    assert counts.count("Richer") == 0  # keys are lower-cased
    assert counts.tokens == 323 + 8 + 10


def test_truecase_model_errors(tmp_path):
    bad = tmp_path / "bad.en"
    bad.write_text("fine (1/1)\nbroken 12\n", encoding="utf-8")
    with pytest.raises(QEInputError) as info:
        load_truecase_counts(bad)
    assert (info.value.path, info.value.line) == (str(bad), 2)
    empty = tmp_path / "empty.en"
    empty.write_text("")
    with pytest.raises(QEInputError, match="empty"):
        load_truecase_counts(empty)


@pytest.mark.data
def test_wmt12_truecase_model_totals(data_dir):
    """SOURCES.md: the English model sums to 44,145,814 tokens over 87,775 lines."""
    counts = load_truecase_counts(data_dir / "wmt12-qe" / "lang_resources" / "truecase-model.en")
    assert counts.tokens == 44_145_814
    assert counts.count("richer") == 323


def test_a_missing_order_is_a_clear_error_not_a_key_error():
    """A bundle built with max_order = 2 crashed baseline17 with a KeyError traceback."""
    counts = NgramCounts.from_sentences([["a", "b", "c"]], max_order=2)
    with pytest.raises(QEInputError, match=r"no 3-gram counts .*orders \[1, 2\].*max_order = 3"):
        counts.table(3)
