"""Word feature families (issue 32, build item 2): the registry, today's columns unchanged under the
default families, and each further family on hand-made cases with known answers."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.wordmodel import mismatchfamily, pseudoreffamily, sentencefamily, spellfamily
from qe.wordmodel.arpa import ArpaModel, read_arpa
from qe.wordmodel.families import FAMILIES, default_families, family_names, resolve
from qe.wordmodel.family import FamilyInput
from qe.wordmodel.features import KINDS, NAMES, NMT_NAMES, WordFeaturizer, column_names
from qe.wordmodel.lexicon import SentenceLinks
from qe.wordmodel.nmtprobs import WordLogprobs
from qe.words.files import WordLevelData
from tests.helpers.bundles import has_kenlm_tools
from tests.helpers.words import toy, toy_word_config


def _has_dictionaries(*langs: str) -> bool:
    from qe.resources.spelling import _library, find_dictionary

    try:
        _library()
        for lang in langs:
            find_dictionary(lang)
    except QEInputError:
        return False
    return True


needs_lmplz = pytest.mark.skipif(
    not has_kenlm_tools("lmplz"), reason="KenLM's lmplz not built: scripts/install_kenlm.sh"
)
needs_en_de = pytest.mark.skipif(not _has_dictionaries("en", "de"), reason="hunspell en_US / de_DE missing")


def fake_nmt(data: WordLevelData, seed: int) -> WordLogprobs:
    """Deterministic made-up NMT log-probabilities for a set."""
    rng = np.random.default_rng(seed)
    words = []
    for mt in data.mt:
        table = -rng.random((len(mt), 4)) * 5
        table[:, 3] = rng.integers(1, 3, len(mt))
        words.append(table)
    return WordLogprobs(words, -rng.random((len(data.mt), 3)) * 3)


def fingerprint(featurizer: WordFeaturizer, nmt: bool) -> tuple[str, list[float]]:
    """The tables of the toy train and dev sets: where values are missing (with the shapes, bit for bit)
    and, per table, one seeded weighted sum of every value over its column's scale (so a change in any
    value of any column moves it). Sums, not a hash of the values: the float64 libm and SIMD paths of
    one CPU differ from another's in the last bit, and a hash would tell CPUs apart, not code."""
    train, dev = toy(120, 0), toy(20, 1)
    tables = (
        featurizer.fit_transform(train, fake_nmt(train, 5) if nmt else None),
        featurizer.transform(dev, fake_nmt(dev, 6) if nmt else None),
    )
    mask, sums = hashlib.sha256(), []
    for each in tables:
        for kind in KINDS:
            x = np.asarray(each.tables[kind], dtype=np.float64)
            missing = np.isnan(x)
            mask.update(repr(x.shape).encode())
            mask.update(np.packbits(missing).tobytes())
            scale = np.nanmean(np.abs(x), axis=0) + 1
            weights = np.random.default_rng(0).uniform(0.5, 1.5, x.shape)
            sums.append(float(np.sum(np.where(missing, 0.0, x / scale * weights))))
    return mask.hexdigest(), sums


# What the word featurizer of main before families (23d347e) gives on these sets: this fingerprint
# run with a worktree of that commit first on sys.path (session 19, an AVX2 CPU, where a sha256 of
# its raw tables also equals today's code's). The default families change nothing.
BEFORE_FAMILIES = {
    False: (
        "de0b312f090159802ec666211fe1860a47a1ee092d7025136ded41c6aef4f2a7",
        [6647.106984737133, 6185.072978261987, 6955.119883718182, 946.8395957079055, 889.1576994263596,
         1012.0516470085038],
    ),
    True: (
        "9a4dd4e05f21d510553a3106623f1aa197d79ae3b6e42090a8ee68c4c7798a72",
        [2636.876241970808, 2700.322829903283, 3933.7838618230026, 354.80050702772235, 352.5168779619827,
         542.0414052048436],
    ),
}  # fmt: skip


