"""IBM Model 1 tables: hand-computed EM steps, agreement with nltk, GIZA-style files, edge cases."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import pytest
from nltk.translate import AlignedSent, IBMModel1

from qe.infra.errors import QEInputError
from qe.words import ibm1
from qe.words.ibm1 import NULL, IBM1Table, train_both_directions

# ---------------------------------------------------------------------- helpers


def synthetic_corpus(n_pairs: int = 300, seed: int = 7) -> tuple[list[list[str]], list[list[str]]]:
    """A noisy "translation" corpus with repeated words and some empty sentences."""
    rng = random.Random(seed)
    src_vocab = [f"s{i}" for i in range(60)]
    tgt_vocab = [f"t{i}" for i in range(80)]
    lexicon = {s: rng.sample(tgt_vocab, 2) for s in src_vocab}
    src_sents: list[list[str]] = []
    tgt_sents: list[list[str]] = []
    for k in range(n_pairs):
        # Zipf-like source words so some co-occur often and repeat within a sentence.
        src = [src_vocab[min(int(rng.paretovariate(1.2)) - 1, 59)] for _ in range(rng.randint(1, 10))]
        tgt = [rng.choice(lexicon[s]) for s in src if rng.random() < 0.85]
        tgt += [rng.choice(tgt_vocab) for _ in range(rng.randint(0, 2))]
        rng.shuffle(tgt)
        if k % 50 == 3:
            src = []
        if k % 70 == 5:
            tgt = []
        src_sents.append(src)
        tgt_sents.append(tgt)
    return src_sents, tgt_sents


def nltk_table(src_sents, tgt_sents, iterations):
    """nltk's t-table as {(src, tgt): prob} (explicit entries only) and its bitext with alignments."""
    bitext = [AlignedSent(tgt, src) for src, tgt in zip(src_sents, tgt_sents, strict=True)]
    model = IBMModel1(bitext, iterations)
    table = {
        (NULL if s is None else s, t): p for t, row in model.translation_table.items() for s, p in row.items()
    }
    return table, bitext


def table_dict(table: IBM1Table) -> dict[tuple[str, str], float]:
    return {(s, t): p for s in table.src_vocab for t, p in table.translations(s).items()}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


HAND_TABLE = """\
NULL la 0.1
NULL casa 0.05
NULL de 0.3
the la 0.7
the casa 0.1
the de 0.2
house casa 0.8
house la 0.05
green verde 0.9
"""

# ---------------------------------------------------------------------- EM by hand


def test_first_iteration_by_hand():
    # Uniform start t = 1/2 (two target words). Sentence 1: each target word spreads 1/3 over
    # NULL, a, b; sentence 2: x spreads 1/2 over NULL, a. Counts: NULL and a get x 5/6, y 1/3;
    # b gets x 1/3, y 1/3. Normalized: 5/7, 2/7 and 1/2, 1/2.
    table = IBM1Table.train([["a", "b"], ["a"]], [["x", "y"], ["x"]], iterations=1)
    expected = {
        (NULL, "x"): 5 / 7,
        (NULL, "y"): 2 / 7,
        ("a", "x"): 5 / 7,
        ("a", "y"): 2 / 7,
        ("b", "x"): 1 / 2,
        ("b", "y"): 1 / 2,
    }
    assert table_dict(table) == pytest.approx(expected, abs=1e-15)
    assert len(table) == 6
    assert table.src_vocab == {NULL, "a", "b"}
    assert table.tgt_vocab == {"x", "y"}


def test_zero_iterations_is_uniform_over_target_vocabulary():
    table = IBM1Table.train([["a"], ["b"]], [["x"], ["y", "z"]], iterations=0)
    assert table.prob("a", "x") == pytest.approx(1 / 3)
    assert table.prob("b", "z") == pytest.approx(1 / 3)
    assert table.prob("a", "z") == 0.0  # never co-occur


