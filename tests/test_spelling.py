"""The spell-checker (qe.resources.spelling): per-token verdicts checked against the ``hunspell`` command."""

from __future__ import annotations

import pickle
import shutil
import subprocess

import pytest

from qe.infra.errors import QEInputError
from qe.resources.spelling import SpellChecker, find_dictionary, is_word, spelling_stats

HAS_HUNSPELL = shutil.which("hunspell") is not None
needs_hunspell = pytest.mark.skipif(not HAS_HUNSPELL, reason="hunspell is not installed (Debian: hunspell)")


def _has(lang: str) -> bool:
    try:
        find_dictionary(lang)
    except QEInputError:
        return False
    return True


needs_en_es = pytest.mark.skipif(
    not (HAS_HUNSPELL and _has("en") and _has("es")), reason="hunspell-en-us / hunspell-es are not installed"
)


def hunspell_unknown(words: list[str], dictionary: str) -> set[str]:
    """The words that ``hunspell -l`` lists as misspelled, given one word per line (the reference)."""
    aff, _ = find_dictionary(dictionary)
    done = subprocess.run(
        ["hunspell", "-l", "-i", "utf-8", "-d", str(aff.with_suffix(""))],
        input="".join(w + "\n" for w in words),
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


@needs_en_es
@pytest.mark.parametrize(
    ("lang", "words"),
    [
        ("en", ["hello", "helo", "Paris", "paris", "colour", "color", "don't", "recieve", "receive", "AIDS"]),
        ("es", ["canción", "cancion", "pingüino", "pinguino", "Madrid", "madrid", "gato", "gatto", "árbol"]),
    ],
)
def test_verdicts_match_hunspell_command(lang, words):
    unknown = hunspell_unknown(words, lang)
    assert unknown and len(unknown) < len(words)  # both kinds are in the list
    assert SpellChecker(lang).misspelled(words) == [w in unknown for w in words]


@needs_en_es
@pytest.mark.data
def test_all_wmt12_word_types_match_hunspell_command(data_dir):
    """Every alphabetic token type of the 2,254 WMT12 pairs (hunspell -l splits other tokens its own way)."""
    root = data_dir / "wmt12-qe"
    for name, lang in (("source.eng", "en"), ("target_system.spa", "es")):
        text = " ".join(
            (root / split / name).read_text(encoding="utf-8") for split in ("training_set", "test_set")
        )
        words = sorted({w.strip(".,;:!?\"'()") for w in text.split()} - {""})
        words = [w for w in words if w.isalpha()]
        assert len(words) > 5000
        unknown = hunspell_unknown(words, lang)
        flags = SpellChecker(lang).misspelled(words)
        assert [w for w, bad in zip(words, flags, strict=True) if bad] == [w for w in words if w in unknown]


@needs_hunspell
def test_own_dictionary_through_dicpath(tmp_path, monkeypatch):
    (tmp_path / "xx_TEST.aff").write_text("SET UTF-8\nSFX S Y 1\nSFX S 0 s .\n", encoding="utf-8")
    (tmp_path / "xx_TEST.dic").write_text("3\nkot/S\npies\nżółw\n", encoding="utf-8")
    monkeypatch.setenv("DICPATH", str(tmp_path))
    words = ["kot", "kots", "pies", "piess", "żółw", "zolw", "", "  "]
    expected = [False, False, False, True, False, True, False, False]  # the suffix rule allows "kots"
    assert SpellChecker("xx_TEST").misspelled(words) == expected
    if HAS_HUNSPELL:
        assert hunspell_unknown([w for w in words if w.strip()], "xx_TEST") == {"piess", "zolw"}


def test_missing_dictionary_names_the_debian_package(tmp_path):
    with pytest.raises(
        QEInputError, match=r"no Hunspell dictionary fr_FR .*install the Debian package hunspell-fr$"
    ):
        find_dictionary("fr", [tmp_path])
    with pytest.raises(QEInputError, match=r"no Hunspell dictionary en_US .*hunspell-en-us"):
        SpellChecker("en", [tmp_path])
    with pytest.raises(QEInputError, match=r"no Hunspell dictionary zz_ZZ .*apt-cache search hunspell-zz\)$"):
        SpellChecker("zz_ZZ", [tmp_path])
    for bad in ("", None, "../etc/passwd", "en us", 3):
        with pytest.raises(QEInputError, match="not a language code"):
            SpellChecker(bad)


@needs_en_es
def test_bad_tokens_are_refused_or_flagged():
    checker = SpellChecker("en")
    with pytest.raises(QEInputError, match="expected a list of tokens"):
        checker.misspelled("hello")
    with pytest.raises(QEInputError, match="a token must be text"):
        checker.misspelled(["hello", 3])
    assert checker.misspelled(["hel\x00lo", "x" * 5000, "hello"]) == [True, True, False]
    with pytest.raises(QEInputError, match="expected a list of MT tokens"):
        spelling_stats(["a"], "a b", "en", "es")
    with pytest.raises(QEInputError, match="a source token must be text"):
        spelling_stats([None], ["a"], "en", "es")


def test_is_word_skips_numbers_punctuation_and_symbols():
    words = ["house", "Obama", "don't", "e-mail", "niño", "Ζεύς"]
    others = ["3", "3.14", "2010", "G8", "1st", ",", "...", "--", "%", "€", "😀", ""]
    assert [is_word(w) for w in words] == [True] * len(words)
    assert [is_word(w) for w in others] == [False] * len(others)


@needs_en_es
def test_spelling_stats_by_hand():
    src = ["Obama", "visits", "Prauge", "on", "12", "May", "."]
    mt = ["Obama", "visita", "Prauge", "el", "12", "de", "mayo", "xyzqw", "."]
    # source words: visits, on, May (Obama and Prauge also in the MT; 12 and "." are not words) -> none wrong;
    # MT words: visita, el, de, mayo, xyzqw -> xyzqw is wrong.
    stats = spelling_stats(src, mt, "en", "es")
    assert stats == {
        "src_words": 3,
        "src_misspelled": 0,
        "src_misspelled_share": 0.0,
        "mt_words": 5,
        "mt_misspelled": 1,
        "mt_misspelled_share": 0.2,
    }
    # Counting shared words too: Prauge is wrong on both sides, and es_ES does not know Obama (en_US does).
    kept = spelling_stats(src, mt, "en", "es", skip_shared=False)
    assert [kept[k] for k in ("src_words", "src_misspelled", "mt_words", "mt_misspelled")] == [5, 1, 7, 3]
    empty = spelling_stats([], [".", "3"], SpellChecker("en"), SpellChecker("es"))
    assert empty["src_words"] == empty["mt_words"] == 0 and empty["mt_misspelled_share"] == 0.0


@needs_en_es
def test_checker_survives_pickling_for_worker_processes():
    checker = SpellChecker("es")
    checker.misspelled(["gato"])
    copy = pickle.loads(pickle.dumps(checker))
    assert copy.misspelled(["gato", "gatto"]) == [False, True]


@needs_en_es
def test_a_forked_worker_checks_with_the_dictionary_its_parent_loaded():
    import multiprocessing

    checker = SpellChecker("es")
    checker.misspelled(["gato"])  # loads the dictionary here
    words = ["canción", "cancion", "pingüino", "pinguino", "perro", "perrro"]
    expected = [w in hunspell_unknown(words, "es") for w in words]
    _FORKED[:] = [checker]  # handed to the child by the fork itself, not pickled
    with multiprocessing.get_context("fork").Pool(1) as pool:
        verdicts, handle = pool.apply(_check_in_child, (words,))
    assert verdicts == expected and handle == checker._handle  # the inherited copy, not a reload


_FORKED: list[SpellChecker] = []


def _check_in_child(words: list[str]) -> tuple[list[bool], int | None]:
    return _FORKED[0].misspelled(words), _FORKED[0]._handle


def test_a_language_code_finds_its_dictionary_whatever_its_case_or_region(tmp_path):
    """'ro' looked for ro.aff (Debian installs ro_RO) and 'EN' for EN.aff, advising a package install."""
    for name in ("ro_RO", "ro_MD", "en_US", "es_MX"):
        (tmp_path / f"{name}.aff").write_text("SET UTF-8\n")
        (tmp_path / f"{name}.dic").write_text("1\nx\n")
    assert find_dictionary("ro", [tmp_path])[0].name == "ro_RO.aff"  # the language's own region first
    assert find_dictionary("EN", [tmp_path])[0].name == "en_US.aff"
    assert find_dictionary("es-mx", [tmp_path])[0].name == "es_MX.aff"
    assert find_dictionary("ro_MD", [tmp_path])[0].name == "ro_MD.aff"