@pytest.mark.parametrize("nmt", [False, True])
def test_the_default_families_give_todays_columns(nmt):
    """The same missing values bit for bit, the same values to 1e-10 (a last-bit difference between
    CPUs moves a sum by about 1e-14 of it; one value moved by 1e-5, by about 1e-9 of it)."""
    families = resolve(list(default_families(nmt)), nmt)
    assert families == ()
    mask, sums = fingerprint(WordFeaturizer(folds=3, families=families), nmt)
    assert mask == BEFORE_FAMILIES[nmt][0]
    np.testing.assert_allclose(sums, BEFORE_FAMILIES[nmt][1], rtol=1e-10, atol=0)
    for kind in KINDS:
        assert column_names(kind, nmt, families) == ((*NAMES[kind], *NMT_NAMES[kind]) if nmt else NAMES[kind])


def test_further_families_only_append_columns():
    """With mismatch and sentence, the first columns are today's, to the bit, and the rest theirs."""
    families = resolve(["core", "sentence", "mismatch"], False)
    assert [f.name for f in families] == ["mismatch", "sentence"]  # registry order, not the config's
    train, dev = toy(120, 0), toy(20, 1)
    plain, extended = WordFeaturizer(folds=3), WordFeaturizer(folds=3, families=families)
    for fit in (True, False):
        a = plain.fit_transform(train) if fit else plain.transform(dev)
        b = extended.fit_transform(train) if fit else extended.transform(dev)
        for kind in KINDS:
            width = len(NAMES[kind])
            assert b.tables[kind].shape[1] == len(column_names(kind, False, families))
            assert a.tables[kind].tobytes() == np.ascontiguousarray(b.tables[kind][:, :width]).tobytes()


def test_families_are_independent_of_each_other():
    """A family's columns are the same whichever other families are fitted beside it."""
    train = toy(120, 0)
    alone = WordFeaturizer(folds=3, families=resolve(["core", "sentence"], False)).fit_transform(train)
    both = WordFeaturizer(folds=3, families=resolve(["core", "edits", "sentence"], False)).fit_transform(
        train
    )
    for kind in KINDS:
        width = len(sentencefamily.NAMES)
        assert np.array_equal(alone.tables[kind][:, -width:], both.tables[kind][:, -width:], equal_nan=True)


@pytest.mark.parametrize(
    ("names", "nmt", "pattern"),
    [
        (["core", "lmm"], False, "unknown word feature family 'lmm'"),
        (["lm"], False, "must include core"),
        (["core", "lm", "lm"], False, "listed twice"),
        (["core", "nmt"], False, "without NMT log-probabilities"),
        (["core"], True, "list the nmt family too"),
    ],
)
def test_a_wrong_family_list_is_one_line(names, nmt, pattern):
    with pytest.raises(QEInputError, match=pattern) as caught:
        resolve(names, nmt)
    assert "\n" not in str(caught.value)


def test_the_registry_records():
    for name, family in FAMILIES.items():
        assert family.name == name and family.fit and family.transform and family.save and family.load
        assert family.kinds and all(family.names(kind) for kind in family.kinds)
    assert FAMILIES["edits"].kinds == ("target", "source") and FAMILIES["edits"].reads_tags
    assert family_names(resolve(["core", "nmt", "lm"], True), True) == ["core", "nmt", "lm"]


# ------------------------------------------------------------------------------------------------- lm

ARPA = """\\data\\
ngram 1=5
ngram 2=3

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.5
-0.7\t</s>\t0
-0.5\ta\t-0.3
-0.6\tb\t-0.2

\\2-grams:
-0.2\t<s> a
-0.1\ta b
-0.3\tb </s>

\\end\\
"""


@pytest.fixture
def arpa_model(tmp_path) -> ArpaModel:
    path = tmp_path / "toy.arpa"
    path.write_text(ARPA)
    return read_arpa(path)


