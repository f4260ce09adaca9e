"""The bundle leakage check: exact copies and near-duplicates (chrF) of evaluation sentences are refused."""

from __future__ import annotations

import json
import random
import time
import tomllib
from pathlib import Path

import pytest

from qe.infra.errors import QEInputError
from qe.infra.io import read_text_lines
from qe.resources.leakage import (
    check_leakage,
    chrf,
    find_overlaps,
    length_ratio_bounds,
    load_eval_sentences,
    normalize_for_near,
)
from tests.helpers import write_lines
from tests.helpers.bundles import WMT12_CONFIG, build, small_config

EVAL = [
    "The committee approved the new budget for 2013 after a long debate.",
    "Mr. Englund is a Swedish historian and journalist.",
    "Prices of fresh vegetables rose sharply in the last quarter.",
    "Thank you.",
]


def _eval(tmp_path: Path, lines=EVAL):
    return load_eval_sentences([write_lines(tmp_path / "eval.en", lines)])


def test_chrf_agrees_with_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    metric = sacrebleu.metrics.CHRF()  # chrF2, character 6-grams, whitespace ignored
    rng = random.Random(1)
    pairs = [("abc", "abc"), ("a", "abcdef"), ("the cat sat", "the cat sat on the mat"), ("xyz", "abc")]
    for _ in range(200):
        ref = "".join(rng.choice("abcde ") for _ in range(rng.randint(1, 40)))
        hyp = "".join(c for c in ref if rng.random() > 0.2) + "".join(rng.choice("abf") for _ in range(3))
        pairs.append((hyp, ref))
    for hyp, ref in pairs:
        assert chrf(hyp, ref) == pytest.approx(metric.sentence_score(hyp, [ref]).score / 100, abs=1e-9)


def test_the_length_filter_never_drops_a_pair_above_the_threshold():
    """chrF >= t is impossible outside the length-ratio bounds (the candidate filter relies on it)."""
    rng = random.Random(2)
    for threshold in (0.5, 0.7, 0.9):
        low, high = length_ratio_bounds(threshold)
        for _ in range(3000):
            ref = "".join(rng.choice("ab") for _ in range(rng.randint(1, 30)))
            hyp = ref[: rng.randint(1, len(ref))] + "".join(
                rng.choice("ab") for _ in range(rng.randint(0, 20))
            )
            if chrf(hyp, ref) >= threshold:
                assert low <= len(hyp) / len(ref) <= high


def test_near_form_folds_case_digits_punctuation_and_width():
    assert normalize_for_near("Peter's  BOOK — 2012!") == "peter s book 0000"
    assert normalize_for_near("Ｐｅｔｅｒ’s book, 1999.") == "peter s book 0000"


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s[:-1],  # the hostile tester's case: drop the last character
        lambda s: s[1:],
        lambda s: s.replace("2013", "2014").replace(".", "!"),
        lambda s: s.replace("e", "", 1),  # a typo
        lambda s: s.upper().replace(" ", "", 2),  # words run together
    ],
)
def test_changed_copies_are_found_as_near_duplicates(tmp_path, change):
    evaluation = _eval(tmp_path)
    corpus = [change(s) for s in EVAL[:3]] + ["Something else entirely, about football results."]
    overlap = find_overlaps("corpus.en", corpus, evaluation)
    assert overlap is not None and overlap.exact == []
    assert [(m.line, m.eval_line) for m in overlap.near] == [(1, 1), (2, 2), (3, 3)]
    assert all(m.chrf >= 0.9 for m in overlap.near)


def test_unrelated_or_short_sentences_are_not_near_duplicates(tmp_path):
    evaluation = _eval(tmp_path)
    corpus = [
        "The committee rejected the old budget for 2011 before a short debate.",  # same frame, other words
        "Mr. Englund is a Danish painter and poet.",
        "Thank you!",  # 2 words: only exact copies count
        "Prices of fresh vegetables",  # a fragment: recall too low
    ]
    assert find_overlaps("corpus.en", corpus, evaluation) is None
    assert find_overlaps("corpus.en", ["thank  YOU."], evaluation).exact[0].eval_line == 4


