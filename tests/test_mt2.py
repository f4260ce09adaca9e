"""The second MT system (qe.resources.mt2): Apertium through one null-flush pipe, checked against the CLI.

The reference for every translation is the ``apertium`` command itself, run here in batch mode on
a file; the (de)formatting is checked against ``apertium-destxt`` / ``apertium-retxt``. Failure
handling runs through small fake Apertium pairs (a mode file naming a script) in a temporary
data directory.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qe.infra.errors import QEInputError
from qe.resources import mt2
from qe.resources.mt2 import Apertium, deformat, installed_pairs, reformat, reverse_pair

HAS_APERTIUM = shutil.which("apertium-wblank-mode") is not None and shutil.which("apertium") is not None
HAS_ENG_SPA = HAS_APERTIUM and "eng-spa" in installed_pairs()
needs_apertium = pytest.mark.skipif(not HAS_APERTIUM, reason="Apertium is not installed (Debian: apertium)")
needs_eng_spa = pytest.mark.skipif(not HAS_ENG_SPA, reason="Apertium eng-spa is not installed")

ODD = [
    "The cat\tsat on the mat.",
    "Use * and # marks @home.",
    "^caret$ [bracket] back\\slash a/b <tag> x>y",
    '<b>Bold</b> text and <a href="x">link</a>.',
    "I love 😀 pizza 🍕!",
    "",
    "   ",
    "tab\tat\tend\t",
    "~tilde~ and {braces}",
    "Price: $5 ^2 [note] \\n literal",
    "[@/nonexistent/qe-file] is no file",
    ".[]",
    "\\",
    "[\\@",
    "@",
    "Two  spaces   three.",
    "control\x01\x07chars",
]


def apertium_cli(text: str, pair: str = "eng-spa") -> str:
    """``apertium -u PAIR < file`` on ``text`` (the independent reference)."""
    done = subprocess.run(["apertium", "-u", pair], input=text.encode(), capture_output=True, check=True)
    return done.stdout.decode("utf-8")


def cli_one(sentence: str) -> str:
    """The CLI translation of a file holding just this sentence (its line, without the newline)."""
    return apertium_cli(sentence + "\n").removesuffix("\n")


@pytest.fixture(autouse=True)
def _fresh_pipelines():
    mt2.close_all()
    yield
    mt2.close_all()


# ----------------------------------------------------------------------------- (de)formatting


def _destxt(text: str) -> str:
    return subprocess.run(
        ["apertium-destxt"], input=text.encode(), capture_output=True, check=True
    ).stdout.decode()


def _retxt(stream: str) -> str:
    return subprocess.run(
        ["apertium-retxt"], input=stream.encode(), capture_output=True, check=True
    ).stdout.decode()


PIECES = [*"ab Z\t~[]\\/@<>^${}*#.!'\"é😀", "  ", ".[]", "\\@"]
SPECIAL = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


@needs_apertium
@settings(max_examples=120, deadline=None)
@given(SPECIAL)
def test_deformat_is_apertium_destxt(text):
    assert deformat(text) == _destxt(text)


@needs_apertium
def test_deformat_turns_line_breaks_into_spaces():
    for text, flat in [
        ("a\nb", "a b"),
        ("a\r\nb.", "a  b."),
        ("x\u2028y\x0bz", "x y z"),
        ("nul\x00here", "nulhere"),
    ]:
        assert deformat(text) == _destxt(flat)


@needs_apertium
@settings(max_examples=120, deadline=None)
@given(SPECIAL)
def test_reformat_is_apertium_retxt(text):
    stream = _destxt(text) + text
    assume("[@" not in stream)  # "[@file]" makes apertium-retxt print (and delete) that file
    assert reformat(stream) == _retxt(stream)


# ----------------------------------------------------------------------------- real translations


@needs_eng_spa
def test_installed_pairs_are_what_apertium_lists():
    listed = subprocess.run(["apertium", "-l"], capture_output=True, text=True, check=True).stdout.split()
    assert installed_pairs() == sorted(listed)
    assert reverse_pair("eng-spa") == "spa-eng"
    assert reverse_pair("spa-eng_US") == "eng-spa"
    assert Apertium("eng-spa", use_cache=False).reverse().pair == "spa-eng"


@needs_eng_spa
@pytest.mark.slow
def test_odd_sentences_translate_like_the_cli_one_line_each():
    words = ["The", "minister", "said", "that", "the", "budget", "would", "rise", "next", "year"]
    rng = random.Random(5)
    long_line = " ".join(rng.choice(words) for _ in range(5000))
    sentences = [*ODD, long_line, "The cat is on the table."]
    out = Apertium("eng-spa", use_cache=False).translate(sentences)
    assert len(out) == len(sentences)
    assert not any("\n" in line or "\x00" in line for line in out)
    for sentence, line in zip(sentences, out, strict=True):
        assert line == cli_one(sentence), sentence[:60]
    assert len(out[-2].split()) > 4000


@needs_eng_spa
def test_line_breaks_inside_a_sentence_do_not_shift_lines():
    sentences = ["The first line\nand the second line.", "A\r\nB", "The cat is on the table."]
    out = Apertium("eng-spa", use_cache=False).translate(sentences)
    assert out == [cli_one("The first line and the second line."), cli_one("A  B"), cli_one(sentences[2])]


def _group_members(pgid: int) -> dict[int, str]:
    """Process id -> command name of every live (not zombie) process in a process group (from /proc)."""
    members = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, fields = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            members[int(stat.parent.name)] = name
    return members


def _pipeline_members(pipeline) -> dict[int, str]:
    """Every live process of a pipeline's process groups."""
    return {pid: name for group in pipeline.groups for pid, name in _group_members(group.pid).items()}