def test_an_arpa_model_scores_by_hand(arpa_model):
    # "a b": every bigram known
    assert np.allclose(arpa_model.scores(["a", "b"]), [[-0.2, 2, 0], [-0.1, 2, 0], [-0.3, 2, 0]])
    # "b a": each falls back to the word alone, paying its context's back-off weight
    assert np.allclose(
        arpa_model.scores(["b", "a"]), [[-0.5 - 0.6, 1, 0], [-0.2 - 0.5, 1, 0], [-0.3 - 0.7, 1, 0]]
    )
    # an unknown word is <unk>, and a reserved word written in the text counts as unknown too
    assert np.allclose(arpa_model.scores(["c"]), [[-0.5 - 1.0, 1, 1], [-0.7, 1, 0]])
    assert arpa_model.scores(["<s>"])[0, 2] == 1


def test_arpa_arrays_round_trip_and_are_checked(arpa_model):
    from qe.predictors.check import BadModel
    from qe.wordmodel.arpa import model_of

    arrays = arpa_model.arrays()
    again = model_of(arrays, 2, "lm_mt")
    assert np.array_equal(again.scores(["b", "a", "c"]), arpa_model.scores(["b", "a", "c"]))
    bad = dict(arrays, **{"2_grams": arrays["2_grams"].copy()})
    bad["2_grams"][0, 0] = 99
    with pytest.raises(BadModel, match="outside the vocabulary"):
        model_of(bad, 2, "lm_mt")
    twice = dict(arrays, **{"2_grams": arrays["2_grams"].copy()})
    twice["2_grams"][1] = twice["2_grams"][0]
    with pytest.raises(BadModel, match="twice"):
        model_of(twice, 2, "lm_mt")


@needs_lmplz
def test_arpa_scores_equal_kenlms_full_scores(tmp_path):
    kenlm = pytest.importorskip("kenlm")
    from qe.resources.lm import train_lm

    rng = np.random.default_rng(0)
    words = ["the", "a", "cat", "dog", "sat", "on", "mat", "red", "big", "ran"]
    lines = [" ".join(rng.choice(words, rng.integers(2, 9))) for _ in range(300)]
    arpa = train_lm(lines, tmp_path / "lm.arpa", order=3, binary=False)
    ours, theirs = read_arpa(arpa), kenlm.Model(str(arpa))
    for sentence in ["the cat sat on the mat", "ran ran zebra the", "mat"]:
        expected = np.array(list(theirs.full_scores(sentence, bos=True, eos=True)), dtype=float)
        got = ours.scores(sentence.split())
        assert np.allclose(got[:, 0], expected[:, 0], atol=1e-5)
        assert np.array_equal(got[:, 1:], expected[:, 1:])


@needs_lmplz
def test_the_lm_family_is_cross_fitted():
    """A word seen only in one training sentence is unknown to that sentence's own (other-fold) model,
    but known to the model of all of training that dev is scored with."""
    train = toy(60, 0)
    train.mt[0][0] = "zyzzyva"
    families = resolve(["core", "lm"], False)
    featurizer = WordFeaturizer(folds=3, families=families)
    tables = featurizer.fit_transform(train)
    oov = column_names("target", False, families).index("lm_oov")
    assert tables.tables["target"][0, oov] == 1
    again = featurizer.transform(dataclasses.replace(train, mt_tags=None, gap_tags=None, src_tags=None))
    assert again.tables["target"][0, oov] == 0


# ------------------------------------------------------------------------------------------- spelling


