"""KenLM language models: training (with the small-corpus fallback), scoring against an independent
back-off computation from the ARPA file, bad files, pickling and joblib workers."""

from __future__ import annotations

import logging
import os
import pickle
import re
from pathlib import Path

import pytest
from joblib import Parallel, delayed

from qe.infra.errors import QEInputError
from qe.resources.lm import LanguageModel, find_kenlm_binary, train_lm

pytest.importorskip("kenlm", reason="kenlm Python module not installed: run scripts/install_kenlm.sh")

MEMORY = "64M"  # keep lmplz from reserving 20% of RAM for a corpus of a few lines

# A corpus far too small for Kneser-Ney discount estimation, so lmplz needs --discount_fallback.
CORPUS = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a cat ran to the dog",
    "the cat ran",
    "el niño comió pan",
]

SENTENCES = [
    ["the", "cat", "sat", "on", "the", "mat"],  # seen: trigrams all the way
    ["the", "dog", "ran", "on", "a", "mat"],  # unseen trigrams and bigrams: back-off
    ["a", "zebra", "sat", "on", "the", "cat"],  # an OOV word in the middle
    ["el", "niño", "comió"],  # non-ASCII tokens
    ["mat"],
    [],
]


@pytest.fixture(scope="module")
def tools() -> None:
    try:
        find_kenlm_binary("lmplz")
        find_kenlm_binary("build_binary")
    except QEInputError as exc:
        pytest.skip(f"KenLM tools not built ({exc}); run scripts/install_kenlm.sh")


