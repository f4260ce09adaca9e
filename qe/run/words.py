"""A word-level run (``qe run CONFIG`` where CONFIG has a ``[words]`` table): train the word tagger
(``qe.wordmodel``) on the training split, choose each kind's BAD threshold on dev, score dev (and test
when given) with the WMT20 word-level figures, and write the run directory: ``config.toml`` (resolved),
``signature.txt``, ``metrics.json``, ``model.qwords`` (``qe.wordmodel.modelfile``) and each scored split's
tokens, gold and predicted tags (``word_predictions.dev.jsonl``, ``...test.jsonl``: ``qe.words.predictions``),
which ``qe report`` reads.

The data is MLQE-PE (``dataset = "mlqe-pe/<pair>"``: its train and dev splits, and test20 scored once
at the end, the NMT log-probabilities with ``nmt = true``) or a user's own files (``[words.train]``,
``[words.dev]``, ``[words.test]``: ``src``, ``mt`` and ``tags`` + ``source_tags``, or ``post_edits``
alone, from which the tags are derived with ``qe.words.derive``, through ``alignments`` when given,
else through IBM1 links trained on the training split). A word feature family (``qe.wordmodel.families``)
with settings of its own takes them from its ``[words.<family>]`` table (``[words.tokenhead]``: the e5
token head's, ``qe.wordmodel.tokenheadfamily``), refused unless ``families`` lists it. Progress lines
go to stderr.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from qe import __version__
from qe.config.rules import check
from qe.config.words import FAMILY_SETTINGS, SPLIT_ROLES, WORD_RUN
from qe.evaluation.wordmetrics import word_scores
from qe.infra.errors import QEInputError
from qe.infra.io import parse_bounded, require_file, sha256_file, write_text_atomic
from qe.infra.outputs import WORD_PREDICTIONS, staged_dir
from qe.wordmodel.families import default_families, family_names, needs_alignments, refusal, resolve
from qe.wordmodel.features import KINDS, FeatureTables, WordFeaturizer, tag_labels
from qe.wordmodel.lexicon import Lexicon
from qe.wordmodel.modelfile import save_word_model
from qe.wordmodel.nmtprobs import WordLogprobs, load_word_logprobs, read_word_logprobs
from qe.wordmodel.tagger import WordTagger
from qe.wordmodel.tokenheadfamily import NAME as TOKEN_HEAD
from qe.wordmodel.tokenheadfamily import summary as token_head_summary
from qe.words.derive import derive_tags
from qe.words.files import WordLevelData, load_word_level, read_word_level
from qe.words.predictions import KIND_NAMES, SentencePredictions, write_word_predictions
from qe.words.tags import BAD, OK

MODEL_FILE = "model.qwords"
TAGGER_KEYS = ("max_iter", "learning_rate", "max_leaf_nodes", "min_samples_leaf", "learner")


def is_word_config(path: str | Path) -> bool:
    """Whether ``path`` is a TOML file with a ``[words]`` table (anything unreadable: False, so that
    the experiment config reader reports it)."""
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return False
    return isinstance(document.get("words"), dict)


def load_word_config(path: str | Path) -> dict[str, Any]:
    """The checked config, file paths resolved against its folder; a mistake is one line naming it."""
    path = require_file(path, "config file")
    try:
        document = parse_bounded(tomllib.loads, path.read_text(encoding="utf-8-sig"), path, "config")
    except UnicodeDecodeError:
        raise QEInputError("config is not valid UTF-8", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", path) from None
    check(WORD_RUN, document, path)
    document.setdefault("name", path.stem)
    document.setdefault("seed", 0)
    words = document["words"]
    if ("dataset" in words) == ("train" in words):
        raise QEInputError('[words] needs either dataset = "mlqe-pe/<pair>" or [words.train] files', path)
    if "dataset" in words:
        if not words["dataset"].startswith("mlqe-pe/"):
            raise QEInputError(f"words.dataset = {words['dataset'][:60]!r}: expected 'mlqe-pe/<pair>'", path)
        if "dev" in words or "test" in words:
            raise QEInputError("[words] takes a dataset's own dev split: no [words.dev] / [words.test]", path)
    else:
        if "dev" not in words:
            raise QEInputError("[words] needs [words.dev] files: the thresholds are chosen on dev", path)
        if "nmt" in words:
            raise QEInputError("words.nmt is for a dataset; give nmt_tokens and nmt_logprobs files", path)
        splits = [words[s] for s in ("train", "dev", "test") if s in words]
        has_nmt = {("nmt_tokens" in s, "nmt_logprobs" in s) for s in splits}
        if has_nmt not in ({(True, True)}, {(False, False)}):
            raise QEInputError(
                "nmt_tokens and nmt_logprobs must be given together, in every split or none", path
            )
        for split in ("train", "dev", "test"):
            files = words.get(split, {})
            tagged = ("tags" in files and "source_tags" in files) or "post_edits" in files
            if split in words and not tagged:
                raise QEInputError(
                    f"[words.{split}] needs tags and source_tags, or post_edits to derive them from", path
                )
            for role in SPLIT_ROLES:
                if role in files:
                    resolved = (path.parent / files[role]).resolve()
                    if not resolved.is_file():
                        raise QEInputError(f"words.{split}.{role} = {files[role]!r}: no such file", path)
                    files[role] = str(resolved)
    if "dataset" in words and ("src_lang" in words or "tgt_lang" in words):
        raise QEInputError("[words] takes a dataset's languages from its pair: no src_lang / tgt_lang", path)
    if "families" in words:
        nmt = words.get("nmt", False) if "dataset" in words else "nmt_tokens" in words["train"]
        try:
            resolve(words["families"], nmt)
        except QEInputError as exc:
            raise QEInputError(f"words.families: {exc.message}", path) from None
    for name in FAMILY_SETTINGS:
        if name in words and name not in words.get("families", ()):
            raise QEInputError(
                f"[words.{name}] sets the {name} family: list {name!r} in words.families", path
            )
    document["config_file"] = str(path.resolve())
    return document


def _say(progress: bool, text: str) -> None:
    if progress:
        print(f"qe: words: {text}", file=sys.stderr, flush=True)


@dataclasses.dataclass
class Split:
    """One split's tagged data, its NMT log-probabilities (or None) and the files it was read from."""

    data: WordLevelData
    nmt: WordLogprobs | None
    files: dict[str, str]


