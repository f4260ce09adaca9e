"""The ``ibm1`` feature family on hand-written GIZA-style tables: every feature worked out by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from qe.bundle import ResourceBundle
from qe.features.base import Pairs
from qe.features.ibm1 import IBM1Features, one_to_one_links, viterbi_alignment
from qe.infra.errors import QEInputError
from qe.resources.pos import coarse_tag
from qe.text.processing import TextConfig
from qe.words.ibm1 import IBM1Table

# t(es | en), keyed by the English word; NULL is the empty word.
S2T = """NULL el 0.2
NULL de 0.3
the el 0.5
the la 0.3
cat gato 0.8
cat el 0.1
black negro 0.7
black gato 0.05
it lo 0.9
"""
# t(en | es), keyed by the Spanish word.
T2S = """NULL the 0.3
el the 0.6
la the 0.5
gato cat 0.9
negro black 0.8
negro cat 0.02
lo it 0.9
"""
# "negro" is deliberately mis-tagged as a noun; pronouns agree but are not in the coarse set.
TAGS = {"the": "DET", "black": "ADJ", "cat": "NOUN", "sat": "VERB", "it": "PRON"}
TAGS |= {"el": "DET", "gato": "NOUN", "negro": "NOUN", "lo": "PRON"}
TEXT = {"src": TextConfig(lang="en", style="moses"), "tgt": TextConfig(lang="es", style="moses")}


class DictTagger:
    """A stand-in UPOS tagger: fixed tags by lower-cased word, ``X`` for anything else."""

    def tag(self, sentences):
        return [[TAGS.get(w.lower(), "X") for w in sentence] for sentence in sentences]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> ResourceBundle:
    root: Path = tmp_path_factory.mktemp("ibm1fam")
    (root / "s2t.txt").write_text(S2T, encoding="utf-8")
    (root / "t2s.txt").write_text(T2S, encoding="utf-8")
    members = {
        "ibm1.s2t": IBM1Table.load(root / "s2t.txt"),
        "ibm1.t2s": IBM1Table.load(root / "t2s.txt"),
        "tagger.src": DictTagger(),
        "tagger.tgt": DictTagger(),
    }
    return ResourceBundle.in_memory(members, TEXT)


def run(family: IBM1Features, bundle, src: list[str], mt: list[str]) -> dict[str, np.ndarray]:
    family.bind(bundle)
    values = family.extract(Pairs(ids=[str(i) for i in range(len(src))], src=src, mt=mt), bundle)
    assert values.shape == (len(src), len(family.specs()))
    return dict(zip([spec.name for spec in family.specs()], values.T, strict=True))


def test_every_feature_by_hand(bundle: ResourceBundle) -> None:
    f = run(IBM1Features(), bundle, ["The black cat sat"], ["El gato negro"])
    # P(mt | src): per MT word, the sum over NULL + 4 source words of t(w | s), times 5^-3.
    # el: 0.2 (NULL) + 0.5 (the) + 0.1 (cat); gato: 0.05 (black) + 0.8 (cat); negro: 0.7 (black).
    expected = (math.log(0.8) + math.log(0.85) + math.log(0.7) - 3 * math.log(5)) / 3
    assert f["mt_given_src_logprob_per_word"][0] == pytest.approx(expected, rel=1e-9)
    # P(src | mt): the: 0.3 + 0.6; black: 0.8; cat: 0.9 + 0.02; sat: nothing -> floor 1e-12; 4^-4.
    expected = (math.log(0.9) + math.log(0.8) + math.log(0.92) + math.log(1e-12) - 4 * math.log(4)) / 4
    assert f["src_given_mt_logprob_per_word"][0] == pytest.approx(expected, rel=1e-9)
    # Coverage at t > 0.1: el (the 0.5), gato (cat 0.8), negro (black 0.7) all covered; on the
    # source side the, black, cat are covered, sat is not.
    assert f["mt_coverage"][0] == 1.0
    assert f["src_coverage"][0] == pytest.approx(3 / 4)
    # Viterbi s2t: el->the, gato->cat, negro->black; t2s: the->el, black->negro, cat->gato,
    # sat->NULL. All three links are in both: 3 one-to-one links.
    assert f["o2o_count"][0] == 3
    assert f["o2o_per_src_word"][0] == pytest.approx(3 / 4)
    assert f["o2o_per_mt_word"][0] == 1.0
    # Tags agree on the/el (det) and cat/gato (noun), not on black/negro (adj vs the noun mis-tag).
    assert f["o2o_pos_agree_count"][0] == 2
    assert f["o2o_pos_agree_per_o2o"][0] == pytest.approx(2 / 3)
    assert f["o2o_pos_agree_per_src_word"][0] == pytest.approx(2 / 4)
    assert f["o2o_pos_agree_per_mt_word"][0] == pytest.approx(2 / 3)


def test_coverage_threshold_is_strict(bundle: ResourceBundle) -> None:
    # t(el | cat) = 0.1 is not above 0.1, and nothing else translates to el here.
    f = run(IBM1Features(pos=False), bundle, ["cat"], ["el"])
    assert f["mt_coverage"][0] == 0.0
    f = run(IBM1Features(pos=False, coverage_threshold=0.05), bundle, ["cat"], ["el"])
    assert f["mt_coverage"][0] == 1.0


def test_alignment_modes(bundle: ResourceBundle) -> None:
    # s2t: el->the, el->the, gato->cat; t2s: the->el (the copy at position 0, nearer the diagonal:
    # |0.25 - 1/6| < |0.25 - 1/2|), cat->gato. Intersection: (the, el#0), (cat, gato).
    src, mt = ["the cat"], ["el el gato"]
    counts = {
        mode: run(IBM1Features(pos=False, alignment=mode), bundle, src, mt)["o2o_count"][0]
        for mode in ("intersect", "s2t", "t2s")
    }
    assert counts == {"intersect": 2, "s2t": 1, "t2s": 2}
    assert one_to_one_links([0, 0, 1], [1, 2], "intersect") == [(0, 1), (1, 2)]
    assert one_to_one_links([0, 0, 1], [1, 2], "s2t") == [(1, 2)]
    assert one_to_one_links([-1, 0], [1, -1], "t2s") == [(0, 1)]


def test_viterbi_ties_follow_the_diagonal() -> None:
    # Two copies of one source word (equal columns) for two target words: each takes its own copy.
    probs = np.array([[0.5, 0.5, 0.1], [0.5, 0.5, 0.0]])
    assert viterbi_alignment(probs, np.array([0.0, 0.0])) == [0, 1]
    # NULL wins when no source word reaches t(tgt | NULL); an all-zero row is unaligned.
    assert viterbi_alignment(np.array([[0.2, 0.1], [0.0, 0.0]]), np.array([0.3, 0.0])) == [-1, -1]
    # Equal distance to the diagonal: the later index.
    assert viterbi_alignment(np.array([[0.4, 0.4]]), np.array([0.0])) == [1]
    assert viterbi_alignment(np.zeros((0, 3)), np.zeros(0)) == []
    assert viterbi_alignment(np.zeros((2, 0)), np.zeros(2)) == [-1, -1]


def test_other_tags_never_agree(bundle: ResourceBundle) -> None:
    f = run(IBM1Features(pos=True), bundle, ["it"], ["lo"])
    assert f["o2o_count"][0] == 1 and f["o2o_pos_agree_count"][0] == 0
    assert coarse_tag("PRON") == "other" and coarse_tag("PROPN") == coarse_tag("NOUN") == "noun"
    assert coarse_tag("AUX") == "verb"


def test_pos_setting_and_catalogue(bundle: ResourceBundle) -> None:
    assert len(IBM1Features().specs()) == 7  # unbound: no POS features
    assert len(IBM1Features().bind(bundle).specs()) == 11  # the bundle has taggers
    assert len(IBM1Features(pos=False).bind(bundle).specs()) == 7
    names = [spec.name for spec in IBM1Features.catalogue()]
    assert len(names) == 11 and names[-1] == "o2o_pos_agree_per_mt_word"
    with pytest.raises(QEInputError, match="alignment"):
        IBM1Features(alignment="grow-diag")
    with pytest.raises(QEInputError, match="coverage_threshold"):
        IBM1Features(coverage_threshold=1.5)


def test_no_nan_on_extreme_sentences(bundle: ResourceBundle) -> None:
    long_src = " ".join(["the black cat sat"] * 250)  # 1000 tokens
    long_mt = " ".join(["el gato negro", "zzz"] * 250)
    src = ["", "cat", long_src, "", "qqq"]
    mt = ["el gato", "", long_mt, "", "www"]
    f = run(IBM1Features(pos=True), bundle, src, mt)
    values = np.array(list(f.values()))
    assert np.isfinite(values).all()
    assert f["mt_given_src_logprob_per_word"][0] == pytest.approx(math.log(0.2) / 2 + math.log(1e-12) / 2)
    assert f["src_given_mt_logprob_per_word"][0] == 0.0  # empty source
    assert (values[:, 3] == 0).all()  # two empty sides: everything 0
    # Repeated words link copy by copy along the diagonal: el, gato, negro in each of 250 repeats.
    assert f["o2o_count"][2] == 750


def test_empty_batch(bundle: ResourceBundle) -> None:
    family = IBM1Features().bind(bundle)
    assert family.extract(Pairs(ids=[], src=[], mt=[]), bundle).shape == (0, 11)


@pytest.mark.parametrize("null", [True, False])
def test_log_prob_from_the_block_is_the_tables_sentence_log_prob(null: bool) -> None:
    """The features' P(mt | src) is computed from the lexicon block the family builds anyway; it is
    exactly ``IBM1Table.sentence_log_prob`` (unknown words, repeats, empty sides included)."""
    from qe.features.ibm1 import block_log_prob

    rng = np.random.default_rng(0)
    src_words, tgt_words = [f"s{i}" for i in range(15)], [f"t{i}" for i in range(15)]
    src = [[str(w) for w in rng.choice(src_words, rng.integers(1, 30))] for _ in range(60)]
    tgt = [[str(w) for w in rng.choice(tgt_words, rng.integers(1, 30))] for _ in range(60)]
    table = IBM1Table.train(src, tgt, 3, null=null)
    family = IBM1Features(pos=False)
    pairs = [
        *zip(src, tgt, strict=True),
        (["s1", "unknown"], ["t2", "nope", "t2"]),
        ([], ["t1"]),
        (["s1"], []),
    ]
    for s, t in pairs:
        block = family._block(table, "s2t", s, t)
        assert block.shape == (len(t), len(s) + null)
        assert block_log_prob(block, len(s), table.has_null) == table.sentence_log_prob(s, t)


def test_a_pair_too_long_to_align_is_refused_not_swapped_to_death(bundle: ResourceBundle) -> None:
    """20,000 tokens a side took 9 GB and 142 s (the alignment matrices grow with the product)."""
    too_long = r"ibm1: the MT of pair '0' has 2,001 tokens, and ibm1 reads at most 2,000"
    with pytest.raises(QEInputError, match=too_long):
        run(IBM1Features(pos=False), bundle, ["cat"], [" ".join(["gato"] * 2001)])
    f = run(IBM1Features(pos=False), bundle, [" ".join(["cat"] * 2000)], [" ".join(["gato"] * 2000)])
    assert f["mt_coverage"][0] == 1.0  # 2,000 x 2,000 is still aligned
