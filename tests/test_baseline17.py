"""The baseline17 family on hand-made resources (values worked out by hand) and on the WMT12 data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qe.bundle import ResourceBundle
from qe.data.sets.wmt12 import BF17_NAMES
from qe.features.base import Pairs
from qe.features.baseline17 import Baseline17, punctuation_count, quest_punctuation_count
from qe.features.extractor import extract_features
from qe.infra.errors import QEInputError
from qe.resources.lm import LanguageModel
from qe.resources.ngrams import NgramCounts
from qe.text.processing import TextConfig, TextProcessor
from qe.words.ibm1 import IBM1Table
from tests.helpers.baseline17 import CORPUS, S2T, SRC_ARPA, TGT_ARPA, handmade_bundle, write_arpa

pytest.importorskip("kenlm", reason="kenlm Python module not installed: run scripts/install_kenlm.sh")

SRC = "The house , the cat ."  # tokens: the house , the cat .
MT = "La casa , la casa ."  # tokens: la casa , la casa .


@pytest.fixture()
def bundle(tmp_path) -> ResourceBundle:
    return handmade_bundle(
        tmp_path, {"src": TextConfig("en", style="moses"), "tgt": TextConfig("es", style="moses")}
    )


def features(bundle, src=SRC, mt=MT, **settings) -> np.ndarray:
    batch = Pairs(ids=["1"], src=[src], mt=[mt])
    return Baseline17(**settings).extract(batch, bundle)[0]


def test_specs_match_the_official_names():
    family = Baseline17()
    assert [s.name for s in family.specs()] == BF17_NAMES
    assert family.column_names()[0] == "baseline17.src_tokens"
    assert all(s.description for s in family.specs())


def test_all_17_values_by_hand(bundle):
    v = features(bundle)
    n = 6
    expected = [
        6,  # 1 source tokens
        6,  # 2 target tokens
        (3 + 5 + 1 + 3 + 3 + 1) / n,  # 3 mean token length
        -0.3 - 0.7 - 1.0 - 0.3 - 1.0 - 0.4 - 0.5,  # 4 ',' and 'cat' are <unk>; </s> included
        -0.2 - 0.6 - 2.0 - 0.2 - 0.6 - 0.3 - 0.4,  # 5
        6 / 4,  # 6 six tokens, four types
        (2 + 1 + 0 + 2 + 2 + 0) / n,  # 7 p > 0.2: the (0.5, 0.3), house (0.9), cat (0.6, 0.25)
        (3 / 100 + 2 / 3 + 0 / 50 + 3 / 100 + 0 + 0 / 80) / n,  # 8 cat has frequency 0: skipped
        1 / n,  # 9 house (3) in quartile 1 (0, 3]
        3 / n,  # 10 the, the, '.' in quartile 4 (50, 100]; ',' = 50 is not
        2 / 5,  # 11 bigrams 'house ,' (3) and ', the' (4) in (0, 4]; 'cat .' (1) is unseen
        1 / 5,  # 12 'the cat' (12) in (7, 12]
        3 / 4,  # 13 three trigrams with count 3 in (0, 3]
        1 / 4,  # 14 'the cat .' (9) in (3, 9]
        4 / 5,  # 15 distinct the house , cat . -> cat unseen
        2,  # 16 ',' and '.'
        2,  # 17
    ]
    np.testing.assert_allclose(v, expected, rtol=1e-6, atol=1e-12)  # KenLM stores float32


def test_lm_oov_skip_and_corpus_counts(bundle):
    v = features(bundle, lm_oov="skip")
    assert v[3] == pytest.approx(-0.3 - 0.7 - 0.3 - 0.4 - 0.5)
    assert v[4] == pytest.approx(-0.2 - 0.6 - 0.2 - 0.6 - 0.3 - 0.4)
    c = features(bundle, ngram_counts="corpus")
    assert c[7] == pytest.approx((3 / 9 + 2 / 3 + 0 + 3 / 9 + 2 / 1 + 0) / 6)  # raw corpus frequencies
    assert c[8] == pytest.approx(1 / 6)  # house (3) in (0, 3]
    assert c[9] == pytest.approx(2 / 6)  # the, the in (7, 9]
    assert c[14] == pytest.approx(4 / 5)  # cat (1) below min_count 3: unseen


def test_inverted_lexicon(bundle):
    v = features(bundle, lexicon="t2s-inverted")
    # p(s|t) > 0.2: the <- la, el (NULL is not a word); house <- casa; cat <- gato (gata 0.15 is not).
    assert v[6] == pytest.approx((2 + 1 + 0 + 2 + 1 + 0) / 6)
    # p(s|t) > 0.01: cat <- gato, gata.
    assert v[7] == pytest.approx((2 / 100 + 1 / 3 + 0 + 2 / 100 + 0 + 0) / 6)


def test_explicit_min_count(bundle):
    v = features(bundle, quartile_min_count=3)
    # Truecase unigrams >= 3: 3 3 20 50 80 100 (N = 6): indices 1, 2, 3, 5 -> (3, 20, 50, 100).
    assert v[8] == pytest.approx(1 / 6)
    assert v[14] == pytest.approx(4 / 5)


def test_punctuation_counts_by_hand():
    sentence = "Hola, ¿qué tal?"
    assert punctuation_count(sentence) == 3
    # QuEst: ',' -> split into 2 pieces, '¿' -> 2 pieces, '?' never counted.
    assert quest_punctuation_count(sentence) == 4
    assert quest_punctuation_count("wait;") == 1  # the trailing empty piece is dropped
    assert quest_punctuation_count("a: b: c") == 3
    assert quest_punctuation_count("Yes. No.") == 0
    assert quest_punctuation_count(",,,") == 0 and punctuation_count(",,,") == 3


def test_quest_compat_switches_punctuation(bundle):
    v = features(bundle, src="Hola, ¿qué tal?", quest_compat=True)
    # Compat mode counts on the tokenized line "hola , ¿ qué tal ?": ',' 2 pieces, '¿' 2 pieces.
    assert v[15] == 4
    assert features(bundle, src="Hola, ¿qué tal?")[15] == 3


@pytest.mark.parametrize(
    ("src", "mt"),
    [("", ""), ("house", "casa"), (" ".join(["the house"] * 500), " ".join(["la casa"] * 500))],
    ids=["empty", "one-token", "1000-tokens"],
)
def test_degenerate_sentences_are_defined(bundle, src, mt):
    v = features(bundle, src=src, mt=mt)
    assert np.all(np.isfinite(v))
    assert v[0] == len(src.split()) and v[1] == len(mt.split())
    if not src:
        assert v[3] == pytest.approx(-0.5)  # only </s>
        assert v[4] == pytest.approx(-0.4)
        assert np.all(v[[2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]] == 0)
    if src == "house":
        assert v[2] == 5 and v[10] == 0 and v[12] == 0  # no bigram, no trigram: shares are 0


def test_errors():
    with pytest.raises(QEInputError, match="lexicon"):
        Baseline17(lexicon="e2f")
    with pytest.raises(QEInputError, match="quartile_min_count"):
        Baseline17(quartile_min_count=0)
    with pytest.raises(QEInputError, match="resource bundle"):
        Baseline17().extract(Pairs(ids=["1"], src=["a"], mt=["b"]), None)


def test_missing_member_is_named(tmp_path):
    text = {"src": TextConfig("en"), "tgt": TextConfig("es")}
    empty = ResourceBundle.in_memory({}, text)
    empty.path = tmp_path
    empty.manifest["members"] = {}
    with pytest.raises(QEInputError, match=r"ngrams\.src"):
        Baseline17().extract(Pairs(ids=["1"], src=["a"], mt=["b"]), empty)


def test_parallel_extraction_equals_serial(bundle):
    src = [SRC, "", "The cat .", "house house house"] * 3
    mt = [MT, "casa", "", "la la"] * 3
    ids = [str(i) for i in range(len(src))]
    family = Baseline17()
    serial = extract_features(
        [family], Pairs.of(src, mt, ids=ids), resources=bundle, batch_size=5, progress=False
    )
    parallel = extract_features(
        [Baseline17()], Pairs.of(src, mt, ids=ids), resources=bundle, batch_size=5, n_jobs=2, progress=False
    )
    assert list(serial.columns) == family.column_names()
    np.testing.assert_allclose(parallel.to_numpy(), serial.to_numpy())


@pytest.mark.data
def test_quest_compat_punctuation_matches_official_values(data_dir):
    """Features 16 and 17 in quest_compat mode equal the official WMT12 values on every row."""
    root = data_dir / "wmt12-qe"
    src, tgt, official = [], [], []
    for folder, name in (("training_set", "training"), ("test_set", "test")):
        src += (root / folder / "source.eng").read_text(encoding="utf-8").splitlines()
        tgt += (root / folder / "target_system.spa").read_text(encoding="utf-8").splitlines()
        path = root / "baseline_features" / f"{name}.qe.baseline.tsv"
        official.append(np.loadtxt(path, delimiter="\t", usecols=(15, 16)))
    values = np.vstack(official)
    en = TextProcessor(TextConfig("en")).tokenize_many(src)
    es = TextProcessor(TextConfig("es")).tokenize_many(tgt)
    ours_src = np.array([quest_punctuation_count(" ".join(t)) for t in en])
    ours_tgt = np.array([quest_punctuation_count(" ".join(t)) for t in es])
    assert len(ours_src) == 2254
    assert np.array_equal(ours_src, values[:, 0]) and np.array_equal(ours_tgt, values[:, 1])
    # The quirk matters: correct counts differ from the official ones on 43 % of the rows.
    correct = np.array([punctuation_count(s) for s in src])
    assert (correct != values[:, 0]).mean() > 0.4
    assert math.isclose(values[:, 0].sum(), ours_src.sum())


@pytest.mark.data
def test_agreement_with_official_values_without_corpus_resources(tmp_path, data_dir):
    """With only the truecase-model counts of the 2012 SMT corpus (LMs, bigrams and IBM1 are toy
    stand-ins here), the features that need no other resource agree with the official values."""
    from qe.data import load_registered
    from qe.resources.ngrams import load_truecase_counts

    root = data_dir / "wmt12-qe"
    official = np.vstack(
        [
            np.loadtxt(
                root / "baseline_features" / f"{name}.qe.baseline.tsv", delimiter="\t", usecols=range(17)
            )
            for name in ("training", "test")
        ]
    )
    (tmp_path / "s2t.txt").write_text(S2T)
    members = {
        "lm.src": LanguageModel(write_arpa(tmp_path / "src.arpa", SRC_ARPA)),
        "lm.tgt": LanguageModel(write_arpa(tmp_path / "tgt.arpa", TGT_ARPA)),
        "ngrams.src": NgramCounts(CORPUS),
        "unigrams.src": load_truecase_counts(root / "lang_resources" / "truecase-model.en"),
        "ibm1.s2t": IBM1Table.load(tmp_path / "s2t.txt"),
    }
    bundle = ResourceBundle.in_memory(members, {"src": TextConfig("en"), "tgt": TextConfig("es")})
    train = load_registered("wmt12-en-es", "train", data_dir)
    test = load_registered("wmt12-en-es", "test", data_dir)
    batch = Pairs(ids=train.ids + test.ids, src=train.src + test.src, mt=train.mt + test.mt)
    ours = Baseline17(quest_compat=True).extract(batch, bundle)
    assert not np.isnan(ours).any()

    def r(j: int) -> float:
        return float(np.corrcoef(ours[:, j - 1], official[:, j - 1])[0, 1])

    for j in (1, 2, 3, 6):
        assert r(j) >= 0.98, j
    for j in (10, 15):
        assert r(j) >= 0.9, j
    assert r(9) >= 0.85
    for j in (16, 17):
        assert np.array_equal(ours[:, j - 1], official[:, j - 1]), j
