"""Pseudo-reference features: BLEU, chrF, TER and length ratio checked against hand computations."""

from __future__ import annotations

import math

import pytest
import tomli_w

from qe.cli import main
from qe.features.base import Pairs
from qe.features.pseudoref import SPECS, PseudoRefFamily, bleu_without_bp
from qe.infra.errors import QEInputError
from tests.helpers import write_lines

NAMES = [spec.name for spec in SPECS]


def _scores(pairs: list[tuple[str, str]], **settings) -> list[dict[str, float]]:
    batch = Pairs(
        ids=[str(i) for i in range(len(pairs))],
        src=["source"] * len(pairs),
        mt=[p[0] for p in pairs],
        extra={"pseudo_ref": [p[1] for p in pairs]},
    )
    values = PseudoRefFamily(**settings).extract(batch)
    assert values.shape == (len(pairs), len(SPECS))
    return [dict(zip(NAMES, row.tolist(), strict=True)) for row in values]


def test_bleu_worked_example_without_smoothing_needed():
    # Both sides 8 tokens (BP = 1); precisions 7/8, 3/7, 2/6, 1/5 (Koehn's lecture example).
    (got,) = _scores([("in absolutely no way , mr chairman .", "mr speaker , in absolutely no way .")])
    expected = 100 * (7 / 8 * 3 / 7 * 2 / 6 * 1 / 5) ** (1 / 4)
    assert got["bleu"] == pytest.approx(expected)  # 39.76
    assert got["bleu_nobp"] == pytest.approx(expected)
    assert got["length_ratio"] == pytest.approx(9 / 9)


def test_bleu_exp_smoothing_and_effective_order():
    got = _scores(
        [
            # 3-token hypothesis: orders 1..3 only; trigram has no match -> 1 / (2 * 1).
            ("the cat sat", "the cat ran"),
            # orders 2, 3, 4 have no match: 1 / (2 * 3), 1 / (4 * 2), 1 / (8 * 1).
            ("a b c d", "a x c y"),
            # no n-gram match at all: 0.
            ("uno dos", "tres cuatro"),
        ]
    )
    assert got[0]["bleu"] == pytest.approx(100 * (2 / 3 * 1 / 2 * 1 / 2) ** (1 / 3))
    assert got[1]["bleu"] == pytest.approx(100 * (2 / 4 * 1 / 6 * 1 / 8 * 1 / 8) ** (1 / 4))
    assert got[2]["bleu"] == 0 and got[2]["bleu_nobp"] == 0


def test_brevity_penalty_and_its_absence():
    # Hypothesis 2 tokens, reference 4: precisions 2/2 and 1/1, BP = exp(1 - 4/2).
    (got,) = _scores([("the cat", "the cat sat down")])
    assert got["bleu"] == pytest.approx(100 * math.exp(1 - 4 / 2))
    assert got["bleu_nobp"] == pytest.approx(100)
    assert got["length_ratio"] == pytest.approx(3 / 5)
    assert got["ter"] == pytest.approx(100 * 2 / 4)  # two insertions over 4 reference words


def test_bleu_without_bp_helper():
    assert bleu_without_bp([7, 3, 2, 1], [8, 7, 6, 5]) == pytest.approx(100 * 0.025 ** (1 / 4))
    assert bleu_without_bp([2, 1, 0, 0], [3, 2, 1, 0]) == pytest.approx(
        100 * (2 / 3 * 1 / 2 * 1 / 2) ** (1 / 3)
    )
    assert bleu_without_bp([0, 0, 0, 0], [3, 2, 1, 0]) == 0
    assert bleu_without_bp([0, 0, 0, 0], [0, 0, 0, 0]) == 0


def test_chrf_by_hand():
    got = _scores([("ab", "abc"), ("abc", "abd"), ("a b", "ab")])
    # "ab" vs "abc": 1-grams P 2/2 R 2/3; 2-grams P 1/1 R 1/2; 3-grams: no hypothesis n-gram.
    # mean P = 1, mean R = 7/12; F2 = 5PR / (4P + R) = 7/11.
    assert got[0]["chrf"] == pytest.approx(100 * 7 / 11)
    # "abc" vs "abd": P = R = (2/3 + 1/2 + 0) / 3 = 7/18, so F2 = 7/18.
    assert got[1]["chrf"] == pytest.approx(100 * 7 / 18)
    # whitespace is removed before the character n-grams are taken
    assert got[2]["chrf"] == pytest.approx(100)


def test_ter_by_hand():
    got = _scores(
        [
            ("b c a", "a b c"),  # one shift of "a": 1 edit / 3 words
            ("the cat sat", "the cat ran"),  # one substitution
            ("The Cat", "the cat"),  # case-insensitive by default
            ("a b c d e", "f g h"),  # 3 substitutions + 2 deletions over 3 words
        ]
    )
    assert got[0]["ter"] == pytest.approx(100 / 3)
    assert got[1]["ter"] == pytest.approx(100 / 3)
    assert got[2]["ter"] == 0
    assert got[3]["ter"] == pytest.approx(100 * 5 / 3)
    assert _scores([("The Cat", "the cat")], ter_case_sensitive=True)[0]["ter"] == pytest.approx(100)