def _first(split: Split, n: int) -> Split:
    """The first ``n`` sentences of a split."""
    data = split.data
    values = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    cut = {name: value[:n] if isinstance(value, list) else value for name, value in values.items()}
    nmt = split.nmt
    if nmt is not None:
        nmt = dataclasses.replace(nmt, words=nmt.words[:n], sentence=nmt.sentence[:n])
    return Split(WordLevelData(**cut), nmt, split.files)


def load_splits(config: dict[str, Any], data_dir: str | Path | None, progress: bool) -> dict[str, Split]:
    """train, dev (and test) as configured, tags derived from post-edits where none are given."""
    words = config["words"]
    splits: dict[str, Split] = {}
    if "dataset" in words:
        pair = words["dataset"].removeprefix("mlqe-pe/")
        for name, split in (("train", "train"), ("dev", "dev"), ("test", "test20")):
            _say(progress, f"reading {words['dataset']} {split}")
            data = load_word_level(pair, split, data_dir)
            nmt = load_word_logprobs(pair, split, data.mt, data_dir) if words.get("nmt", False) else None
            splits[name] = Split(data, nmt, {"dataset": words["dataset"], "split": split, **data.files})
    else:
        for name in ("train", "dev", "test"):
            if name not in words:
                continue
            files = words[name]
            _say(progress, f"reading the {name} files")
            data = read_word_level(
                files["src"],
                files["mt"],
                tags=files.get("tags"),
                source_tags=files.get("source_tags"),
                alignments=files.get("alignments"),
                post_edits=files.get("post_edits"),
            )
            nmt = None
            if "nmt_tokens" in files:
                nmt = read_word_logprobs(files["nmt_tokens"], files["nmt_logprobs"], data.mt)
            splits[name] = Split(data, nmt, dict(files))
    limit = words.get("max_train_sentences")
    if limit is not None and limit < len(splits["train"].data):
        splits["train"] = _first(splits["train"], limit)
    lexicon = None
    for name, split in splits.items():
        data = split.data
        if data.mt_tags is not None and data.src_tags is not None:
            continue
        if data.alignments is None and lexicon is None:
            _say(progress, "training IBM1 links to derive source tags from the post-edits")
            train = splits["train"].data
            lexicon = Lexicon.train(train.src, train.mt)
        _say(progress, f"deriving the {name} tags from the post-edits")
        split.data = derive_split(data, lexicon)
    return splits


