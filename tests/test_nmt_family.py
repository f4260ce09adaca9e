"""The ``nmt`` family: every feature by hand, each reader format, id and token-count errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from qe.cli import main
from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from qe.nmt.fairseq import iter_fairseq
from qe.nmt.marian import iter_marian
from tests.helpers import write_lines

FIX = Path(__file__).parent / "fixtures" / "nmt"
LN2 = math.log(2)


def nmt(**settings):
    return make_families(["nmt"], {"nmt": settings})[0]


def columns(family) -> list[str]:
    return [name.removeprefix("nmt.") for name in family.column_names()]


def row(family, batch: Pairs, k: int = 0) -> dict[str, float]:
    return dict(zip(columns(family), family.extract(batch)[k], strict=True))


# ---------------------------------------------------------------------------------------- features


def hand_values() -> dict[str, float]:
    """Log-probabilities -0.1 -2.5 -0.5 for 3 tokens and -1.0 for </s>, MT of 2 words, score -1.025."""
    full, toks = [-0.1, -2.5, -0.5, -1.0], [-0.1, -2.5, -0.5]
    return {
        # with </s>: sorted -2.5 -1.0 -0.5 -0.1; percentile positions 0.3, 0.75, 1.5 (linear)
        "lp_mean": -4.1 / 4,
        "lp_min": -2.5,
        "lp_max": -0.1,
        "lp_std": math.sqrt((0.925**2 + 1.475**2 + 0.525**2 + 0.025**2) / 4),
        "lp_q10": -2.5 + 0.3 * 1.5,
        "lp_q25": -2.5 + 0.75 * 1.5,
        "lp_q50": -1.0 + 0.5 * 0.5,
        "lp_sum": -4.1,
        "prob_mean": sum(math.exp(v) for v in full) / 4,
        "share_below_p0.1": 1 / 4,  # ln 0.1 = -2.30: only -2.5
        "share_below_p0.5": 2 / 4,  # ln 0.5 = -0.69: -2.5 and -1.0
        # tokens only: sorted -2.5 -0.5 -0.1, mean -3.1/3; positions 0.2, 0.5, 1
        "lp_mean_noeos": -3.1 / 3,
        "lp_min_noeos": -2.5,
        "lp_max_noeos": -0.1,
        "lp_std_noeos": math.sqrt(sum((v + 3.1 / 3) ** 2 for v in toks) / 3),
        "lp_q10_noeos": -2.5 + 0.2 * 2.0,
        "lp_q25_noeos": -2.5 + 0.5 * 2.0,
        "lp_q50_noeos": -0.5,
        "lp_sum_noeos": -3.1,
        "prob_mean_noeos": sum(math.exp(v) for v in toks) / 3,
        "share_below_p0.1_noeos": 1 / 3,
        "share_below_p0.5_noeos": 1 / 3,
        "tokens": 3.0,
        "eos_lp": -1.0,
        "lp_sum_per_word": -4.1 / 3,  # (2 words + 1)
        "tokens_per_word": 1.5,
        "model_score": -1.025,
    }


def test_every_feature_by_hand_from_line_inputs():
    family = nmt()
    batch = Pairs(
        ids=["0"],
        src=["eins zwei"],
        mt=["one two"],
        extra={
            "nmt_logprobs": ["-0.1 -2.5 -0.5 -1.0"],
            "nmt_score": ["-1.025"],
            "nmt_tokens": ["o@@ ne two"],
        },
    )
    got = row(family, batch)
    expected = hand_values()
    assert list(got) == list(expected)  # column order as documented
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name


def test_an_empty_translation_has_defined_values():
    family = nmt(model_score=False)
    got = row(family, Pairs(["0"], ["hallo"], [""], extra={"nmt_logprobs": ["-0.7"]}))
    assert not any(math.isnan(v) or math.isinf(v) for v in got.values())
    assert got["lp_mean"] == got["lp_min"] == got["lp_q50"] == got["eos_lp"] == -0.7
    assert got["lp_std"] == 0.0 and got["share_below_p0.5"] == 1.0
    noeos = {k: v for k, v in got.items() if k.endswith("_noeos")}
    assert noeos.pop("prob_mean_noeos") == 1.0 and set(noeos.values()) == {0.0}
    assert got["tokens"] == 0.0 and got["tokens_per_word"] == 0.0 and got["lp_sum_per_word"] == -0.7
    assert "model_score" not in got


def test_model_score_is_optional_and_refused_when_unparsable():
    assert "nmt.model_score" not in nmt(model_score=False).column_names()
    family = nmt()
    with pytest.raises(QEInputError, match="nmt_score") as info:
        family.extract(Pairs(["0"], ["a"], ["b"], extra={"nmt_logprobs": ["-1 -1"]}))
    assert "--nmt-score" in str(info.value)
    batch = Pairs(
        ["0", "1"],
        ["a", "b"],
        ["b", "c"],
        extra={"nmt_logprobs": ["-1 -1", "-1 -1"], "nmt_score": ["-1", "high"]},
        origins={"nmt_logprobs": ("lp.txt", 1), "nmt_score": ("scores.txt", 1)},
    )
    with pytest.raises(QEInputError, match="model score 'high' is not a number") as info:
        family.extract(batch)
    assert (str(info.value.path), info.value.line) == ("scores.txt", 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-0.5 abc", "'abc' is not a number"),
        ("-0.5 0.3", "'0.3' is not a finite number <= 0"),
        ("-inf", "finite"),
        ("-1e200", "below -1e\\+06"),  # finite, but its square overflowed: lp_std was inf
        ("-1_0", "'-1_0' is not a number"),  # float() reads it as -10
        ("-\u0661", "is not a number"),  # an Arabic-Indic one: float() reads it as -1
    ],
)
def test_bad_log_probabilities_name_the_line(text, message):
    batch = Pairs(
        ["0", "1"],
        ["a", "b"],
        ["x", "y"],
        extra={"nmt_logprobs": ["-1 -1", text]},
        origins={"nmt_logprobs": ("word_probas.txt", 11)},
    )
    with pytest.raises(QEInputError, match=message) as info:
        nmt(model_score=False).extract(batch)
    assert (str(info.value.path), info.value.line) == ("word_probas.txt", 12)


def test_token_count_mismatch_names_the_file_and_line():
    extra = {"nmt_logprobs": ["-1 -1 -1", "-1 -1"], "nmt_tokens": ["a b", "c d"]}
    batch = Pairs(["0", "1"], ["s", "t"], ["a b", "c d"], extra=extra, origins={"nmt_logprobs": ("wp", 7)})
    with pytest.raises(QEInputError, match="2 log-probabilities for 2 NMT tokens: expected 3") as info:
        nmt(model_score=False).extract(batch)
    assert (str(info.value.path), info.value.line) == ("wp", 8)
    # without the NMT tokens there is nothing to check against; with check_tokens off, accepted
    nmt(model_score=False).extract(Pairs(["0"], ["s"], ["c d"], extra={"nmt_logprobs": ["-1 -1"]}))
    nmt(model_score=False, check_tokens=False).extract(batch)


def test_qe_features_streams_nmt_inputs_and_names_the_bad_line(tmp_path, capsys):
    src = write_lines(tmp_path / "src", ["a", "b", "c", "d", "e"])
    mt = write_lines(tmp_path / "mt", ["x y", "x", "x y z", "x", "x y"])
    tokens = write_lines(tmp_path / "tok", ["x y", "x", "x y z", "x", "x y"])
    good = ["-1 -2 -3", "-1 -2", "-1 -1 -1 -1", "-0.5 -0.5", "-1 -2 -3"]
    logprobs = write_lines(tmp_path / "lp", good)
    out = tmp_path / "f.tsv"
    base = [
        "features",
        "--src",
        str(src),
        "--mt",
        str(mt),
        "--families",
        "nmt",
        "--quiet",
        "--chunk-size",
        "2",
    ]
    base += ["--set", "nmt.model_score=false", "--nmt-tokens", str(tokens)]
    assert main([*base, "--nmt-logprobs", str(logprobs), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    header = lines[0].split("\t")
    means = [float(line.split("\t")[header.index("nmt.lp_mean")]) for line in lines[1:]]
    assert means == pytest.approx([-2.0, -1.5, -1.0, -0.5, -2.0])
    bad = write_lines(tmp_path / "bad", [*good[:4], "-1 -2"])  # line 5, in the third chunk
    assert main([*base, "--nmt-logprobs", str(bad), "--out", str(tmp_path / "g.tsv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"qe: error: {bad}:5: nmt: 2 log-probabilities for 2 NMT tokens: expected 3")


# ---------------------------------------------------------------------------------------- fairseq


def test_fairseq_reader_takes_the_first_hypothesis_in_natural_log():
    records = {r.sent_id: r for r in iter_fairseq(FIX / "fairseq_generate.txt")}
    assert sorted(records) == [0, 1, 2]
    two = records[2]  # the first of its two hypotheses
    assert two.tokens == ["that", "is", "good", "."] and two.line == 6
    assert two.logprobs == pytest.approx(np.array([-0.3, -1.2, -0.1, -0.4, -1.0]) * LN2)
    assert two.score == pytest.approx(-0.6 * LN2)
    assert records[0].tokens == ["a", "d@@", "og"] and records[1].tokens == []
    assert records[1].logprobs == pytest.approx([-4.0 * LN2])
    natural = {r.sent_id: r for r in iter_fairseq(FIX / "fairseq_generate.txt", log_base="e")}
    assert natural[0].logprobs == pytest.approx([-0.5, -3.5, -0.2, -1.8]) and natural[0].score == -1.5


@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("fairseq_missing_p.txt", 5, "hypothesis H-1 has no P-1 line"),
        ("fairseq_concatenated.txt", 5, "sentence id 0 appears again"),
    ],
)
def test_fairseq_reader_errors_name_the_line(name, line, message):
    with pytest.raises(QEInputError, match=message) as info:
        list(iter_fairseq(FIX / name))
    assert info.value.line == line


def test_fairseq_malformed_and_truncated_logs(tmp_path):
    cases = {
        "H-x\t-1\ta": (1, "sentence id 'x' is not a non-negative integer"),
        "H-0\tbad\ta": (1, "hypothesis score 'bad' is not a number"),
        "P-0\t-1": (1, "P-0 line comes before any H-0"),
        "H-0\t-1\ta\nP-0\t-1 x": (2, "'x' is not a number"),
    }
    for text, (line, message) in cases.items():
        path = write_lines(tmp_path / "log", text.split("\n"))
        with pytest.raises(QEInputError, match=message) as info:
            list(iter_fairseq(path))
        assert info.value.line == line
    cut = write_lines(tmp_path / "cut", b"H-0\t-1\ta\nP-0\t-1 -1")  # no final newline
    with pytest.raises(QEInputError, match="truncated") as info:
        list(iter_fairseq(cut))
    assert info.value.line == 2


def test_family_from_a_fairseq_log_matches_the_line_inputs():
    log = nmt(fairseq=str(FIX / "fairseq_generate.txt"))
    ids, src, mt = ["0", "1", "2"], ["ein Hund", ".", "das ist gut ."], ["a dog", "", "that is good ."]
    log.check_ids(ids)
    from_log = log.extract(Pairs(ids, src, mt))
    lines = [
        " ".join(f"{v * LN2!r}" for v in values)
        for values in ([-0.5, -3.5, -0.2, -1.8], [-4.0], [-0.3, -1.2, -0.1, -0.4, -1.0])
    ]
    scores = [repr(v * LN2) for v in (-1.5, -4.0, -0.6)]
    from_lines = nmt().extract(Pairs(ids, src, mt, extra={"nmt_logprobs": lines, "nmt_score": scores}))
    np.testing.assert_allclose(from_log, from_lines, rtol=1e-12)
    assert "log_sha256=" in log.signature()


def test_decoder_log_ids_are_checked(tmp_path):
    family = nmt(fairseq=str(FIX / "fairseq_generate.txt"))
    with pytest.raises(QEInputError, match=r"1 sentence id\(s\) that are not in the dataset \(e.g. 2\)"):
        family.check_ids(["0", "1"])
    with pytest.raises(QEInputError, match=r"no entry for 1 dataset sentence\(s\) \(ids 3\)"):
        family.check_ids(["0", "1", "2", "3"])
    with pytest.raises(QEInputError, match="'s1' is not an integer"):
        family.check_ids(["s1"])
    shifted = nmt(fairseq=str(FIX / "fairseq_generate.txt"), id_offset=1)
    shifted.check_ids(["-1", "0", "1"])
    with pytest.raises(QEInputError, match="not in the dataset"):
        extract_features([family], Pairs.of(["a", "b"], ["c", "d"], ids=["0", "1"]), progress=False)


def test_decoder_log_token_count_is_checked(tmp_path):
    log = write_lines(tmp_path / "gen.txt", ["H-0\t-1.0\ta b c", "P-0\t-1.0 -1.0 -1.0"])
    with pytest.raises(QEInputError, match="3 log-probabilities for 3 NMT tokens") as info:
        nmt(fairseq=str(log)).load()
    assert info.value.line == 2 and str(info.value.path) == str(log)
    assert len(nmt(fairseq=str(log), check_tokens=False).load()) == 1


def test_inputs_given_two_ways_are_refused():
    with pytest.raises(QEInputError, match="not both"):
        nmt(fairseq="a", marian="b")
    family = nmt(fairseq=str(FIX / "fairseq_generate.txt"))
    with pytest.raises(QEInputError, match="nmt_logprobs given as well as a decoder log"):
        family.extract(Pairs(["0"], ["a"], ["b"], extra={"nmt_logprobs": ["-1"]}))
    with pytest.raises(QEInputError, match="natural logs"):
        nmt(marian=str(FIX / "marian_nbest.txt"), log_base="2").load()
    assert nmt(fairseq="x").inputs == () and [i.name for i in nmt().inputs] == ["nmt_logprobs", "nmt_score"]


# ---------------------------------------------------------------------------------------- marian


def test_marian_reader_takes_the_best_hypothesis_and_its_word_scores():
    records = list(iter_marian(FIX / "marian_nbest.txt"))
    assert [r.sent_id for r in records] == [0, 1, 2] and [r.line for r in records] == [1, 3, 4]
    assert records[0].tokens == ["a", "d@@", "og"] and records[0].score == -1.025
    assert records[0].logprobs.tolist() == [-0.35, -2.4, -0.15, -1.2]
    assert records[1].tokens == [] and records[1].logprobs.tolist() == [-2.5]
    assert records[2].logprobs.tolist() == [-0.2, -0.8, -0.07, -0.3, -0.7]  # alignment field skipped
    family = nmt(marian=str(FIX / "marian_nbest.txt"))
    got = dict(zip(columns(family), family.extract(Pairs(["2"], ["x"], ["that is good ."]))[0], strict=True))
    assert got["lp_mean"] == pytest.approx(-2.07 / 5) and got["model_score"] == -0.414
    assert got["tokens"] == 4 and got["lp_sum_per_word"] == pytest.approx(-2.07 / 5)


def test_marian_reader_errors_name_the_line(tmp_path):
    with pytest.raises(QEInputError, match=r"0 WordScores= fields, not 1 .*--word-scores") as info:
        list(iter_marian(FIX / "marian_no_word_scores.txt"))
    assert info.value.line == 1
    lines = (FIX / "marian_nbest.txt").read_text().splitlines()
    shuffled = write_lines(tmp_path / "m.txt", [lines[0], lines[2], lines[1]])
    with pytest.raises(QEInputError, match="sentence id 0 appears again") as info:
        list(iter_marian(shuffled))
    assert info.value.line == 3
    short = write_lines(tmp_path / "s.txt", ["0 ||| a ||| -1"])
    with pytest.raises(QEInputError, match="at least 4 fields"):
        list(iter_marian(short))
    total = write_lines(tmp_path / "t.txt", ["0 ||| a ||| WordScores= -1 -1 ||| F0= -2 ||| nan"])
    with pytest.raises(QEInputError, match="total score 'nan' is not a finite number"):
        list(iter_marian(total))


def test_a_missing_log_is_one_clear_error(tmp_path):
    with pytest.raises(QEInputError, match="not found"):
        nmt(marian=str(tmp_path / "absent.txt")).load()
    empty = write_lines(tmp_path / "empty.txt", b"")
    with pytest.raises(QEInputError, match="is empty"):
        nmt(fairseq=str(empty)).load()


def test_config_runs_the_family_from_a_fairseq_log(tmp_path):
    """[data.<split>] nmt_fairseq reaches the family as its fairseq setting (a file input)."""
    hyps = ["a dog", "the cat", "that is good .", "yes"]
    log = [
        f"H-{i}\t-1.0\t{h}\nP-{i}\t" + " ".join(["-1.0"] * (len(h.split()) + 1)) for i, h in enumerate(hyps)
    ]
    write_lines(tmp_path / "gen.txt", "\n".join(reversed(log)).split("\n"))  # any id order
    write_lines(tmp_path / "src", ["ein Hund", "die Katze", "das ist gut .", "ja"])
    write_lines(tmp_path / "mt", hyps)
    write_lines(tmp_path / "labels", ["0.5", "0.1", "0.9", "0.3"])
    files = 'src = "src"\nmt = "mt"\nlabels = "labels"\nnmt_fairseq = "gen.txt"\n'
    config = tmp_path / "c.toml"
    config.write_text(
        f"[data.train]\n{files}[data.test]\n{files}"
        '[features]\nfamilies = ["nmt"]\n[learner]\nname = "mean"\n[cv]\nfolds = 2\n'
    )
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    signature = (tmp_path / "run" / "signature.txt").read_text()
    assert "family:nmt(" in signature and "log_sha256=" in signature
    assert "|input.train.nmt_fairseq:" in signature and "|input.test.nmt_fairseq:" in signature


def test_qe_features_checks_a_decoder_log_against_the_whole_input_not_each_chunk(tmp_path, capsys):
    src = write_lines(tmp_path / "src", ["ein Hund", ".", "das ist gut ."])
    mt = write_lines(tmp_path / "mt", ["a dog", "-", "that is good ."])
    log = str(FIX / "fairseq_generate.txt")
    base = ["features", "--families", "nmt", "--nmt-fairseq", log, "--quiet", "--chunk-size", "2"]
    assert main([*base, "--src", str(src), "--mt", str(mt), "--out", str(tmp_path / "f.tsv")]) == 0
    rows = (tmp_path / "f.tsv").read_text().splitlines()
    assert [float(r.split("\t")[0]) for r in rows[1:]] == pytest.approx(
        [-1.5 * LN2, -4.0 * LN2, -0.6 * LN2], abs=1e-5
    )
    two = [
        "--src",
        str(write_lines(tmp_path / "s2", ["a", "b"])),
        "--mt",
        str(write_lines(tmp_path / "m2", ["x", "y"])),
    ]
    assert main([*base, *two, "--out", str(tmp_path / "g.tsv")]) == 2
    assert "1 sentence id(s) that are not in the dataset (e.g. 2)" in capsys.readouterr().err


@pytest.mark.parametrize("reader", [iter_marian, iter_fairseq])
def test_a_decoder_log_with_a_byte_order_mark_reads_as_without(tmp_path, reader):
    """A leading BOM was taken as part of the first sentence id (or hid the first H- line)."""
    name = "marian_nbest.txt" if reader is iter_marian else "fairseq_generate.txt"
    plain = (FIX / name).read_bytes()
    marked = tmp_path / name
    marked.write_bytes(b"\xef\xbb\xbf" + plain)
    expected = [(r.sent_id, r.line, r.tokens, r.logprobs.tolist()) for r in reader(FIX / name)]
    assert [(r.sent_id, r.line, r.tokens, r.logprobs.tolist()) for r in reader(marked)] == expected


def test_an_input_the_settings_do_not_read_is_refused_not_ignored(tmp_path, capsys):
    """--nmt-score with nmt.model_score = false was read, checked, then silently ignored."""
    src = write_lines(tmp_path / "src", ["a", "b"])
    mt = write_lines(tmp_path / "mt", ["x y", "x"])
    logprobs = write_lines(tmp_path / "lp", ["-1 -2 -3", "-1 -2"])
    score = write_lines(tmp_path / "score", ["-0.5", "-0.7"])
    base = ["features", "--src", str(src), "--mt", str(mt), "--families", "nmt", "--quiet"]
    base += ["--nmt-logprobs", str(logprobs), "--out", str(tmp_path / "f.tsv")]
    capsys.readouterr()
    assert main([*base, "--set", "nmt.model_score=false", "--nmt-score", str(score)]) == 2
    err = capsys.readouterr().err.strip()
    assert "input 'nmt_score' is given but nmt does not read it with these settings" in err
    assert not (tmp_path / "f.tsv").exists()
    assert main([*base, "--nmt-score", str(score)]) == 0  # read when model_score is on (the default)