def test_repeated_words_by_hand_nltk_convention():
    # Sentence 1: src NULL a a, tgt x x y. nltk normalizes each target *type* once per sentence:
    # x: NULL 1/3, a 2/3 (two tokens); y: NULL 1/3, a 2/3. Sentence 2: y: NULL 1/2, b 1/2.
    # NULL: x 1/3, y 5/6 -> 2/7, 5/7; a: 1/2, 1/2; b: y 1.
    table = IBM1Table.train([["a", "a"], ["b"]], [["x", "x", "y"], ["y"]], iterations=1)
    expected = {
        (NULL, "x"): 2 / 7,
        (NULL, "y"): 5 / 7,
        ("a", "x"): 1 / 2,
        ("a", "y"): 1 / 2,
        ("b", "y"): 1.0,
    }
    assert table_dict(table) == pytest.approx(expected, abs=1e-15)


def test_repeated_words_by_hand_counting_every_token():
    # Brown et al.: both x tokens count. x: NULL 2/3, a 4/3; y: NULL 1/3 + 1/2, a 2/3; b: y 1/2.
    table = IBM1Table.train(
        [["a", "a"], ["b"]], [["x", "x", "y"], ["y"]], iterations=1, count_target_repeats=True
    )
    expected = {
        (NULL, "x"): 4 / 9,
        (NULL, "y"): 5 / 9,
        ("a", "x"): 2 / 3,
        ("a", "y"): 1 / 3,
        ("b", "y"): 1.0,
    }
    assert table_dict(table) == pytest.approx(expected, abs=1e-15)


def test_without_null_by_hand():
    # Sentence 1 spreads 1/2 over a, b; sentence 2 gives x|a a full count.
    table = IBM1Table.train([["a", "b"], ["a"]], [["x", "y"], ["x"]], iterations=1, null=False)
    expected = {("a", "x"): 3 / 4, ("a", "y"): 1 / 4, ("b", "x"): 1 / 2, ("b", "y"): 1 / 2}
    assert table_dict(table) == pytest.approx(expected, abs=1e-15)
    assert not table.has_null
    assert NULL not in table.src_vocab


def test_min_prob_drops_small_entries_after_training():
    src, tgt = synthetic_corpus(80)
    full = table_dict(IBM1Table.train(src, tgt, iterations=3))
    pruned = table_dict(IBM1Table.train(src, tgt, iterations=3, min_prob=0.05))
    assert pruned == {k: p for k, p in full.items() if p >= 0.05}
    assert 0 < len(pruned) < len(full)


# ---------------------------------------------------------------------- nltk agreement


def assert_matches_nltk(src, tgt, iterations=5):
    ours = IBM1Table.train(src, tgt, iterations=iterations)
    reference, bitext = nltk_table(src, tgt, iterations)
    mine = table_dict(ours)
    assert mine.keys() == reference.keys()
    assert max(abs(p - reference[k]) for k, p in mine.items()) <= 1e-9
    # Viterbi alignments agree wherever the best link is not a near tie (nltk breaks exact
    # ties by position, and the two summation orders differ in the last bits).
    compared = 0
    for s_sent, t_sent, pair in zip(src, tgt, bitext, strict=True):
        ref = dict(pair.alignment)
        for j, i in enumerate(ours.viterbi_alignment(s_sent, t_sent)):
            candidates = sorted(
                [ours.prob(NULL, t_sent[j])] + [ours.prob(s, t_sent[j]) for s in s_sent], reverse=True
            )
            if len(candidates) > 1 and candidates[0] - candidates[1] < 1e-9:
                continue
            assert i == (-1 if ref[j] is None else ref[j])
            compared += 1
    assert compared > 0


def test_agrees_with_nltk_on_synthetic_corpus():
    assert_matches_nltk(*synthetic_corpus(300))


def test_agrees_with_nltk_in_small_chunks_and_without_bit_packing(monkeypatch):
    src, tgt = synthetic_corpus(60, seed=3)
    monkeypatch.setattr(ibm1, "_CHUNK_ELEMENTS", 7)
    assert_matches_nltk(src, tgt, iterations=3)
    monkeypatch.setattr(ibm1, "_PACK_BITS", 0)
    assert_matches_nltk(src, tgt, iterations=3)


