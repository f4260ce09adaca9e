"""``[wordtags]``: the word tagger (``qe.wordmodel``: ``WordFeaturizer`` + ``WordTagger``) trained on the
bundle's word-level training data, read by the ``wordtags`` feature family.

The data: a registered MLQE-PE pair's word tags (``dataset = "mlqe-pe/<pair>"``, its ``split``, the
training split by default; the test split is refused) and, with ``nmt = true``, its NMT
log-probabilities; or the user's tokenized files ``src``, ``mt``, ``tags`` (2N+1, gaps and MT words
interleaved) and ``source_tags``, with ``nmt_tokens`` and ``nmt_logprobs`` together or not at all.

Cross-fitted as ``[crossencoder]``: one model from all the word-level sentences (it tags every other
pair: dev, test, new text) and one per fold of the bundle's cross-fitted QE training corpus, from the
sentences that share no text with that fold's pairs, so a training pair is tagged by a model that never
saw its tags (its tags come from its post-edit, as its HTER does). A word-level sentence is masked for
fold k when its source or MT equals (``normalize_for_overlap``) the source or MT of a QE corpus pair
whose mask has bit k; one equal to a pair the leakage check dropped is left out of every model. Each
model is a ``.qwords`` file (``qe.wordmodel.modelfile``, checked on load). The BAD threshold of every
kind is ``threshold`` (default 0.5), fixed: choosing it on dev tags would read the dev split.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from qe.bundle.config import check_dataset_languages
from qe.bundle.members import BuildContext, ConfigTable, MemberKind, register_member
from qe.bundle.sections import BundleConfig
from qe.config.rules import SEED, Bool, Fields, Int, Mistake, Number, Str, mistake, registered
from qe.infra.errors import QEInputError
from qe.infra.io import sha256_file

MEMBER = "wordtags"
SUFFIX = ".qwords"  # qe.wordmodel.modelfile.SUFFIX
FILES = ("src", "mt", "tags", "source_tags")
"""The user's word-level training files, all four or none (then ``dataset``)."""
NMT_FILES = ("nmt_tokens", "nmt_logprobs")
TAGGER = ("max_iter", "learning_rate", "max_leaf_nodes", "min_samples_leaf")
DEFAULTS: dict[str, Any] = {"threshold": 0.5, "seed": 0, "nmt": False}


def _one_source(table: dict[str, Any]) -> Mistake:
    """A registered dataset or all four training files, not both; the NMT files together, with files."""
    files = [key for key in FILES if key in table]
    if "dataset" in table and (files or any(k in table for k in NMT_FILES)):
        key = (files or [k for k in NMT_FILES if k in table])[0]
        return key, table[key], "nothing beside dataset: give dataset (nmt = true) or the training files"
    if "dataset" not in table and len(files) != len(FILES):
        missing = next(key for key in ("dataset", *FILES) if key not in table)
        return missing, None, 'an MLQE-PE dataset ("mlqe-pe/en-de") or all of src, mt, tags and source_tags'
    if "dataset" not in table and sum(k in table for k in NMT_FILES) == 1:
        missing = next(k for k in NMT_FILES if k not in table)
        return missing, None, "nmt_tokens and nmt_logprobs together"
    if "dataset" not in table and "nmt" in table:
        return "nmt", table["nmt"], "nmt = true is for a dataset; give nmt_tokens and nmt_logprobs"
    return None


RULE = Fields(
    {
        "dataset": Str(registered("dataset"), noun="dataset"),
        "split": Str(),
        "nmt": Bool(),
        **{role: Str() for role in (*FILES, *NMT_FILES)},
        "corpus": Str(),  # default: the cross-fitted QE training corpus
        "threshold": Number(0, 1, open_low=True),
        "seed": SEED,
        "max_iter": Int(1, 10_000),
        "learning_rate": Number(0, 1, open_low=True),
        "max_leaf_nodes": Int(2, 4096),
        "min_samples_leaf": Int(1, 1_000_000),
    },
    rules=(_one_source,),
)


