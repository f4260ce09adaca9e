"""Resources: one line long enough to take minutes and gigabytes (main ba3d5b8).

``qe features --families pseudoref`` on 9 lines, three of 100,000 characters, took minutes and
gigabytes (TER's shift search grows with the product of the two lengths), as did a pair of 30,000
words; no family but ibm1 had a limit, and ibm1's refusal named a 0-based pair number, not the file
and line. Every family now reads at most its declared length (docs/length-limits.md), refused before
the work in one line ``FILE:LINE: family: ...``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qe.features.base import MAX_CHARS
from qe.features.registry import registered_families
from tests.helpers import write_lines

REPO = Path(__file__).resolve().parents[2]
HANG = 120  # seconds: a generous guard (on main the first case ran for minutes)
SHORT_SRC = ["the cat sat on the mat .", "a dog .", "good morning .", "where is it ?"]
SHORT_MT = ["el gato se sentó en la alfombra .", "un perro .", "buenos días .", "¿ dónde está ?"]
SHORT_REF = ["el gato estaba en la alfombra .", "un perro .", "buen día .", "¿ dónde está ?"]


def words(count: int) -> str:
    """``count`` distinct-ish short words (about 5 characters each)."""
    return " ".join(f"w{i % 997}" for i in range(count))


def _qe(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [sys.executable, "-m", "qe", *args], cwd=cwd, capture_output=True, text=True, timeout=HANG
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"qe {' '.join(args[:3])} ... still running after {HANG} s")


def _one_line(result: subprocess.CompletedProcess, where: str, message: str) -> None:
    assert result.returncode == 2, result.stderr[-2000:]
    err = result.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err[-2000:]
    assert re.match(rf"qe: error: (\S*/)?{re.escape(where)}: ", err), err  # a relative or full path
    assert re.search(message, err), err


def _lines(folder: Path, name: str, values: list[str]) -> Path:
    return write_lines(folder / name, values)


# (id, family arguments, files: name -> lines, the file and line named, what the line says)
CASES = [
    (
        "pseudoref-9-lines-three-of-100k-characters",
        ["--families", "pseudoref", "--pseudo-ref", "ref.txt"],
        {
            "src.txt": [("x " * 50_000).strip() if i % 3 == 1 else "a cat" for i in range(9)],
            "mt.txt": [words(25_000)[:100_000] if i % 3 == 1 else "un gato" for i in range(9)],
            "ref.txt": [words(25_000)[:100_000] if i % 3 == 1 else "el gato" for i in range(9)],
        },
        "src.txt:2",
        r"pseudoref: this line has 99,999 characters, and pseudoref reads at most 20,000 ",
    ),
    (
        "pseudoref-30k-word-pair",
        ["--families", "pseudoref", "--pseudo-ref", "ref.txt"],
        {"src.txt": ["a"], "mt.txt": [words(30_000)], "ref.txt": [words(30_000)]},
        "mt.txt:1",
        r"pseudoref: this line has [\d,]+ characters, and pseudoref reads at most 20,000 ",
    ),
    (
        "pseudoref-2500-words-on-the-pseudo-reference",  # under 20,000 characters: TER's word limit
        ["--families", "pseudoref", "--pseudo-ref", "ref.txt"],
        {"src.txt": SHORT_SRC, "mt.txt": SHORT_MT, "ref.txt": [*SHORT_REF[:2], words(2_500), SHORT_REF[3]]},
        "ref.txt:3",
        r"pseudoref: this line has 2,500 tokens, and pseudoref reads at most 2,000 ",
    ),
    (
        "surface-25k-characters",
        ["--families", "surface"],
        {"src.txt": [SHORT_SRC[0], "y" * 25_000, *SHORT_SRC[2:]], "mt.txt": SHORT_MT},
        "src.txt:2",
        rf"surface: this line has 25,000 characters, and surface reads at most {MAX_CHARS:,} ",
    ),
    (
        "nmt-log-probability-line-of-25k-characters",
        ["--families", "nmt", "--set", "nmt.model_score=false", "--nmt-logprobs", "lp.txt"],
        {
            "src.txt": SHORT_SRC,
            "mt.txt": SHORT_MT,
            "lp.txt": ["-0.1 -0.2", "-0.1 -0.2", " ".join(["-0.25"] * 5_000), "-0.1 -0.2"],
        },
        "lp.txt:3",
        r"nmt: this line has 29,999 characters, and nmt reads at most 20,000 ",
    ),
]


@pytest.mark.parametrize(
    ("args", "files", "where", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_qe_features_refuses_a_line_too_long_naming_file_and_line(tmp_path, args, files, where, message):
    for name, values in files.items():
        _lines(tmp_path, name, values)
    result = _qe(
        ["features", "--src", "src.txt", "--mt", "mt.txt", *args, "--out", "out.tsv", "--quiet"], tmp_path
    )
    _one_line(result, where, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)  # no output, no .partial left


@pytest.fixture(scope="module")
def ibm1_bundle(tmp_path_factory) -> Path:
    """A tiny bundle with IBM1 tables both ways, built by ``qe resources build``."""
    from qe.bundle import build_bundle

    root = tmp_path_factory.mktemp("ibm1-bundle")
    _lines(root, "c.en", ["the cat", "the dog", "a cat", "the house"])
    _lines(root, "c.es", ["el gato", "el perro", "un gato", "la casa"])
    _lines(root, "eval.en", ["nothing like the corpus ."])
    config = root / "bundle.toml"
    config.write_text(
        'name = "tiny"\n[languages]\nsrc = "en"\ntgt = "es"\n[text]\nstyle = "moses"\ncase = "lower"\n'
        '[leakage]\neval_files = ["eval.en"]\n[corpora.c]\nsrc = "c.en"\ntgt = "c.es"\n'
        "[ibm1]\niterations = 2\n"
    )
    build_bundle(config, root / "bundle", data_dir=root, progress=False, token_cache_dir=root / "tok")
    return root / "bundle"


def test_ibm1_names_the_file_and_line_of_a_side_too_long_to_align(tmp_path, ibm1_bundle):
    """16b: the refusal named ``pair 1`` (0-based); 2,001 tokens on line 2 of the MT."""
    _lines(tmp_path, "src.txt", SHORT_SRC)
    _lines(tmp_path, "mt.txt", [SHORT_MT[0], " ".join(["gato"] * 2_001), *SHORT_MT[2:]])
    args = ["features", "--src", "src.txt", "--mt", "mt.txt", "--families", "ibm1", "--set", "ibm1.pos=false"]
    result = _qe([*args, "--resources", str(ibm1_bundle), "--out", "out.tsv", "--quiet"], tmp_path)
    _one_line(result, "mt.txt:2", r"ibm1: this line has 2,001 tokens, and ibm1 reads at most 2,000 ")


def test_qe_run_names_the_table_and_line_of_a_text_too_long(tmp_path, monkeypatch):
    """A JSONL table's row 3 holds 25,000 characters of MT: the table and its line are named."""
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))
    pairs = zip(SHORT_SRC * 3, SHORT_MT * 3, strict=True)
    rows = [{"src": s, "mt": m, "score": 0.1 * i} for i, (s, m) in enumerate(pairs)]
    rows[2]["mt"] = "z" * 25_000
    test = [{"src": f"pair {i} .", "mt": f"par {i} .", "score": 0.5} for i in range(4)]
    for name, table in (("train", rows), ("test", test)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in table))
    (tmp_path / "run.toml").write_text(
        'name = "long"\n[data.train]\ntable = "train.jsonl"\n[data.test]\ntable = "test.jsonl"\n'
        '[features]\nfamilies = ["surface"]\n[learner]\nname = "ridge"\n'
    )
    result = _qe(["run", "run.toml", "--output-dir", "out", "--quiet"], tmp_path)
    _one_line(result, "train.jsonl:3", r"surface: this line has 25,000 characters")
    assert not (tmp_path / "out").exists()


def test_the_documented_limits_are_the_code_limits() -> None:
    """docs/length-limits.md's table holds every family with the limits it declares."""
    text = (REPO / "docs" / "length-limits.md").read_text(encoding="utf-8")
    documented = {}
    for row in re.findall(r"^\| (\w+) \| ([\d,]+) \| ([^|]+) \|", text, re.MULTILINE):
        tokens = re.match(r"[\d,]+", row[2].strip())
        documented[row[0]] = (
            int(row[1].replace(",", "")),
            int(tokens[0].replace(",", "")) if tokens else None,
        )
    declared = {name: (cls.limits.chars, cls.limits.tokens) for name, cls in registered_families().items()}
    assert documented == declared
