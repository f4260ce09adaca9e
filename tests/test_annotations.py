"""Shared batch annotations: families extracted together tokenize and tag each sentence once, and get
the same values as when each runs alone (in one call, through the feature cache, and with spaCy)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from qe.bundle import ResourceBundle
from qe.features.base import Pairs
from qe.features.cache import extract_cached
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from qe.resources import pos
from qe.text.processing import TextConfig, TextProcessor
from qe.words.ibm1 import IBM1Table

pytest.importorskip("kenlm", reason="kenlm Python module not installed: run scripts/install_kenlm.sh")

TEXT = {"src": TextConfig(lang="en", style="moses"), "tgt": TextConfig(lang="es", style="moses")}
TAGS = {"the": "DET", "a": "DET", "cat": "NOUN", "dog": "NOUN", "sat": "VERB", "on": "ADP", "mat": "NOUN"}
TAGS |= {"el": "DET", "un": "DET", "gato": "NOUN", "perro": "NOUN", "se": "PRON", "sentó": "VERB"}
SRC = ["The cat sat on the mat .", "A dog sat", "the cat", "Dogs sat on a cat ."]
MT = ["El gato se sentó .", "Un perro se sentó", "el gato", "Los perros se sentaron en un gato ."]


class CountingTagger:
    """A stand-in UPOS tagger (tags by lower-cased word, X otherwise) that counts each sentence it tags."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, ...]] = Counter()

    def tag(self, sentences):
        self.seen.update(tuple(s) for s in sentences)
        return [[TAGS.get(w.lower(), "X") for w in s] for s in sentences]


@pytest.fixture
def bundle(tmp_path: Path) -> ResourceBundle:
    """Word and POS LMs, IBM1 tables and a counting tagger per side, trained on a few sentences."""
    from qe.resources.lm import LanguageModel, find_kenlm_binary, train_lm

    try:
        find_kenlm_binary("lmplz")
    except QEInputError as exc:
        pytest.skip(f"KenLM tools not built ({exc})")
    src = [s.lower().split() for s in SRC]
    tgt = [t.lower().split() for t in MT]
    members = {
        "lm.src": LanguageModel(train_lm([" ".join(s) for s in src], tmp_path / "s.arpa", 3, False, "64M")),
        "lm.tgt": LanguageModel(train_lm([" ".join(t) for t in tgt], tmp_path / "t.arpa", 3, False, "64M")),
        "ibm1.s2t": IBM1Table.train(src, tgt, 3),
        "ibm1.t2s": IBM1Table.train(tgt, src, 3),
        "tagger.src": CountingTagger(),
        "tagger.tgt": CountingTagger(),
    }
    for side, sentences in (("src", SRC), ("tgt", MT)):
        path = tmp_path / f"pos.{side}.arpa"
        pos.build_pos_lm(
            sentences, "en", path, order=3, text=TEXT[side], tagger=CountingTagger(), binary=False
        )
        members[f"poslm.{side}"] = LanguageModel(path)
    return ResourceBundle.in_memory(members, TEXT)


def _tagged(bundle: ResourceBundle) -> dict[str, Counter]:
    return {side: bundle.get(f"tagger.{side}").seen for side in ("src", "tgt")}


def test_lm_and_ibm1_together_tag_each_sentence_once(bundle: ResourceBundle) -> None:
    families = [f.bind(bundle) for f in make_families(["lm", "ibm1"])]
    assert all(f.use_pos for f in families)
    before = pos.tagged_sentences()
    together = extract_features(
        families, Pairs.of(SRC, MT, ids=[str(i) for i in range(4)]), resources=bundle, progress=False
    )
    assert pos.tagged_sentences() - before == 2 * len(SRC)  # one request per sentence and side
    for side, seen in _tagged(bundle).items():
        assert sorted(seen.values()) == [1] * len(SRC), side  # each distinct sentence tagged once
    alone = [
        extract_features(
            [f], Pairs.of(SRC, MT, ids=[str(i) for i in range(4)]), resources=bundle, progress=False
        )
        for f in make_families(["lm", "ibm1"])
    ]
    np.testing.assert_array_equal(together.to_numpy(), np.hstack([t.to_numpy() for t in alone]))
    assert list(together.columns) == [c for t in alone for c in t.columns]