@pytest.fixture(scope="module")
def models(tools: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lm")
    return {
        "arpa": train_lm(CORPUS, root / "tiny.arpa", order=3, binary=False, memory=MEMORY),
        "binary": train_lm(CORPUS, root / "tiny.bin", order=3, binary=True, memory=MEMORY),
    }


# ---------------------------------------------------------------------------------------------------
# Independent reference: read the ARPA n-gram lines and apply the back-off recursion
#   logP(w | h) = logP(h w)                     if the n-gram "h w" is listed
#              = backoff(h) + logP(w | h[1:])    otherwise (backoff(h) = 0 if h is not listed)


def parse_arpa(path: Path) -> tuple[int, dict[tuple[str, ...], tuple[float, float]]]:
    table: dict[tuple[str, ...], tuple[float, float]] = {}
    order = 0
    section = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        header = re.fullmatch(r"\\(\d+)-grams:", line.strip())
        if header:
            section = order = int(header.group(1))
            continue
        if not line.strip() or line.startswith("\\") or not section:
            continue
        fields = line.split("\t")
        words = tuple(fields[1].split(" "))
        assert len(words) == section
        table[words] = (float(fields[0]), float(fields[2]) if len(fields) > 2 else 0.0)
    return order, table


def reference_scores(arpa: Path, tokens: list[str], bos: bool = True, eos: bool = True):
    order, table = parse_arpa(arpa)
    history = ["<s>"] if bos else []
    out = []
    for word in [*tokens, "</s>"] if eos else tokens:
        oov = (word,) not in table
        target = "<unk>" if oov else word
        context = history[len(history) - (order - 1) :] if order > 1 else []
        logp = 0.0
        while (*context, target) not in table:
            logp += table.get(tuple(context), (0.0, 0.0))[1]
            context = context[1:]
        logp += table[(*context, target)][0]
        out.append((logp, len(context) + 1, oov))
        history.append(word)
    return out


# ---------------------------------------------------------------------------------------------------
# Training


def test_tiny_corpus_takes_discount_fallback_and_warns(
    tools: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="qe.resources.lm"):
        out = train_lm(corpus, tmp_path / "lm.arpa", order=3, binary=False, memory=MEMORY)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "--discount_fallback" in warnings[0].getMessage()
    assert str(corpus) in warnings[0].getMessage()
    order, table = parse_arpa(out)
    assert order == 3
    assert ("the", "cat", "sat") in table
    assert ("niño",) in table
    # Only the model is left behind: the temporary work directory is gone.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "lm.arpa"]


def test_the_fallback_warning_names_the_model_it_is_given(
    tools: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A bundle's models are built from lines in memory: the warning names the member, not ``<corpus>``."""
    with caplog.at_level(logging.WARNING, logger="qe.resources.lm"):
        train_lm(iter(CORPUS), tmp_path / "lm.arpa", binary=False, memory=MEMORY, label="poslm.tgt")
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith("poslm.tgt: corpus too small") and "<corpus>" not in warning


def test_files_lines_and_normalisation_give_the_same_model(tools: None, tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    # CRLF, tabs, repeated spaces, blank lines and reserved words must not change the model.
    first.write_bytes(b"the cat  sat on\tthe mat\r\n\r\nthe dog sat on the log <s>\n")
    second.write_text("\n".join(CORPUS[2:]) + "\n", encoding="utf-8")
    from_files = LanguageModel(train_lm([first, second], tmp_path / "f.bin", memory=MEMORY))
    from_lines = LanguageModel(train_lm(CORPUS, tmp_path / "l.bin", memory=MEMORY))
    for tokens in SENTENCES:
        assert from_files.full_scores(tokens) == from_lines.full_scores(tokens)


def test_bad_corpora_raise_input_errors_naming_the_file(tools: None, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(QEInputError, match="empty") as info:
        train_lm(empty, tmp_path / "out.bin", memory=MEMORY)
    assert info.value.path == str(empty)

    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("the cat\nel ni\u00f1o\n".encode("latin-1"))
    with pytest.raises(QEInputError, match="UTF-8") as info:
        train_lm(latin1, tmp_path / "out.bin", memory=MEMORY)
    assert (info.value.path, info.value.line) == (str(latin1), 2)

    with pytest.raises(QEInputError, match="not found"):
        train_lm(tmp_path / "missing.txt", tmp_path / "out.bin", memory=MEMORY)
    with pytest.raises(QEInputError, match="empty"):
        train_lm([], tmp_path / "out.bin", memory=MEMORY)
    with pytest.raises(QEInputError, match="order"):
        train_lm(CORPUS, tmp_path / "out.bin", order=1, memory=MEMORY)
    # Failures leave neither a model nor temporary files behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.txt", "latin1.txt"]


def test_missing_tool_names_the_install_step(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("QE_KENLM_BIN", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(QEInputError, match=r"install_kenlm\.sh"):
        find_kenlm_binary("no-such-kenlm-tool")
    fake = tmp_path / "no-such-kenlm-tool"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert find_kenlm_binary("no-such-kenlm-tool") == fake


# ---------------------------------------------------------------------------------------------------
# Scoring


@pytest.mark.parametrize("kind", ["arpa", "binary"])
@pytest.mark.parametrize("tokens", SENTENCES, ids=lambda t: "_".join(t) or "empty")
def test_scores_match_the_arpa_back_off_computation(
    models: dict[str, Path], kind: str, tokens: list[str]
) -> None:
    lm = LanguageModel(models[kind])
    assert lm.order == 3
    for bos, eos in [(True, True), (True, False), (False, True)]:
        expected = reference_scores(models["arpa"], tokens, bos=bos, eos=eos)
        got = lm.full_scores(tokens, bos=bos, eos=eos)
        assert [(n, oov) for _, n, oov in got] == [(n, oov) for _, n, oov in expected]
        assert [p for p, _, _ in got] == pytest.approx([p for p, _, _ in expected], abs=1e-5)
        assert lm.log10_prob(tokens, bos=bos, eos=eos) == pytest.approx(
            sum(p for p, _, _ in expected), abs=1e-5
        )


def test_hand_written_arpa_scores_by_hand(tmp_path: Path) -> None:
    arpa = tmp_path / "hand.arpa"
    arpa.write_text(
        "\\data\\\nngram 1=5\nngram 2=3\n\n"
        "\\1-grams:\n-1.0\t<unk>\t0\n-99\t<s>\t-0.5\n-0.7\t</s>\t0\n-0.6\ta\t-0.2\n-0.8\tb\t-0.1\n\n"
        "\\2-grams:\n-0.3\t<s> a\n-0.4\ta b\n-0.2\tb </s>\n\n\\end\\\n",
        encoding="utf-8",
    )
    lm = LanguageModel(arpa)
    assert lm.order == 2
    # p(a|<s>) + p(b|a) + p(</s>|b), all listed bigrams
    assert lm.log10_prob(["a", "b"]) == pytest.approx(-0.3 - 0.4 - 0.2, abs=1e-6)
    # p(b|<s>) = bo(<s>) + p(b); p(a|b) = bo(b) + p(a); p(</s>|a) = bo(a) + p(</s>)
    assert lm.log10_prob(["b", "a"]) == pytest.approx((-0.5 - 0.8) + (-0.1 - 0.6) + (-0.2 - 0.7), abs=1e-6)
    # OOV z: bo(a) + p(<unk>); then p(</s>|z) = p(</s>) since z has no back-off weight
    assert lm.full_scores(["a", "z"]) == [
        (pytest.approx(-0.3), 2, False),
        (pytest.approx(-0.2 - 1.0), 1, True),
        (pytest.approx(-0.7), 1, False),
    ]
    assert lm.log10_prob(["a", "z"], skip_oov=True) == pytest.approx(-0.3 - 0.7, abs=1e-6)
    assert lm.log10_prob(["a", "b"], eos=False) == pytest.approx(-0.7, abs=1e-6)
    assert lm.perplexity(["a", "b"]) == pytest.approx(10 ** (0.9 / 3), rel=1e-6)
    assert lm.perplexity(["a", "b"], eos=False) == pytest.approx(10 ** (0.7 / 2), rel=1e-6)
    # the empty sentence is just </s> after <s>: bo(<s>) + p(</s>)
    assert lm.full_scores([]) == [(pytest.approx(-0.5 - 0.7), 1, False)]
    assert lm.log10_prob([]) == pytest.approx(-1.2, abs=1e-6)
    assert lm.log10_prob([], eos=False) == 0.0
    assert lm.perplexity([]) == pytest.approx(10**1.2, rel=1e-6)
    with pytest.raises(ValueError):
        lm.perplexity([], eos=False)
    assert not lm.is_oov("a")
    assert lm.is_oov("z")
    assert lm.is_oov("<unk>")


def test_tokens_with_whitespace_or_reserved_words_stay_one_token(models: dict[str, Path]) -> None:
    lm = LanguageModel(models["binary"])
    odd = ["the", "cat sat", "", "\u00a0", "</s>", "mat"]
    scores = lm.full_scores(odd)
    assert len(scores) == len(odd) + 1
    assert [oov for _, _, oov in scores] == [False, True, True, True, True, False, False]
    assert lm.log10_prob(odd) == pytest.approx(
        lm.log10_prob(["the", "cat_sat", "<unk>", "<unk>", "<unk>", "mat"]), abs=1e-9
    )
    assert lm.is_oov("cat sat")
    assert not lm.is_oov(" cat ")
    with pytest.raises(TypeError):
        lm.log10_prob("the cat")


# ---------------------------------------------------------------------------------------------------
# Bad model files


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(QEInputError, match="not found") as info:
        LanguageModel(tmp_path / "nope.bin")
    assert info.value.path == str(tmp_path / "nope.bin")


def test_corrupt_model_files(models: dict[str, Path], tmp_path: Path) -> None:
    text = tmp_path / "text.arpa"
    text.write_text("hello world\n", encoding="utf-8")
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    truncated_arpa = tmp_path / "truncated.arpa"
    truncated_arpa.write_bytes(models["arpa"].read_bytes()[:150])
    truncated_bin = tmp_path / "truncated.bin"
    truncated_bin.write_bytes(models["binary"].read_bytes()[:-100])
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 40)
    for bad in [text, empty, truncated_arpa, truncated_bin, garbage]:
        lm = LanguageModel(bad)  # loading is lazy: the first use reports the bad file
        with pytest.raises(QEInputError, match="not a valid KenLM model") as info:
            lm.log10_prob(["the"])
        assert info.value.path == str(bad)
    with pytest.raises(QEInputError, match="not a file"):
        LanguageModel(tmp_path)


# ---------------------------------------------------------------------------------------------------
# Pickling and workers


def test_pickles_by_path_and_shares_the_loaded_model(models: dict[str, Path]) -> None:
    lm = LanguageModel(models["binary"]).load()
    data = pickle.dumps(lm)
    assert len(data) < 300 + len(str(models["binary"]))  # the path, not the model
    restored = pickle.loads(data)
    assert restored.path == models["binary"].absolute()
    assert restored.model is lm.model  # the process-wide cache: loaded once
    for tokens in SENTENCES:
        assert restored.full_scores(tokens) == lm.full_scores(tokens)


def _score_in_worker(lm: LanguageModel, tokens: list[str]) -> tuple[int, int, float]:
    return os.getpid(), id(lm.model), lm.log10_prob(tokens)


def test_joblib_workers_load_the_model_once_each(models: dict[str, Path]) -> None:
    lm = LanguageModel(models["binary"])
    jobs = [delayed(_score_in_worker)(lm, tokens) for tokens in SENTENCES * 4]
    results = Parallel(n_jobs=2, batch_size=1)(jobs)
    assert [r[2] for r in results] == pytest.approx([lm.log10_prob(t) for t in SENTENCES * 4], abs=1e-9)
    models_per_worker: dict[int, set[int]] = {}
    for pid, model_id, _ in results:
        models_per_worker.setdefault(pid, set()).add(model_id)
    assert all(len(ids) == 1 for ids in models_per_worker.values())