@needs_en_de
def test_spelling_flags_unknown_words_by_hand():
    src = [["The", "house", "is", "green", "xqzt", "Paris", "5", "."]]
    mt = [["Das", "Haus", "ist", "grün", "xqzt", "Paris", "5", "."]]
    inp = FamilyInput(WordLevelData(src, mt), links=[_no_links(8, 8)], src_lang="en", tgt_lang="de")
    state, columns = spellfamily.fit(inp)
    assert state == {"src": "en_US", "mt": "de_DE"}
    unknown, copied = columns["target"][:, 0], columns["target"][:, 1]
    assert unknown.tolist() == [0, 0, 0, 0, 1, 0, 0, 0] and copied.tolist() == unknown.tolist()
    assert columns["target"][5, 2] == 1 and columns["gaps"][5, :2].tolist() == [1, 0]
    assert columns["source"][:, 0].tolist() == [0, 0, 0, 0, 1, 0, 0, 0]


def test_spelling_refuses_a_language_without_a_dictionary():
    problem = spellfamily.refuse("en", "zh")
    assert problem is not None and "'zh'" in problem and "\n" not in problem


# ------------------------------------------------------------------------------------------- mismatch


def _no_links(m: int, n: int) -> SentenceLinks:
    return SentenceLinks(np.full(n, -1), np.zeros(n), np.full(m, -1), np.zeros(m))


def test_mismatch_by_hand():
    src = ["He", "paid", "1,500", "dollars", "to", "Smith", "."]
    mt = ["Er", "zahlte", "1.600", "Dollar", "an", "Smith", "."]
    linked = np.array([0, 1, 2, 3, 4, 5, 6])
    entity = np.array([0, 0, 1, 1, 0, 1, 0], dtype=bool)
    got = mismatchfamily.sentence_columns(src, mt, linked, entity)
    names = dict(zip(mismatchfamily.COLUMNS["target"], got["target"].T, strict=True))
    assert names["mm_number_unmatched"].tolist() == [0, 0, 1, 0, 0, 0, 0]  # 600 is not in the source
    assert names["mm_cap_unmatched"].tolist() == [0, 0, 0, 1, 0, 0, 0]  # "Dollar"; "Er" is first
    assert names["mm_linked_src_cap"].tolist() == [0, 0, 0, 0, 0, 1, 0]
    assert names["mm_copies_entity"].tolist() == [0, 0, 0, 0, 0, 1, 0]
    assert names["mm_src_numbers_missing"][0] == 1 and names["mm_src_entities_missing"][0] == 2
    source = dict(zip(mismatchfamily.COLUMNS["source"], got["source"].T, strict=True))
    assert source["mm_src_number_missing"].tolist() == [0, 0, 1, 0, 0, 0, 0]
    assert source["mm_src_entity_missing"].tolist() == [0, 0, 1, 1, 0, 0, 0]
    assert source["mm_src_cap_missing"].sum() == 0  # "Smith" is copied
    without = mismatchfamily.sentence_columns(src, mt, linked, None)
    assert (without["source"][:, 2:4] == 0).all() and np.array_equal(
        without["source"][:, :2], got["source"][:, :2]
    )
    assert got["gaps"].shape == (8, len(mismatchfamily.COLUMNS["gaps"]))


# ---------------------------------------------------------------------------------------------- edits


def test_edits_pair_rates_are_cross_fitted_and_told_apart():
    train = toy(120, 0)
    families = resolve(["core", "edits"], False)
    featurizer = WordFeaturizer(folds=3, families=families)
    tables = featurizer.fit_transform(train)
    rate = column_names("target", False, families).index("edit_pair_rate")
    flipped = dataclasses.replace(
        train, mt_tags=[tuple("OK" for _ in t) for t in train.mt_tags[:1]] + train.mt_tags[1:]
    )
    again = WordFeaturizer(folds=3, families=families).fit_transform(flipped)
    assert np.array_equal(
        tables.tables["target"][: len(train.mt[0]), rate], again.tables["target"][: len(train.mt[0]), rate]
    )
    state = featurizer.family_states_["edits"]["target"]
    red = [key for key in state.seen if key.endswith("\tred")]
    assert red and all(state.bad[key] == state.seen[key] for key in red)  # "red" is always BAD in toy


