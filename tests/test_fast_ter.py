"""qe.evaluation.textmetrics.ter against sacreBLEU 2.x's TER: hand-worked cases, adversarial pairs, all WMT12
pairs."""

from __future__ import annotations

import pytest

from qe.data import load_registered
from qe.evaluation.textmetrics import ter as ter_module
from qe.evaluation.textmetrics.ter import sentence_ter, ter_edits

sacrebleu_metrics = pytest.importorskip("sacrebleu.metrics")


def _sacrebleu(hyp: str, ref: str, case_sensitive: bool) -> float:
    return sacrebleu_metrics.TER(case_sensitive=case_sensitive).sentence_score(hyp, [ref]).score


def _numbered(indices) -> str:
    return " ".join(f"w{i}" for i in indices)


def test_hand_worked_examples():
    # one block shift ("c d" to the front) and nothing else: 1 edit over 4 reference words
    assert sentence_ter("a b c d", "c d a b") == 25.0
    assert ter_edits(["a", "b", "c", "d"], ["c", "d", "a", "b"]) == (1, 4)
    # two reference words missing: 2 insertions
    assert sentence_ter("the cat", "the cat sat down") == 50.0
    assert sentence_ter("", "a b") == 100.0
    assert sentence_ter("a b", "") == 100.0  # sacreBLEU's convention for an empty reference
    assert sentence_ter("", "") == 0.0
    assert sentence_ter("A B", "a b") == 0.0
    assert sentence_ter("A B", "a b", case_sensitive=True) == 100.0  # two substitutions


def test_the_beam_changes_the_score_as_in_sacrebleu():
    # The last 20 of 80 reference words: an unrestricted edit distance inserts the first 60
    # (TER 75), but sacreBLEU's beam (25 cells around the length-scaled diagonal) cannot reach
    # that path, and its best path inside the beam costs 72 edits.
    hyp, ref = _numbered(range(60, 80)), _numbered(range(80))
    assert _sacrebleu(hyp, ref, False) == 90.0
    assert sentence_ter(hyp, ref) == 90.0


@pytest.mark.slow
def test_the_candidate_limit_stops_the_search_as_in_sacrebleu():
    hyp, ref = "a b a c a d " * 20, "a a b c d a " * 20
    codes: dict[str, str] = {}
    encoded = ["".join(ter_module._code(codes, w) for w in s.split()) for s in (hyp, ref)]
    search = ter_module._ShiftSearch(*encoded)
    search.best_shift(encoded[0])
    assert search.checked >= 1000  # the first round already reaches sacreBLEU's limit of 1,000 shifts
    assert sentence_ter(hyp, ref) == _sacrebleu(hyp, ref, False)


ADVERSARIAL = [
    ("", "one two three"),
    ("one two three", ""),
    ("", ""),
    ("   ", " \t "),
    ("same words here .", "same words here ."),
    ("the " * 200, "the " * 150),
    ("a b " * 100, "b a " * 100),
    ("a b c " * 40, "b c a " * 40),
    (_numbered(range(200)), _numbered(reversed(range(200)))),
    (_numbered(range(200)), _numbered(list(range(100, 200)) + list(range(100)))),
    (_numbered(range(0, 400, 2)), _numbered(range(0, 300, 3))),
    ("w1", _numbered(range(200))),
    (_numbered(range(200)), "w150"),
    (_numbered(range(3)), _numbered(range(300))),
    (_numbered(range(300)), _numbered(range(297, 300))),
    (_numbered(range(80)), _numbered(range(50, 80))),
    ("x " * 40 + _numbered(range(40)), _numbered(range(40))),
    (". , ; ! ?", "? ! ; , ."),
    ("...", ". . ."),
    ("Straße İstanbul ΣΊΣΥΦΟΣ naïve", "strasse istanbul σίσυφος naïve"),
    ("日本語 の 文 です", "日本語 の 文"),
    ("tab\tseparated\u00a0words\u2003here", "tab separated words here"),
    ("Mixed CASE Words", "mixed case words"),
]


@pytest.mark.parametrize("case_sensitive", [False, True])
@pytest.mark.parametrize(("hyp", "ref"), ADVERSARIAL)
def test_adversarial_pairs_match_sacrebleu(hyp, ref, case_sensitive):
    assert sentence_ter(hyp, ref, case_sensitive) == _sacrebleu(hyp, ref, case_sensitive)


def _wmt12_pairs(data_dir) -> list[tuple[str, str]]:
    """MT output against the reference translation (the pseudo-reference stand-in), as the
    pseudoref family passes them: whitespace collapsed."""
    pairs = []
    for split in ("train", "test"):
        data = load_registered("wmt12-en-es", split, data_dir)
        pairs += [
            (" ".join(h.split()), " ".join(r.split())) for h, r in zip(data.mt, data.references, strict=True)
        ]
    assert len(pairs) == 2254
    return pairs


@pytest.mark.parametrize("case_sensitive", [False, True])
def test_wmt12_sample_matches_sacrebleu(data_dir, case_sensitive):
    pairs = _wmt12_pairs(data_dir)[::15]
    assert [sentence_ter(h, r, case_sensitive) for h, r in pairs] == [
        _sacrebleu(h, r, case_sensitive) for h, r in pairs
    ]


@pytest.mark.slow
@pytest.mark.parametrize("case_sensitive", [False, True])
def test_all_wmt12_pairs_match_sacrebleu(data_dir, case_sensitive):
    metric = sacrebleu_metrics.TER(case_sensitive=case_sensitive)
    pairs = _wmt12_pairs(data_dir)
    ours = [sentence_ter(h, r, case_sensitive) for h, r in pairs]
    theirs = [metric.sentence_score(h, [r]).score for h, r in pairs]
    mismatches = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    assert mismatches == []
