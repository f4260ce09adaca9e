"""NMT log-probabilities per MT word (qe.wordmodel.nmtprobs) and their columns in the word featurizer:
the piece-to-word mapping worked by hand on made-up lines (a word of three pieces, Moses escapes and
``@-@``, another Chinese segmentation, SentencePiece, texts that differ), hostile files refused in
one line naming file and line, and the featurizer's columns with and without the log-probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.wordmodel.features import NAMES, NMT_NAMES, WordFeaturizer, _nmt_columns, column_names
from qe.wordmodel.lexicon import SentenceLinks
from qe.wordmodel.nmtprobs import (
    PieceLine,
    map_pieces,
    read_word_logprobs,
    read_word_probas,
    word_logprobs,
)
from qe.words.files import WordLevelData
from tests.helpers.words import lettered

# --- the mapping, by hand ----------------------------------------------------------------------------

PIECES = ["Die", "Be@@", "fried@@", "ung", "&quot;", "WHA", "@-@", "Teams", "&quot;"]
VALUES = [-0.1, -1.0, -0.5, -0.3, -0.2, -0.4, -0.6, -0.9, -0.05, -0.7]  # the last for </s>
WORDS = ["Die", "Befriedung", '"', "WHA-Teams", '"']


def test_bpe_pieces_escapes_and_hyphen_splits_map_to_words():
    pieces_of, realigned = map_pieces(PIECES, WORDS)
    assert pieces_of == [[0], [1, 2, 3], [4], [5, 6, 7], [8]]
    assert realigned is False


def test_word_logprobs_by_hand():
    result = word_logprobs([PieceLine(PIECES, np.array(VALUES))], [WORDS])
    table = result.words[0]
    # Befriedung: -1.0 - 0.5 - 0.3; WHA-Teams: -0.4 - 0.6 - 0.9
    assert table[:, 0] == pytest.approx([-0.1, -1.8, -0.2, -1.9, -0.05])
    assert table[:, 1] == pytest.approx([-0.1, -1.0, -0.2, -0.9, -0.05])
    assert table[:, 2] == pytest.approx([-0.1, -0.6, -0.2, -1.9 / 3, -0.05])
    assert table[:, 3].tolist() == [1, 3, 1, 3, 1]
    # the nine pieces sum to -4.05; </s> is not among them
    assert result.sentence[0] == pytest.approx([-0.45, -1.0, -0.7])
    stats = result.stats.as_dict()
    # joined: Die Befriedung &quot; WHA @-@ Teams &quot; -> the two quotes and WHA-Teams differ
    assert stats == {
        "lines": 1,
        "tokens": 5,
        "lines_differ": 1,
        "tokens_differ": 3,
        "lines_realigned": 0,
        "words_unmapped": 0,
    }


def test_another_segmentation_a_straddling_piece_and_sentencepiece():
    # en-zh: the pieces 柏@@ 格@@ 林 are the words 柏 and 格林
    assert map_pieces(["柏@@", "格@@", "林", "通过"], ["柏", "格林", "通过"]) == ([[0], [1, 2], [3]], False)
    # one piece over two words goes to both
    assert map_pieces(["格林", "x"], ["格", "林", "x"]) == ([[0], [0], [1]], False)
    # SentencePiece: ▁ starts a word
    assert map_pieces(["▁Die", "▁Be", "fried", "ung", "▁."], ["Die", "Befriedung", "."]) == (
        [[0], [1, 2, 3], [4]],
        False,
    )


def test_differing_texts_are_aligned_and_an_unmatched_word_has_no_value():
    pieces_of, realigned = map_pieces(["a@@", "b", "c"], ["ab", "Z", "c"])
    assert pieces_of == [[0, 1], [], [2]] and realigned is True
    result = word_logprobs(
        [PieceLine(["a@@", "b", "c"], np.array([-1.0, -2.0, -3.0, -0.5]))], [["ab", "Z", "c"]]
    )
    assert result.words[0][0].tolist() == [-3.0, -2.0, -1.5, 2.0]
    assert np.isnan(result.words[0][1, :3]).all() and result.words[0][1, 3] == 0.0
    assert result.stats.lines_realigned == 1 and result.stats.words_unmapped == 1


# --- hostile files -----------------------------------------------------------------------------------


def _files(tmp_path, pieces: str, values: str):
    tokens, logprobs = tmp_path / "mt.bpe", tmp_path / "word_probas"
    tokens.write_text(pieces, encoding="utf-8")
    logprobs.write_text(values, encoding="utf-8")
    return tokens, logprobs


@pytest.mark.parametrize(
    ("values", "line", "message"),
    [
        (
            "-0.1 -0.2 -0.3\n-0.1 -0.2\n",
            2,
            r"2 log-probabilities for 2 pieces \(expected one per piece and one for </s>\)",
        ),
        ("-0.1 -0.2 -0.3\n-0.1 abc -0.3\n", 2, "log-probability 'abc' is not a number"),
        ("-0.1 nan -0.3\n-0.1 -0.2 -0.3\n", 1, "log-probability 'nan' is not a finite number <= 0"),
        ("-0.1 -0.2 -0.3\n", 2, "has 1 lines but .* has 2: the files must align line by line"),
    ],
)
def test_hostile_files_are_one_line_naming_file_and_line(tmp_path, values, line, message):
    tokens, logprobs = _files(tmp_path, "a b\nc@@ d\n", values)
    with pytest.raises(QEInputError, match=message) as info:
        read_word_probas(tokens, logprobs)
    text = str(info.value)
    assert text.startswith(f"{logprobs}:{line}: ") and "\n" not in text


def test_a_line_count_differing_from_the_mt_is_refused(tmp_path):
    tokens, logprobs = _files(tmp_path, "a b\nc@@ d\n", "-0.1 -0.2 -0.3\n-0.1 -0.2 -0.3\n")
    with pytest.raises(QEInputError, match="2 lines of NMT log-probabilities for 3 MT sentences") as info:
        read_word_logprobs(tokens, logprobs, [["a", "b"], ["cd"], ["e"]])
    assert str(info.value).startswith(f"{logprobs}:3: ")
    good = read_word_logprobs(tokens, logprobs, [["a", "b"], ["cd"]])
    assert good.words[1].tolist() == [[pytest.approx(-0.3), -0.2, pytest.approx(-0.15), 2.0]]


# --- the featurizer's columns ------------------------------------------------------------------------

TOY = [
    ("the house is red .", "das Haus ist rot .", "GGGBG", "GGGGGG", "GGGBG"),
    ("the car is 3 years old", "das Auto ist 4 Jahre alt", "GGGBGG", "GGGGGGG", "GGGBGG"),
    ("a red car .", "ein roter Wagen .", "GGBG", "GGBGG", "GGBG"),
    ("the house", "das Haus", "GG", "GGG", "GG"),
]


def _nmt(data: WordLevelData):
    """One piece per word, log-probability -(position + 1) / 10, </s> -0.05."""
    lines = [
        PieceLine(list(mt), np.array([-(j + 1) / 10 for j in range(len(mt))] + [-0.05])) for mt in data.mt
    ]
    return word_logprobs(lines, data.mt)


def test_columns_with_and_without_the_logprobs():
    data = lettered(TOY)
    plain = WordFeaturizer(folds=2).fit_transform(data)
    featurizer = WordFeaturizer(folds=2)
    with_nmt = featurizer.fit_transform(data, _nmt(data))
    for kind in NAMES:
        assert plain.tables[kind].shape[1] == len(NAMES[kind]) == len(column_names(kind))
        assert with_nmt.tables[kind].shape[1] == len(NAMES[kind]) + len(NMT_NAMES[kind])
        # the columns of today come first and are unchanged
        np.testing.assert_array_equal(with_nmt.tables[kind][:, : len(NAMES[kind])], plain.tables[kind])
    dev = lettered(TOY[:1])  # das Haus ist rot . : -0.1 -0.2 -0.3 -0.4 -0.5, sentence mean -0.3
    tables = featurizer.transform(dev, _nmt(dev))
    names = column_names("target", nmt=True)
    row = {name: tables.tables["target"][:, k] for k, name in enumerate(names)}
    assert row["nmt_mean"].tolist() == pytest.approx([-0.1, -0.2, -0.3, -0.4, -0.5])
    assert row["nmt_pieces"].tolist() == [1, 1, 1, 1, 1]
    assert row["nmt_rank"].tolist() == pytest.approx([1, 0.75, 0.5, 0.25, 0])
    assert row["nmt_mean_vs_sentence"].tolist() == pytest.approx([0.2, 0.1, 0, -0.1, -0.2])
    assert np.isnan(row["left_nmt_mean"][0]) and row["left_nmt_mean"][1] == pytest.approx(-0.1)
    assert np.isnan(row["right_nmt_min"][4]) and row["right_nmt_min"][3] == pytest.approx(-0.5)
    assert row["nmt_sentence_mean"].tolist() == pytest.approx([-0.3] * 5)
    assert row["nmt_sentence_min"].tolist() == pytest.approx([-0.5] * 5)
    assert row["nmt_eos"].tolist() == pytest.approx([-0.05] * 5)
    gap_names = column_names("gaps", nmt=True)
    gaps = {name: tables.tables["gaps"][:, k] for k, name in enumerate(gap_names)}
    assert np.isnan(gaps["left_nmt_mean"][0])
    assert gaps["left_nmt_mean"][1:].tolist() == pytest.approx([-0.1, -0.2, -0.3, -0.4, -0.5])
    # right of the last gap: </s>
    assert gaps["right_nmt_mean"].tolist() == pytest.approx([-0.1, -0.2, -0.3, -0.4, -0.5, -0.05])


def test_source_columns_by_hand():
    # MT words 0 and 1 link to source word 0, MT word 2 to NULL; source word 0 links to MT word 1
    words = np.array([[-0.4, -0.3, -0.2, 2], [-0.6, -0.6, -0.6, 1], [-0.1, -0.1, -0.1, 1]])
    links = SentenceLinks(
        mt_to_src=np.array([0, 0, -1]),
        mt_prob=np.ones(3),
        src_to_mt=np.array([1, -1]),
        src_prob=np.ones(2),
    )
    source = _nmt_columns(words, np.array([-0.3, -0.6, -0.05]), links, 2)["source"]
    assert source.shape == (2, len(NMT_NAMES["source"]))
    # linked (mean, min), reverse min, reverse mean, then the sentence's three
    assert source[0].tolist() == pytest.approx([-0.6, -0.6, -0.6, -0.4, -0.3, -0.6, -0.05])
    assert np.isnan(source[1, :4]).all()


def test_featurizer_refuses_logprobs_that_do_not_fit():
    data = lettered(TOY)
    featurizer = WordFeaturizer(folds=2)
    featurizer.fit_transform(data, _nmt(data))
    with pytest.raises(QEInputError, match="fitted with NMT log-probabilities: give them"):
        featurizer.transform(data)
    other = lettered(TOY[1:2])
    with pytest.raises(QEInputError, match="sentence 1: NMT log-probabilities for 5 MT words, the MT has 6"):
        featurizer.transform(other, _nmt(lettered(TOY[:1])))
    plain = WordFeaturizer(folds=2)
    plain.fit_transform(data)
    with pytest.raises(QEInputError, match="fitted without NMT log-probabilities"):
        plain.transform(data, _nmt(data))
