"""qe.text.fastmoses and the qe.text.processing styles built on it give sacremoses' tokens, sentence for
sentence.

The reference is sacremoses' own ``MosesTokenizer.tokenize(text, escape=False)``, run directly and
inside the same ``TextProcessor`` pipeline (every style, lower-cased and kept case). All WMT12
sentences, a sample of every other corpus and a list of adversarial sentences always run; the
slow test compares the tokenizer on every sentence of the MLQE-PE and en-es corpora.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from sacremoses import MosesTokenizer

from qe.text.fastmoses import FastMosesTokenizer
from qe.text.processing import TextConfig, TextProcessor

CASES = ("lower", "keep")
STYLES = ("moses", "moses-aggressive", "wmt12")


class _SacremosesTokenizer:
    """sacremoses' tokenizer behind the interface ``TextProcessor`` calls."""

    def __init__(self, lang: str) -> None:
        self._moses = MosesTokenizer(lang=lang)

    def tokenize(self, text: str, aggressive_dash_splits: bool = False) -> list[str]:
        return self._moses.tokenize(text, escape=False, aggressive_dash_splits=aggressive_dash_splits)


@functools.cache
def _processors(lang: str, style: str, case: str) -> tuple[TextProcessor, TextProcessor]:
    """(ours, the same pipeline with sacremoses' tokenizer), without memoisation between calls."""
    config = TextConfig(lang=lang, style=style, case=case)
    reference = TextProcessor(config)
    reference.__dict__["_tokenizer"] = _SacremosesTokenizer(lang)
    return TextProcessor(config), reference


def _mismatches(lang: str, sentences: list[str]) -> list[tuple[str, str, str]]:
    """(style, case, sentence) for every sentence whose tokens differ from sacremoses'."""
    bad = []
    for style in STYLES:
        for case in CASES:
            ours, reference = _processors(lang, style, case)
            for sentence in dict.fromkeys(sentences):
                if ours._tokenize_uncached(sentence) != reference._tokenize_uncached(sentence):
                    bad.append((style, case, sentence))
    return bad


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def _corpora(data_dir: Path) -> list[tuple[str, str, list[str]]]:
    """(name, language code, sentences) of every corpus side the project tokenizes."""
    wmt12 = data_dir / "wmt12-qe"
    out = [
        (
            "wmt12 source",
            "en",
            _lines(wmt12 / "training_set/source.eng") + _lines(wmt12 / "test_set/source.eng"),
        )
    ]
    for name in ("target_system.spa",):
        out.append(
            (f"wmt12 {name}", "es", _lines(wmt12 / "training_set" / name) + _lines(wmt12 / "test_set" / name))
        )
    for name in ("target_postedited.spa", "target_reference.spa"):
        sides = ("training_set_annotations", "test_set_annotations")
        out.append((f"wmt12 {name}", "es", [s for side in sides for s in _lines(wmt12 / side / name)]))
    for folder in sorted((data_dir / "mlqe-pe" / "post-editing").iterdir()):
        source, target = folder.name.split("-")[:2]
        for suffix, lang in ((".src", source), (".mt", target), (".pe", target)):
            for path in sorted(folder.glob(f"*{suffix}")):
                out.append((f"mlqe-pe {folder.name}/{path.name}", lang, _lines(path)))
    for corpus in ("newstest-en-es", "tatoeba-en-es", "flores101-en-es"):
        for path in sorted((data_dir / corpus).iterdir()):
            lang = "en" if path.suffix in (".en", ".eng") else "es"
            out.append((f"{corpus}/{path.name}", lang, _lines(path)))
    return out


ADVERSARIAL = [
    "",
    "   \t  ",
    "Mr. Smith paid 5,300 dollars, i.e. a lot... said Dr. Who.",
    "No. 5 and No. five; U.S.A. vs. U.K. etc.",
    "a,,b ,, c,,, 1,,2 3,",
    "1,000,000 and 1, 2, 3 and x,y and 4,a and b,5",
    "DOTMULTI and DOTDOTMULTI. and ....... end..",
    "It's rock 'n' roll, isn't it? 'Quoted.' He said: \"hi.'",
    "l'homme d'affaires aujourd'hui qu'il",
    "control\x01chars\x02here\x1b and\x7f del",
    "tabs\tand\u00a0nbsp\u2003em space\u3000ideographic",
    "hyphen-ated pre-Budget 3-1 -- dash — em dash –",
    "`backtick` ``double`` quotes' ''two''",
    "$5 €10 ¥3 ©2020 ™ § ¶ @user #tag 50% a&b a|b <tag> [x] {y}",
    "Ελληνικά κείμενα. Русский текст, да. 中文句子，还有标点。日本語の文です。한국어 문장.",
    "ने पाली  සිංහල  eesti keel õun, Română ţară.",
    "x" * 500 + ". " + "y, " * 200,
]


@pytest.mark.parametrize("lang", ["en", "es", "fr", "it", "de", "zh", "fi", "ne"])
def test_adversarial_sentences(lang):
    fast, moses = FastMosesTokenizer(lang), MosesTokenizer(lang=lang)
    for aggressive in (False, True):
        for sentence in ADVERSARIAL:
            text = sentence.strip()
            assert fast.tokenize(text, aggressive) == moses.tokenize(
                text, escape=False, aggressive_dash_splits=aggressive
            ), (aggressive, sentence)
    assert _mismatches(lang, ADVERSARIAL) == []


