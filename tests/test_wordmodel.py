"""The word-level model (qe.wordmodel): type BAD rates and their cross-fitting worked by hand (a row
never sees its own tag), features of a hand-made sentence, the MCC threshold against a brute force
with scikit-learn, the tagger on a problem with a known answer, hostile inputs, and MLQE-PE en-de."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, matthews_corrcoef

from qe.evaluation.wordmetrics import best_threshold
from qe.infra.errors import QEInputError
from qe.wordmodel.features import NAMES, FeatureTables, WordFeaturizer, check_tags, tag_labels
from qe.wordmodel.tagger import WordTagger
from qe.wordmodel.typerates import TypeRates, out_of_fold
from qe.words.files import WordLevelData
from tests.helpers.words import B, G, lettered

TOY = [
    ("the house is red .", "das Haus ist rot .", "GGGBG", "GGGGGG", "GGGBG"),
    ("the car is 3 years old", "das Auto ist 4 Jahre alt", "GGGBGG", "GGGGGGG", "GGGBGG"),
    ("a red car .", "ein roter Wagen .", "GGBG", "GGBGG", "GGBG"),
    ("the house", "das Haus", "GG", "GGG", "GG"),
]


# --- rates, by hand ---------------------------------------------------------------------------------


def test_type_rates_by_hand():
    rates = TypeRates.fit(["a", "a", "b"], np.array([True, False, True]), strength=2.0)
    rate, seen = rates.rates(["a", "b", "zzz"])
    # prior 2/3; a: (1 + 2 * 2/3) / (2 + 2); b: (1 + 4/3) / 3; unseen: the prior
    assert rate == pytest.approx([7 / 12, 7 / 9, 2 / 3])
    assert seen.tolist() == [2, 1, 0]


def test_out_of_fold_by_hand():
    keys, bad, folds = ["a", "a", "b", "a"], np.array([1, 0, 1, 1], bool), np.array([0, 1, 0, 1])
    rate, seen = out_of_fold(keys, bad, folds, strength=1.0)
    # row 0 (fold 0) sees rows 1, 3: a twice, once BAD, prior 1/2 -> (1 + 0.5) / 3
    # row 1 (fold 1) sees rows 0, 2: a once BAD, prior 1 -> (1 + 1) / 2; row 3 likewise
    # row 2 (fold 0, b) sees no b: the other folds' prior 1/2
    assert rate == pytest.approx([0.5, 1.0, 0.5, 1.0])
    assert seen.tolist() == [2, 1, 0, 1]


def test_a_row_never_sees_its_own_tag():
    rng = np.random.default_rng(0)
    keys = list(rng.choice(list("abcde"), size=200))
    bad = rng.random(200) < 0.3
    folds = rng.integers(0, 5, size=200)
    rate, _ = out_of_fold(keys, bad, folds)
    for row in (0, 17, 123):
        flipped = bad.copy()
        flipped[row] = not flipped[row]
        assert out_of_fold(keys, flipped, folds)[0][row] == rate[row]


def test_rates_refuse_mismatched_lengths():
    with pytest.raises(QEInputError, match="2 keys but 1 tags"):
        TypeRates.fit(["a", "b"], np.array([True]))
    with pytest.raises(QEInputError, match="must be as many"):
        out_of_fold(["a"], np.array([True]), np.array([0, 1]))


# --- features ----------------------------------------------------------------------------------------


def test_feature_tables_have_one_row_per_tag_and_the_named_columns():
    data = lettered(TOY)
    tables = WordFeaturizer(folds=2).fit_transform(data)
    assert tables.lengths["target"].tolist() == [5, 6, 4, 2]
    assert tables.lengths["gaps"].tolist() == [6, 7, 5, 3]
    assert tables.lengths["source"].tolist() == [5, 6, 4, 2]
    for kind, names in NAMES.items():
        assert tables.tables[kind].shape == (int(tables.lengths[kind].sum()), len(names))
    labels = tag_labels(data)
    assert labels["target"].sum() == 3 and labels["gaps"].sum() == 1 and labels["source"].sum() == 3


def test_features_of_a_sentence_by_hand():
    featurizer = WordFeaturizer(folds=2)
    featurizer.fit_transform(lettered(TOY))
    tables = featurizer.transform(WordLevelData(src=[["the", "3", "house"]], mt=[["Das", "3", "Haus", "!"]]))
    row = {name: tables.tables["target"][:, k] for k, name in enumerate(NAMES["target"])}
    assert row["length"].tolist() == [3, 1, 4, 1]
    assert row["punct"].tolist() == [0, 0, 0, 1]
    assert row["number"].tolist() == [0, 1, 0, 0]
    assert row["capital"].tolist() == [1, 0, 1, 0]
    assert row["position"].tolist() == [0, 1, 2, 3]
    assert row["relative_position"].tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1])
    assert row["in_source"].tolist() == [0, 1, 0, 0]
    assert row["punct_not_in_source"].tolist() == [0, 0, 0, 1]
    assert row["number_not_in_source"].tolist() == [0, 0, 0, 0]
    # 3 of the 17 training MT words are BAD; "das" was seen 3 times, never BAD: (0 + 2 * 3/17) / (3 + 2);
    # "!" never: the prior
    assert np.expm1(row["seen_log"]).tolist() == pytest.approx([3, 0, 2, 0])
    assert row["rate"][0] == pytest.approx(2 * 3 / 17 / 5)
    assert row["rate"][3] == pytest.approx(3 / 17)
    assert np.isnan(row["left_rate"][0]) and row["left_rate"][1] == row["rate"][0]
    assert row["mt_length"].tolist() == [4] * 4 and row["length_ratio"].tolist() == [4 / 3] * 4
    gaps = {name: tables.tables["gaps"][:, k] for k, name in enumerate(NAMES["gaps"])}
    assert np.isnan(gaps["left_length"][0]) and np.isnan(gaps["right_length"][4])
    assert gaps["left_length"][1:].tolist() == [3, 1, 4, 1]
    source = {name: tables.tables["source"][:, k] for k, name in enumerate(NAMES["source"])}
    assert source["in_mt"].tolist() == [0, 1, 0]
    assert source["number"].tolist() == [0, 1, 0]


def test_training_rates_are_cross_fitted():
    # "roter" occurs once in training: its own training row must not see it (seen 0), dev sees it once
    data = lettered(TOY)
    featurizer = WordFeaturizer(folds=2)
    train = featurizer.fit_transform(data)
    column = NAMES["target"].index("seen_log")
    roter = 5 + 6 + 1  # sentence 3, word 1
    assert train.tables["target"][roter, column] == 0.0
    dev = featurizer.transform(lettered(TOY[2:3]))
    assert np.expm1(dev.tables["target"][1, column]) == pytest.approx(1.0)


def test_training_links_are_cross_fitted():
    # on its training row "roter" is unknown to the IBM1 tables of the other folds: linked to NULL;
    # the tables of all of training link it to a source word
    featurizer = WordFeaturizer(folds=2)
    train = featurizer.fit_transform(lettered(TOY))
    column = NAMES["target"].index("null_link")
    assert train.tables["target"][5 + 6 + 1, column] == 1.0
    assert featurizer.transform(lettered(TOY[2:3])).tables["target"][1, column] == 0.0


def test_values_are_cut_back_into_sentences():
    tables = WordFeaturizer(folds=2).fit_transform(lettered(TOY))
    parts = tables.sentences("gaps", np.arange(21))
    assert [p.tolist() for p in parts] == [
        [0, 1, 2, 3, 4, 5],
        [6, 7, 8, 9, 10, 11, 12],
        [13, 14, 15, 16, 17],
        [18, 19, 20],
    ]
    with pytest.raises(QEInputError, match="gaps: 20 values for 21 rows"):
        tables.sentences("gaps", np.arange(20))


def test_an_empty_mt_sentence_has_one_gap_and_no_word():
    featurizer = WordFeaturizer(folds=2)
    featurizer.fit_transform(lettered(TOY))
    tables = featurizer.transform(WordLevelData(src=[["the", "house"], []], mt=[[], ["Haus"]]))
    assert tables.lengths["target"].tolist() == [0, 1]
    assert tables.lengths["gaps"].tolist() == [1, 2]
    assert tables.tables["gaps"].shape == (3, len(NAMES["gaps"]))
    assert tables.tables["source"].shape == (2, len(NAMES["source"]))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mt_tags": None}, "missing: MT"),
        ({"gap_tags": [(G,)] * 4}, "sentence 1: 1 gap tags where 6 fit"),
        ({"src_tags": [(G,) * 5, (G,) * 6, (G,) * 4]}, "3 lines of source tags for 4 sentences"),
        ({"mt_tags": [(G, G, G, G, "ok"), (G,) * 6, (G,) * 4, (G,) * 2]}, "sentence 1: unknown MT tag 'ok'"),
        ({"mt": [["a"]]}, "4 source sentences but 1 MT sentences"),
    ],
)
def test_hostile_training_sets_are_one_clear_line(change, message):
    base = lettered(TOY)
    data = WordLevelData(
        **{**{f: getattr(base, f) for f in ("src", "mt", "mt_tags", "gap_tags", "src_tags")}, **change}
    )
    with pytest.raises(QEInputError, match=message) as info:
        check_tags(data)
    assert "\n" not in str(info.value)
    with pytest.raises(QEInputError):
        WordFeaturizer(folds=2).fit_transform(data)


def test_unfitted_or_badly_set_featurizer_refuses():
    with pytest.raises(QEInputError, match="not fitted"):
        WordFeaturizer().transform(lettered(TOY))
    with pytest.raises(QEInputError, match="at least 2 folds"):
        WordFeaturizer(folds=1)


# --- threshold and tagger ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_best_threshold_is_the_brute_force_maximum(seed):
    rng = np.random.default_rng(seed)
    bad = rng.random(300) < 0.25
    probability = np.round(np.clip(bad * 0.3 + rng.random(300) * 0.7, 0, 1), 2)  # ties on purpose
    threshold, mcc = best_threshold(bad, probability)
    brute = max(matthews_corrcoef(bad, probability >= t) for t in np.unique(probability))
    assert mcc == pytest.approx(brute, abs=1e-12)
    assert matthews_corrcoef(bad, probability >= threshold) == pytest.approx(mcc, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_best_f1_mult_threshold_is_the_brute_force_maximum(seed):
    rng = np.random.default_rng(seed)
    bad = rng.random(300) < 0.25
    probability = np.round(np.clip(bad * 0.3 + rng.random(300) * 0.7, 0, 1), 2)

    def f1_mult(t):
        return float(np.prod(f1_score(bad, probability >= t, average=None, labels=[False, True])))

    threshold, value = best_threshold(bad, probability, "f1_mult")
    assert value == pytest.approx(max(f1_mult(t) for t in np.unique(probability)), abs=1e-12)
    assert f1_mult(threshold) == pytest.approx(value, abs=1e-12)
    with pytest.raises(QEInputError, match="unknown threshold criterion 'auc'"):
        best_threshold(bad, probability, "auc")


def test_best_threshold_degenerate_cases():
    assert best_threshold(np.array([], bool), np.array([])) == (0.5, 0.0)
    assert best_threshold(np.array([False, False]), np.array([0.1, 0.9])) == (0.5, 0.0)
    assert best_threshold(np.array([True, False]), np.array([0.9, 0.1])) == (0.9, 1.0)
    with pytest.raises(QEInputError, match="2 tags but 1 probabilities"):
        best_threshold(np.array([True, False]), np.array([0.5]))


def _synthetic(seed: int, sentences: int = 300) -> tuple[FeatureTables, dict[str, np.ndarray]]:
    """Tables where a row is BAD exactly when its first column is above 0.7 (other columns noise)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 8, size=sentences)
    tables, lengths_of, bad = {}, {}, {}
    for kind, extra in (("target", 0), ("gaps", 1), ("source", 0)):
        rows = lengths + extra
        x = rng.random((int(rows.sum()), 3))
        tables[kind], lengths_of[kind], bad[kind] = x, rows, x[:, 0] > 0.7
    return FeatureTables(tables, lengths_of), bad


