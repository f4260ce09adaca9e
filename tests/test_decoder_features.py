"""The ``decoder`` feature family on hand-written Moses fixtures; expected values worked out by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from qe.features.base import Pairs
from qe.features.decoder import DecoderFamily, all_specs
from qe.infra.errors import QEInputError

FIX = Path(__file__).parent / "fixtures" / "moses"
NAN = math.nan

NBEST_NAMES = [
    "mf1_distortion",
    "mf2_word_penalty",
    "mf3_lm",
    "mf4_phrase_st",
    "mf5_lex_st",
    "mf6_phrase_ts",
    "mf7_lex_ts",
    "mf8_phrase_penalty",
    "total_score",
    "nbest_size",
    "nbest_margin",
    "nbest_score_mean",
    "nbest_score_std",
    "nbest_len_mean",
    "nbest_len_std",
    "posterior_mean",
    "posterior_min",
]
TRACE_NAMES = ["trace_phrases", "trace_src_phrase_len", "trace_tgt_phrase_len", "trace_untranslated"]
SG_NAMES = ["sg_hyps_per_word", "sg_recombined_per_word", "sg_fanout_mean", "sg_fanout_max", "sg_fscore_std"]
WG_NAMES = ["wg_nodes_per_word", "wg_arcs_per_word", "wg_arc_density", "wg_out_entropy"]

# Hand-computed rows of nbest_old.txt (see the fixture): sentence 0 has totals -6.25 -6.75 -7.5 and
# lengths 4 4 3; sentence 1 a single hypothesis; sentence 2 two hypotheses.
OLD_ROWS = {
    "0": [
        -2, -4, -18.5, -3.1, -5.2, -2.7, -4.9, 2.99959, -6.25,
        3, 0.5, -41 / 6, math.sqrt(114 / 144 / 3), 11 / 3, math.sqrt(2) / 3, 0.75, 2 / 3,
    ],
    "1": [-1, -5, -22.0, -6.0, -7.0, -5.5, -6.5, 2.99959, -9.0, 1, NAN, -9.0, 0.0, 5.0, 0.0, 1.0, 1.0],
    "2": [-1, -2, -10.0, -1.0, -2.0, -1.5, -2.5, 0.99995, -3.0, 2, 1.0, -3.5, 0.5, 2.5, 0.5, 1.0, 1.0],
}  # fmt: skip


def batch(ids, src=None):
    ids = list(ids)
    return Pairs(ids=ids, src=src if src is not None else [""] * len(ids), mt=[""] * len(ids))


def col(family, name):
    return [s.name for s in family.specs()].index(name)


def test_catalogue_lists_every_log_in_order():
    names = [s.name for s in all_specs()]
    assert names == NBEST_NAMES + TRACE_NAMES + SG_NAMES + WG_NAMES
    assert len(set(names)) == len(names)
    assert all(s.description and s.resource and s.resource.startswith("moses ") for s in all_specs())
    # without logs, specs() is the catalogue (for `qe features --list`) but extraction refuses
    family = DecoderFamily()
    assert [s.name for s in family.specs()] == names
    with pytest.raises(QEInputError, match="at least one Moses log"):
        family.extract(batch(["0"]))


def test_specs_follow_configured_logs():
    assert [s.name for s in DecoderFamily(nbest=FIX / "nbest_old.txt").specs()] == NBEST_NAMES
    assert [s.name for s in DecoderFamily(trace=FIX / "trace.txt").specs()] == TRACE_NAMES
    family = DecoderFamily(search_graph=FIX / "search_graph.txt", word_graph=FIX / "word_graph.txt")
    assert [s.name for s in family.specs()] == SG_NAMES + WG_NAMES
    assert family.column_names()[0] == "decoder.sg_hyps_per_word"


def test_old_layout_values():
    family = DecoderFamily(nbest=FIX / "nbest_old.txt")
    out = family.extract(batch(["0", "1", "2"]))
    assert out.shape == (3, 17) and out.dtype == np.float64
    expected = np.array([OLD_ROWS["0"], OLD_ROWS["1"], OLD_ROWS["2"]])
    np.testing.assert_allclose(out, expected, rtol=1e-12, equal_nan=True)


def test_new_layout_any_id_order():
    family = DecoderFamily(nbest=FIX / "nbest_new.txt")
    out = family.extract(batch(["4", "1", "2", "0"]))
    mf = slice(0, 8)
    np.testing.assert_allclose(out[2, mf], [-3, -4, -20.25, -2.5, -3.5, -1.5, -4.5, 2])
    np.testing.assert_allclose(out[3, mf], [-1, -5, -30, -4, -6, -3, -5, 3])
    np.testing.assert_allclose(out[0, mf], [0, -1, -3, -0.25, -0.5, -0.125, -0.75, 1])
    size, margin, mean, std = (col(family, n) for n in NBEST_NAMES[9:13])
    assert out[:, size].tolist() == [1, 2, 3, 2]
    assert math.isnan(out[0, margin]) and out[1, margin] == 1.5 and out[3, margin] == 0.75
    assert out[2, mean] == pytest.approx(-20 / 3)
    assert out[2, std] == pytest.approx(math.sqrt(186 / 36 / 3))
    # sentence 0: 1-best tokens the cat saw the dog; "the" is in 1 of 2 hypotheses
    assert out[3, col(family, "posterior_mean")] == pytest.approx(0.8)
    assert out[3, col(family, "posterior_min")] == 0.5


def test_empty_nbest_for_a_sentence():
    strict = DecoderFamily(nbest=FIX / "nbest_new.txt")
    with pytest.raises(QEInputError, match=r"Moses id 3\).*later sentences") as info:
        strict.extract(batch(["2", "3"]))
    assert info.value.path == str(FIX / "nbest_new.txt")
    lenient = DecoderFamily(nbest=FIX / "nbest_new.txt", missing="nan")
    row = lenient.extract(batch(["3"]))[0]
    assert row[col(lenient, "nbest_size")] == 0.0
    assert np.isnan(np.delete(row, col(lenient, "nbest_size"))).all()


def test_sentence_beyond_the_log():
    with pytest.raises(QEInputError, match=r"ids 0\.\.4.*id_offset"):
        DecoderFamily(nbest=FIX / "nbest_new.txt").extract(batch(["7"]))
    row = DecoderFamily(nbest=FIX / "nbest_new.txt", missing="nan").extract(batch(["7"]))[0]
    assert np.isnan(row).all()


def test_id_offset_and_non_integer_ids():
    shifted = DecoderFamily(nbest=FIX / "nbest_old.txt", id_offset=-1).extract(batch(["1", "2", "3"]))
    np.testing.assert_allclose(shifted, np.array(list(OLD_ROWS.values())), rtol=1e-12, equal_nan=True)
    with pytest.raises(QEInputError, match="not an integer"):
        DecoderFamily(nbest=FIX / "nbest_old.txt").extract(batch(["s1"]))


def test_check_ids_against_the_dataset():
    family = DecoderFamily(nbest=FIX / "nbest_old.txt")
    family.check_ids(["0", "1", "2"])
    with pytest.raises(QEInputError, match=r"1 sentence id\(s\) that are not in the dataset \(e\.g\. 2\)"):
        family.check_ids(["0", "1"])
    with pytest.raises(QEInputError, match="no entry for 1 dataset sentence"):
        family.check_ids(["0", "1", "2", "3"])
    DecoderFamily(nbest=FIX / "nbest_old.txt", missing="nan").check_ids(["0", "1", "2", "3"])
    # a 1-based dataset against 0-based logs is caught, and fixed by id_offset
    with pytest.raises(QEInputError, match="not in the dataset"):
        family.check_ids(["1", "2", "3"])
    DecoderFamily(nbest=FIX / "nbest_old.txt", id_offset=-1).check_ids(["1", "2", "3"])


def test_feature_map_setting():
    # candidates are tried in order: sentence 2 has two LMs, sentence 0 only one
    family = DecoderFamily(nbest=FIX / "nbest_old.txt", feature_map={"mf3": ["lm[0]+lm[1]", "lm"]})
    assert family.extract(batch(["2", "0"]))[:, 2].tolist() == [-22.0, -18.5]
    with pytest.raises(QEInputError, match=r"no score for mf3_lm \(tried lm\[0\]\+lm\[1\]\)"):
        DecoderFamily(nbest=FIX / "nbest_old.txt", feature_map={"mf3": "lm[0]+lm[1]"}).load()
    with pytest.raises(QEInputError, match="feature_map"):
        DecoderFamily(nbest=FIX / "nbest_old.txt", feature_map={"mf10": "d"})
    wrong = DecoderFamily(nbest=FIX / "nbest_new.txt", feature_map={"mf1": "d"})
    with pytest.raises(QEInputError, match="no score for mf1_distortion") as info:
        wrong.extract(batch(["0"]))
    assert info.value.line == 1


def test_truncated_nbest():
    with pytest.raises(QEInputError, match="truncated") as info:
        DecoderFamily(nbest=FIX / "nbest_truncated.txt").extract(batch(["0"]))
    assert info.value.line == 5
    out = DecoderFamily(nbest=FIX / "nbest_truncated.txt", missing="nan").extract(batch(["0", "1"]))
    assert out[0, 9:11].tolist() == [2.0, 0.5]  # size 2, margin -2.0 - -2.5
    assert np.isnan(out[1]).all()  # sentence 1 was cut off


def test_trace_features():
    family = DecoderFamily(trace=FIX / "trace.txt", moses_input=FIX / "trace_source.txt")
    out = family.extract(batch(["0", "1", "2", "3"]))
    np.testing.assert_allclose(
        out,
        [[3, 4 / 3, 4 / 3, 0], [5, 1, 1, 2], [0, NAN, NAN, 0], [3, 4 / 3, 1, 0]],
        equal_nan=True,
    )
    # Without moses_input the dataset's source is used (same tokens, other casing here).
    src = ["the house is small", "Obama visited Oslo , Norway", "", "the cat very black"]
    assert DecoderFamily(trace=FIX / "trace.txt").extract(batch(["1"], src[1:2]))[0, 3] == 2
    unk = DecoderFamily(trace=FIX / "trace_unknown.txt", unknown_prefix="UNK")
    assert unk.extract(batch(["0"]))[0].tolist() == [4, 1, 1, 2]


def test_trace_source_mismatch():
    raw = ["Obama visited Oslo, Norway"]  # untokenized: 4 tokens, the trace covers 5
    with pytest.raises(QEInputError, match="covers 5 source words") as info:
        DecoderFamily(trace=FIX / "trace.txt").extract(batch(["1"], raw))
    assert info.value.line == 2
    row = DecoderFamily(trace=FIX / "trace.txt", missing="nan").extract(batch(["1"], raw))[0]
    assert row[:3].tolist() == [5, 1, 1] and math.isnan(row[3])


def test_trace_without_marks():
    with pytest.raises(QEInputError, match="segmentation marks") as info:
        DecoderFamily(trace=FIX / "trace_nomarks.txt").extract(batch(["0"]))
    assert info.value.line == 1 and info.value.path == str(FIX / "trace_nomarks.txt")


def test_search_graph_features():
    family = DecoderFamily(search_graph=FIX / "search_graph.txt")
    out = family.extract(batch(["0", "1", "2"]))
    np.testing.assert_allclose(out[0], [5 / 2, 2 / 2, 5 / 3, 3, math.sqrt(2.8 / 5)])
    np.testing.assert_allclose(out[1], [2 / 1, 0 / 1, 2, 2, 0.5])
    assert np.isnan(out[2]).all()  # Moses kept only the initial hypothesis


def test_word_graph_features(tmp_path):
    out = DecoderFamily(word_graph=FIX / "word_graph.txt").extract(batch(["0", "1"]))
    p = 1 / (1 + math.exp(-2))
    h0 = -(p * math.log(p) + (1 - p) * math.log(1 - p))
    np.testing.assert_allclose(out[0], [5 / 2, 4 / 2, 4 / 5, h0 / 3])
    np.testing.assert_allclose(out[1], [3 / 1, 2 / 1, 2 / 3, math.log(2)])
    # arcs without source phrases: the dataset's source length is used instead
    target_only = tmp_path / "target_only.wg"
    target_only.write_text("UTTERANCE=0\nJ=0\tS=0\tE=1\ta=-1\tl=-1\tw=la\n", encoding="utf-8")
    row = DecoderFamily(word_graph=target_only).extract(batch(["0"], ["the house"]))[0]
    np.testing.assert_allclose(row, [2 / 2, 1 / 2, 1 / 2, 0.0])


def test_all_logs_together_in_column_order():
    family = DecoderFamily(
        nbest=FIX / "nbest_old.txt",
        trace=FIX / "trace.txt",
        search_graph=FIX / "search_graph.txt",
        word_graph=FIX / "word_graph.txt",
        moses_input=FIX / "trace_source.txt",
    )
    out = family.extract(batch(["1", "0"]))
    assert out.shape == (2, 30)
    np.testing.assert_allclose(out[1, :17], OLD_ROWS["0"], rtol=1e-12)
    np.testing.assert_allclose(out[0, 17:21], [5, 1, 1, 2])
    np.testing.assert_allclose(out[0, 21:26], [2, 0, 2, 2, 0.5])
    np.testing.assert_allclose(out[1, 26:30][:3], [5 / 2, 4 / 2, 4 / 5])


def test_log_paths_resolve_against_base_dir(tmp_path):
    with pytest.raises(QEInputError, match="not found"):
        DecoderFamily(nbest=tmp_path / "absent.nbest").extract(batch(["0"]))
    relative = DecoderFamily(nbest="nbest_old.txt", base_dir=FIX)
    assert relative.extract(batch(["1"]))[0, 9] == 1.0


def test_docs_list_every_feature():
    text = (Path(__file__).parents[1] / "docs" / "decoder.md").read_text(encoding="utf-8")
    assert "no longer public" in text
    missing = [spec.name for spec in all_specs() if f"`{spec.name}`" not in text]
    assert not missing
