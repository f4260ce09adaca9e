"""``qe report`` on a word-level run: a small run on toy files (no dataset needed) and its report, whose
confusion counts are recounted here from the gold tags files and the predictions file, and whose figures
are metrics.json's; the words most often BAD on a hand-made run with a known answer; damaged run files
refused in one line naming the file (and line), exit 2."""

from __future__ import annotations

import json
import random
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from qe.cli import main
from qe.evaluation.wordmetrics import word_scores
from qe.report.wordstats import most_often_bad
from qe.words.predictions import SentencePredictions
from tests.helpers import write_lines

VOCAB = [f"w{i}" for i in range(30)]
OFTEN_BAD = ("zork", "blap")
SPLITS = {"train": (200, 0), "dev": (60, 1), "test": (60, 2)}
KINDS = {"target": ("mt", "MT words"), "gaps": ("gap", "gaps"), "source": ("src", "source words")}
SECRET = "SECRET-TAG-4321"


def _toy_split(root: Path, split: str, n: int, seed: int) -> None:
    """Sentences of 3-8 words; ``zork`` and ``blap`` are BAD nine times in ten, other words one in twenty,
    and each source word ``sW`` carries its MT word's tag."""
    rng = random.Random(seed)
    src, mt, tags, source_tags = [], [], [], []
    for _ in range(n):
        words = [rng.choice(VOCAB + list(OFTEN_BAD)) for _ in range(rng.randint(3, 8))]
        word_tags = ["BAD" if rng.random() < (0.9 if w in OFTEN_BAD else 0.05) else "OK" for w in words]
        gaps = ["BAD" if rng.random() < 0.05 else "OK" for _ in range(len(words) + 1)]
        interleaved = [gaps[0]]
        for tag, gap in zip(word_tags, gaps[1:], strict=True):
            interleaved += [tag, gap]
        src.append(" ".join(f"s{w}" for w in words))
        mt.append(" ".join(words))
        tags.append(" ".join(interleaved))
        source_tags.append(" ".join(word_tags))
    for suffix, lines in (("src", src), ("mt", mt), ("tags", tags), ("source_tags", source_tags)):
        write_lines(root / f"{split}.{suffix}", lines)


def _toy_config(root: Path) -> Path:
    lines = [
        'name = "toy words"',
        "seed = 1",
        "[words]",
        "max_iter = 20",
        "min_samples_leaf = 5",
        "folds = 2",
    ]
    for split, (n, seed) in SPLITS.items():
        _toy_split(root, split, n, seed)
        lines.append(f"[words.{split}]")
        lines += [f'{role} = "{split}.{role}"' for role in ("src", "mt", "tags", "source_tags")]
    return write_lines(root / "toy.toml", lines)


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    """A word run on toy files, with its report written."""
    root = tmp_path_factory.mktemp("word-report")
    config = _toy_config(root)
    assert main(["run", str(config), "--output-dir", str(root / "run"), "--quiet"]) == 0
    assert main(["report", str(root / "run")]) == 0
    return root


def tables(markdown: str) -> dict[str, list[list[str]]]:
    """report.md's tables by the heading above them, header row first."""
    out: dict[str, list[list[str]]] = {}
    heading = ""
    for line in markdown.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and not line.startswith("|---"):
            out.setdefault(heading, []).append([cell.strip() for cell in line.strip("|").split("|")])
    return out


def _predictions(run: Path, split: str) -> list[dict]:
    return [json.loads(line) for line in (run / f"word_predictions.{split}.jsonl").read_text().splitlines()]


def _gold(root: Path, split: str) -> dict[str, list[list[str]]]:
    """The gold tags of a split as the input files hold them: .tags interleaved (gap, word, ..., gap)."""
    interleaved = [line.split() for line in (root / f"{split}.tags").read_text().splitlines()]
    return {
        "target": [line[1::2] for line in interleaved],
        "gaps": [line[0::2] for line in interleaved],
        "source": [line.split() for line in (root / f"{split}.source_tags").read_text().splitlines()],
    }


def test_a_word_run_writes_each_splits_predictions(toy):
    run = toy / "run"
    thresholds = json.loads((run / "metrics.json").read_text())["thresholds"]
    for split in ("dev", "test"):
        rows = _predictions(run, split)
        gold = _gold(toy, split)
        assert [row["id"] for row in rows] == list(range(SPLITS[split][0]))
        assert [row["mt_tokens"] for row in rows] == [line.split() for line in (toy / f"{split}.mt").open()]
        assert [row["src_tokens"] for row in rows] == [line.split() for line in (toy / f"{split}.src").open()]
        for kind, (prefix, _) in KINDS.items():
            assert [row[f"{prefix}_gold_tags"] for row in rows] == gold[kind]
            for row in rows:
                probabilities, tags = row[f"{prefix}_bad_probability"], row[f"{prefix}_tags"]
                assert len(probabilities) == len(tags) == len(row[f"{prefix}_gold_tags"])
                for p, tag in zip(probabilities, tags, strict=True):  # rounded: 1e-6 of room
                    assert (p >= thresholds[kind] - 1e-6) if tag == "BAD" else (p < thresholds[kind] + 1e-6)