@needs_eng_spa
def test_a_crashed_stage_is_replaced_by_a_new_pipeline():
    engine = Apertium("eng-spa", use_cache=False)
    first = ["The cat is on the table.", "Strange lights were seen over Norway."]
    assert engine.translate(first[:1]) == [cli_one(first[0])]
    (pipeline,) = mt2._PIPELINES.values()
    stages = _pipeline_members(pipeline)
    transfer = [pid for pid, name in stages.items() if name == "apertium-transf"]  # /proc keeps 15 characters
    assert len(transfer) == 2  # the genitive and the main transfer stage
    os.kill(transfer[1], signal.SIGSEGV)
    assert engine.translate(first[1:]) == [cli_one(first[1])]
    (restarted,) = mt2._PIPELINES.values()
    assert restarted is not pipeline
    for _ in range(100):  # SIGKILL is delivered asynchronously
        if not _pipeline_members(pipeline):
            break
        time.sleep(0.05)
    assert not _pipeline_members(pipeline)  # every stage of the crashed pipeline is gone


# A sentence with an ambiguity class the eng-spa tagger's model does not know ("A lot of": adjective or
# determiner) makes Apertium's HMM tagger replace its class for unknown words for good; the next
# sentence then came out differently ("dijo", where the sentence alone gives "dicho").
NEW_CLASS = "“A lot of people died,” Giffords told Sawyer."
AFTER = "Others would wonder whether there was an “angry, violent veteran beneath the surface,” said Cancian."


@needs_eng_spa
def test_a_sentence_is_translated_as_if_it_came_first():
    alone = cli_one(AFTER)
    assert apertium_cli(f"{NEW_CLASS}\n\n{AFTER}\n").split("\n")[2] != alone  # the CLI carries it over
    engine = Apertium("eng-spa", use_cache=False)
    assert engine.translate([NEW_CLASS, AFTER, NEW_CLASS, AFTER]) == [cli_one(NEW_CLASS), alone] * 2
    (pipeline,) = mt2._PIPELINES.values()
    # (each distinct sentence is sent once per call) a new tagger after the chunk it spoke in, and
    # after the sentence that changed it when each sentence of the chunk was sent again alone
    assert pipeline.tagger_restarts == 2
    assert engine.translate([AFTER]) == [alone]