def test_threshold_is_configurable_and_zero_switches_near_duplicates_off(tmp_path):
    evaluation = _eval(tmp_path)
    corpus = [EVAL[0][:-1], EVAL[1].replace("Swedish", "Swedih")]
    scores = [chrf(normalize_for_near(c), normalize_for_near(e)) for c, e in zip(corpus, EVAL, strict=False)]
    assert scores[0] == 1.0 and 0.9 <= scores[1] < 0.95
    assert len(find_overlaps("c", corpus, evaluation, 0.9).near) == 2
    assert [m.line for m in find_overlaps("c", corpus, evaluation, 0.95).near] == [1]
    assert find_overlaps("c", corpus, evaluation, 0.0) is None


def test_build_refuses_near_duplicates_and_the_manifest_lists_them(tmp_path, small_data):
    write_lines(small_data / "eval.en", ["The house is big and the cat is small .", "x"])
    write_lines(
        small_data / "corpus" / "toy.en", ["A", "The house is big and the cat is small", "B c", "D e"]
    )
    with pytest.raises(QEInputError) as info:
        build(tmp_path, small_data, small_config())
    assert (Path(info.value.path).name, info.value.line) == ("toy.en", 2)
    assert info.value.message.startswith(
        "corpus shares 1 near-duplicate(s) (chrF >= 0.9) with the evaluation data"
    )
    assert "line 2 'The house is big and the cat is small' ~ " in info.value.message
    assert f"{small_data / 'eval.en'}:1 (chrF 1.00)" in info.value.message
    bundle = build(tmp_path, small_data, small_config(), allow_overlap=True)
    leakage = json.loads((tmp_path / "out" / "manifest.json").read_text())["leakage"]
    assert leakage == bundle.manifest["leakage"] and leakage["near_duplicate_chrf"] == 0.9
    [entry] = leakage["overlaps"]
    assert (entry["count"], entry["exact"], entry["near_duplicates"], entry["first_lines"]) == (1, 0, 1, [2])
    off = small_config(leakage={"eval_files": ["eval.en"], "near_duplicate_chrf": False})
    assert build(tmp_path, small_data, off, overwrite=True).manifest["leakage"]["overlaps"] == []


def _wmt12_inputs(data_dir: Path) -> tuple[dict, list[Path]]:
    config = tomllib.loads(WMT12_CONFIG.read_text(encoding="utf-8"))
    return config, [data_dir / f for f in config["leakage"]["eval_files"]]


@pytest.mark.data
def test_the_wmt12_bundle_corpora_are_clean_and_checked_in_seconds(data_dir):
    config, eval_files = _wmt12_inputs(data_dir)
    corpora = [
        (data_dir / table[side], read_text_lines(data_dir / table[side]))
        for table in config["corpora"].values()
        for side in ("src", "tgt")
    ]
    start = time.perf_counter()
    evaluation, overlaps = check_leakage(corpora, eval_files)
    seconds = time.perf_counter() - start
    assert sum(len(lines) for _, lines in corpora) == 52302 and len(evaluation) == 9016
    assert overlaps == []
    assert seconds < 30  # ~1.5 s on a quiet machine; generous for a loaded one


@pytest.mark.data
def test_newstest2012_holds_every_wmt12_test_source(data_dir):
    """SOURCES.md: the 422 test sources come from newstest2012, 289 verbatim; the other 133 differ in
    punctuation or spacing, which the near-duplicate test finds."""
    _, eval_files = _wmt12_inputs(data_dir)
    corpus = data_dir / "newstest-en-es" / "newstest2012.en"
    _, [overlap] = check_leakage([(corpus, read_text_lines(corpus))], eval_files)
    assert (len(overlap.exact), len(overlap.near)) == (289, 133)
    test_sources = str(data_dir / "wmt12-qe" / "test_set" / "source.eng")
    assert {m.eval_line for m in overlap.matches if m.eval_file == test_sources} == set(range(1, 423))