def test_a_sample_of_every_corpus(data_dir):
    corpora = _corpora(data_dir)
    assert len(corpora) >= 4 + 7 * 3 * 3 + 14 + 2 + 2
    for name, lang, sentences in corpora:
        assert sentences, name
        assert _mismatches(lang, sentences[::97]) == [], name


@pytest.mark.slow  # test_a_sample_of_every_corpus checks every 97th of them in the fast tier
def test_all_wmt12_sentences(data_dir):
    for name, lang, sentences in _corpora(data_dir)[:4]:
        assert len(sentences) == 2254, name
        assert _mismatches(lang, sentences) == [], name


@pytest.mark.slow
def test_every_sentence_of_every_corpus(data_dir):
    # The styles differ in what reaches the tokenizer (backticks padded for wmt12) and whether it
    # splits dashes; the rest of each style, and the casing, is the same code on the same tokens.
    texts: dict[str, set[str]] = {}
    for _, lang, sentences in _corpora(data_dir)[4:]:
        for sentence in sentences:
            texts.setdefault(lang, set()).update({sentence.strip(), sentence.replace("`", " ` ").strip()})
    for lang, unique in texts.items():
        fast, moses = FastMosesTokenizer(lang), MosesTokenizer(lang=lang)
        for aggressive in (False, True):
            bad = [
                text
                for text in unique
                if fast.tokenize(text, aggressive)
                != moses.tokenize(text, escape=False, aggressive_dash_splits=aggressive)
            ]
            assert bad == [], (lang, aggressive, bad[:3])


def test_pickled_tokenizer_still_tokenizes():
    import pickle

    fast = pickle.loads(pickle.dumps(FastMosesTokenizer("en")))
    assert fast.tokenize("Isn't it, Mr. Smith?") == ["Isn", "'t", "it", ",", "Mr.", "Smith", "?"]


def test_import_does_not_load_sacremoses_or_joblib():
    import subprocess
    import sys

    code = (
        "import sys, qe.text.processing; print(sorted({'sacremoses', 'joblib', 'tqdm'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------- the cached specification

_NO_SACREMOSES = """
import json, sys
from qe.text.fastmoses import FastMosesTokenizer
tokens = [FastMosesTokenizer(lang).tokenize(text) for lang, text in json.loads(sys.argv[1])]
print(json.dumps({"tokens": tokens, "sacremoses": "sacremoses" in sys.modules}))
"""


def _tokenize_in_a_new_process(cache: Path, cases: list[tuple[str, str]]) -> dict:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "QE_CACHE_DIR": str(cache), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run(
        [sys.executable, "-c", _NO_SACREMOSES, json.dumps(cases)], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_a_second_process_tokenizes_from_the_cache_without_importing_sacremoses(tmp_path):
    cases = [(lang, text.strip()) for lang in ("en", "es", "zh") for text in ADVERSARIAL]
    expected = [MosesTokenizer(lang=lang).tokenize(text, escape=False) for lang, text in cases]
    first = _tokenize_in_a_new_process(tmp_path, cases)
    assert first["sacremoses"] and first["tokens"] == expected  # built from sacremoses, then cached
    assert len(list((tmp_path / "moses").glob("*.json"))) == 3
    second = _tokenize_in_a_new_process(tmp_path, cases)
    assert not second["sacremoses"] and second["tokens"] == expected


@pytest.mark.parametrize(
    "damage",
    ["{not json", '{"version": 1, "lang": "en", "pad": "("}', '{"version": 1, "lang": "en"}', "[]"],
)
def test_a_damaged_cache_file_is_rebuilt_from_sacremoses(tmp_path, damage):
    cases = [("en", text.strip()) for text in ADVERSARIAL]
    expected = [MosesTokenizer(lang="en").tokenize(text, escape=False) for _, text in cases]
    _tokenize_in_a_new_process(tmp_path, cases)
    (cached,) = (tmp_path / "moses").glob("en-*.json")
    cached.write_text(damage)
    assert _tokenize_in_a_new_process(tmp_path, cases)["tokens"] == expected
    again = _tokenize_in_a_new_process(tmp_path, cases)  # the damaged file was replaced
    assert again["tokens"] == expected and not again["sacremoses"]


def test_an_unwritable_cache_only_costs_time(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    cases = [("es", "Hola, señor Pérez... ¿qué tal?")]
    expected = [MosesTokenizer(lang="es").tokenize(cases[0][1], escape=False)]
    assert _tokenize_in_a_new_process(blocked, cases)["tokens"] == expected


def test_compacted_character_classes_hold_exactly_sacremoses_characters():
    import re
    import sys

    from qe.text.fastmoses import _CLASSES, _class_body, _ranges

    every = "".join(map(chr, range(sys.maxunicode + 1)))
    for lang in ("en", "zh"):  # zh adds the Han characters to IsAlpha and IsAlnum
        moses = MosesTokenizer(lang=lang)
        for name in _CLASSES:
            body = getattr(moses, name)
            assert set(re.findall(f"[{_class_body(_ranges(body))}]", every)) == set(body), (lang, name)
