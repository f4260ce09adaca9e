"""The ``aligned`` word family (issue 32, build item 2): the data's own source-MT alignments as word
features, worked by hand; cross-fitted pair rates; a run, a model and ``qe predict --words
--alignments``; each missing or unwanted alignment refused in one line."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.wordmodel import alignedfamily
from qe.wordmodel.families import resolve
from qe.wordmodel.features import WordFeaturizer, column_names
from qe.wordmodel.lexicon import SentenceLinks
from tests.helpers.words import predict_words_args, toy, toy_word_config

NAN = np.nan


def test_one_sentence_by_hand():
    """src a b c d, MT x y z, aligned a-x b-x d-z (c and y unaligned); IBM1 links x->a, y->NULL, z->c
    and a->x, b->x, c->NULL, d->z."""
    links = SentenceLinks(
        mt_to_src=np.array([0, -1, 2]),
        mt_prob=np.ones(3),
        src_to_mt=np.array([0, 0, -1, 2]),
        src_prob=np.ones(4),
    )
    got = alignedfamily.sentence_columns(
        ["a", "b", "c", "d"], ["x", "y", "z"], ((0, 0), (1, 0), (3, 2)), links
    )
    common = [1 / 4, 1 / 3]  # unaligned source share, unaligned MT share
    # count, unaligned, IBM1 agrees, distortion |(j + .5) / n - (mean i + .5) / m|, fan-out
    target = [
        [2, 0, 1, abs(0.5 / 3 - 1.0 / 4), 1, *common],
        [0, 1, 0, NAN, 0, *common],
        [1, 0, 0, abs(2.5 / 3 - 3.5 / 4), 1, *common],  # IBM1 says c, the aligner d
    ]
    source = [
        [1, 0, 1, abs(0.5 / 4 - 0.5 / 3), 2, *common],  # x takes a and b: fan-out 2
        [1, 0, 1, abs(1.5 / 4 - 0.5 / 3), 2, *common],
        [0, 1, 0, NAN, 0, *common],
        [1, 0, 1, abs(3.5 / 4 - 2.5 / 3), 1, *common],
    ]
    # gaps: left / right word unaligned; unaligned source words between the nearest aligned MT words'
    # source words: c lies between x's (a, b) and z's (d), so both gaps around y skip it
    gaps = [[NAN, 0, 0, *common], [0, 1, 1, *common], [1, 0, 1, *common], [0, NAN, 0, *common]]
    np.testing.assert_allclose(got["target"], target, equal_nan=True)
    np.testing.assert_allclose(got["source"], source, equal_nan=True)
    np.testing.assert_allclose(got["gaps"], gaps, equal_nan=True)


def test_a_skipped_stretch_at_either_end():
    """Unaligned source words before the first and after the last aligned one belong to the end gaps."""
    links = SentenceLinks(np.array([1]), np.ones(1), np.array([-1, 0, -1, -1]), np.ones(4))
    got = alignedfamily.sentence_columns(["a", "b", "c", "d"], ["y"], ((1, 0),), links)
    assert got["gaps"][:, 2].tolist() == [1.0, 2.0]


def _aligned(data, diagonal: bool = True):
    """``data`` with word-for-word alignments (the toy sets translate word for word)."""
    links = [tuple((i, i) for i in range(len(s))) if diagonal else () for s in data.src]
    return dataclasses.replace(data, alignments=links)


def test_pair_rates_are_cross_fitted_and_reach_the_source_words():
    train = _aligned(toy(120, 0))
    families = resolve(["core", "aligned"], False)
    tables = WordFeaturizer(folds=3, families=families).fit_transform(train)
    k = next(k for k, tags in enumerate(train.mt_tags) if "BAD" in tags)
    mt_tags = list(train.mt_tags)
    mt_tags[k] = tuple("OK" for _ in mt_tags[k])
    again = WordFeaturizer(folds=3, families=families).fit_transform(
        dataclasses.replace(train, mt_tags=mt_tags)
    )
    rate = column_names("target", False, families).index("al_pair_rate")
    start = sum(len(m) for m in train.mt[:k])
    own = slice(start, start + len(train.mt[k]))
    assert np.array_equal(tables.tables["target"][own, rate], again.tables["target"][own, rate])
    assert not np.array_equal(tables.tables["target"][:, rate], again.tables["target"][:, rate])
    dev = _aligned(toy(20, 1))
    featurizer = WordFeaturizer(folds=3, families=families)
    featurizer.fit_transform(train)
    dev_tables = featurizer.transform(dev)
    highest = column_names("source", False, families).index("al_max_mt_pair_rate")
    words = [w for s in dev.src for w in s]
    values = dev_tables.tables["source"][:, highest]
    red = [v for w, v in zip(words, values, strict=True) if w in ("red", "old")]
    other = [v for w, v in zip(words, values, strict=True) if w not in ("red", "old")]
    assert min(red) > 0.9 > 0.1 > max(other)  # "red" and "old" are always BAD in toy


def test_a_set_without_alignments_is_refused():
    families = resolve(["core", "aligned"], False)
    with pytest.raises(QEInputError, match="aligned word family reads source-MT alignments"):
        WordFeaturizer(folds=3, families=families).fit_transform(toy(30, 0))


def test_a_run_and_qe_predict_words_read_the_alignments(tmp_path, capsys):
    from qe.cli import main
    from qe.wordmodel.modelfile import load_word_model

    config = toy_word_config(tmp_path, '["core", "aligned"]', aligned=("train", "dev"))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["families"] == ["core", "aligned"]
    model_path = tmp_path / "run" / "model.qwords"
    model = load_word_model(model_path)
    assert model.alignments and [f.name for f in model.featurizer.families] == ["aligned"]
    out = tmp_path / "tags.jsonl"
    args = predict_words_args(model_path, tmp_path / "dev.src", tmp_path / "dev.mt", out)
    assert main([*args, "--alignments", str(tmp_path / "dev.alignments")]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 30
    gold = [line.split() for line in (tmp_path / "dev.source_tags").read_text().splitlines()]
    pairs = [zip(row["src_tags"], tags, strict=True) for row, tags in zip(rows, gold, strict=True)]
    hits = sum(p == g for pair in pairs for p, g in pair)
    assert hits / sum(map(len, gold)) > 0.9  # the toy's wrong words are learnt through their pairs

    capsys.readouterr()
    assert main(predict_words_args(model_path, tmp_path / "dev.src", tmp_path / "dev.mt")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "give --alignments" in err and "model.qwords" in err
    bad = tmp_path / "bad.alignments"
    lines = (tmp_path / "dev.alignments").read_text().splitlines()
    bad.write_text("\n".join([lines[0], "0-99", *lines[2:]]) + "\n")
    assert main([*args, "--alignments", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1
        and "bad.alignments" in err
        and "bad.alignments:2:" in err
        and "out of range" in err
    )


def test_alignments_are_refused_where_nothing_reads_them(tmp_path, capsys):
    from qe.cli import main

    config = toy_word_config(tmp_path, '["core"]', aligned=("train", "dev"))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    args = predict_words_args(tmp_path / "run" / "model.qwords", tmp_path / "dev.src", tmp_path / "dev.mt")
    capsys.readouterr()
    assert main([*args, "--alignments", str(tmp_path / "dev.alignments")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "leave out --alignments" in err
    sentence = ["predict", "--model", "x.qemodel", "--src", "dev.src", "--mt", "dev.mt"]
    assert main([*sentence, "--alignments", str(tmp_path / "dev.alignments")]) == 2
    assert "add --words" in capsys.readouterr().err


def test_a_run_missing_a_splits_alignments_is_one_line(tmp_path, capsys):
    from qe.cli import main

    config = toy_word_config(tmp_path, '["core", "aligned"]', aligned=("train",))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "[words.dev] gives none" in err and "own.toml" in err, err
    assert not (tmp_path / "run").exists()


def test_a_model_with_the_family_is_not_served(tmp_path):
    from qe.cli import main
    from qe.serve.names import ModelEntry
    from qe.serve.servedwords import ServedWordModel

    config = toy_word_config(tmp_path, '["core", "aligned"]', aligned=("train", "dev"))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    with pytest.raises(QEInputError, match="aligned family cannot be served"):
        ServedWordModel(ModelEntry("toy", tmp_path / "run" / "model.qwords"))