def _check(config: BundleConfig, key: str, given: ConfigTable, config_path: Path) -> dict[str, Any]:
    """An MLQE-PE dataset's training split (the bundle's languages); the corpus whose folds the models
    follow is the cross-fitted QE training corpus; defaults filled."""
    from qe.data import DATASETS

    table = dict(given)
    if "dataset" in table:
        name = table["dataset"]
        if not name.startswith("mlqe-pe/"):
            raise QEInputError(
                mistake("wordtags.dataset", name, 'an MLQE-PE pair with word tags ("mlqe-pe/<pair>")'),
                config_path,
            )
        check_dataset_languages("wordtags", name, config, config_path)
        table.setdefault("split", "train")
        dataset = DATASETS[name]
        if dataset.split_name(table["split"]) == dataset.test_split:
            allowed = "a training split (the test tags would leak)"
            raise QEInputError(mistake("wordtags.split", table["split"], allowed), config_path)
    fitted = [n for n, c in config.corpora.items() if c.is_qe and c.cross_fit]
    name = table.setdefault("corpus", fitted[0] if fitted else "")
    if name not in fitted:
        raise QEInputError(
            "[wordtags] follows the folds of the cross-fitted QE training corpus (a [corpora.NAME] with "
            f"cross_fit), not {name or 'none'!r}: a model that saw a training pair's tags must not tag it",
            config_path,
        )
    for field, default in DEFAULTS.items():
        table.setdefault(field, default)
    table["folds"] = config.corpora[name].cross_fit
    return table


def read_word_data(context: BuildContext, table: ConfigTable) -> tuple[Any, Any, dict[str, str]]:
    """The word-level training data, its NMT log-probabilities (or None) and the files read (role ->
    path)."""
    from qe.wordmodel.nmtprobs import load_word_logprobs, read_word_logprobs
    from qe.words.files import load_word_level, read_word_level

    if "dataset" in table:
        pair = table["dataset"].removeprefix("mlqe-pe/")
        data = load_word_level(pair, table["split"], context.root)
        nmt = load_word_logprobs(pair, table["split"], data.mt, context.root) if table["nmt"] else None
        return data, nmt, dict(data.files)
    paths = {role: context.path(table[role]) for role in (*FILES, *NMT_FILES) if role in table}
    data = read_word_level(paths["src"], paths["mt"], tags=paths["tags"], source_tags=paths["source_tags"])
    nmt = None
    if "nmt_tokens" in paths:
        nmt = read_word_logprobs(paths["nmt_tokens"], paths["nmt_logprobs"], data.mt)
    return data, nmt, {role: str(path) for role, path in paths.items()}