# ------------------------------------------------------------------------------------------- pseudoref


def test_pseudoref_by_hand():
    mt = ["La", "casa", "es", "roja", "."]
    got = pseudoreffamily.sentence_columns(
        mt, pseudoreffamily.tokens("La casa es grande."), np.array([0, 1, 3])
    )
    target = got["target"]
    assert target[:, 0].tolist() == [1, 1, 1, 0, 1] and target[:, 1].tolist() == [0, 1, 1, 0, 0]
    assert got["gaps"][:, 0].tolist() == [1, 1, 1, 0, 0, 1]  # "es roja" and "roja ." are not adjacent there
    assert got["source"][:, 0].tolist() == [1, 1, 0]


def test_pseudoref_refuses_a_pair_apertium_lacks():
    problem = pseudoreffamily.refuse("en", "de")
    assert problem is not None and "en -> de" in problem and "\n" not in problem


@pytest.mark.skipif(
    shutil.which("apertium-wblank-mode") is None or pseudoreffamily.apertium_pair("en", "es") is None,
    reason="Apertium eng-spa is not installed",
)
def test_pseudoref_translates_with_apertium(tmp_path, monkeypatch):
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path))
    data = WordLevelData([["The", "house", "is", "red", "."]], [["La", "casa", "es", "azul", "."]])
    inp = FamilyInput(data, [_no_links(5, 5)], src_lang="en", tgt_lang="es")
    state = {"pair": pseudoreffamily.apertium_pair("en", "es")}
    columns = pseudoreffamily.transform(state, inp)
    assert columns["target"][:, 0].tolist() == [1, 1, 1, 0, 1]  # Apertium: "La casa es roja."


# ------------------------------------------------------------------------------------------- sentence


def test_the_sentence_ridge_recovers_a_linear_rule():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 4))
    y = np.column_stack([x @ [1.0, -2.0, 0.0, 0.5] + 3, x[:, 0], -x[:, 1]])
    model = sentencefamily.ridge(x, y)
    assert np.allclose(sentencefamily.predict(model, x), y, atol=0.3)  # shrunk a little by ALPHA
    from sklearn.linear_model import Ridge

    z = (x - x.mean(axis=0)) / x.std(axis=0)
    expected = Ridge(alpha=sentencefamily.ALPHA).fit(z, y).predict(z)
    assert np.allclose(sentencefamily.predict(model, x), expected)


def test_the_sentence_predictions_are_cross_fitted():
    """A training sentence's predicted BAD shares do not move when its own tags do."""
    train = toy(90, 0)
    families = resolve(["core", "sentence"], False)
    tables = WordFeaturizer(folds=3, families=families).fit_transform(train)
    flipped = dataclasses.replace(
        train, mt_tags=[tuple("BAD" for _ in t) for t in train.mt_tags[:1]] + train.mt_tags[1:]
    )
    again = WordFeaturizer(folds=3, families=families).fit_transform(flipped)
    width = len(sentencefamily.PREDICTED)
    n = len(train.mt[0])
    assert np.array_equal(tables.tables["target"][:n, -width:], again.tables["target"][:n, -width:])
    assert not np.array_equal(tables.tables["target"][n:, -width:], again.tables["target"][n:, -width:])


# -------------------------------------------------------------------------------------------- lmclass


def test_lmclass_refuses_a_pair_without_any_class_tagger():
    from qe.wordmodel import lmclassfamily

    problem = lmclassfamily.refuse("ne", "zh")
    assert problem is not None and "ne or zh" in problem and "\n" not in problem


@pytest.mark.skipif(not _has_dictionaries("de"), reason="hunspell de_DE missing")
def test_lmclass_tags_german_with_hunspell_classes():
    from qe.wordmodel import lmclassfamily

    assert lmclassfamily.tagger_for("de") == "hunspell:de"
    classes = lmclassfamily.classes("hunspell:de", [["Das", "Haus", "ist", "5", "."]])[0]
    assert classes[1] == "NOUN" and classes[3:] == ["NUM", "PUNCT"]


