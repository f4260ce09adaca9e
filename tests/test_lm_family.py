"""The ``lm`` feature family: every feature checked against values worked out by hand from the ARPA
entries of tiny KenLM models (word and POS), plus settings, ``pos="auto"`` resolution and edge cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from qe.bundle import ResourceBundle
from qe.features.base import Pairs
from qe.features.lm import LMFeatures
from qe.infra.errors import QEInputError
from qe.resources.lm import LanguageModel, find_kenlm_binary, train_lm
from qe.resources.pos import build_pos_lm, tagger_available, upos_tagger
from qe.text.processing import TextConfig

pytest.importorskip("kenlm", reason="kenlm Python module not installed: run scripts/install_kenlm.sh")

MEMORY = "64M"
CORPUS = ["the cat sat on the mat", "the dog sat on the log", "a cat ran"]
TAGS = {"the": "DET", "a": "DET", "cat": "NOUN", "dog": "NOUN", "mat": "NOUN", "log": "NOUN"}
TAGS |= {"sat": "VERB", "ran": "VERB", "on": "ADP"}
TEXT = {"src": TextConfig(lang="en", style="moses"), "tgt": TextConfig(lang="en", style="moses")}


class DictTagger:
    """A stand-in UPOS tagger: fixed tags by lower-cased word, ``X`` for anything else."""

    def tag(self, sentences):
        return [[TAGS.get(w.lower(), "X") for w in sentence] for sentence in sentences]


def read_arpa(path: Path) -> dict[str, tuple[float, float]]:
    """n-gram -> (log10 prob, log10 back-off), straight from the ARPA text."""
    entries: dict[str, tuple[float, float]] = {}
    order = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("\\") and line.endswith("-grams:"):
            order = int(line[1])
            continue
        fields = line.split("\t")
        if order and len(fields) >= 2:
            entries[fields[1]] = (float(fields[0]), float(fields[2]) if len(fields) > 2 else 0.0)
    return entries


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict:
    try:
        find_kenlm_binary("lmplz")
    except QEInputError as exc:
        pytest.skip(f"KenLM tools not built ({exc})")
    root = tmp_path_factory.mktemp("lmfam")
    word = train_lm(CORPUS, root / "word.arpa", order=3, binary=False, memory=MEMORY)
    info = build_pos_lm(
        ["The cat sat on the mat", "", "The dog sat on the log", "A cat ran"],
        "en",
        root / "pos.arpa",
        order=3,
        text=TEXT["src"],
        tagger=DictTagger(),
        binary=False,
        memory=MEMORY,
    )
    members = {"lm.src": LanguageModel(word), "lm.tgt": LanguageModel(word)}
    with_pos = {
        **members,
        "poslm.src": LanguageModel(root / "pos.arpa"),
        "poslm.tgt": LanguageModel(root / "pos.arpa"),
    }
    with_pos |= {"tagger.src": DictTagger(), "tagger.tgt": DictTagger()}
    return {
        "word": read_arpa(word),
        "pos": read_arpa(root / "pos.arpa"),
        "pos_info": info,
        "bundle": ResourceBundle.in_memory(members, TEXT),
        "bundle_pos": ResourceBundle.in_memory(with_pos, TEXT),
    }


def run(family: LMFeatures, bundle, src: list[str], mt: list[str]) -> dict[str, np.ndarray]:
    family.bind(bundle)
    values = family.extract(Pairs(ids=[str(i) for i in range(len(src))], src=src, mt=mt), bundle)
    assert values.shape == (len(src), len(family.specs()))
    return dict(zip([spec.name for spec in family.specs()], values.T, strict=True))


def test_word_lm_features_by_hand(tiny: dict) -> None:
    a = tiny["word"]
    p = {k: v[0] for k, v in a.items()}
    bo = {k: v[1] for k, v in a.items()}
    # "The zebra sat": the|<s> by the bigram; zebra unknown: p(<unk>) after backing off from
    # "<s> the" and "the"; sat after an unknown word: its unigram (the back-off of <unk> is 0);
    # </s>: neither "<unk> sat </s>" nor "sat </s>" exist, so bo(sat) + p(</s>).
    s1 = [p["<s> the"], p["<unk>"] + bo["<s> the"] + bo["the"], bo["<unk>"] + p["sat"], bo["sat"] + p["</s>"]]
    # "the cat sat": bigram, then two trigrams; </s> backs off from "cat sat" and "sat".
    s2 = [p["<s> the"], p["<s> the cat"], p["the cat sat"], bo["cat sat"] + bo["sat"] + p["</s>"]]
    f = run(LMFeatures(pos=False), tiny["bundle"], ["The zebra sat", ""], ["the cat sat", "cat"])

    assert f["src_logprob"][0] == pytest.approx(sum(s1), abs=1e-5)
    assert f["src_ppl"][0] == pytest.approx(10 ** (-sum(s1) / 4), rel=1e-5)
    assert f["src_ppl_no_eos"][0] == pytest.approx(10 ** (-sum(s1[:3]) / 3), rel=1e-5)
    assert f["src_oov_count"][0] == 1
    assert f["src_oov_ratio"][0] == pytest.approx(1 / 3)
    assert [f[f"src_ngram{k}_share"][0] for k in (1, 2, 3)] == pytest.approx([1 / 3, 1 / 3, 0.0])
    assert f["src_min_word_logprob"][0] == pytest.approx(s1[1], abs=1e-5)

    assert f["mt_logprob"][0] == pytest.approx(sum(s2), abs=1e-5)
    assert f["mt_ppl"][0] == pytest.approx(10 ** (-sum(s2) / 4), rel=1e-5)
    assert f["mt_ppl_no_eos"][0] == pytest.approx(10 ** (-sum(s2[:3]) / 3), rel=1e-5)
    assert f["mt_oov_count"][0] == 0 and f["mt_oov_ratio"][0] == 0
    assert [f[f"mt_ngram{k}_share"][0] for k in (1, 2, 3)] == pytest.approx([0.0, 1 / 3, 2 / 3])
    assert f["mt_min_word_logprob"][0] == pytest.approx(min(s2[:3]), abs=1e-5)

    # The empty source: only </s> after <s> ("<s> </s>" is not in the model).
    empty = bo["<s>"] + p["</s>"]
    assert f["src_logprob"][1] == pytest.approx(empty, abs=1e-5)
    assert f["src_ppl"][1] == pytest.approx(10 ** (-empty), rel=1e-5)
    assert f["src_ppl_no_eos"][1] == 1.0
    assert [f[name][1] for name in ("src_oov_count", "src_oov_ratio", "src_min_word_logprob")] == [0, 0, 0]
    assert [f[f"src_ngram{k}_share"][1] for k in (1, 2, 3)] == [0, 0, 0]
    # One token, "cat": p(cat | <s>) backs off to the unigram; then "cat </s>" is unseen too.
    one = [bo["<s>"] + p["cat"], bo["cat"] + p["</s>"]]
    assert f["mt_logprob"][1] == pytest.approx(sum(one), abs=1e-5)
    assert f["mt_ppl_no_eos"][1] == pytest.approx(10 ** (-one[0]), rel=1e-5)
    assert f["mt_ngram1_share"][1] == 1.0
    assert f["mt_min_word_logprob"][1] == pytest.approx(one[0], abs=1e-5)


def test_backoff_buckets_follow_orders(tiny: dict) -> None:
    """With orders = 2 the trigram hits fall into the last bucket ("2 or longer")."""
    family = LMFeatures(pos=False, orders=2)
    names = [spec.name for spec in family.specs()]
    assert "src_ngram2_share" in names and "src_ngram3_share" not in names
    f = run(family, tiny["bundle"], ["the cat sat"], ["the zebra sat"])
    assert f["src_ngram1_share"][0] == 0.0 and f["src_ngram2_share"][0] == 1.0
    assert f["mt_ngram1_share"][0] == pytest.approx(1 / 3) and f["mt_ngram2_share"][0] == pytest.approx(1 / 3)


def test_pos_lm_features_by_hand(tiny: dict) -> None:
    info = tiny["pos_info"]
    assert info["sentences"] == 3 and info["tokens"] == 15 and info["order"] == 3
    assert info["tag_counts"] == {"ADP": 2, "DET": 5, "NOUN": 5, "VERB": 3}
    a = tiny["pos"]
    p = {k: v[0] for k, v in a.items()}
    bo = {k: v[1] for k, v in a.items()}
    family = LMFeatures(pos="auto", pos_orders=3)
    f = run(family, tiny["bundle_pos"], ["The cat sat"], ["dog the"])
    assert family.use_pos
    # DET NOUN VERB: bigram, trigram, trigram, and "NOUN VERB </s>" is a trigram of "A cat ran".
    s = [p["<s> DET"], p["<s> DET NOUN"], p["DET NOUN VERB"], p["NOUN VERB </s>"]]
    assert f["src_pos_logprob"][0] == pytest.approx(sum(s), abs=1e-5)
    assert f["src_pos_ppl"][0] == pytest.approx(10 ** (-sum(s) / 4), rel=1e-5)
    assert f["src_pos_ppl_no_eos"][0] == pytest.approx(10 ** (-sum(s[:3]) / 3), rel=1e-5)
    assert [f[f"src_pos_ngram{k}_share"][0] for k in (1, 2, 3)] == pytest.approx([0, 1 / 3, 2 / 3])
    assert f["src_pos_min_tag_logprob"][0] == pytest.approx(min(s[:3]), abs=1e-5)
    # NOUN DET: "<s> NOUN" unseen, so bo(<s>) + p(NOUN); "NOUN DET" unseen: bo(NOUN) + p(DET);
    # </s> after "NOUN DET": bo("NOUN DET") is absent (0), "DET </s>" unseen: bo(DET) + p(</s>).
    t = [bo["<s>"] + p["NOUN"], bo["NOUN"] + p["DET"], bo["DET"] + p["</s>"]]
    assert f["mt_pos_logprob"][0] == pytest.approx(sum(t), abs=1e-5)
    assert f["mt_pos_ngram1_share"][0] == 1.0
    assert "mt_pos_oov_count" not in f  # the tag vocabulary is closed


def test_pos_setting_decides_the_columns(tiny: dict) -> None:
    n_word = len(LMFeatures(pos=False).specs())
    assert n_word == 2 * (3 + 2 + 3 + 1)
    # auto: on iff the bundle has both POS LMs (and taggers); an unbound family has none.
    assert len(LMFeatures().specs()) == n_word
    assert len(LMFeatures().bind(tiny["bundle"]).specs()) == n_word
    assert len(LMFeatures().bind(tiny["bundle_pos"]).specs()) == n_word + 2 * (3 + 5 + 1)
    assert len(LMFeatures(pos=False).bind(tiny["bundle_pos"]).specs()) == n_word
    # pos = true without POS LMs: one clear error at bind, naming both.
    with pytest.raises(QEInputError, match=r"pos = true but missing: .*poslm\.src; .*poslm\.tgt"):
        LMFeatures(pos=True).bind(tiny["bundle"])
    assert "pos=1" in LMFeatures(pos=True).bind(tiny["bundle_pos"]).signature()


def test_catalogue_needs_no_resources() -> None:
    names = [spec.name for spec in LMFeatures.catalogue()]
    assert names[0] == "src_logprob" and "mt_pos_min_tag_logprob" in names
    assert len(names) == len(set(names))


def test_bad_settings() -> None:
    with pytest.raises(QEInputError, match=r"lm\.pos = .yes.: expected one of true, false, .auto."):
        LMFeatures(pos="yes")
    with pytest.raises(QEInputError, match="orders"):
        LMFeatures(orders=0)
    with pytest.raises(QEInputError, match="resource bundle"):
        LMFeatures(pos=False).extract(Pairs(ids=["1"], src=["a"], mt=["a"]), None)


def test_no_nan_on_extreme_sentences(tiny: dict) -> None:
    long = " ".join(["the cat sat on the mat", "zebra"] * 143)  # 1001 tokens
    src = ["", "cat", long, "qqq www eee", "   "]
    f = run(LMFeatures(pos=True, pos_orders=3), tiny["bundle_pos"], src, list(reversed(src)))
    values = np.array(list(f.values()))
    assert np.isfinite(values).all()
    assert f["src_oov_count"][2] == 143 and f["src_oov_ratio"][3] == 1.0
    assert math.isclose(f["src_ngram1_share"][3] + f["src_oov_ratio"][3], 1.0)


@pytest.mark.slow
@pytest.mark.skipif(
    not (tagger_available("en") and tagger_available("es")), reason="spaCy pipelines not installed"
)
def test_spacy_upos_tags_bundle_tokens() -> None:
    tags = upos_tagger("en").tag([["The", "cat", "sat", "on", "the", "mat", "."], []])
    assert tags == [["DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"], []]
    assert upos_tagger("es").tag([["El", "gato", "duerme", "."]]) == [["DET", "NOUN", "VERB", "PUNCT"]]
    assert upos_tagger("en").describe().startswith("en_core_web_sm")


def test_empty_batch(tiny: dict) -> None:
    family = LMFeatures(pos=True, pos_orders=3).bind(tiny["bundle_pos"])
    values = family.extract(Pairs(ids=[], src=[], mt=[]), tiny["bundle_pos"])
    assert values.shape == (0, len(family.specs()))


def test_build_pos_lm_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(QEInputError, match="order"):
        build_pos_lm(["the cat"], "en", tmp_path / "x.arpa", order=2, tagger=DictTagger())
    with pytest.raises(QEInputError, match="no non-empty sentence"):
        build_pos_lm(["", "   "], "en", tmp_path / "x.arpa", order=3, tagger=DictTagger())
    assert not (tmp_path / "x.arpa").exists()