def test_the_confusion_tables_count_the_tags(toy):
    run = toy / "run"
    shown = tables((run / "report.md").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    for split in ("dev", "test"):
        gold, rows = _gold(toy, split), _predictions(run, split)
        expected = [["kind", "gold", "predicted OK", "predicted BAD", "total"]]
        for kind, (prefix, name) in KINDS.items():
            pairs = [
                (g, p)
                for gold_line, row in zip(gold[kind], rows, strict=True)
                for g, p in zip(gold_line, row[f"{prefix}_tags"], strict=True)
            ]
            count = {
                (g, p): sum(1 for pair in pairs if pair == (g, p))
                for g in ("OK", "BAD")
                for p in ("OK", "BAD")
            }
            for g in ("OK", "BAD"):
                total = count[g, "OK"] + count[g, "BAD"]
                expected.append([name, g, str(count[g, "OK"]), str(count[g, "BAD"]), str(total)])
            # the counts give metrics.json's MCC: the predictions file and the metrics are one run's
            tp, fp, fn, tn = count["BAD", "BAD"], count["OK", "BAD"], count["BAD", "OK"], count["OK", "OK"]
            denominator = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) ** 0.5
            mcc = (tp * tn - fp * fn) / denominator if denominator else 0.0
            assert mcc == pytest.approx(metrics[split][kind]["mcc"], abs=1e-6)
            assert len(pairs) == metrics[split][kind]["tags"]
        assert shown[split] == expected


def test_the_report_shows_metrics_json(toy):
    run = toy / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    markdown = (run / "report.md").read_text()
    shown = tables(markdown)["Metrics"]
    assert shown[0] == ["split", "kind", "MCC", "F1-OK", "F1-BAD", "F1-MULT", "tags", "threshold"]
    expected = [
        [split, name]
        + [f"{metrics[split][kind][key]:.3f}" for key in ("mcc", "f1_ok", "f1_bad", "f1_mult")]
        + [str(metrics[split][kind]["tags"]), f"{metrics['thresholds'][kind]:.3f}"]
        for split in ("dev", "test")
        for kind, (_, name) in KINDS.items()
    ]
    assert shown[1:] == expected
    assert metrics["signature"] in markdown
    assert (run / "signature.txt").read_text().strip() == metrics["signature"]
    html = (run / "report.html").read_text()
    ET.fromstring(html.split("\n", 1)[1])  # well-formed (after the doctype)
    assert "Words most often BAD" in html and metrics["signature"] in html
    for split in ("dev", "test"):  # the toy's often-BAD words lead the lists
        assert {row[0] for row in tables(markdown)[f"{split}: MT words"][1:3]} == set(OFTEN_BAD)
        assert {row[0] for row in tables(markdown)[f"{split}: source words"][1:3]} == {"szork", "sblap"}


