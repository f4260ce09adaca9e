"""The ``[wordtags]`` bundle member (the word tagger trained on word-level tags, cross-fitted with the
bundle's QE training corpus) and the ``wordtags`` family that sums its predictions up per pair."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from qe.bundle import ResourceBundle
from qe.cli import main
from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.features.wordtags import COLUMNS, WordTagsFamily
from qe.infra.errors import QEInputError
from tests.helpers import write_config

N = 40
SRC = [f"s{i} the cat" for i in range(N)]
MT = [f"m{i} die katze" for i in range(N)]
NEW_SRC = ["s3 the dog", "the cat", "a cat", "s7 the the cat"]
NEW_MT = ["m5 der hund", "die katze", "eine katze", "m2 die die katze"]


def _tag(bad: bool) -> str:
    return "BAD" if bad else "OK"


def _tags(i: int) -> str:
    """2N+1 tags, gaps and MT words interleaved: m{i} BAD for odd i, katze every third, a gap every fifth."""
    words = [i % 2 == 1, False, i % 3 == 0]
    gaps = [i % 4 == 0, False, False, i % 5 == 0]
    out = [_tag(gaps[0])]
    for word, gap in zip(words, gaps[1:], strict=True):
        out += [_tag(word), _tag(gap)]
    return " ".join(out)


def _source_tags(i: int) -> str:
    return " ".join(_tag(b) for b in (i % 2 == 1, False, i % 3 == 0))


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def bundle_config(**wordtags) -> dict:
    return {
        "name": "wt",
        "languages": {"src": "en", "tgt": "de"},
        "text": {"style": "moses"},
        "corpora": {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": 2}},
        "wordtags": {
            "src": "train.src",
            "mt": "train.mt",
            "tags": "train.tags",
            "source_tags": "train.source_tags",
            "max_iter": 20,
            "min_samples_leaf": 2,
            **wordtags,
        },
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wordtags-data")
    write_lines(root / "train.src", SRC)
    write_lines(root / "train.mt", MT)
    write_lines(root / "train.tags", [_tags(i) for i in range(N)])
    write_lines(root / "train.source_tags", [_source_tags(i) for i in range(N)])
    write_lines(root / "new.src", NEW_SRC)
    write_lines(root / "new.mt", NEW_MT)
    write_lines(root / "train.labels", [f"{(i % 2 + (i % 3 == 0)) / 3:.4f}" for i in range(N)])
    write_lines(root / "new.labels", ["0.5", "0.0", "0.2", "0.9"])
    return root


@pytest.fixture(scope="module")
def built(data: Path) -> ResourceBundle:
    from qe.bundle import build_bundle

    config = write_config(data / "resources-wt.toml", bundle_config())
    return build_bundle(config, data / "bundle", data_dir=data, progress=False)


# ---------------------------------------------------------------------- the member


def test_the_member_writes_a_checked_model_per_fold(built: ResourceBundle) -> None:
    import hashlib

    from qe.wordmodel.modelfile import WordModel, load_word_model

    entry = built.info("wordtags")
    assert [f["file"] for f in entry["folds"]] == ["wordtags.fold0.qwords", "wordtags.fold1.qwords"]
    for fold in entry["folds"]:
        path = built.path / fold["file"]
        assert fold["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert isinstance(load_word_model(path), WordModel)  # the .qwords checks pass
    model = built.get("wordtags")
    assert isinstance(model, WordModel) and not model.nmt
    assert model.thresholds == dict.fromkeys(("target", "gaps", "source"), 0.5)
    assert entry["summary"]["sentences"] == N and entry["summary"]["left_out"] == 0
    fold_map = built.get("cross_fit")
    folds = np.array([fold_map.fold(s, m) for s, m in zip(SRC, MT, strict=True)])
    for fold, info in enumerate(entry["folds"]):  # each fold's model learns from the other fold's pairs
        assert info["summary"]["sentences"] == int((folds != fold).sum())


def test_a_training_pair_is_tagged_by_a_model_that_never_saw_it(built: ResourceBundle) -> None:
    """By construction: every MT word m{i} occurs in one training sentence only, so a model's BAD-rate
    table holds it exactly when that sentence was among its training data."""
    fold_map = built.get("cross_fit")
    full = built.get("wordtags").featurizer.rates_["mt_word"].seen
    assert all(f"m{i}" in full for i in range(N))
    for i, (s, m) in enumerate(zip(SRC, MT, strict=True)):
        fold = fold_map.fold(s, m)
        own = built.fold_view(fold).get("wordtags").featurizer.rates_["mt_word"].seen
        other = built.fold_view(1 - fold).get("wordtags").featurizer.rates_["mt_word"].seen
        assert f"m{i}" not in own and f"m{i}" in other
    # the extractor cuts the batch by fold: training pairs get their fold model's values, new pairs the full's
    table = extract_features(
        make_families(["wordtags"], {}),
        Pairs.of(SRC + NEW_SRC, MT + NEW_MT, ids=[str(i) for i in range(N + len(NEW_SRC))]),
        resources=built,
        progress=False,
    ).to_numpy()
    assert table.shape == (N + len(NEW_SRC), len(COLUMNS)) and np.isfinite(table).all()
    family = WordTagsFamily()
    for i, (s, m) in enumerate(zip(SRC, MT, strict=True)):
        view = built.fold_view(fold_map.fold(s, m))
        assert np.array_equal(table[i], family.extract(Pairs.of([s], [m]), view)[0])
    assert np.array_equal(table[N:], family.extract(Pairs.of(NEW_SRC, NEW_MT), built))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"corpora": {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": False}}}, "cross-fitted QE"),
        ({"wordtags": {"dataset": "mlqe-pe/en-de", "src": "train.src"}}, "wordtags.src"),
        ({"wordtags": {"dataset": "mlqe-pe/en-de", "split": "test20"}}, "wordtags.split"),
        ({"wordtags": {"dataset": "mlqe-pe/en-zh"}}, "wordtags.dataset"),
        ({"wordtags": {"src": "a", "mt": "b", "tags": "c"}}, "all of src, mt, tags and source_tags"),
        ({"wordtags": {"dataset": "mlqe-pe/en-de", "threshold": 1.5}}, "wordtags.threshold"),
    ],
)
def test_bad_wordtags_tables_are_one_line(tmp_path: Path, change: dict, words: str) -> None:
    from qe.bundle import read_bundle_config

    config = {**bundle_config(), **change}
    with pytest.raises(QEInputError, match=words) as caught:
        read_bundle_config(write_config(tmp_path / "bad.toml", config))
    assert "\n" not in str(caught.value)


def test_run_and_predict_end_to_end(built: ResourceBundle, data: Path, tmp_path: Path, capsys) -> None:
    files = {"train": "train", "test": "new"}
    config = {
        "name": "wt-run",
        "data": {
            split: {kind: str(data / f"{stem}.{kind}") for kind in ("src", "mt", "labels")}
            for split, stem in files.items()
        },
        "features": {"families": ["wordtags"], "resources": str(built.path)},
        "learner": {"name": "ridge"},
        "cv": {"folds": 2},
    }
    run = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "run.toml", config)), "--output-dir", str(run)]) == 0
    assert built.signature() in (run / "signature.txt").read_text()
    expected = [float(line.split("\t")[1]) for line in (run / "predictions.tsv").read_text().splitlines()[1:]]
    out = tmp_path / "scores.tsv"
    args = ["predict", "--model", str(run / "model.skops"), "--src", str(data / "new.src")]
    assert main([*args, "--mt", str(data / "new.mt"), "--out", str(out), "--quiet"]) == 0
    scores = [float(line.split("\t")[1]) for line in out.read_text().splitlines()[1:]]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)


# ---------------------------------------------------------------------- hostile bundles


def _features(bundle: Path, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    out = tmp_path / "f.tsv"
    args = ["features", "--families", "wordtags", "--resources", str(bundle)]
    args += ["--src", str(data / "new.src"), "--mt", str(data / "new.mt"), "--out", str(out), "--quiet"]
    code = main(args)
    return code, capsys.readouterr().err.strip()


def test_the_bundle_scores_through_the_cli(built: ResourceBundle, data: Path, tmp_path, capsys) -> None:
    code, err = _features(built.path, data, tmp_path, capsys)
    assert code == 0, err
    assert (tmp_path / "f.tsv").read_text(encoding="utf-8").splitlines()[0].count("wordtags.") == len(COLUMNS)


def test_a_missing_member_file_is_one_line(built: ResourceBundle, data: Path, tmp_path, capsys) -> None:
    copy = shutil.copytree(built.path, tmp_path / "bundle")
    (copy / "wordtags.qwords").unlink()
    code, err = _features(copy, data, tmp_path, capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "wordtags" in err and "missing" in err, err


def test_a_corrupt_qwords_file_is_one_line(built: ResourceBundle, data: Path, tmp_path, capsys) -> None:
    """A file whose sha256 the manifest was made to agree with still meets the .qwords checks."""
    import hashlib

    copy = shutil.copytree(built.path, tmp_path / "bundle")
    path = copy / "wordtags.qwords"
    path.write_bytes(b"PK\x03\x04 not a zip at all" * 10)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["members"]["wordtags"]
    entry["sha256"], entry["bytes"] = hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    code, err = _features(copy, data, tmp_path, capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "wordtags.qwords" in err, err


# ---------------------------------------------------------------------- the family's columns


class _Tables:
    def __init__(self, lengths: dict[str, np.ndarray]) -> None:
        self.lengths = lengths

    def sentences(self, kind: str, values: np.ndarray) -> list[np.ndarray]:
        return np.split(np.asarray(values), np.cumsum(self.lengths[kind])[:-1])


class _Model:
    """A word model stand-in giving fixed BAD probabilities per tagged sentence."""

    nmt = False
    thresholds = {"target": 0.5, "gaps": 0.4, "source": 0.5}  # noqa: RUF012

    def __init__(self, probabilities: list[dict[str, list[float]]]) -> None:
        self.probabilities = probabilities
        self.seen: list = []

    def tag(self, data, nmt):
        self.seen.append((data.src, data.mt))
        kinds = ("target", "gaps", "source")
        lengths = {k: np.array([len(p[k]) for p in self.probabilities]) for k in kinds}
        flat = {k: np.array([v for p in self.probabilities for v in p[k]], dtype=float) for k in kinds}
        return _Tables(lengths), flat


def test_the_columns_are_the_hand_computed_values() -> None:
    model = _Model(
        [
            {"target": [0.2, 0.6, 0.9], "gaps": [0.1, 0.5, 0.3, 0.0], "source": [0.7, 0.1]},
            {"target": [0.5], "gaps": [0.4, 0.39], "source": [0.2]},
        ]
    )
    bundle = ResourceBundle.in_memory({"wordtags": model}, {})
    family = WordTagsFamily().bind(bundle)
    got = family.extract(Pairs.of(["a b", "a", "c"], ["x y z", "", "w"]), bundle)
    assert model.seen == [([["a", "b"], ["c"]], [["x", "y", "z"], ["w"]])]  # the empty MT is not tagged
    assert [name for name, _ in COLUMNS] == [
        "mt_bad_share",
        "mt_bad_prob_mean",
        "mt_bad_prob_std",
        "mt_bad_prob_max",
        "gap_bad_share",
        "src_bad_share",
        "src_bad_prob_mean",
    ]
    std = np.sqrt(((0.2 - 17 / 30) ** 2 + (0.6 - 17 / 30) ** 2 + (0.9 - 17 / 30) ** 2) / 3)
    expected = [
        [2 / 3, 17 / 30, std, 0.9, 1 / 4, 1 / 2, 0.4],
        [0.0] * 7,
        [1.0, 0.5, 0.0, 0.5, 1 / 2, 0.0, 0.2],
    ]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert family.extract(Pairs.of([""], [""]), bundle).tolist() == [[0.0] * 7]


def test_a_model_with_nmt_features_needs_the_nmt_inputs() -> None:
    model = _Model([{"target": [0.1], "gaps": [0.1, 0.1], "source": [0.1]}])
    model.nmt = True
    bundle = ResourceBundle.in_memory({"wordtags": model}, {})
    with pytest.raises(QEInputError, match="nmt_tokens and nmt_logprobs"):
        WordTagsFamily().bind(bundle).extract(Pairs.of(["a"], ["x"]), bundle)
    bad = {"nmt_tokens": ["x"], "nmt_logprobs": ["-0.1"]}  # one value short: x and </s>
    with pytest.raises(QEInputError, match="1 log-probabilities for 1 NMT tokens"):
        WordTagsFamily().bind(bundle).extract(Pairs.of(["a"], ["x"], extra=bad), bundle)