def test_length_ratio_uses_the_13a_tokens():
    # "Hello, world." -> Hello , world . (4 tokens); "Hi" -> 1 token.
    (got,) = _scores([("Hello, world.", "Hi")])
    assert got["length_ratio"] == pytest.approx(5 / 2)


def test_lowercase_setting():
    assert _scores([("The Cat sat", "the cat sat")], lowercase=True)[0]["bleu"] == pytest.approx(100)
    assert _scores([("The Cat sat", "the cat sat")])[0]["bleu"] < 100


def test_empty_and_whitespace_sentences():
    got = _scores([("", ""), ("x", ""), ("", "x"), ("   ", "a b"), ("\t", " ")])
    assert got[0] == {"bleu": 0, "bleu_nobp": 0, "chrf": 0, "ter": 0, "length_ratio": 1}
    assert got[1] == {"bleu": 0, "bleu_nobp": 0, "chrf": 0, "ter": 100, "length_ratio": 2}
    assert got[2] == {"bleu": 0, "bleu_nobp": 0, "chrf": 0, "ter": 100, "length_ratio": 0.5}
    assert got[3]["ter"] == 100 and got[3]["length_ratio"] == pytest.approx(1 / 3)
    assert got[4] == got[0]


def test_characters_outside_any_vocabulary_give_finite_values():
    got = _scores([("😀 \ud800 \x00 中文", "中文 😀"), ("\ue000\u200b", "\ue000"), ("x\x1fy", "xy")])
    assert all(math.isfinite(v) for row in got for v in row.values())
    # identical apart from the invisible characters sacreBLEU keeps: chrF still sees the shared chars
    assert got[1]["chrf"] > 0


def test_missing_or_misaligned_pseudo_reference_is_refused():
    family = PseudoRefFamily()
    with pytest.raises(QEInputError, match="--pseudo-ref"):
        family.extract(Pairs(ids=["0"], src=["a"], mt=["b"]))
    with pytest.raises(QEInputError, match="1 pseudo_ref lines for 2 pairs"):
        family.extract(Pairs(ids=["0", "1"], src=["a", "b"], mt=["a", "b"], extra={"pseudo_ref": ["a"]}))
    with pytest.raises(QEInputError, match=r"'1'.*not text"):
        family.extract(
            Pairs(ids=["0", "1"], src=["a", "b"], mt=["a", "b"], extra={"pseudo_ref": ["a", None]})
        )


def test_more_words_than_ters_limit_are_refused_before_ter():
    """TER's shift search grows with the product of the lengths (15,000 words a side: gigabytes)."""
    words = " ".join(f"w{i % 50}" for i in range(2_000))
    assert _scores([(words, words)])[0]["ter"] == 0.0  # 2,000 words a side are still scored
    for mt, ref, role in ((words + " x", words, "MT"), (words, "x " + words, "pseudo_ref")):
        batch = Pairs(ids=["7"], src=["a"], mt=[mt], extra={"pseudo_ref": [ref]})
        too_long = rf"pseudoref: the {role} of pair '7' has 2,001 tokens, and pseudoref reads at most 2,000 "
        with pytest.raises(QEInputError, match=too_long):
            PseudoRefFamily().extract(batch)


def test_unknown_tokenizer_is_refused():
    with pytest.raises(QEInputError, match="tokenize"):
        PseudoRefFamily(tokenize="no-such-tokenizer")


def test_signature_names_the_sacrebleu_version():
    assert "sacrebleu=" in PseudoRefFamily().signature()


def test_cli_checks_the_pseudo_reference_line_count(tmp_path, capsys):
    src = write_lines(tmp_path / "src.txt", ["the cat sat", "a dog"])
    mt = write_lines(tmp_path / "mt.txt", ["el gato", "un perro"])
    short = write_lines(tmp_path / "short.txt", ["el gato"])
    good = write_lines(tmp_path / "pseudo.txt", ["el gato", "un perro"])
    out = tmp_path / "features.tsv"
    base = ["features", "--src", str(src), "--mt", str(mt), "--families", "pseudoref,surface", "--quiet"]
    assert main([*base, "--pseudo-ref", str(short), "--out", str(out)]) == 2
    assert "short.txt" in capsys.readouterr().err
    assert not out.exists()
    assert main([*base, "--pseudo-ref", str(good), "--out", str(out)]) == 0
    header, *rows = out.read_text().splitlines()
    assert header.split("\t")[:2] == ["pseudoref.bleu", "pseudoref.bleu_nobp"]
    assert len(rows) == 2
    assert float(rows[0].split("\t")[0]) == pytest.approx(100)  # identical to its pseudo-reference