def test_a_word_run_with_its_report_can_be_run_again_over(toy, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(toy / "run", run)
    config = shutil.copy(toy / "toy.toml", tmp_path / "toy.toml")
    for split in SPLITS:
        for suffix in ("src", "mt", "tags", "source_tags"):
            shutil.copy(toy / f"{split}.{suffix}", tmp_path)
    assert main(["run", str(config), "--output-dir", str(run), "--quiet", "--overwrite"]) == 0
    assert (run / "word_predictions.dev.jsonl").read_bytes() == (
        toy / "run" / "word_predictions.dev.jsonl"
    ).read_bytes()


# ---------------------------------------------------------------- the words most often BAD, by hand

# (word, seen, gold BAD, predicted BAD, both): a token is gold BAD first, predicted BAD first among those
MT_WORDS = [
    ("a", 6, 6, 3, 3),  # BAD every time: first
    ("c", 10, 8, 9, 8),  # 80%, 8 times
    ("b", 5, 4, 0, 0),  # 80% too, 4 times: after c
    ("h", 2, 2, 2, 2),  # BAD every time but seen twice: below the minimum count
    ("o", 7, 0, 2, 0),  # never BAD in gold
    ("e", 5, 1, 1, 1),  # 20%, once: after d (same share, same count: by word)
    ("d", 5, 1, 0, 0),
]
SRC_WORDS = [("X", 5, 5, 5, 5), ("Y", 4, 4, 0, 0), ("Z", 8, 2, 4, 1), ("W", 6, 0, 1, 0)]
EXPECTED_MT = [
    ["word", "seen", "gold BAD", "predicted BAD", "gold BAD found"],
    ["a", "6", "6 (100%)", "3 (50%)", "3 (50%)"],
    ["c", "10", "8 (80%)", "9 (90%)", "8 (100%)"],
    ["b", "5", "4 (80%)", "0 (0%)", "0 (0%)"],
    ["d", "5", "1 (20%)", "0 (0%)", "0 (0%)"],
    ["e", "5", "1 (20%)", "1 (20%)", "1 (100%)"],
]
EXPECTED_SRC = [
    EXPECTED_MT[0],
    ["X", "5", "5 (100%)", "5 (100%)", "5 (100%)"],
    ["Z", "8", "2 (25%)", "4 (50%)", "1 (50%)"],
]
SENTENCES = 5


def _tokens(spec: list[tuple[str, int, int, int, int]]) -> list[tuple[str, str, str]]:
    """(word, gold tag, predicted tag) for each occurrence the spec describes."""
    out = []
    for word, seen, gold_bad, predicted_bad, both in spec:
        for k in range(seen):
            gold = "BAD" if k < gold_bad else "OK"
            predicted = k < both or gold_bad <= k < gold_bad + predicted_bad - both
            out.append((word, gold, "BAD" if predicted else "OK"))
    return out


def _hand_sentences() -> list[SentencePredictions]:
    """Both specs dealt round robin into five sentences; every gap OK in gold and predicted."""
    sides = {
        kind: [_tokens(spec)[k::SENTENCES] for k in range(SENTENCES)]
        for kind, spec in (("target", MT_WORDS), ("source", SRC_WORDS))
    }
    out = []
    for mt, src in zip(sides["target"], sides["source"], strict=True):
        gaps = ("OK",) * (len(mt) + 1)
        out.append(
            SentencePredictions(
                src=tuple(w for w, _, _ in src),
                mt=tuple(w for w, _, _ in mt),
                gold={
                    "target": tuple(g for _, g, _ in mt),
                    "gaps": gaps,
                    "source": tuple(g for _, g, _ in src),
                },
                tags={
                    "target": tuple(p for _, _, p in mt),
                    "gaps": gaps,
                    "source": tuple(p for _, _, p in src),
                },
                probability={
                    kind: tuple(0.9 if t == "BAD" else 0.1 for t in tags)
                    for kind, tags in (
                        ("target", [p for *_, p in mt]),
                        ("gaps", gaps),
                        ("source", [p for *_, p in src]),
                    )
                },
            )
        )
    return out


def _hand_run(folder: Path) -> Path:
    """A run directory written by hand: config, signature, dev metrics and the dev predictions."""
    from qe.words.predictions import prediction_line

    sentences = _hand_sentences()
    folder.mkdir()
    (folder / "config.toml").write_text('name = "hand"\n[words]\nmax_iter = 1\n')
    (folder / "signature.txt").write_text("words|hand\n")
    dev = {
        kind: word_scores([s.gold[kind] for s in sentences], [s.tags[kind] for s in sentences]).as_dict()
        for kind in KINDS
    }
    metrics = {
        "level": "word",
        "dev": dev,
        "thresholds": dict.fromkeys(KINDS, 0.5),
        "signature": "words|hand",
    }
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "word_predictions.dev.jsonl").write_text(
        "".join(prediction_line(k, s) for k, s in enumerate(sentences))
    )
    return folder


def test_the_words_most_often_bad_on_a_hand_made_run(tmp_path):
    run = _hand_run(tmp_path / "run")
    assert main(["report", str(run)]) == 0
    markdown = (run / "report.md").read_text()
    shown = tables(markdown)
    assert shown["dev: MT words"] == EXPECTED_MT
    assert shown["dev: source words"] == EXPECTED_SRC
    assert "test: MT words" not in shown and [row[0] for row in shown["Metrics"][1:]] == ["dev"] * 3


def test_most_often_bad_takes_a_count_and_a_minimum():
    sentences = _hand_sentences()
    assert [c.word for c in most_often_bad(sentences, "target")] == ["a", "c", "b", "d", "e"]
    assert [c.word for c in most_often_bad(sentences, "target", top=2)] == ["a", "c"]
    assert [c.word for c in most_often_bad(sentences, "target", min_occurrences=2)] == [
        "a",
        "h",
        "c",
        "b",
        "d",
        "e",
    ]
    assert [c.word for c in most_often_bad(sentences, "source", min_occurrences=1)] == ["X", "Y", "Z"]