def test_tagger_learns_a_known_rule_and_is_seeded():
    train, train_bad = _synthetic(0)
    dev, dev_bad = _synthetic(1)
    tagger = WordTagger(max_iter=60, learning_rate=0.2, min_samples_leaf=20).fit(train, train_bad)
    reached = tagger.choose_thresholds(dev, dev_bad)
    predicted = tagger.predict(dev)
    for kind in ("target", "gaps", "source"):
        assert reached[kind] > 0.95
        assert matthews_corrcoef(dev_bad[kind], predicted[kind]) == pytest.approx(reached[kind])
        assert 1 <= tagger.iterations_[kind] <= 60
    again = WordTagger(max_iter=60, learning_rate=0.2, min_samples_leaf=20).fit(train, train_bad)
    assert np.array_equal(again.bad_probability(dev)["gaps"], tagger.bad_probability(dev)["gaps"])


def test_tagger_refuses_hostile_training():
    train, bad = _synthetic(0, sentences=50)
    with pytest.raises(QEInputError, match="not fitted"):
        WordTagger().bad_probability(train)
    with pytest.raises(QEInputError, match="all one class"):
        WordTagger().fit(train, {**bad, "gaps": np.zeros_like(bad["gaps"])})
    with pytest.raises(QEInputError, match="feature rows but"):
        WordTagger().fit(train, {**bad, "source": bad["source"][:-1]})


# --- MLQE-PE -----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.data
def test_en_de_dev_beats_chance(data_dir):
    from qe.evaluation.wordmetrics import word_scores
    from qe.words.files import load_word_level

    train = load_word_level("en-de", "train", data_dir)
    dev = load_word_level("en-de", "dev", data_dir)
    train = WordLevelData(
        train.src[:2000], train.mt[:2000], train.mt_tags[:2000], train.gap_tags[:2000], train.src_tags[:2000]
    )
    featurizer = WordFeaturizer()
    tagger = WordTagger(max_iter=100).fit(featurizer.fit_transform(train), tag_labels(train))
    tables = featurizer.transform(dev)
    tagger.choose_thresholds(tables, tag_labels(dev))
    predicted = tagger.predict(tables)
    gold = tables.sentences("target", tag_labels(dev)["target"])
    pred = tables.sentences("target", predicted["target"])
    tags = [[B if b else G for b in line] for line in gold], [[B if b else G for b in line] for line in pred]
    assert word_scores(*tags).mcc > 0.15