def sentence_masks(
    src: list[str],
    mt: list[str],
    corpus_src: list[str],
    corpus_mt: list[str],
    masks: np.ndarray,
    kept: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per word-level sentence (``src`` / ``mt`` as text): its fold mask (bit k: it shares its source or
    MT with a kept QE corpus pair masked for fold k; ``masks[j]`` is the mask of pair ``kept[j]``) and
    whether it may be used at all (it shares no text with a pair the leakage check dropped)."""
    from qe.resources.leakage import normalize_for_overlap

    by_src: dict[str, int] = {}
    by_mt: dict[str, int] = {}
    for j, i in enumerate(kept):
        s, m = normalize_for_overlap(corpus_src[i]), normalize_for_overlap(corpus_mt[i])
        by_src[s] = by_src.get(s, 0) | int(masks[j])
        by_mt[m] = by_mt.get(m, 0) | int(masks[j])
    dropped: set[tuple[str, str]] = set()
    for i in sorted(set(range(len(corpus_src))) - {int(i) for i in kept}):
        dropped.update(
            (("src", normalize_for_overlap(corpus_src[i])), ("mt", normalize_for_overlap(corpus_mt[i])))
        )
    out = np.zeros(len(src), dtype=np.int64)
    usable = np.ones(len(src), dtype=bool)
    for k, (s, m) in enumerate(zip(src, mt, strict=True)):
        s, m = normalize_for_overlap(s), normalize_for_overlap(m)
        out[k] = by_src.get(s, 0) | by_mt.get(m, 0)
        usable[k] = ("src", s) not in dropped and ("mt", m) not in dropped
    return out, usable


def subset(data: Any, nmt: Any, rows: np.ndarray) -> tuple[Any, Any]:
    """The sentences ``rows`` of word-level data and of its NMT log-probabilities."""
    cut = {
        f.name: (value if f.name == "files" or value is None else [value[i] for i in rows])
        for f in dataclasses.fields(data)
        for value in [getattr(data, f.name)]
    }
    part = type(data)(**cut)
    if nmt is not None:
        nmt = dataclasses.replace(nmt, words=[nmt.words[i] for i in rows], sentence=nmt.sentence[rows])
    return part, nmt


def train_model(data: Any, nmt: Any, table: ConfigTable, path: Path, signature: dict[str, Any]) -> dict:
    """Fit the featurizer and tagger on ``data`` (thresholds ``table["threshold"]``), save them to
    ``path``; what the manifest says of the model."""
    from qe.wordmodel.features import KINDS, WordFeaturizer, tag_labels
    from qe.wordmodel.modelfile import save_word_model
    from qe.wordmodel.tagger import WordTagger

    featurizer = WordFeaturizer(seed=int(table["seed"]))
    tables = featurizer.fit_transform(data, nmt)
    tagger = WordTagger(seed=int(table["seed"]), **{k: table[k] for k in TAGGER if k in table})
    tagger.fit(tables, tag_labels(data))
    tagger.thresholds_ = dict.fromkeys(KINDS, float(table["threshold"]))
    save_word_model(path, featurizer, tagger, signature)
    return {"sentences": len(data), "iterations": dict(tagger.iterations_)}


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """The model of all usable word-level sentences, then one per fold without those it masks."""
    name = table["corpus"]
    corpus = context.corpora[name]
    qe = corpus.qe
    assert corpus.masks is not None  # planned for the cross-fitted corpus before members are built
    rows = corpus.rows if corpus.rows is not None else np.arange(len(qe))
    data, nmt, files = read_word_data(context, table)
    masks, usable = sentence_masks(
        [" ".join(s) for s in data.src], [" ".join(m) for m in data.mt], qe.src, qe.mt, corpus.masks, rows
    )
    signature = {
        "data": {role: sha256_file(path) for role, path in sorted(files.items()) if Path(path).is_file()},
        "settings": {k: table[k] for k in (*DEFAULTS, *TAGGER, "dataset", "split") if k in table},
    }
    out = outputs[MEMBER]
    every = np.flatnonzero(usable)
    summary = train_model(*subset(data, nmt, every), table, out, signature)
    summary["left_out"] = int(len(data) - len(every))
    folds = []
    for fold in range(int(table["folds"])):
        kept = np.flatnonzero(usable & (((masks >> fold) & 1) == 0))
        path = out.with_name(f"{MEMBER}.fold{fold}{SUFFIX}")
        fold_summary = train_model(*subset(data, nmt, kept), table, path, {**signature, "fold": fold})
        folds.append(context.fold_file(path, {MEMBER: int(len(every) - len(kept))}, fold_summary))
    settings = {
        k: table[k] for k in (*DEFAULTS, *TAGGER, "dataset", "split", *FILES, *NMT_FILES) if k in table
    }
    settings |= {
        "data_sha256": hashlib.sha256(repr(sorted(signature["data"].items())).encode()).hexdigest(),
        "folds": int(table["folds"]),
    }
    return {MEMBER: context.cross_fitted_entry(MEMBER, out, name, settings, summary, folds)}


def _load(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> Any:
    from qe.wordmodel.modelfile import load_word_model

    return load_word_model(path)


register_member(
    MemberKind(
        kind="wordtags",
        load=_load,
        section="wordtags",
        rule=RULE,
        files=lambda key, table: {MEMBER: f"{MEMBER}{SUFFIX}"},
        build=_build,
        check=_check,
        inputs=lambda table: [table[k] for k in (*FILES, *NMT_FILES) if k in table],
    )
)
