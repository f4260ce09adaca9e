"""The saved word model (``qe.wordmodel.modelfile``, ``.qwords``): a model saved and loaded tags en-de dev
with scikit-learn's own probabilities (``predict_proba``) from the same feature tables; the same model
gives the same bytes; a hand-built tree ensemble gives the probabilities worked out by hand; a model
trained with NMT log-probabilities asks for them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.wordmodel.boosted import boosted_trees
from qe.wordmodel.features import KINDS, WordFeaturizer, tag_labels
from qe.wordmodel.modelfile import load_word_model, save_word_model
from qe.wordmodel.tagger import WordTagger
from qe.words.files import WordLevelData

TRAIN_SENTENCES = 300


def first(data: WordLevelData, n: int) -> WordLevelData:
    return WordLevelData(data.src[:n], data.mt[:n], data.mt_tags[:n], data.gap_tags[:n], data.src_tags[:n])


@pytest.fixture(scope="module")
def en_de(data_dir, tmp_path_factory):
    """A tagger trained on 300 en-de train sentences with the NMT log-probabilities, thresholds on dev,
    saved; and the dev set with its tables as the in-memory featurizer makes them."""
    from qe.wordmodel.nmtprobs import load_word_logprobs
    from qe.words.files import load_word_level

    train = load_word_level("en-de", "train", data_dir)
    train_nmt = load_word_logprobs("en-de", "train", train.mt, data_dir)
    train = first(train, TRAIN_SENTENCES)
    train_nmt = type(train_nmt)(train_nmt.words[:TRAIN_SENTENCES], train_nmt.sentence[:TRAIN_SENTENCES])
    dev = load_word_level("en-de", "dev", data_dir)
    dev_nmt = load_word_logprobs("en-de", "dev", dev.mt, data_dir)
    featurizer = WordFeaturizer()
    tagger = WordTagger(max_iter=60).fit(featurizer.fit_transform(train, train_nmt), tag_labels(train))
    dev_tables = featurizer.transform(dev, dev_nmt)
    tagger.choose_thresholds(dev_tables, tag_labels(dev))
    path = tmp_path_factory.mktemp("word") / "model.qwords"
    save_word_model(path, featurizer, tagger, {"train_sentences": TRAIN_SENTENCES})
    return {
        "path": path,
        "featurizer": featurizer,
        "tagger": tagger,
        "dev": dev,
        "dev_nmt": dev_nmt,
        "dev_tables": dev_tables,
    }


@pytest.mark.data
def test_a_loaded_model_gives_scikit_learns_probabilities_on_en_de_dev(en_de):
    model = load_word_model(en_de["path"])
    tables, probability = model.tag(en_de["dev"], en_de["dev_nmt"])
    expected = en_de["tagger"].bad_probability(en_de["dev_tables"])  # predict_proba[:, 1]
    for kind in KINDS:
        assert np.array_equal(tables.tables[kind], en_de["dev_tables"].tables[kind], equal_nan=True)
        direct = en_de["tagger"].models_[kind].predict_proba(tables.tables[kind])[:, 1]
        assert np.max(np.abs(probability[kind] - direct)) <= 1e-12
        assert np.max(np.abs(probability[kind] - expected[kind])) <= 1e-12
        assert model.thresholds[kind] == en_de["tagger"].thresholds_[kind]
        assert np.array_equal(
            probability[kind] >= model.thresholds[kind], en_de["tagger"].predict(tables)[kind]
        )
    assert model.nmt and model.manifest["signature"] == {"train_sentences": TRAIN_SENTENCES}


@pytest.mark.data
def test_the_same_model_gives_the_same_bytes(en_de, tmp_path):
    again = tmp_path / "again.qwords"
    save_word_model(again, en_de["featurizer"], en_de["tagger"], {"train_sentences": TRAIN_SENTENCES})
    assert again.read_bytes() == en_de["path"].read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # written atomically


@pytest.mark.data
def test_a_model_trained_with_nmt_log_probabilities_asks_for_them(en_de):
    model = load_word_model(en_de["path"])
    with pytest.raises(QEInputError, match="with NMT log-probabilities"):
        model.tag(en_de["dev"])


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def test_a_hand_built_ensemble_gives_the_probabilities_worked_by_hand():
    # tree 0: x0 <= 0.5 ? 1.0 : (x1 <= 2 ? -2.0 : 0.5), a missing x0 goes right
    # tree 1: a single leaf, 0.25
    arrays = {
        "sizes": np.array([5, 1], dtype="<i8"),
        "feature": np.array([0, 0, 1, 0, 0, 0], dtype="<i8"),
        "threshold": np.array([0.5, 0, 2.0, 0, 0, 0], dtype="<f8"),
        "left": np.array([1, 0, 3, 0, 0, 0], dtype="<i8"),
        "right": np.array([2, 0, 4, 0, 0, 0], dtype="<i8"),
        "leaf": np.array([0, 1, 0, 1, 1, 1], dtype="|u1"),
        "missing_left": np.array([0, 0, 1, 0, 0, 0], dtype="|u1"),
        "value": np.array([0, 1.0, 0, -2.0, 0.5, 0.25], dtype="<f8"),
    }
    model = boosted_trees("target", -0.5, arrays, n_features=2)
    X = np.array([[0.2, 9.0], [0.5, 0.0], [0.7, 1.0], [0.7, 3.0], [np.nan, 2.0], [0.9, np.nan]])
    raw = [-0.5 + 1.0 + 0.25, -0.5 + 1.0 + 0.25, -0.5 - 2.0 + 0.25, -0.5 + 0.5 + 0.25, -0.5 - 2.0 + 0.25]
    raw.append(-0.5 - 2.0 + 0.25)  # x1 missing at node 2 goes left
    assert model.raw(X).tolist() == raw
    assert np.allclose(model.probability(X), [sigmoid(r) for r in raw], rtol=0, atol=1e-15)
    assert sigmoid(raw[0]) == pytest.approx(0.679178699175393, abs=1e-15)