def test_the_tagger_is_cut_out_of_a_mode_script():
    script = "lt-proc -z 'a.bin' | apertium-tagger -z -g $2 'p.prob' | apertium-pretransfer -z | lt-proc 'g'"
    assert mt2.split_at_tagger(script) == (
        "lt-proc -z 'a.bin'",
        "apertium-tagger -z -g $2 'p.prob'",
        "apertium-pretransfer -z | lt-proc 'g'",
    )
    for whole in ("lt-proc -z 'a.bin' | lt-proc -z $1 'g.bin'", "apertium-tagger -g $2 'p' | lt-proc -z 'g'"):
        assert mt2.split_at_tagger(whole) == (whole, "", "")


@needs_eng_spa
@pytest.mark.data
@pytest.mark.slow
def test_pipe_equals_the_cli_on_each_sentence_alone_in_any_order(data_dir):
    """200 WMT12 test sources, shuffled: each translation is what ``apertium -u`` gives for a file
    holding just that sentence, whatever came before it in the pipe."""
    from concurrent.futures import ThreadPoolExecutor

    sources = (data_dir / "wmt12-qe" / "test_set" / "source.eng").read_text(encoding="utf-8").splitlines()
    sources = random.Random(3).sample(sources[:200], 200)
    with ThreadPoolExecutor(2) as pool:
        alone = list(pool.map(cli_one, sources))
    engine = Apertium("eng-spa", use_cache=False)
    assert engine.translate(sources) == alone
    (pipeline,) = mt2._PIPELINES.values()
    assert pipeline.tagger_restarts > 0


@needs_eng_spa
def test_bad_input_is_refused():
    engine = Apertium("eng-spa", use_cache=False)
    with pytest.raises(QEInputError, match="expected a list of sentences"):
        engine.translate("The cat.")
    with pytest.raises(QEInputError, match="sentence 2 is a int"):
        engine.translate(["The cat.", 3])
    with pytest.raises(QEInputError, match="sentence 1 is not valid Unicode"):
        engine.translate(["bad \ud800 surrogate"])
    assert engine.translate([]) == []
    for timeout in (0, -1, "10", None):
        with pytest.raises(QEInputError, match="timeout must be a positive number"):
            Apertium("eng-spa", timeout=timeout)


def test_missing_pairs_name_the_debian_package(tmp_path):
    (tmp_path / "modes").mkdir()
    if not HAS_APERTIUM:
        pytest.skip("Apertium is not installed")
    with pytest.raises(
        QEInputError, match=r"'eng-cat' is not installed .*install the Debian package apertium-eng-cat"
    ):
        Apertium("eng-cat", datadir=tmp_path)
    with pytest.raises(QEInputError, match=r"'cat-eng' .*apertium-eng-cat"):
        Apertium("cat-eng", datadir=tmp_path)
    with pytest.raises(QEInputError, match=r"'eng-deu' is not installed .*no Debian package provides it"):
        Apertium("eng-deu", datadir=tmp_path)
    for bad in ("english", "", None, "eng spa", "../x-y"):
        with pytest.raises(QEInputError, match="not an Apertium pair name"):
            Apertium(bad)