@needs_lmplz
def test_lmclass_leaves_an_untagged_side_constant():
    from qe.text.nlp import pipeline_for

    if pipeline_for("en") is None:
        pytest.skip("no spaCy English pipeline")
    train = toy(60, 0)
    families = resolve(["core", "lmclass"], False)
    tables = WordFeaturizer(folds=3, families=families, languages=("en", "zh")).fit_transform(train)
    target = column_names("target", False, families).index("lmc_logprob")
    source = column_names("source", False, families).index("lmc_src_logprob")
    assert (tables.tables["target"][:, target] == 0).all()  # not NaN: boosting cannot bin all-NaN
    assert np.isfinite(tables.tables["source"][:, source]).all()
    from qe.wordmodel.features import tag_labels
    from qe.wordmodel.tagger import WordTagger

    WordTagger(max_iter=3, min_samples_leaf=5).fit(tables, tag_labels(train))  # an all-NaN column failed


# ------------------------------------------------------------------------------ the [words] config key


def test_a_run_with_families_records_them_and_its_model_tags(tmp_path):
    import json

    from qe.cli import main
    from qe.wordmodel.modelfile import load_word_model
    from tests.helpers.words import predict_words_args

    config = toy_word_config(tmp_path, '["core", "sentence", "edits", "mismatch"]', 'src_lang = "en"\n')
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["families"] == ["core", "mismatch", "edits", "sentence"]
    assert "|families:core+mismatch+edits+sentence|" in metrics["signature"]
    model = load_word_model(tmp_path / "run" / "model.qwords")
    assert [f.name for f in model.featurizer.families] == ["mismatch", "edits", "sentence"]
    out = tmp_path / "tags.jsonl"
    assert (
        main(
            predict_words_args(
                tmp_path / "run" / "model.qwords", tmp_path / "dev.src", tmp_path / "dev.mt", out
            )
        )
        == 0
    )
    assert len(out.read_text().splitlines()) == 30


@pytest.mark.parametrize(
    ("families", "extra", "pattern"),
    [
        ('["core", "lmm"]', "", "words.families: unknown word feature family 'lmm'"),
        ('["core", "nmt"]', "", "words.families: the nmt family is listed without NMT"),
        ('["core", "spelling"]', "", "the spelling family needs the source language"),
        (
            '["core", "pseudoref"]',
            'src_lang = "en"\ntgt_lang = "de"\n',
            "needs an Apertium pair for en -> de",
        ),
    ],
)
def test_a_run_refuses_families_it_cannot_use_in_one_line(tmp_path, capsys, families, extra, pattern):
    from qe.cli import main

    config = toy_word_config(tmp_path, families, extra)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and pattern in err and "own.toml" in err, err
    assert not (tmp_path / "run").exists()


def test_lm_refuses_without_lmplz_in_one_line(monkeypatch):
    import qe.resources.lm as lm
    from qe.wordmodel import lmclassfamily, lmfamily

    def missing(name: str):
        raise QEInputError(f"KenLM tool '{name}' not found")

    monkeypatch.setattr(lm, "find_kenlm_binary", missing)
    for refuse in (lmfamily.refuse, lmclassfamily.refuse):
        problem = refuse("en", "de")
        assert problem is not None and "lmplz" in problem and "\n" not in problem


def test_a_language_without_a_pipeline_is_refused_not_loaded_as_a_path(tmp_path, monkeypatch):
    from qe.wordmodel.wordnlp import analyse

    (tmp_path / "xx").mkdir()  # a folder named like the language must not be taken for a pipeline
    monkeypatch.chdir(tmp_path)
    with pytest.raises(QEInputError, match="no spaCy pipeline to tag 'xx'"):
        analyse("xx", [["a", "b"]])