def test_the_feature_cache_extracts_missing_families_together(bundle: ResourceBundle, tmp_path: Path) -> None:
    families = make_families(["lm", "ibm1"])
    ids = [str(i) for i in range(4)]
    table, seconds = extract_cached(families, Pairs.of(SRC, MT, ids=ids), bundle, tmp_path, progress=False)
    assert all(sorted(seen.values()) == [1] * len(SRC) for seen in _tagged(bundle).values())
    assert set(seconds) == {"lm", "ibm1"} and all(s >= 0 for s in seconds.values())
    again, _ = extract_cached(
        make_families(["ibm1", "lm"]), Pairs.of(SRC, MT, ids=ids), bundle, tmp_path, progress=False
    )
    assert again.attrs["cache_hits"] == ["ibm1", "lm"]
    assert all(sorted(seen.values()) == [1] * len(SRC) for seen in _tagged(bundle).values())  # no new tagging
    np.testing.assert_array_equal(again[table.columns].to_numpy(), table.to_numpy())


def test_annotations_are_computed_once_per_tokenizer_settings() -> None:
    batch = Pairs(ids=["0", "1"], src=["The cat's mat.", "A dog"], mt=["El gato.", "Un perro"])
    moses = TextProcessor(TextConfig(lang="en", style="moses", case="keep"))
    first = batch.annotations.tokens("src", moses)
    assert first == [["The", "cat", "'s", "mat", "."], ["A", "dog"]]
    again = batch.annotations.tokens("src", TextProcessor(TextConfig(lang="en", style="moses", case="keep")))
    assert again is first
    lowered = batch.annotations.tokens("src", TextProcessor(TextConfig(lang="en", style="moses")))
    assert lowered == [["the", "cat", "'s", "mat", "."], ["a", "dog"]]
    assert batch.annotations.tokens("tgt", moses) == [["El", "gato", "."], ["Un", "perro"]]
    assert batch.annotations.requested == {"tokens"}
    with pytest.raises(ValueError, match="unknown side 'mt'"):
        batch.annotations.tokens("mt", moses)


@pytest.mark.skipif(
    not (pos.tagger_available("en") and pos.tagger_available("es")), reason="spaCy pipelines not installed"
)
@pytest.mark.filterwarnings("ignore:linguistic. no Spanish vocabulary")
@pytest.mark.slow  # spaCy on both sides, twice; lm and ibm1 are checked together in the fast tier
def test_spacy_values_are_the_same_together_and_alone(tmp_path: Path) -> None:
    """On WMT12 sentences with spaCy's taggers: lm, ibm1 and linguistic together give each family's
    values alone, and lm + ibm1 tag each sentence once."""
    from qe.data import load_registered
    from qe.resources.lm import LanguageModel, find_kenlm_binary, train_lm

    try:
        find_kenlm_binary("lmplz")
    except QEInputError as exc:
        pytest.skip(f"KenLM tools not built ({exc})")
    data = load_registered("wmt12-en-es", "test")
    src, mt = list(data.src[:60]), list(data.mt[:60])
    text = {"src": TextConfig(lang="en"), "tgt": TextConfig(lang="es")}
    tokens = {
        side: TextProcessor(text[side]).tokenize_many(lines) for side, lines in (("src", src), ("tgt", mt))
    }
    members = {"ibm1.s2t": IBM1Table.train(tokens["src"], tokens["tgt"], 3)}
    members["ibm1.t2s"] = IBM1Table.train(tokens["tgt"], tokens["src"], 3)
    for side, lines in (("src", src), ("tgt", mt)):
        arpa = train_lm([" ".join(t) for t in tokens[side]], tmp_path / f"{side}.arpa", 3, False, "64M")
        members[f"lm.{side}"] = LanguageModel(arpa)
        pos.build_pos_lm(
            lines, text[side].lang, tmp_path / f"pos{side}.arpa", 3, text=text[side], binary=False
        )
        members[f"poslm.{side}"] = LanguageModel(tmp_path / f"pos{side}.arpa")
    bundle = ResourceBundle.in_memory(members, text)
    ids = [str(i) for i in range(len(src))]
    names = ["lm", "ibm1", "linguistic"]
    settings = {"linguistic": {"n_process": 1}}
    before = pos.tagged_sentences()
    together = extract_features(
        make_families(names, settings),
        Pairs.of(src, mt, ids=ids),
        resources=bundle,
        batch_size=25,
        progress=False,
    )
    assert pos.tagged_sentences() - before == 2 * len(src)
    assert len(together.columns) == 36 + 11 + 44
    for name in names:
        alone = extract_features(
            make_families([name], settings),
            Pairs.of(src, mt, ids=ids),
            resources=bundle,
            batch_size=25,
            progress=False,
        )
        np.testing.assert_array_equal(together[alone.columns].to_numpy(), alone.to_numpy(), err_msg=name)