def test_missing_engine_names_the_debian_packages(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(
        QEInputError,
        match="Apertium is not installed: install the Debian packages apertium, apertium-eng-spa",
    ):
        Apertium("eng-spa")


# ----------------------------------------------------------------------------- fake pairs: failures and cache

ENGINE = """#!{python}
# A fake Apertium stage: NUL-separated records in, records out, per the behaviour named in argv.
import os, sys
behaviour, state = sys.argv[-1], os.environ["QE_FAKE_ENGINE_STATE"]
if behaviour == "crash-once" and not os.path.exists(state):
    open(state, "w").close()
    behaviour = "crash"
buffer = b""
while True:
    data = os.read(0, 65536)
    if not data:
        break
    *records, buffer = (buffer + data).split(b"\\0")
    for record in records:
        if behaviour == "log":
            with open(state, "ab") as log:
                log.write(record + b"\\n")
        if behaviour == "crash":
            os.write(1, record + b"\\0")
            sys.stderr.write("fake engine: segmentation fault\\n")
            sys.exit(3)
        if behaviour == "stall":
            continue
        os.write(1, record + (b"\\0\\0" if behaviour == "double" else b"\\0"))
"""


@pytest.fixture(autouse=True)
def _engine_state(tmp_path, monkeypatch):
    monkeypatch.setenv("QE_FAKE_ENGINE_STATE", str(tmp_path / "state"))


def fake_pair(root: Path, behaviour: str, pair: str = "xxx-yyy") -> Path:
    """A data directory whose mode ``pair`` runs the fake engine with ``behaviour``; returns it."""
    engine = root / "engine.py"
    engine.write_text(ENGINE.replace("{python}", sys.executable))
    engine.chmod(0o755)
    (root / "modes").mkdir(parents=True, exist_ok=True)
    (root / "modes" / f"{pair}.mode").write_text(f"{engine} {behaviour}\n")
    return root


@needs_apertium
def test_identity_pair_gives_back_each_sentence_on_its_own_line(tmp_path):
    sentences = [*ODD, "a\nb"]
    out = Apertium("xxx-yyy", datadir=fake_pair(tmp_path, "identity"), use_cache=False).translate(sentences)
    assert out == [*ODD, "a b"]
    again = Apertium("xxx-yyy", datadir=tmp_path, use_cache=False)
    assert again.translate(s.upper() for s in ("one", "two")) == ["ONE", "TWO"]  # any iterable


@needs_apertium
def test_crash_mid_stream_is_restarted_once(tmp_path, caplog):
    engine = Apertium("xxx-yyy", datadir=fake_pair(tmp_path, "crash-once"), cache_dir=tmp_path / "cache")
    with caplog.at_level(logging.WARNING, logger="qe.resources.mt2"):
        assert engine.translate(["one", "two", "three"]) == ["one", "two", "three"]
    assert "failed at sentence 2 of 3" in caplog.text
    assert "segmentation fault" in caplog.text


@needs_apertium
@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("crash", r"failed twice, at sentence 2 of 3: exited with code 3: fake engine: segmentation fault"),
        ("stall", r"failed twice, at sentence 1 of 3: no output for 0.5 s"),
        ("double", r"failed twice, .*(more outputs than inputs|out of step)"),
    ],
)
def test_second_failure_is_one_error_and_caches_nothing(tmp_path, behaviour, message):
    cache = tmp_path / "cache"
    engine = Apertium("xxx-yyy", datadir=fake_pair(tmp_path, behaviour), cache_dir=cache, timeout=0.5)
    with pytest.raises(QEInputError, match=message):
        engine.translate(["one", "two", "three"])
    assert not cache.exists() or not any(cache.rglob("*.json"))
    assert not mt2._PIPELINES  # the failed pipeline is gone


@needs_apertium
def test_a_pipeline_killed_between_calls_is_restarted(tmp_path):
    engine = Apertium("xxx-yyy", datadir=fake_pair(tmp_path, "identity"), use_cache=False)
    assert engine.translate(["one"]) == ["one"]
    (pipeline,) = mt2._PIPELINES.values()
    (group,) = pipeline.groups  # a mode without a tagger runs as one process group
    os.killpg(group.pid, signal.SIGKILL)
    group.wait()
    assert engine.translate(["two"]) == ["two"]