@pytest.mark.data
def test_agrees_with_nltk_on_newstest():
    data_dir = os.environ.get("QE_DATA_DIR")
    if not data_dir:
        pytest.skip("QE_DATA_DIR is not set (point it at the shared data directory)")
    base = Path(data_dir) / "newstest-en-es" / "newstest2011"
    en = base.with_suffix(".en").read_text(encoding="utf-8").splitlines()[:200]
    es = base.with_suffix(".es").read_text(encoding="utf-8").splitlines()[:200]
    assert_matches_nltk([s.lower().split() for s in en], [s.lower().split() for s in es])


def test_train_both_directions_runs_both_models():
    src, tgt = synthetic_corpus(100)
    forward, backward = train_both_directions(src, tgt, iterations=3, n_jobs=2)
    assert table_dict(forward) == table_dict(IBM1Table.train(src, tgt, iterations=3))
    reference, _ = nltk_table(tgt, src, 3)
    back = table_dict(backward)
    assert back.keys() == reference.keys()
    assert max(abs(p - reference[k]) for k, p in back.items()) <= 1e-9


# ---------------------------------------------------------------------- lookups and scoring


def test_lookups_on_hand_table(tmp_path):
    table = IBM1Table.load(write(tmp_path / "lex", HAND_TABLE))
    assert table.prob("the", "la") == 0.7
    assert table.prob("the", "verde") == 0.0
    assert table.prob("unknown", "la") == 0.0
    assert table.translations("the", 0.15) == {"la": 0.7, "de": 0.2}
    assert table.translations("nope") == {}
    assert table.n_translations("the", 0.2) == 1  # strictly greater
    assert table.n_translations("the", 0.05) == 3
    assert table.n_translations(NULL, 0.0) == 3
    assert table.n_translations("nope", 0.0) == 0
    assert len(table) == 9
    assert table.has_null


def test_viterbi_alignment_hand_example(tmp_path):
    table = IBM1Table.load(write(tmp_path / "lex", HAND_TABLE))
    # la <- the (0.7), casa <- house (0.8), verde <- green, de: NULL 0.3 beats the 0.2,
    # azul is unknown: NULL.
    assert table.viterbi_alignment(["the", "green", "house"], ["la", "casa", "verde", "de", "azul"]) == [
        0,
        2,
        1,
        -1,
        -1,
    ]
    assert table.viterbi_alignment(["the", "the"], ["la"]) == [1]  # ties: the later source word
    assert table.viterbi_alignment([], ["la"]) == [-1]
    assert table.viterbi_alignment(["the"], []) == []


def test_sentence_log_prob_hand_example():
    table = IBM1Table.train([["a", "b"], ["a"]], [["x", "y"], ["x"]], iterations=1)
    # P(x y | a b) = (t(x|NULL) + t(x|a) + t(x|b)) (t(y|NULL) + t(y|a) + t(y|b)) / 3^2
    expected = math.log(5 / 7 + 5 / 7 + 1 / 2) + math.log(2 / 7 + 2 / 7 + 1 / 2) - 2 * math.log(3)
    assert table.sentence_log_prob(["a", "b"], ["x", "y"]) == pytest.approx(expected, abs=1e-12)
    assert table.sentence_log_prob([], ["x"]) == pytest.approx(math.log(5 / 7), abs=1e-12)
    assert table.sentence_log_prob(["a"], []) == 0.0
    assert table.sentence_log_prob([], []) == 0.0
    # An unknown target word costs the 1e-12 floor instead of -inf.
    assert table.sentence_log_prob(["a"], ["zzz"]) == pytest.approx(math.log(1e-12) - math.log(2))


def test_sentence_log_prob_without_null():
    table = IBM1Table.train([["a", "b"], ["a"]], [["x", "y"], ["x"]], iterations=1, null=False)
    expected = math.log(3 / 4 + 1 / 2) - math.log(2)
    assert table.sentence_log_prob(["a", "b"], ["x"]) == pytest.approx(expected, abs=1e-12)
    assert table.sentence_log_prob([], ["x"]) == pytest.approx(math.log(1e-12))


# ---------------------------------------------------------------------- empty input


