"""Surface features: every feature checked against values worked out by hand on small pairs.

Each hand computation starts from the Moses tokens of the sentence, which are asserted first
(``test_tokens_assumed_by_the_hand_computations``), so a tokenizer change shows up as such.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.surface import (
    SPECS,
    SurfaceFamily,
    brackets_balanced,
    count_quotes,
    ends_with_eos,
    ne_like_count,
)
from qe.infra.errors import QEInputError
from qe.text.processing import TextConfig

NAMES = [spec.name for spec in SPECS]

PAIR_A = (
    'The U.S. envoy\'s "plan" (2009) cost 1,000 dollars, said NATO.',
    'El plan "plan" del enviado (2009) de EE.UU. costó 1.000 dollars, dijo la NATO',
)


def _spaced(text: str) -> list[str]:
    """Tokens written space-separated (readable in the test)."""
    return text.split()


TOKENS_A = (
    _spaced('The U.S. envoy \'s " plan " ( 2009 ) cost 1,000 dollars , said NATO .'),
    _spaced('El plan " plan " del enviado ( 2009 ) de EE.UU. costó 1.000 dollars , dijo la NATO'),
)
PAIR_B = ("Well-known facts ( [x) ] : ok? Yes!", "¿Hechos bien-conocidos? «Sí», dijo: “Vale”...")
TOKENS_B = (
    ["Well-known", "facts", "(", "[", "x", ")", "]", ":", "ok", "?", "Yes", "!"],
    ["¿", "Hechos", "bien-conocidos", "?", "«", "Sí", "»", ",", "dijo", ":", "“", "Vale", "”", "..."],
)
PAIR_NO_ALPHA = ("123 , 45 !!!", "123 ; 46 .")
TOKENS_NO_ALPHA = (["123", ",", "45", "!", "!", "!"], ["123", ";", "46", "."])

# Pair A by hand. Source: 17 tokens; target: 19 tokens.
# Non-whitespace characters: source 3+4+7+6+6+4+5+8+4+5 = 52; target 2+4+6+3+7+6+2+6+5+5+8+4+2+4 = 64.
# Lower-cased types: source 16 (the quote twice), 15 hapaxes; target 17 (plan and the quote twice), 15.
EXPECTED_A = {
    "src_tokens": 17,
    "mt_tokens": 19,
    "src_chars": 52,
    "mt_chars": 64,
    "token_ratio": 20 / 18,
    "char_ratio": 65 / 53,
    "token_absdiff": 2,
    "char_absdiff": 12,
    "src_mean_token_length": 52 / 17,
    "mt_mean_token_length": 64 / 19,
    "src_longest_token": 7,  # dollars
    "mt_longest_token": 7,  # enviado, dollars
    "src_ttr": 16 / 17,
    "mt_ttr": 17 / 19,
    "src_guiraud": 16 / math.sqrt(17),
    "mt_guiraud": 17 / math.sqrt(19),
    "src_herdan": math.log(16) / math.log(17),
    "mt_herdan": math.log(17) / math.log(19),
    "src_hapax_share": 15 / 17,
    "mt_hapax_share": 15 / 19,
    "src_alpha_share": 7 / 17,  # The envoy plan cost dollars said NATO
    "mt_alpha_share": 11 / 19,  # El plan plan del enviado de costó dollars dijo la NATO
    "mt_alpha_blowup": 0,  # 11 <= 3 * 7
    "src_numbers": 2,  # 2009 1,000
    "mt_numbers": 2,  # 2009 1.000
    "numbers_absdiff": 0,
    "src_numbers_missing": 1,  # 1,000 has no verbatim match
    "src_numbers_missing_digits": 0,  # 1000 == 1000
    "src_punct": 6,  # " " ( ) , .
    "mt_punct": 5,  # " " ( ) ,
    "punct_absdiff": 1,
    "comma_absdiff": 0,
    "period_absdiff": 1,
    "semicolon_absdiff": 0,
    "colon_absdiff": 0,
    "question_absdiff": 0,
    "exclamation_absdiff": 0,
    "mt_ends_eos": 0,  # ends with NATO
    "eos_mismatch": 1,
    "src_upper_initial": 3,  # The U.S. NATO
    "mt_upper_initial": 3,  # El EE.UU. NATO
    "src_allcaps": 2,  # U.S. NATO
    "mt_allcaps": 2,  # EE.UU. NATO
    "src_ne_like": 2,  # U.S. (after The), NATO (after said)
    "mt_ne_like": 2,  # EE.UU. (after de), NATO (after la)
    "ne_like_absdiff": 0,
    "src_brackets": 2,
    "mt_brackets": 2,
    "brackets_absdiff": 0,
    "src_brackets_unbalanced": 0,
    "mt_brackets_unbalanced": 0,
    "src_quotes": 2,  # the apostrophe of envoy's is between letters: not a quote
    "mt_quotes": 2,
    "quotes_absdiff": 0,
    "src_quotes_unbalanced": 0,
    "mt_quotes_unbalanced": 0,
    "mt_untranslated": 4,  # plan, plan, dollars, NATO of 11 all-letter target tokens of 2+ chars
    "mt_untranslated_share": 4 / 11,
    "mt_untranslated_lower": 3,  # NATO left out
    "mt_untranslated_lower_share": 3 / 11,
    "src_genitive": 1,
    "mt_genitive": 0,
    "src_hyphenated": 0,
    "mt_hyphenated": 0,
    "src_has_quote": 1,
    "src_has_bracket": 1,
    "src_has_hyphen": 0,
    "src_has_comma": 1,
    "src_has_number": 1,
    "src_has_allcaps": 1,
    "src_has_genitive": 1,
    "src_has_ne_like": 1,
}

# Pair B by hand. Source 12 tokens, all distinct; target 14 tokens, all distinct.
# Characters: source 10+5+1+3+1+1+3+4 = 28; target 7+15+5+5+9 = 41.
# Token lengths: source 10,5,1,1,1,1,1,1,2,1,3,1; target 1,6,14,1,1,2,1,1,4,1,1,4,1,3.
EXPECTED_B = {
    "src_tokens": 12,
    "mt_tokens": 14,
    "src_chars": 28,
    "mt_chars": 41,
    "token_ratio": 15 / 13,
    "char_ratio": 42 / 29,
    "token_absdiff": 2,
    "char_absdiff": 13,
    "src_mean_token_length": 28 / 12,
    "mt_mean_token_length": 41 / 14,
    "src_longest_token": 10,
    "mt_longest_token": 14,
    "src_ttr": 1,
    "mt_ttr": 1,
    "src_guiraud": math.sqrt(12),
    "mt_guiraud": math.sqrt(14),
    "src_herdan": 1,
    "mt_herdan": 1,
    "src_hapax_share": 1,
    "mt_hapax_share": 1,
    "src_alpha_share": 4 / 12,  # facts x ok Yes (Well-known has a hyphen)
    "mt_alpha_share": 4 / 14,  # Hechos Sí dijo Vale
    "mt_alpha_blowup": 0,
    "src_numbers": 0,
    "mt_numbers": 0,
    "numbers_absdiff": 0,
    "src_numbers_missing": 0,
    "src_numbers_missing_digits": 0,
    "src_punct": 7,  # ( [ ) ] : ? !
    "mt_punct": 9,  # ¿ ? « » , : “ ” ...
    "punct_absdiff": 2,
    "comma_absdiff": 1,
    "period_absdiff": 0,  # "..." is not "."
    "semicolon_absdiff": 0,
    "colon_absdiff": 0,
    "question_absdiff": 0,  # ¿ is not ?
    "exclamation_absdiff": 1,
    "mt_ends_eos": 1,  # "..." ends with "."
    "eos_mismatch": 0,
    "src_upper_initial": 2,  # Well-known Yes
    "mt_upper_initial": 3,  # Hechos Sí Vale
    "src_allcaps": 0,
    "mt_allcaps": 0,
    "src_ne_like": 0,  # Yes follows ?
    "mt_ne_like": 0,  # Hechos is the first word; Sí follows «; Vale follows “
    "ne_like_absdiff": 0,
    "src_brackets": 4,
    "mt_brackets": 0,
    "brackets_absdiff": 4,
    "src_brackets_unbalanced": 1,  # ( [ ) ]: ) closes [
    "mt_brackets_unbalanced": 0,
    "src_quotes": 0,
    "mt_quotes": 4,  # « » “ ”
    "quotes_absdiff": 4,
    "src_quotes_unbalanced": 0,
    "mt_quotes_unbalanced": 0,
    "mt_untranslated": 0,
    "mt_untranslated_share": 0,
    "mt_untranslated_lower": 0,
    "mt_untranslated_lower_share": 0,
    "src_genitive": 0,
    "mt_genitive": 0,
    "src_hyphenated": 1,  # Well-known
    "mt_hyphenated": 1,  # bien-conocidos
    "src_has_quote": 0,
    "src_has_bracket": 1,
    "src_has_hyphen": 1,
    "src_has_comma": 0,
    "src_has_number": 0,
    "src_has_allcaps": 0,
    "src_has_genitive": 0,
    "src_has_ne_like": 0,
}

# No alphabetic token at all. Source 6 tokens (4 types: 123 , 45 !), target 4 tokens (4 types).
EXPECTED_NO_ALPHA = {
    **{name: 0 for name in NAMES},
    "src_tokens": 6,
    "mt_tokens": 4,
    "src_chars": 9,
    "mt_chars": 7,
    "token_ratio": 5 / 7,
    "char_ratio": 8 / 10,
    "token_absdiff": 2,
    "char_absdiff": 2,
    "src_mean_token_length": 9 / 6,
    "mt_mean_token_length": 7 / 4,
    "src_longest_token": 3,
    "mt_longest_token": 3,
    "src_ttr": 4 / 6,
    "mt_ttr": 1,
    "src_guiraud": 4 / math.sqrt(6),
    "mt_guiraud": 2,
    "src_herdan": math.log(4) / math.log(6),
    "mt_herdan": 1,
    "src_hapax_share": 3 / 6,
    "mt_hapax_share": 1,
    "src_numbers": 2,
    "mt_numbers": 2,
    "src_numbers_missing": 1,  # 45
    "src_numbers_missing_digits": 1,  # 45 vs 46
    "src_punct": 4,
    "mt_punct": 2,
    "punct_absdiff": 2,
    "comma_absdiff": 1,
    "period_absdiff": 1,
    "semicolon_absdiff": 1,
    "exclamation_absdiff": 3,
    "mt_ends_eos": 1,
    "eos_mismatch": 0,  # both end with sentence-final punctuation
    "src_has_comma": 1,
    "src_has_number": 1,
}

# Empty source, whitespace-only target: every count 0, both ratios (0 + 1) / (0 + 1).
EXPECTED_EMPTY = {**{name: 0 for name in NAMES}, "token_ratio": 1, "char_ratio": 1}


def _extract(pairs: list[tuple[str, str]], **settings) -> np.ndarray:
    batch = Pairs(
        ids=[str(i) for i in range(len(pairs))], src=[p[0] for p in pairs], mt=[p[1] for p in pairs]
    )
    return SurfaceFamily(**settings).extract(batch)


def _as_dict(row: np.ndarray) -> dict[str, float]:
    return dict(zip(NAMES, row.tolist(), strict=True))


def test_every_feature_has_a_hand_computed_value():
    for expected in (EXPECTED_A, EXPECTED_B, EXPECTED_NO_ALPHA, EXPECTED_EMPTY):
        assert sorted(expected) == sorted(NAMES)
    assert len(set(NAMES)) == len(NAMES)


def test_tokens_assumed_by_the_hand_computations():
    family = SurfaceFamily()
    src = family._processor("src", None)
    tgt = family._processor("tgt", None)
    for (s, t), (s_tok, t_tok) in [
        (PAIR_A, TOKENS_A),
        (PAIR_B, TOKENS_B),
        (PAIR_NO_ALPHA, TOKENS_NO_ALPHA),
    ]:
        assert src.tokenize(s) == s_tok
        assert tgt.tokenize(t) == t_tok


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        (PAIR_A, EXPECTED_A),
        (PAIR_B, EXPECTED_B),
        (PAIR_NO_ALPHA, EXPECTED_NO_ALPHA),
        (("", "   \t "), EXPECTED_EMPTY),
    ],
    ids=["names-numbers-quotes", "brackets-punctuation", "no-alphabetic-token", "empty"],
)
def test_features_match_hand_computation(pair, expected):
    got = _as_dict(_extract([pair])[0])
    for name in NAMES:
        assert got[name] == pytest.approx(expected[name], abs=1e-12), name


def test_rows_do_not_depend_on_batch_neighbours():
    pairs = [PAIR_A, ("", ""), PAIR_B, PAIR_NO_ALPHA]
    together = _extract(pairs)
    for i, pair in enumerate(pairs):
        np.testing.assert_array_equal(together[i], _extract([pair])[0])


def test_helpers():
    assert brackets_balanced("a (b [c] d) {e}")
    assert brackets_balanced("no brackets")
    assert not brackets_balanced("( [ ) ]")
    assert not brackets_balanced("a)")
    assert not brackets_balanced("(a")
    # Apostrophes between word characters are not quotes; a closing ' after s or a comma is.
    assert count_quotes("don't and Anec's") == 0
    assert count_quotes("`Edge' and the players' union") == 3
    assert count_quotes('«a» “b” "c" „d‟ ‹e›') == 10
    assert count_quotes("'child,' he said") == 2
    assert ends_with_eos(["Dijo", ":", "«", "Está", "hecho", ".", "»"])  # closers skipped
    assert ends_with_eos(["Fin", "…"])
    assert not ends_with_eos(["(", "nota", ")"])
    assert not ends_with_eos([])
    # "It" after an opening quote and "Yes" after "?" start sentences; "Obama" does not.
    assert ne_like_count(["He", "said", ":", '"', "It", "is", "Obama", "'s", '"']) == 1
    assert ne_like_count(["¿", "Qué", "?", "Yes", ",", "Madrid"]) == 1
    assert ne_like_count(["(", "Paris", ")"]) == 0  # first word, even after a bracket


def test_decomposed_accents_stay_in_their_word():
    # NFD "café" would otherwise be split by the Moses tokenizer at the combining accent.
    nfd = ("cafe\u0301 naïve", "cafe\u0301")
    nfc = ("café naïve", "café")
    np.testing.assert_array_equal(_extract([nfd]), _extract([nfc]))
    row = _as_dict(_extract([nfd])[0])
    assert row["src_tokens"] == 2 and row["mt_tokens"] == 1
    assert row["mt_untranslated"] == 1  # café copied verbatim


def test_characters_outside_any_vocabulary_give_finite_values():
    odd = [
        ("\ud800 lone surrogate", "x \udfff y"),
        ("nul\x00 byte", "emoji 😀 here"),
        ("zero\u200bwidth \ue000 private", "中文 字符"),
        ("\x0b\x0c\u2028", "\u3000"),
    ]
    values = _extract(odd)
    assert values.shape == (len(odd), len(SPECS))
    assert np.isfinite(values).all()
    # Only whitespace on both sides of the last pair: like an empty pair.
    assert _as_dict(values[3]) == pytest.approx(EXPECTED_EMPTY)


def test_style_setting_changes_tokens_and_case_is_kept():
    pair = ("A well-known U.S. firm.", "Una firma bien-conocida.")
    plain = _as_dict(_extract([pair])[0])
    aggressive = _as_dict(_extract([pair], style="moses-aggressive")[0])
    assert plain["src_hyphenated"] == 1
    # aggressive dash splits give "well @-@ known": 2 more tokens, no hyphenated token
    assert aggressive["src_tokens"] == plain["src_tokens"] + 2
    assert aggressive["src_hyphenated"] == 0
    assert plain["src_allcaps"] == 1 and plain["src_upper_initial"] == 2


def test_language_comes_from_settings_or_bundle():
    class FakeBundle:
        def text_config(self, side: str) -> TextConfig:
            return TextConfig(lang={"src": "de", "tgt": "fr"}[side])

    family = SurfaceFamily()
    assert family.text_config("src").lang == "en" and family.text_config("tgt").lang == "es"
    assert family.text_config("src", FakeBundle()).lang == "de"
    assert family.text_config("tgt", FakeBundle()).case == "keep"
    assert SurfaceFamily(src_lang="it").text_config("src", FakeBundle()).lang == "it"


def test_non_text_input_is_refused():
    batch = Pairs(ids=["7"], src=[None], mt=["x"])  # type: ignore[list-item]
    with pytest.raises(QEInputError, match="'7'"):
        SurfaceFamily().extract(batch)


def test_extractor_batches_give_the_hand_values():
    assert all(spec.resource is None for spec in SPECS)
    table = extract_features(
        [SurfaceFamily()],
        Pairs.of([PAIR_A[0], PAIR_B[0], ""], [PAIR_A[1], PAIR_B[1], ""], ids=["0", "1", "2"]),
        batch_size=2,
        progress=False,
    )
    assert list(table.columns) == [f"surface.{name}" for name in NAMES]
    assert table.shape == (3, len(NAMES))
    assert table.loc[0, "surface.mt_untranslated"] == 4
    assert table.loc[1, "surface.src_brackets_unbalanced"] == 1


def test_wmt12_values_are_finite_and_in_range(data_dir):
    folder = data_dir / "wmt12-qe" / "test_set"
    src = (folder / "source.eng").read_text(encoding="utf-8").splitlines()
    mt = (folder / "target_system.spa").read_text(encoding="utf-8").splitlines()
    values = _extract(list(zip(src, mt, strict=True)))
    assert values.shape == (422, len(NAMES)) and np.isfinite(values).all()
    assert (values >= 0).all()
    for j, name in enumerate(NAMES):
        column = values[:, j]
        if name.endswith(("_share", "_ttr")):
            assert column.max() <= 1, name
        if name.startswith("src_has_") or name.endswith(("_unbalanced", "_eos", "_mismatch", "_blowup")):
            assert set(np.unique(column)) <= {0.0, 1.0}, name
    # every sentence of the test set has at least one token on both sides
    assert values[:, NAMES.index("src_tokens")].min() >= 1
    assert values[:, NAMES.index("mt_tokens")].min() >= 1