def derive_split(data: WordLevelData, lexicon: Lexicon | None) -> WordLevelData:
    """``data`` with its three kinds of tags derived from its post-edits (``qe.words.derive``), source
    words through its alignments, or through ``lexicon``'s links both ways when it has none."""
    assert data.post_edits is not None
    mt_tags, gap_tags, src_tags = [], [], []
    for k, (src, mt, pe) in enumerate(zip(data.src, data.mt, data.post_edits, strict=True)):
        if data.alignments is not None:
            alignment = data.alignments[k]
        else:
            assert lexicon is not None
            links = lexicon.links(src, mt)
            alignment = {(int(i), j) for j, i in enumerate(links.mt_to_src.tolist()) if i >= 0}
            alignment |= {(i, int(j)) for i, j in enumerate(links.src_to_mt.tolist()) if j >= 0}
        tags = derive_tags(src, mt, pe, sorted(alignment))
        mt_tags.append(tags.mt)
        gap_tags.append(tags.gaps)
        src_tags.append(tags.src)
    return dataclasses.replace(data, mt_tags=mt_tags, gap_tags=gap_tags, src_tags=src_tags)


def _lines(tables, kind: str, bad: np.ndarray) -> list[list[str]]:
    return [[BAD if b else OK for b in line] for line in tables.sentences(kind, bad)]


def split_metrics(tables, gold: dict[str, np.ndarray], predicted: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per kind, MCC, F1-OK, F1-BAD, F1-MULT and the number of tags (``qe.evaluation.wordmetrics``)."""
    out = {}
    for kind in KINDS:
        scores = word_scores(_lines(tables, kind, gold[kind]), _lines(tables, kind, predicted[kind]))
        out[kind] = {
            name: (round(v, 6) if isinstance(v, float) else v) for name, v in scores.as_dict().items()
        }
    return out


def score_split(
    tagger: WordTagger, tables: FeatureTables, data: WordLevelData
) -> tuple[dict[str, Any], list[SentencePredictions]]:
    """A tagged split's metrics (``split_metrics``) and its sentences for the predictions file, from one
    pass of the tagger: a tag is BAD when its probability reaches its kind's threshold."""
    probability = tagger.bad_probability(tables)
    predicted = {kind: probability[kind] >= tagger.thresholds_[kind] for kind in KINDS}
    metrics = split_metrics(tables, tag_labels(data), predicted)
    return metrics, sentence_predictions(data, tables, probability, predicted)


def sentence_predictions(
    data: WordLevelData,
    tables: FeatureTables,
    probability: dict[str, np.ndarray],
    predicted: dict[str, np.ndarray],
) -> list[SentencePredictions]:
    """Per sentence, its tokens and, per kind, the gold tags, the predicted tags and the probabilities."""
    gold = {"target": data.mt_tags, "gaps": data.gap_tags, "source": data.src_tags}
    values = {kind: tables.sentences(kind, probability[kind]) for kind in KINDS}
    decided = {kind: tables.sentences(kind, predicted[kind]) for kind in KINDS}
    out = []
    for k in range(len(data)):
        out.append(
            SentencePredictions(
                src=tuple(data.src[k]),
                mt=tuple(data.mt[k]),
                gold={kind: tuple(gold[kind][k]) for kind in KINDS},
                tags={kind: tuple(BAD if b else OK for b in decided[kind][k].tolist()) for kind in KINDS},
                probability={kind: tuple(values[kind][k].tolist()) for kind in KINDS},
            )
        )
    return out


def signature(
    config: dict[str, Any], splits: dict[str, Split], learners: dict[str, str], e5_model: str | None = None
) -> dict[str, Any]:
    """What made the model: each data file's sha256 (cut to 16 digits), the settings, the learner asked
    for and the one each kind uses, the versions; ``e5_model``: the e5 file the token head read."""
    import sklearn

    files = {}
    for name, split in splits.items():
        for role, path in split.data.files.items():
            files[f"{name}.{role}"] = sha256_file(path)[:16]
        if split.nmt is not None and "nmt_tokens" in split.files:
            for role in ("nmt_tokens", "nmt_logprobs"):
                files[f"{name}.{role}"] = sha256_file(split.files[role])[:16]
    words = config["words"]
    settings = {key: words[key] for key in sorted(words) if key not in ("train", "dev", "test", "families")}
    versions = {"qe": __version__, "numpy": np.__version__, "scikit-learn": sklearn.__version__}
    sig = {
        "data": words.get("dataset", "files"),
        "families": feature_families(config, splits["train"].nmt is not None),
        "files": files,
        "train_sentences": len(splits["train"].data),
        "settings": settings,
        "seed": config["seed"],
        "learner": words.get("learner", "hgb"),
        "learners": dict(learners),
        "versions": versions,
    }
    if e5_model is not None:
        import jax

        versions["jax"] = jax.__version__
        sig["token_head"] = e5_model
    return sig


def signature_text(sig: dict[str, Any]) -> str:
    """The signature on one line, sacrebleu-style."""
    digest = hashlib.sha256(json.dumps(sig["files"], sort_keys=True).encode()).hexdigest()[:16]
    settings = ",".join(
        f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':')) if isinstance(v, dict) else v}"
        for k, v in sig["settings"].items()
    )
    versions = "|".join(f"{k}:{v}" for k, v in sig["versions"].items())
    token_head = f"|token_head:{sig['token_head']}" if sig.get("token_head") else ""
    return (
        f"words|data:{sig['data']}@{digest}|train:{sig['train_sentences']}|settings:{settings or 'default'}"
        f"|families:{'+'.join(sig.get('families', ['core']))}|seed:{sig['seed']}|tagger:{tagger_text(sig)}"
        f"{token_head}|{versions}"
    )