def test_empty_sentences_and_corpora():
    table = IBM1Table.train([[], ["a"], []], [["x"], [], []], iterations=2)
    # x only ever meets NULL; a never meets a target word.
    assert table_dict(table) == {(NULL, "x"): 1.0}
    assert "a" not in table.src_vocab
    empty = IBM1Table.train([], [], iterations=5)
    assert len(empty) == 0
    assert empty.prob(NULL, "x") == 0.0
    assert empty.viterbi_alignment(["a"], ["x"]) == [-1]
    assert empty.sentence_log_prob(["a"], ["x"]) == pytest.approx(math.log(1e-12) - math.log(2))
    assert len(IBM1Table.train([[], []], [[], []])) == 0


def test_bad_training_input():
    with pytest.raises(QEInputError, match="different numbers of sentences"):
        IBM1Table.train([["a"]], [["x"], ["y"]])
    with pytest.raises(QEInputError, match="reserved"):
        IBM1Table.train([["a", NULL]], [["x"]])
    with pytest.raises(TypeError, match="list of tokens"):
        IBM1Table.train(["a b"], [["x"]])


# ---------------------------------------------------------------------- files


def test_save_load_round_trip(tmp_path):
    src, tgt = synthetic_corpus(120)
    table = IBM1Table.train(src, tgt, iterations=4)
    path = tmp_path / "sub" / "lex.e2s"
    table.save(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(table)
    fields = [line.split(" ") for line in lines]
    assert all(len(f) == 3 for f in fields)
    assert any(f[0] == NULL for f in fields)
    for s, t, p in fields[:50]:
        assert table.prob(s, t) == float(p)
    loaded = IBM1Table.load(path)
    assert table_dict(loaded) == table_dict(table)  # exact: repr round-trips floats
    assert loaded.has_null
    assert loaded.sentence_log_prob(src[0], tgt[0]) == table.sentence_log_prob(src[0], tgt[0])
    pruned = IBM1Table.load(path, min_prob=0.1)
    assert table_dict(pruned) == {k: p for k, p in table_dict(table).items() if p >= 0.1}
    assert not list(tmp_path.glob("sub/.*.tmp"))  # no temporary left behind


def test_load_accepts_crlf_and_tabs(tmp_path):
    table = IBM1Table.load(write(tmp_path / "lex", "a\tx 0.25\r\nb y 1e-3\r\n"))
    assert table.prob("a", "x") == 0.25
    assert table.prob("b", "y") == 0.001
    assert not table.has_null


def test_load_missing_file(tmp_path):
    path = tmp_path / "missing.lex"
    with pytest.raises(QEInputError, match="not found") as err:
        IBM1Table.load(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a x 0.5\nb y\n", 2, "got 2 fields"),
        ("a x 0.5\nb y 0.1 extra\n", 2, "got 4 fields"),
        ("a x 0.5\nb y 0.1\nc z abc\n", 3, "not a number"),
        ("a x 1.5\n", 1, "outside"),
        ("a x nan\n", 1, "outside"),
        ("a x 0.5\n\nb y 0.5\n", 2, "got 0 fields"),
        ("a x 0.5\nb y 0.5\na x 0.25\n", 3, "duplicate entry"),
    ],
)
def test_load_bad_lines_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path / "bad.lex", text)
    with pytest.raises(QEInputError, match=message) as err:
        IBM1Table.load(path)
    assert err.value.line == line
    assert f"{path}:{line}:" in str(err.value)


def test_load_invalid_utf8(tmp_path):
    path = tmp_path / "latin1.lex"
    path.write_bytes(b"a x 0.5\nb y 0.5\ncaf\xe9 z 0.5\n")
    with pytest.raises(QEInputError, match="invalid UTF-8") as err:
        IBM1Table.load(path)
    assert err.value.line == 3
    assert f"{path}:3:" in str(err.value)


def test_load_empty_file(tmp_path):
    with pytest.raises(QEInputError, match="empty"):
        IBM1Table.load(write(tmp_path / "empty.lex", ""))


def test_save_refuses_words_with_whitespace(tmp_path):
    table = IBM1Table.train([["a b"]], [["x"]], iterations=1)
    with pytest.raises(QEInputError, match="whitespace"):
        table.save(tmp_path / "lex")
    assert not (tmp_path / "lex").exists()
