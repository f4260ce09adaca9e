"""Readers of Moses logs (qe.decoder) on hand-written fixtures; expected values worked out by hand."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from qe.decoder.nbest import (
    FeatureMap,
    is_segment_mark,
    iter_nbest,
    iter_nbest_sentences,
    parse_nbest_line,
    parse_scores,
    summarize_nbest,
)
from qe.decoder.search_graph import (
    iter_word_graph,
    parse_search_graph_line,
    parse_word_graph_arc,
    summarize_search_graph,
    summarize_word_graph,
)
from qe.decoder.trace import (
    TracePhrase,
    count_untranslated,
    parse_trace_line,
    read_trace_phrases,
    summarize_trace,
)
from qe.infra.errors import QEInputError

FIX = Path(__file__).parent / "fixtures" / "moses"
OLD_LINE = "d: -2 lm: -18.4 w: -4 tm: -3.1 -5.2 -2.7 -4.9 3.99959"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- named scores ------------------------------------------------------------------------------


def test_parse_scores_old_layout():
    assert parse_scores(OLD_LINE) == {
        "d": [-2.0],
        "lm": [-18.4],
        "w": [-4.0],
        "tm": [-3.1, -5.2, -2.7, -4.9, 3.99959],
    }


def test_parse_scores_new_layout_with_sparse_and_several_models():
    text = (
        "LexicalReordering0= -1.2 0 0 -0.9 0 0 Distortion0= -2 LM0= -42.4 LM1= -40 WordPenalty0= -4 "
        "PhrasePenalty0= 3 TranslationModel0= -3.1 -5.2 -2.7 -4.9 tm_la~the= 1"
    )
    scores = parse_scores(text)
    assert scores["LexicalReordering0"] == [-1.2, 0, 0, -0.9, 0, 0]
    assert scores["LM0"] == [-42.4] and scores["LM1"] == [-40.0]
    assert scores["TranslationModel0"] == [-3.1, -5.2, -2.7, -4.9]
    assert scores["tm_la~the"] == [1.0]
    assert list(scores) == [
        "LexicalReordering0",
        "Distortion0",
        "LM0",
        "LM1",
        "WordPenalty0",
        "PhrasePenalty0",
        "TranslationModel0",
        "tm_la~the",
    ]


def test_parse_scores_repeated_name_appends():
    assert parse_scores("lm: -1 w: -2 lm: -3") == {"lm": [-1.0, -3.0], "w": [-2.0]}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("d: -2 lm: abc", "non-numeric score 'abc'"),
        ("-2 d: 1", "before any feature name"),
        ("d: lm: -1", "'d' has no value"),
        ("d: -1 lm:", "'lm' has no value"),
        ("", "no feature scores"),
    ],
)
def test_parse_scores_errors(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_scores(text)


# --- n-best lines ------------------------------------------------------------------------------


def test_parse_nbest_line_four_fields():
    entry = parse_nbest_line(f"3 ||| la casa es pequeña  ||| {OLD_LINE} ||| -6.21")
    assert entry.sent_id == 3
    assert entry.words == ["la", "casa", "es", "pequeña"]
    assert entry.hypothesis == "la casa es pequeña"
    assert entry.total == -6.21
    assert entry.segmentation is None and entry.alignment is None


def test_parse_nbest_line_optional_fields():
    base = f"0 ||| a b ||| {OLD_LINE} ||| -1"
    seg = parse_nbest_line(base + " ||| 0-1=0 2=1")
    assert seg.segmentation == [((0, 1), (0, 0)), ((2, 2), (1, 1))] and seg.alignment is None
    ali = parse_nbest_line(base + " ||| 0-0 2-1")
    assert ali.alignment == [(0, 0), (2, 1)] and ali.segmentation is None
    both = parse_nbest_line(base + " ||| 0-1=0 2=1 ||| 0-0 1-0 2-1")
    assert both.segmentation == [((0, 1), (0, 0)), ((2, 2), (1, 1))]
    assert both.alignment == [(0, 0), (1, 0), (2, 1)]


def test_parse_nbest_line_empty_hypothesis():
    entry = parse_nbest_line(f"4 |||  ||| {OLD_LINE} ||| -1.5")
    assert entry.words == [] and entry.total == -1.5


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (f"0 ||| a ||| {OLD_LINE}", "found 3"),
        (f"0 ||| a ||| {OLD_LINE} ||| -1 ||| 0=0 ||| 0-0 ||| x", "found 7"),
        (f"x ||| a ||| {OLD_LINE} ||| -1", "not an integer"),
        (f"-1 ||| a ||| {OLD_LINE} ||| -1", "negative"),
        (f"0 ||| a ||| {OLD_LINE} ||| high", "non-numeric total"),
        (f"0 ||| a ||| {OLD_LINE} ||| -1 ||| 0-x", "bad alignment"),
    ],
)
def test_parse_nbest_line_errors(line, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_nbest_line(line)


def test_segment_marks():
    assert is_segment_mark("|0-1|") and is_segment_mark(b"|12-13|")
    assert not is_segment_mark("|") and not is_segment_mark("casa|NOUN") and not is_segment_mark("|a-b|")


def test_iter_nbest_sentences_keeps_file_order_and_groups():
    groups = list(iter_nbest_sentences(FIX / "nbest_new.txt"))
    assert [(sid, len(entries)) for sid, entries in groups] == [(2, 3), (0, 2), (1, 2), (4, 1)]
    third = groups[0][1][2]
    assert third.line == 3 and third.scores["pp_a~house"] == [1.0]
    assert third.alignment == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert groups[1][1][0].scores["dlm_the_cat"] == [2.0]


def test_iter_nbest_segmentation_and_alignment_fields():
    entries = list(iter_nbest(FIX / "nbest_segmentation.txt"))
    assert entries[1].segmentation == [((0, 1), (0, 1)), ((2, 3), (2, 2))]
    assert entries[1].alignment == [(0, 0), (1, 1), (3, 2)]
    assert entries[2].segmentation == [((0, 0), (0, 0))] and entries[2].alignment is None
    # |i-j| marks inside the hypothesis are not words
    assert entries[3].words == ["el", "gato", "negro"] and entries[3].segmentation is None
    assert entries[4].words == ["un", "gato", "negro"]
    assert entries[5].words == ["el", "perro", "negro"] and len(entries) == 6


def test_iter_nbest_sentences_refuses_split_sentence(tmp_path):
    path = write(
        tmp_path,
        "split.nbest",
        f"0 ||| a ||| {OLD_LINE} ||| -1\n1 ||| b ||| {OLD_LINE} ||| -1\n0 ||| c ||| {OLD_LINE} ||| -2\n",
    )
    with pytest.raises(QEInputError, match="appears again") as info:
        list(iter_nbest_sentences(path))
    assert info.value.line == 3
    with pytest.raises(QEInputError, match="appears again"):
        summarize_nbest(path)


# --- n-best summaries --------------------------------------------------------------------------


def test_summarize_old_layout():
    index = summarize_nbest(FIX / "nbest_old.txt")
    assert index.ids() == [0, 1, 2]
    s0 = index.get(0)
    assert s0.size == 3 and s0.line == 1 and s0.best == "la casa es pequeña"
    assert s0.mf == (-2.0, -4.0, -18.5, -3.1, -5.2, -2.7, -4.9, 2.99959)
    assert s0.total == -6.25
    assert s0.margin == pytest.approx(0.5)
    # totals -25/4, -27/4, -30/4: mean -41/6, deviations 7/12, 1/12, -8/12
    assert s0.score_mean == pytest.approx(-41 / 6)
    assert s0.score_std == pytest.approx(math.sqrt((49 + 1 + 64) / 144 / 3))
    # lengths 4, 4, 3
    assert s0.len_mean == pytest.approx(11 / 3)
    assert s0.len_std == pytest.approx(math.sqrt(2) / 3)
    # la 2/3, casa 3/3, es 2/3, pequeña 2/3
    assert s0.posterior_mean == pytest.approx((2 / 3 + 1 + 2 / 3 + 2 / 3) / 4)
    assert s0.posterior_min == pytest.approx(2 / 3)

    s1 = index.get(1)
    assert s1.size == 1 and math.isnan(s1.margin)
    assert (s1.score_mean, s1.score_std, s1.len_mean, s1.len_std) == (-9.0, 0.0, 5.0, 0.0)
    assert s1.posterior_mean == 1.0 and s1.posterior_min == 1.0

    s2 = index.get(2)
    # 7 distortion values (lexicalized reordering) and two LMs: the default map takes the first.
    assert s2.mf[0] == -1.0 and s2.mf[2] == -10.0 and s2.mf[7] == 0.99995
    assert (s2.margin, s2.score_mean, s2.score_std) == (1.0, -3.5, 0.5)
    assert (s2.len_mean, s2.len_std) == (2.5, 0.5)
    # "días" occurs twice in the 2nd hypothesis: containment, not counts, so the share stays 1
    assert s2.posterior_mean == 1.0 and s2.posterior_min == 1.0


def test_summarize_new_layout_ids_out_of_order_sparse_and_gap():
    index = summarize_nbest(FIX / "nbest_new.txt")
    assert index.ids() == [0, 1, 2, 4] and index.max_id == 4
    s2 = index.get(2)
    assert s2.mf == (-3.0, -4.0, -20.25, -2.5, -3.5, -1.5, -4.5, 2.0)
    assert s2.size == 3 and s2.margin == pytest.approx(0.5)
    # totals -5.5, -6, -8.5: mean -20/3, deviations 7/6, 4/6, -11/6
    assert s2.score_mean == pytest.approx(-20 / 3)
    assert s2.score_std == pytest.approx(math.sqrt((49 + 16 + 121) / 36 / 3))
    # the 2/3, house 2/3, is 3/3, small 2/3
    assert s2.posterior_mean == pytest.approx(0.75) and s2.posterior_min == pytest.approx(2 / 3)
    s0 = index.get(0)
    assert s0.mf == (-1.0, -5.0, -30.0, -4.0, -6.0, -3.0, -5.0, 3.0) and s0.line == 4
    assert (s0.margin, s0.score_mean, s0.score_std) == (0.75, -10.375, 0.375)
    # tokens the, cat, saw, the, dog: "the" is missing from the 2nd hypothesis (counted per token)
    assert s0.posterior_mean == pytest.approx((0.5 + 1 + 1 + 0.5 + 1) / 5)
    assert s0.posterior_min == 0.5
    s1 = index.get(1)
    assert (s1.margin, s1.score_mean, s1.score_std, s1.posterior_mean) == (1.5, -2.0, 0.75, 0.5)
    assert index.status(3) == "empty" and index.status(5) == "missing" and index.status(4) == "present"


def test_summarize_strips_segmentation_marks():
    index = summarize_nbest(FIX / "nbest_segmentation.txt")
    s0, s2 = index.get(0), index.get(2)
    assert (s0.size, s0.len_mean, s0.len_std) == (2, 3.5, 0.5)
    assert s0.posterior_mean == pytest.approx(3.5 / 4) and s0.posterior_min == 0.5
    # three hypotheses of 3 words each once the |i-j| marks are removed
    assert s2.best == "el gato negro" and (s2.size, s2.len_mean, s2.len_std) == (3, 3.0, 0.0)
    assert (s2.margin, s2.score_mean) == (0.5, -5.0)
    assert s2.score_std == pytest.approx(math.sqrt(0.5 / 3))
    # el 2/3, gato 2/3, negro 3/3
    assert s2.posterior_mean == pytest.approx(7 / 9) and s2.posterior_min == pytest.approx(2 / 3)
    assert index.get(1).size == 1


def test_summarize_agrees_with_full_parser():
    """The fast summary and the full parser must agree on every sentence of every fixture."""
    for name in ("nbest_old.txt", "nbest_new.txt", "nbest_segmentation.txt"):
        index = summarize_nbest(FIX / name)
        for sent_id, entries in iter_nbest_sentences(FIX / name):
            totals = [e.total for e in entries]
            stats = index.get(sent_id)
            assert stats.size == len(entries)
            assert stats.score_mean == pytest.approx(sum(totals) / len(totals))
            assert stats.len_mean == pytest.approx(sum(len(e.words) for e in entries) / len(entries))
            assert stats.mf == FeatureMap().resolve(entries[0].scores)


def test_truncated_nbest(tmp_path):
    path = FIX / "nbest_truncated.txt"
    assert not path.read_bytes().endswith(b"\n")
    with pytest.raises(QEInputError, match="truncated") as info:
        summarize_nbest(path)
    assert info.value.line == 5 and info.value.path == str(path)
    with pytest.raises(QEInputError, match="truncated"):
        list(iter_nbest(path))
    index = summarize_nbest(path, truncated="drop")
    assert index.ids() == [0] and index.dropped == {1} and index.status(1) == "missing"
    assert index.get(0).size == 2 and index.get(0).margin == 0.5
    assert [sid for sid, _ in iter_nbest_sentences(path, truncated="drop")] == [0]
    # A cut line that starts a new sentence leaves the previous sentence complete.
    text = path.read_text(encoding="utf-8").rsplit("\n", 1)[0] + "\n2 ||| p q ||| d: 0 lm:"
    other = write(tmp_path, "cut.nbest", text)
    index = summarize_nbest(other, truncated="drop")
    assert index.ids() == [0, 1] and index.get(1).size == 2 and index.dropped == {2}
    assert [sid for sid, _ in iter_nbest_sentences(other, truncated="drop")] == [0, 1]


GOOD2 = f"0 ||| a ||| {OLD_LINE} ||| -1\n0 ||| b ||| {OLD_LINE} ||| -2\n"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (f"0 ||| a ||| {OLD_LINE} ||| -1\n0 ||| b ||| {OLD_LINE}\n", 2, "found 3"),
        ("0 ||| a ||| d: -2 lm: x1 w: -1 tm: 1 1 1 1 1 ||| -1\n", 1, "non-numeric score 'x1'"),
        (GOOD2 + "0 ||| c ||| d: -2 lm: ab ||| -3\n", 3, "non-numeric score 'ab'"),
        (GOOD2 + f"0 ||| c ||| {OLD_LINE} ||| x\n", 3, "non-numeric total"),
        (f"0 ||| a ||| {OLD_LINE} ||| -1\nzero ||| b ||| {OLD_LINE} ||| -2\n", 2, "not an integer"),
        ("0 ||| a ||| LM0= -3 WordPenalty0= -1 ||| -1\n", 1, "no score for mf1_distortion"),
    ],
)
def test_summarize_reports_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, "bad.nbest", text)
    with pytest.raises(QEInputError, match=fragment) as info:
        summarize_nbest(path)
    assert info.value.line == line and info.value.path == str(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(QEInputError, match="not found"):
        summarize_nbest(tmp_path / "nope.nbest")
    with pytest.raises(QEInputError, match="empty"):
        summarize_nbest(write(tmp_path, "empty.nbest", ""))


# --- MF1-MF8 mapping ---------------------------------------------------------------------------


def test_feature_map_defaults_cover_both_layouts():
    old = parse_scores(OLD_LINE)
    assert FeatureMap().resolve(old) == (-2.0, -4.0, -18.4, -3.1, -5.2, -2.7, -4.9, 3.99959)
    new = parse_scores(
        "Distortion0= -2 LM0= -42.4 WordPenalty0= -4 PhrasePenalty0= 3 TranslationModel0= -3.1 -5.2 -2.7 -4.9"
    )
    assert FeatureMap().resolve(new) == (-2.0, -4.0, -42.4, -3.1, -5.2, -2.7, -4.9, 3.0)


def test_feature_map_custom_references():
    scores = parse_scores("d: -2 lm: -10 -12 w: -4 tm: -1 -2 -3 -4 5 pp= 7")
    mapping = {"mf3": "lm[0]+lm[1]", "mf8_phrase_penalty": ["PhrasePenalty0", "pp"], "mf4": "tm:[3]"}
    values = FeatureMap(mapping).resolve(scores)
    assert values[2] == -22.0 and values[7] == 7.0 and values[3] == -4.0
    assert FeatureMap({"mf7": "tm[-1]"}).resolve(scores)[6] == 5.0
    with pytest.raises(ValueError, match="mf1_distortion"):
        FeatureMap({"mf1": "Distortion0"}).resolve(scores)


@pytest.mark.parametrize("mapping", [{"mf9": "d"}, {"mf1": "d[x]"}, {"mf1": "[0]"}, {"mf1": []}])
def test_feature_map_rejects_bad_settings(mapping):
    with pytest.raises(QEInputError, match="feature_map"):
        FeatureMap(mapping)


# --- trace -------------------------------------------------------------------------------------


def test_parse_trace_line():
    assert parse_trace_line("la casa |0-1| es |2-2|") == [
        TracePhrase(0, 1, ("la", "casa")),
        TracePhrase(2, 2, ("es",)),
    ]
    # a phrase may translate to nothing, and the order of source spans is free
    assert parse_trace_line("b |1-1| |2-2| a |0-0|")[1] == TracePhrase(2, 2, ())
    assert parse_trace_line("   ") == []


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("la casa es pequeña", "no segmentation marks"),
        ("la |0-0| casa", "after the last segmentation mark"),
        ("la |1-0|", "malformed segmentation mark"),
        ("la |0-1| casa |1-1|", "covered by two phrases"),
    ],
)
def test_parse_trace_line_errors(line, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_trace_line(line)


def test_count_untranslated():
    phrases = parse_trace_line("Obama |0-0| visitó |1-1| AT&amp;T |2-2| , |3-3| 2012 |4-4|")
    # Obama (case-folded) and AT&T (unescaped) are copies; "," and "2012" have no letter.
    assert count_untranslated(phrases, ["obama", "visited", "AT&T", ",", "2012"]) == 2
    assert count_untranslated(parse_trace_line("UNKfoo bar |0-1| x |2-2|"), unknown_prefix="UNK") == 0
    assert count_untranslated(parse_trace_line("UNKfoo UNKbar |0-1| x |2-2|"), unknown_prefix="UNK") == 2
    with pytest.raises(ValueError, match="covers 5 source words but the source sentence has 4"):
        count_untranslated(phrases, ["obama", "visited", "AT&T", ","])


def test_summarize_trace_with_moses_input():
    index = summarize_trace(FIX / "trace.txt", moses_input=FIX / "trace_source.txt")
    assert index.ids() == [0, 1, 2, 3]
    s0, s1, s2, s3 = (index.get(i) for i in range(4))
    assert (s0.phrases, s0.src_words, s0.tgt_words, s0.untranslated) == (3, 4, 4, 0)
    assert s0.src_phrase_len == pytest.approx(4 / 3) and s0.tgt_phrase_len == pytest.approx(4 / 3)
    # obama and oslo are copied; "," is punctuation
    assert (s1.phrases, s1.src_phrase_len, s1.tgt_phrase_len, s1.untranslated) == (5, 1.0, 1.0, 2)
    assert s2.phrases == 0 and math.isnan(s2.src_phrase_len) and s2.untranslated == 0
    assert (s3.phrases, s3.tgt_words, s3.tgt_phrase_len) == (3, 3, 1.0)
    assert read_trace_phrases(index.path, s3.offset)[1] == TracePhrase(2, 2, ())


def test_summarize_trace_unknown_prefix_and_errors():
    assert summarize_trace(FIX / "trace_unknown.txt", unknown_prefix="UNK").get(0).untranslated == 2
    assert summarize_trace(FIX / "trace.txt").get(1).untranslated is None
    with pytest.raises(QEInputError, match="no segmentation marks") as info:
        summarize_trace(FIX / "trace_nomarks.txt")
    assert info.value.line == 1
    with pytest.raises(QEInputError, match="truncated") as info:
        summarize_trace(FIX / "trace_truncated.txt")
    assert info.value.line == 2
    index = summarize_trace(FIX / "trace_truncated.txt", truncated="drop")
    assert index.ids() == [0] and index.dropped == {1} and index.status(1) == "missing"


# --- search graph ------------------------------------------------------------------------------


def test_parse_search_graph_lines():
    first = parse_search_graph_line("3 hyp=0 stack=0 forward=7 fscore=-6.21")
    assert (first.sent_id, first.hyp, first.stack, first.back, first.fscore) == (3, 0, 0, None, -6.21)
    node = parse_search_graph_line(
        "3 hyp=9 stack=1 back=0 score=-2.40 transition=-2.40 recombined=7 forward=19 fscore=-7.05 "
        "covered=0-1 out=la casa"
    )
    assert (node.hyp, node.back, node.recombined, node.forward, node.covered) == (9, 0, 7, 19, (0, 1))
    assert (node.score, node.transition, node.out) == (-2.40, -2.40, "la casa")
    ext = parse_search_graph_line(
        "3 hyp=7 stack=2 back=1 score=-1.5 transition=-0.5 forward=-1 fscore=-1.5 covered=1-1 "
        'scores="Distortion0= 0 LM0= -2" out="the house|la casa"'
    )
    assert ext.scores == "Distortion0= 0 LM0= -2" and ext.out == "the house|la casa" and ext.back == 1


@pytest.mark.parametrize(
    "line",
    ["3 stack=1 back=0", "3 hyp=1 stack=1 back", "x hyp=1 stack=1", "3 hyp=1 stack=1 fscore=high", ""],
)
def test_parse_search_graph_line_errors(line):
    with pytest.raises(ValueError):
        parse_search_graph_line(line)


def test_summarize_search_graph():
    index = summarize_search_graph(FIX / "search_graph.txt")
    assert index.ids() == [0, 1, 2]
    s0 = index.get(0)
    # 5 hypotheses, 2 recombined, 2 source words; backs 0,0,1,2,0 -> successors {0: 3, 1: 1, 2: 1}
    assert (s0.hypotheses, s0.recombined, s0.source_words) == (5, 2, 2)
    assert s0.fanout_mean == pytest.approx(5 / 3) and s0.fanout_max == 3
    # fscores -4 -5 -4 -5 -6: mean -4.8, squared deviations sum 2.8
    assert s0.fscore_std == pytest.approx(math.sqrt(2.8 / 5))
    s1 = index.get(1)
    assert (s1.hypotheses, s1.recombined, s1.source_words, s1.fanout_mean, s1.fanout_max) == (2, 0, 1, 2, 2)
    assert s1.fscore_std == pytest.approx(0.5)
    s2 = index.get(2)  # only the initial hypothesis: Moses found nothing
    assert s2.hypotheses == 0 and math.isnan(s2.fanout_mean) and math.isnan(s2.fscore_std)


def test_extended_search_graph_gives_the_same_statistics():
    plain = summarize_search_graph(FIX / "search_graph.txt").get(0)
    extended = summarize_search_graph(FIX / "search_graph_extended.txt").get(0)
    assert (plain.hypotheses, plain.recombined, plain.source_words) == (
        extended.hypotheses,
        extended.recombined,
        extended.source_words,
    )
    assert (plain.fanout_mean, plain.fanout_max, plain.fscore_std) == pytest.approx(
        (extended.fanout_mean, extended.fanout_max, extended.fscore_std)
    )


def test_search_graph_bad_input(tmp_path):
    bad = write(tmp_path, "bad.sg", "0 hyp=0 stack=0\n0 hyp=1 stack=1 score=-1 fscore=-1 covered=0-0 out=a\n")
    with pytest.raises(QEInputError, match="malformed search-graph line") as info:
        summarize_search_graph(bad)
    assert info.value.line == 2
    split = write(tmp_path, "split.sg", "0 hyp=0 stack=0\n1 hyp=0 stack=0\n0 hyp=0 stack=0\n")
    with pytest.raises(QEInputError, match="appears again"):
        summarize_search_graph(split)
    cut = write(tmp_path, "cut.sg", (FIX / "search_graph.txt").read_text(encoding="utf-8") + "2 hyp=5 st")
    with pytest.raises(QEInputError, match="truncated"):
        summarize_search_graph(cut)
    index = summarize_search_graph(cut, truncated="drop")
    assert index.ids() == [0, 1] and index.dropped == {2}


# --- word graph --------------------------------------------------------------------------------


def test_parse_word_graph_arcs():
    arc = parse_word_graph_arc("J=2\tS=1\tE=3\ta=-1, -1.5\tl=-2\tr=-1\tw=the house|la casa", 0)
    assert (arc.link, arc.start, arc.end) == (2, 1, 3)
    assert (arc.a, arc.l, arc.r) == ((-1.0, -1.5), (-2.0,), (-1.0,))
    assert (arc.source, arc.target, arc.score) == ("the house", "la casa", -5.5)
    spaced = parse_word_graph_arc("J=0 S=0 E=1 a=-1.0, -2.0 l=-2 w=hola amigo", 4)
    assert spaced.a == (-1.0, -2.0) and spaced.source is None and spaced.target == "hola amigo"
    with pytest.raises(ValueError, match="without E="):
        parse_word_graph_arc("J=0\tS=0\ta=-1", 0)


def test_summarize_word_graph():
    index = summarize_word_graph(FIX / "word_graph.txt")
    u0, u1 = index.get(0), index.get(1)
    assert (u0.nodes, u0.arcs, u0.source_words) == (5, 4, 2)
    # node 0: arc scores -6 and -8 -> p = 1/(1+e^-2); nodes 1 and 2 have one arc each (entropy 0)
    p = 1 / (1 + math.exp(-2))
    h0 = -(p * math.log(p) + (1 - p) * math.log(1 - p))
    assert u0.out_entropy == pytest.approx(h0 / 3)
    assert (u1.nodes, u1.arcs, u1.source_words) == (3, 2, 1)
    assert u1.out_entropy == pytest.approx(math.log(2))
    slf = summarize_word_graph(FIX / "word_graph_slf.txt").get(3)
    q = 1 / (1 + math.exp(-1))
    assert (slf.nodes, slf.arcs, slf.source_words) == (3, 2, 1)
    assert slf.out_entropy == pytest.approx(-(q * math.log(q) + (1 - q) * math.log(1 - q)))


def test_word_graph_streams_utterances_and_rejects_bad_lines(tmp_path):
    assert [(sid, len(arcs), len(nodes)) for sid, arcs, nodes in iter_word_graph(FIX / "word_graph.txt")] == [
        (0, 4, 5),
        (1, 2, 3),
    ]
    orphan = write(tmp_path, "orphan.wg", "VERSION=1.0\nJ=0\tS=0\tE=1\ta=-1\tl=-1\tw=a|b\n")
    with pytest.raises(QEInputError, match="before any UTTERANCE") as info:
        summarize_word_graph(orphan)
    assert info.value.line == 2
    odd = write(tmp_path, "odd.wg", "UTTERANCE=0\nX=1\n")
    with pytest.raises(QEInputError, match="unrecognised"):
        summarize_word_graph(odd)
    cut = write(tmp_path, "cut.wg", (FIX / "word_graph.txt").read_text(encoding="utf-8") + "J=2\tS=0\tE=")
    with pytest.raises(QEInputError, match="truncated"):
        summarize_word_graph(cut)
    index = summarize_word_graph(cut, truncated="drop")
    assert index.ids() == [0] and index.dropped == {1}


@pytest.mark.parametrize("value", ["nan", "inf", "-1e200"])
@pytest.mark.parametrize("where", ["score", "total", "later total"])
def test_scores_that_are_not_finite_are_refused_naming_the_line(tmp_path, value, where):
    """nan / inf / -1e200 gave NaN or infinite features (the moments square the totals) with exit 0."""
    lines = (FIX / "nbest_old.txt").read_text().splitlines()
    fields = lines[0].split(" ||| ")
    if where == "score":
        fields[2] = fields[2].replace("-2 ", f"{value} ", 1)
        lines[0] = " ||| ".join(fields)
    elif where == "total":
        lines[0] = " ||| ".join([*fields[:3], value, *fields[4:]])
    else:
        later = lines[1].split(" ||| ")
        lines[1] = " ||| ".join([*later[:3], value, *later[4:]])
    path = write(tmp_path, "nbest.txt", "\n".join(lines) + "\n")
    with pytest.raises(QEInputError, match="not a finite number") as info:
        summarize_nbest(path).get(0)
    assert info.value.line == (2 if where == "later total" else 1)


def test_a_byte_order_mark_is_dropped_from_decoder_logs(tmp_path):
    for name, read in (("nbest_old.txt", summarize_nbest), ("trace.txt", summarize_trace)):
        marked = tmp_path / name
        marked.write_bytes(b"\xef\xbb\xbf" + (FIX / name).read_bytes())
        plain, bom = read(FIX / name), read(marked)
        assert plain.ids() == bom.ids()
        for i in plain.ids():
            if read is summarize_trace:  # byte offsets move by the BOM's 3 bytes and still find the line
                assert bom.get(i).offset == plain.get(i).offset + 3
                assert read_trace_phrases(marked, bom.get(i).offset) == read_trace_phrases(
                    FIX / name, plain.get(i).offset
                )
                assert replace(bom.get(i), offset=0) == replace(plain.get(i), offset=0)
            else:
                assert bom.get(i) == plain.get(i)