# ---------------------------------------------------------------- damaged run directories


def _edit_line(name: str, number: int, edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = (run / name).read_text().splitlines()
        row = json.loads(lines[number - 1])
        edit(row)
        lines[number - 1] = json.dumps(row)
        (run / name).write_text("\n".join(lines) + "\n")

    return damage


def _edit_metrics(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        metrics = json.loads((run / "metrics.json").read_text())
        edit(metrics)
        (run / "metrics.json").write_text(json.dumps(metrics))

    return damage


def _truncate(run: Path) -> None:
    text = (run / "metrics.json").read_text()
    (run / "metrics.json").write_text(text[: len(text) // 2])


def _bad_byte(name: str, number: int) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = (run / name).read_bytes().split(b"\n")
        lines[number - 1] = lines[number - 1].replace(b'"', b'"\xff', 4)
        (run / name).write_bytes(b"\n".join(lines))

    return damage


def _drop_last_token(row: dict) -> None:
    row["mt_tokens"].pop()


def _secret_tag(row: dict) -> None:
    row["mt_tags"][0] = SECRET


def _nudge_mcc(metrics: dict) -> None:
    metrics["dev"]["target"]["mcc"] = round(metrics["dev"]["target"]["mcc"] - 0.1, 6)


DEV, TEST = "word_predictions.dev.jsonl", "word_predictions.test.jsonl"
DAMAGES = {
    "metrics truncated": (_truncate, "metrics.json", "corrupt metrics.json"),
    "metrics not UTF-8": (_bad_byte("metrics.json", 2), "metrics.json", "corrupt metrics.json"),
    "metrics missing": (lambda run: (run / "metrics.json").unlink(), "metrics.json", "not found"),
    "metrics of the wrong type": (
        _edit_metrics(lambda m: m["dev"]["gaps"].update(f1_ok="high")),
        "metrics.json",
        "dev.gaps.f1_ok = 'high': expected a number in [0, 1]",
    ),
    "metrics edited": (_edit_metrics(_nudge_mcc), "metrics.json", "different runs or edited"),
    "metrics without a level": (_edit_metrics(lambda m: m.pop("level")), "metrics.json", "needs level"),
    "a line with a token too few": (_edit_line(DEV, 3, _drop_last_token), f"{DEV}:3", "mt_gold_tags has"),
    "a line not UTF-8": (_bad_byte(DEV, 2), f"{DEV}:2", "invalid UTF-8"),
    "a line not JSON": (lambda run: (run / DEV).write_text("{\n"), f"{DEV}:1", "not JSON"),
    "a tag neither OK nor BAD": (
        _edit_line(DEV, 1, _secret_tag),
        f"{DEV}:1",
        "mt_tags holds a tag other than",
    ),
    "a probability above 1": (
        _edit_line(TEST, 5, lambda row: row["src_bad_probability"].__setitem__(0, 1.5)),
        f"{TEST}:5",
        "src_bad_probability holds a value that is not a number in [0, 1]",
    ),
    "lines out of order": (_edit_line(DEV, 2, lambda row: row.update(id=0)), f"{DEV}:2", "id is not 1"),
    "a field missing": (
        _edit_line(DEV, 4, lambda row: row.pop("gap_tags")),
        f"{DEV}:4",
        "no 'gap_tags' field",
    ),
    "a line dropped": (
        lambda run: (run / TEST).write_text("".join((run / TEST).read_text().splitlines(True)[:-1])),
        TEST,
        "but metrics.json counts",
    ),
    "predictions missing": (
        lambda run: (run / TEST).unlink(),
        TEST,
        "not found: a word run's report reads it",
    ),
    "predictions without metrics": (
        _edit_metrics(lambda m: m.pop("test")),
        "metrics.json",
        "has no test metrics",
    ),
}


@pytest.mark.parametrize("case", DAMAGES)
def test_a_damaged_word_run_is_refused_in_one_line(toy, tmp_path, capsys, case):
    damage, where, message = DAMAGES[case]
    run = tmp_path / "run"
    shutil.copytree(toy / "run", run)
    for name in ("report.md", "report.html"):
        (run / name).unlink()
    damage(run)
    capsys.readouterr()
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"qe: error: {run / where}: "), err
    assert message in err and "Traceback" not in err and SECRET not in err
    assert not (run / "report.md").exists() and not (run / "report.html").exists()


def test_an_ablation_does_not_join_a_word_report(toy, tmp_path, capsys):
    assert main(["report", str(toy / "run"), "--ablation", str(tmp_path)]) == 2
    assert "is a word-level run" in capsys.readouterr().err