def tagger_text(sig: dict[str, Any]) -> str:
    """The learner in the signature: ``hgb`` or ``crf``; with ``auto``, the one each kind uses
    (``auto:target=crf,gaps=hgb,source=hgb``)."""
    learner = sig.get("learner", "hgb")
    if learner != "auto":
        return learner
    return "auto:" + ",".join(f"{kind}={used}" for kind, used in sig["learners"].items())


def languages(config: dict[str, Any]) -> tuple[str | None, str | None]:
    """The (source, target) languages: a dataset's pair's, else ``src_lang`` / ``tgt_lang`` (or None)."""
    words = config["words"]
    if "dataset" in words:
        src, _, tgt = words["dataset"].removeprefix("mlqe-pe/").partition("-")
        return src, tgt
    return words.get("src_lang"), words.get("tgt_lang")


def feature_families(config: dict[str, Any], nmt: bool) -> list[str]:
    """The run's word feature families by name, built-in ones first, checked (``resolve``)."""
    names = config["words"].get("families") or list(default_families(nmt))
    return family_names(resolve(names, nmt), nmt)


def run_words(
    config_path: str | Path,
    output_dir: str | Path,
    *,
    overwrite: bool = False,
    data_dir: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train, choose thresholds on dev, score, write the run directory; returns metrics.json's dict."""
    config = load_word_config(config_path)
    words, seed = config["words"], config["seed"]
    started = time.perf_counter()
    splits = load_splits(config, data_dir, progress)
    inputs = [config_path, *(p for s in splits.values() for p in s.data.files.values())]
    with staged_dir(output_dir, "run", overwrite=overwrite, inputs=inputs) as out:
        train = splits["train"]
        _say(
            progress, f"features of {len(train.data):,} training sentences (IBM1 tables, cross-fitted rates)"
        )
        nmt = train.nmt is not None
        families = resolve(words.get("families") or list(default_families(nmt)), nmt)
        problem = refusal(families, *languages(config))
        if problem is not None:
            raise QEInputError(problem, config["config_file"])
        lacking = [name for name, split in splits.items() if split.data.alignments is None]
        if needs_alignments(families) and lacking:
            raise QEInputError(
                f"the aligned word family reads source-MT alignments: [words.{lacking[0]}] gives none "
                "(alignments = ...)",
                config["config_file"],
            )
        featurizer = WordFeaturizer(
            folds=words.get("folds", 5),
            seed=seed,
            families=families,
            languages=languages(config),
            family_settings={name: words[name] for name in FAMILY_SETTINGS if name in words},
        )
        train_tables = featurizer.fit_transform(train.data, train.nmt, say=lambda text: _say(progress, text))
        tagger = WordTagger(seed=seed, **{key: words[key] for key in TAGGER_KEYS if key in words})
        tagger.fit(
            train_tables,
            tag_labels(train.data),
            progress=lambda kind: _say(
                progress, f"training the {KIND_NAMES[kind]} classifier ({tagger.learner})"
            ),
        )
        trained_s = time.perf_counter() - started
        criterion = words.get("threshold", "mcc")
        dev = splits["dev"]
        _say(progress, f"choosing the thresholds on dev ({len(dev.data):,} sentences, max {criterion})")
        dev_tables = featurizer.transform(dev.data, dev.nmt)
        tagger.choose_thresholds(dev_tables, tag_labels(dev.data), criterion)
        learners = {kind: tagger.learners_[kind] for kind in KINDS}
        _say(progress, "learners: " + ", ".join(f"{KIND_NAMES[k]} {v}" for k, v in learners.items()))
        metrics: dict[str, Any] = {"level": "word"}
        predictions = {}
        metrics["dev"], predictions["dev"] = score_split(tagger, dev_tables, dev.data)
        if "test" in splits:
            test = splits["test"]
            _say(progress, f"scoring test ({len(test.data):,} sentences)")
            test_tables = featurizer.transform(test.data, test.nmt)
            metrics["test"], predictions["test"] = score_split(tagger, test_tables, test.data)
        head = featurizer.family_states_.get(TOKEN_HEAD)
        if head is not None:
            metrics["token_head"] = token_head_summary(head)
        sig = signature(config, splits, learners, head.model.encoder.model_id if head is not None else None)
        metrics |= {
            "thresholds": {kind: round(tagger.thresholds_[kind], 6) for kind in KINDS},
            "threshold_chosen_on": f"dev (max {criterion})",
            "learner": tagger.learner,
            "learners": learners,
            "learner_dev": learner_dev(tagger),
            "iterations": dict(tagger.iterations_),
            "crf_l2": dict(tagger.l2_),
            "nmt_features": train.nmt is not None,
            "families": family_names(families, nmt),
            "train_sentences": len(train.data),
            "training_s": round(trained_s, 1),
            "signature": signature_text(sig),
        }
        _say(progress, f"writing {MODEL_FILE}")
        save_word_model(out / MODEL_FILE, featurizer, tagger, sig)
        resolved = {k: v for k, v in config.items() if k != "config_file"}
        write_text_atomic(out / "config.toml", tomli_w.dumps(resolved))
        write_text_atomic(out / "signature.txt", metrics["signature"] + "\n")
        write_text_atomic(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")
        for split, sentences in predictions.items():
            write_word_predictions(out / WORD_PREDICTIONS[split], sentences)
    return metrics


def learner_dev(tagger: WordTagger) -> dict[str, dict[str, dict[str, float]]]:
    """Per kind, each learner it was fitted with: its dev-chosen threshold and the criterion reached."""
    return {
        kind: {
            learner: {key: round(value, 6) for key, value in figures.items()}
            for learner, figures in tagger.candidates_[kind].items()
        }
        for kind in KINDS
    }


def summary(metrics: dict[str, Any]) -> str:
    """metrics.json as a small table: per split and kind, MCC and F1-MULT, with the thresholds."""
    lines = ["| split | kind | MCC | F1-MULT | F1-OK | F1-BAD | threshold |", "|---|---|---|---|---|---|---|"]
    for split in ("dev", "test"):
        for kind in KINDS if split in metrics else ():
            m = metrics[split][kind]
            lines.append(
                f"| {split} | {KIND_NAMES[kind]} | {m['mcc']:.3f} | {m['f1_mult']:.3f} | {m['f1_ok']:.3f} "
                f"| {m['f1_bad']:.3f} | {metrics['thresholds'][kind]:.3f} |"
            )
    return "\n".join(lines)