def test_a_model_with_pseudoref_takes_the_same_input_in_qe_run_and_qe_predict(tmp_path, capsys):
    src = [f"the cat number {i} sat on the mat" for i in range(12)]
    mt = [f"el gato número {i} se sentó en la alfombra" for i in range(12)]
    pseudo = [f"el gato {i} estaba en la alfombra" for i in range(12)]
    for name, lines in (("src", src), ("mt", mt), ("pseudo", pseudo)):
        write_lines(tmp_path / f"{name}.txt", lines)
    write_lines(tmp_path / "labels.txt", [str(1 + i % 5) for i in range(12)])
    split = {"src": "src.txt", "mt": "mt.txt", "labels": "labels.txt", "pseudo_ref": "pseudo.txt"}
    config = tmp_path / "config.toml"
    config.write_text(
        tomli_w.dumps(
            {
                "data": {"train": split, "test": split, "label_range": [1, 5]},
                "features": {"families": ["pseudoref", "surface"]},
                "learner": {"name": "mean"},
                "cv": {"folds": 3},
            }
        ),
        encoding="utf-8",
    )
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    model = str(tmp_path / "run" / "model.skops")
    base = ["predict", "--model", model, "--src", str(tmp_path / "src.txt"), "--mt", str(tmp_path / "mt.txt")]
    capsys.readouterr()
    assert main([*base, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "pseudoref needs pseudo_ref" in err and "pass --pseudo-ref FILE" in err
    assert main([*base, "--pseudo-ref", str(tmp_path / "pseudo.txt"), "--quiet"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 13  # header + 12 scores
    assert main([*base, "--decoder-nbest", str(tmp_path / "src.txt"), "--quiet"]) == 2
    assert "none of the families pseudoref, surface uses it" in capsys.readouterr().err


def test_a_second_mt_system_supplies_the_pseudo_reference(tmp_path, capsys):
    """With [mt2] (Apertium) the family needs no file: the pseudo-reference is Apertium's translation
    (checked against the `apertium` command), the back-translation comes from the reverse pair, and
    a saved model scores new text with no extra flag."""
    import shutil
    import subprocess

    from sacrebleu.metrics import BLEU, CHRF

    from qe.resources.mt2 import installed_pairs

    if shutil.which("apertium") is None or not {"eng-spa", "spa-eng"} <= set(installed_pairs()):
        pytest.skip("Apertium eng-spa / spa-eng is not installed")
    src = [f"The cat number {i} sat on the mat." for i in range(10)]
    mt = [f"El gato número {i} se sentó en la alfombra." for i in range(10)]

    def apertium(pair: str, lines: list[str]) -> list[str]:
        text = "".join(f"{line}\n\n" for line in lines)  # a blank line: each sentence on its own
        out = subprocess.run(["apertium", "-u", pair], input=text, capture_output=True, text=True).stdout
        return [line.strip() for line in out.split("\n") if line.strip()]

    pseudo, back = apertium("eng-spa", src[:2]), apertium("spa-eng", mt[:2])
    write_lines(tmp_path / "src.txt", src)
    write_lines(tmp_path / "mt.txt", mt)
    write_lines(tmp_path / "labels.txt", [str(1 + i % 5) for i in range(10)])
    split = {"src": "src.txt", "mt": "mt.txt", "labels": "labels.txt"}
    config = tmp_path / "config.toml"
    config.write_text(
        tomli_w.dumps(
            {
                "data": {"train": split, "test": split, "label_range": [1, 5]},
                "features": {"families": ["pseudoref"], "settings": {"pseudoref": {"backtranslation": True}}},
                "learner": {"name": "mean"},
                "cv": {"folds": 3},
                "mt2": {"engine": "apertium", "pair": "eng-spa"},
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(out), "--quiet"]) == 0
    assert "mt2" in (out / "signature.txt").read_text()
    args = ["features", "--src", str(tmp_path / "src.txt"), "--mt", str(tmp_path / "mt.txt"), "--quiet"]
    capsys.readouterr()
    # features: the pseudo-reference and back-translation from Apertium, scored as sacreBLEU scores them
    from qe.bundle import with_mt2
    from qe.features.registry import make_families

    bundle = with_mt2(None, {"pair": "eng-spa"})
    (family,) = make_families(["pseudoref"], {"pseudoref": {"backtranslation": True}})
    values = family.bind(bundle).extract(Pairs(["0", "1"], src[:2], mt[:2]), bundle)
    bleu = BLEU(tokenize="13a", smooth_method="exp", effective_order=True)
    for i in range(2):
        assert values[i, 0] == pytest.approx(bleu.sentence_score(mt[i], [pseudo[i]]).score)
        assert values[i, 2] == pytest.approx(CHRF().sentence_score(mt[i], [pseudo[i]]).score)
        assert values[i, 5] == pytest.approx(bleu.sentence_score(back[i], [src[i]]).score)
        assert values[i, 6] == pytest.approx(CHRF().sentence_score(back[i], [src[i]]).score)
    model = str(out / "model.skops")
    assert main(["predict", "--model", model, "--src", args[2], "--mt", args[4], "--quiet"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 11