@needs_apertium
def test_cache_is_reused_and_a_corrupt_file_is_rebuilt(tmp_path, caplog):
    datadir, cache = fake_pair(tmp_path, "log"), tmp_path / "cache"
    log_file = tmp_path / "state"
    assert Apertium("xxx-yyy", datadir=datadir, cache_dir=cache).translate(["one", "two"]) == ["one", "two"]
    seen = log_file.read_text().splitlines()
    assert seen == [deformat("one"), deformat("two"), deformat(mt2.SENTINEL)]

    mt2.close_all()
    again = Apertium("xxx-yyy", datadir=datadir, cache_dir=cache)
    assert again.translate(["two", "one", "two"]) == ["two", "one", "two"]
    assert log_file.read_text().splitlines() == seen  # nothing was sent to the engine
    assert not mt2._PIPELINES

    (stored,) = again.cache_path.glob("*.json")
    stored.write_text('{"version": 1, "pair": "xxx-yyy", "translations": {"k": ')
    with caplog.at_level(logging.WARNING, logger="qe.resources.mt2"):
        rebuilt = Apertium("xxx-yyy", datadir=datadir, cache_dir=cache).translate(["one", "three"])
    assert rebuilt == ["one", "three"]
    assert "ignoring corrupt Apertium translation cache" in caplog.text
    assert log_file.read_text().splitlines()[len(seen) :] == [
        deformat("one"),
        deformat("three"),
        deformat(mt2.SENTINEL),
    ]
    (written,) = again.cache_path.glob("*.json")
    assert json.loads(written.read_text())["pair"] == "xxx-yyy"


@needs_apertium
def test_no_cache_writes_nothing_and_reverse_of_a_lone_pair_is_refused(tmp_path):
    engine = Apertium(
        "xxx-yyy", datadir=fake_pair(tmp_path, "identity"), cache_dir=tmp_path / "c", use_cache=False
    )
    assert engine.translate(["one"]) == ["one"]
    assert not (tmp_path / "c").exists()
    assert reverse_pair("xxx-yyy", tmp_path) is None
    with pytest.raises(QEInputError, match="'yyy-xxx' is not installed"):
        engine.reverse()


@needs_apertium
def test_an_unwritable_cache_only_warns(tmp_path, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    engine = Apertium("xxx-yyy", datadir=fake_pair(tmp_path, "identity"), cache_dir=blocker)
    with caplog.at_level(logging.WARNING, logger="qe.resources.mt2"):
        assert engine.translate(["one", "two"]) == ["one", "two"]
    assert "could not write the Apertium translation cache" in caplog.text
    assert blocker.read_text() == "a file where the cache folder should be"


def test_a_pair_translating_the_wrong_way_is_refused_where_it_is_named(tmp_path):
    """spa-eng for English-Spanish data built and ran, giving pseudo-references in English (TER ~100)."""
    from qe.bundle import read_bundle_config
    from qe.resources.mt2 import check_direction, pair_languages

    assert pair_languages("eng-spa") == ("en", "es") and pair_languages("spa-eng_US") == ("es", "en")
    assert pair_languages("eo-es") == ("eo", "es")
    check_direction("eng-spa", {"src": "en", "tgt": "es"})
    check_direction("spa-eng", None)  # nothing declared: nothing to check
    config = tmp_path / "b.toml"
    config.write_text('[languages]\nsrc = "en"\ntgt = "es"\n[mt2]\nengine = "apertium"\npair = "spa-eng"\n')
    with pytest.raises(QEInputError, match="translates es into en, but the data is en -> es") as info:
        read_bundle_config(config)
    assert info.value.path == str(config)


def test_noncharacters_are_sent_to_apertium_as_spaces():
    """U+FFFF made Apertium lose its place: three stderr lines and a sentence number that meant nothing."""
    assert deformat("hello \uffff world") == deformat("hello   world")
    assert deformat("a\ufdd0b\U0010ffffc") == deformat("a b c")
    assert deformat("\ufffd kept") != deformat("  kept")  # the replacement character is text
