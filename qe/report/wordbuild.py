"""The report of a word-level run, as document blocks: an overview and the signature, per split and kind
the WMT20 figures and the threshold, the confusion counts, and the words most often BAD in gold with
how often the model tags them BAD."""

from __future__ import annotations

from pathlib import Path

from qe.infra.errors import QEInputError
from qe.report.blocks import Block, Code, Heading, Para, Pre, Report, Table
from qe.report.wordrun import KINDS, WordRun, load_word_run
from qe.report.wordstats import MIN_OCCURRENCES, TOP_WORDS, WordCounts, confusion, most_often_bad
from qe.words.predictions import KIND_NAMES

SIDES = ("target", "source")
"""The kinds whose tags stand on words (gaps have none): MT words, source words."""


def build_word_report(run_dir: str | Path) -> Report:
    """Read a word run directory and build its report's blocks (it has no figures; nothing is written)."""
    run = load_word_run(run_dir)
    try:
        return _build(run)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # config.toml is shown, not checked: an edited one may hold anything
        raise QEInputError(
            f"cannot build the report: config.toml holds a value of the wrong type ({type(exc).__name__})",
            run.path,
        ) from None


def _build(run: WordRun) -> Report:
    title = f"Word-level QE run: {_name(run)}"
    blocks: list[Block] = [Heading(title, 1), *_overview(run), *_metrics(run), *_confusions(run)]
    blocks += _bad_words(run)
    return Report(title, blocks, {}, [])


def _name(run: WordRun) -> str:
    name = (run.config or {}).get("name")
    return name if isinstance(name, str) else run.path.name


def _share(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.0f}%)" if total else str(count)


def _overview(run: WordRun) -> list[Block]:
    config, metrics = run.config or {}, run.metrics
    blocks: list[Block] = []
    if isinstance(config.get("description"), str) and config["description"]:
        blocks.append(Para([config["description"]]))
    words = config.get("words", {})
    dataset = words.get("dataset") if isinstance(words, dict) else None
    rows = [["data", str(dataset) if dataset else "files named in config.toml"]]
    if metrics.get("train_sentences") is not None:
        rows.append(["training sentences", f"{metrics['train_sentences']:,}"])
    if metrics.get("nmt_features") is not None:
        rows.append(["NMT log-probabilities", "yes" if metrics["nmt_features"] else "no"])
    if metrics.get("families"):
        rows.append(["feature families", ", ".join(metrics["families"])])
    if metrics.get("token_head"):
        rows.append(["e5 token head (tokenhead family)", _token_head_text(metrics["token_head"])])
    if metrics.get("threshold_chosen_on"):
        rows.append(["thresholds chosen on", metrics["threshold_chosen_on"]])
    if metrics.get("learners"):
        shown = ", ".join(f"{KIND_NAMES.get(k, k)} {v}" for k, v in metrics["learners"].items())
        rows.append(["learners (hgb: gradient boosting, crf: linear-chain CRF)", shown])
    if metrics.get("iterations"):
        shown = ", ".join(f"{KIND_NAMES.get(k, k)} {v}" for k, v in metrics["iterations"].items())
        rows.append(["boosting iterations", shown])
    if metrics.get("crf_l2"):
        shown = ", ".join(f"{KIND_NAMES.get(k, k)} {v:g}" for k, v in metrics["crf_l2"].items())
        rows.append(["CRF L2 strength (per tag)", shown])
    if metrics.get("training_s") is not None:
        rows.append(["training time (s)", f"{metrics['training_s']:.1f}"])
    blocks.append(Table(["setting", "value"], rows))
    if metrics.get("signature"):
        blocks += [Para(["Signature:"]), Pre(metrics["signature"])]
    return blocks


def _metrics(run: WordRun) -> list[Block]:
    header = ["split", "kind", "MCC", "F1-OK", "F1-BAD", "F1-MULT", "tags", "threshold"]
    rows = []
    for split in run.predictions:
        for kind in KINDS:
            m = run.metrics[split][kind]
            figures = (f"{m[name]:.3f}" for name in ("mcc", "f1_ok", "f1_bad", "f1_mult"))
            threshold = f"{run.metrics['thresholds'][kind]:.3f}"
            rows.append([split, KIND_NAMES[kind], *figures, f"{m['tags']:,}", threshold])
    return [
        Heading("Metrics"),
        Para(
            [
                "WMT20 word-level figures over every tag of a split, one kind at a time (",
                Code("qe.evaluation.wordmetrics"),
                "). A tag is BAD when its probability reaches its kind's threshold, chosen on dev.",
            ]
        ),
        Table(header, rows),
    ]


def _confusions(run: WordRun) -> list[Block]:
    blocks: list[Block] = [
        Heading("Confusion tables"),
        Para(["Tags counted by gold tag (rows) and predicted tag (columns)."]),
    ]
    header = ["kind", "gold", "predicted OK", "predicted BAD", "total"]
    for split, sentences in run.predictions.items():
        rows = []
        for kind in KINDS:
            c = confusion(sentences, kind)
            rows.append([KIND_NAMES[kind], "OK", f"{c.tn:,}", f"{c.fp:,}", f"{c.tn + c.fp:,}"])
            rows.append([KIND_NAMES[kind], "BAD", f"{c.fn:,}", f"{c.tp:,}", f"{c.fn + c.tp:,}"])
        blocks += [Heading(split, 3), Table(header, rows)]
    return blocks


def _bad_words(run: WordRun) -> list[Block]:
    blocks: list[Block] = [
        Heading("Words most often BAD"),
        Para(
            [
                f"Per split and side, the {TOP_WORDS} word types (tokens as written) seen at least "
                f"{MIN_OCCURRENCES} times that are most often BAD in gold (by share), with how often the "
                "model tags them BAD; gold BAD found: of the word's gold BAD tags, those predicted BAD."
            ]
        ),
    ]
    for split, sentences in run.predictions.items():
        for kind in SIDES:
            found = most_often_bad(sentences, kind)
            blocks.append(Heading(f"{split}: {KIND_NAMES[kind]}", 3))
            if found:
                blocks.append(_word_table(found))
            else:
                blocks.append(Para([f"No word seen {MIN_OCCURRENCES} times or more is BAD in gold."]))
    return blocks


def _word_table(found: list[WordCounts]) -> Table:
    header = ["word", "seen", "gold BAD", "predicted BAD", "gold BAD found"]
    rows = [
        [
            c.word,
            f"{c.occurrences:,}",
            _share(c.gold_bad, c.occurrences),
            _share(c.predicted_bad, c.occurrences),
            _share(c.both_bad, c.gold_bad),
        ]
        for c in found
    ]
    return Table(header, rows)


def _token_head_text(head: dict) -> str:
    """The token head's line of the overview: best epoch, held-out MCC, training seconds."""
    best, mcc, seconds = head["best_epoch"], head["heldout_mcc"], head["seconds"]
    return f"best epoch {best}, held-out MCC {mcc:.4f}, {seconds:.1f} s to train"
