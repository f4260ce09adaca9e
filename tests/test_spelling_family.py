"""The ``spelling`` family: counts checked against what ``hunspell -l`` says about the same words."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from qe.bundle import ResourceBundle
from qe.features.base import Pairs
from qe.features.spelling import SpellingFamily
from qe.infra.errors import QEInputError

pytestmark = pytest.mark.skipif(shutil.which("hunspell") is None, reason="Hunspell is not installed")


def hunspell_unknown(text: str, dictionary: str) -> set[str]:
    """The words ``hunspell -l`` lists as unknown: the independent reference."""
    out = subprocess.run(["hunspell", "-d", dictionary, "-l"], input=text, capture_output=True, text=True)
    return set(out.stdout.split())


def test_counts_follow_hunspell_and_keep_copied_words_apart() -> None:
    src = "Obama saw the housecat in Smithsonian ."
    mt = "Obama vio el housecat en la alfonbra de Smithsonian 2012 ."
    unknown_es = hunspell_unknown(mt, "es_ES")
    assert {"alfonbra", "housecat", "Obama", "Smithsonian"} <= unknown_es  # the reference's verdict
    assert hunspell_unknown(src, "en_US") == {"housecat"}  # also in the MT: counted as copied, not here
    family = SpellingFamily(src_lang="en", tgt_lang="es").bind(None)
    row = dict(
        zip([s.name for s in family.specs()], family.extract(Pairs(["0"], [src], [mt]))[0], strict=True)
    )
    mt_words = 9  # Obama vio el housecat en la alfonbra de Smithsonian (2012 and "." are not words)
    # alfonbra is the one unknown word of the six that are not also in the source
    assert row["mt_misspelled"] == 1 and row["mt_misspelled_share"] == pytest.approx(1 / 6)
    # Obama, housecat, Smithsonian: copied from the source and unknown to the Spanish dictionary
    assert row["mt_unknown_copied"] == 3 and row["mt_unknown_copied_share"] == pytest.approx(3 / mt_words)
    assert row["src_misspelled"] == 0 and row["src_misspelled_share"] == 0


def test_languages_come_from_the_bundle_and_are_checked() -> None:
    bundle = ResourceBundle.in_memory({}, {})
    bundle.manifest["languages"] = {"src": "en", "tgt": "es"}
    family = SpellingFamily().bind(bundle)
    assert "dict.tgt=es_ES.dic" in family.signature()
    values = family.extract(Pairs(["0", "1"], ["", "A dog ."], ["", "Un perro ."]), bundle)
    np.testing.assert_array_equal(values, np.zeros((2, 6)))
    with pytest.raises(QEInputError, match="no source language"):
        SpellingFamily().bind(None)
    with pytest.raises(QEInputError, match="xx"):
        SpellingFamily(src_lang="xx", tgt_lang="es").bind(None)
