"""Tagging new (source, MT) pairs with a saved word model (``qe predict --words``): the inputs read and
checked, the tags and probabilities as JSON lines.

The source and MT files are read as every word-level file is (``qe.words.files.read_word_level``:
strict UTF-8, no blank line, as many lines in each), tokens split at whitespace, as MLQE-PE's files
are tokenized; a line of more than ``MAX_TOKENS`` tokens is refused before any work (the IBM1 links
of a sentence cost source x MT tokens). The NMT pieces and log-probabilities
(``qe.wordmodel.nmtprobs``), and the source-MT alignments (``i-j`` pairs, 0-based, a line per pair), are
read exactly when the model was trained with them. Pairs are tagged
in blocks of ``BLOCK`` so memory does not grow with the input beyond the input itself.

Each output line is one JSON object: ``id`` (0-based line number), ``src_tokens`` and ``mt_tokens``
(the tokens the tags belong to, as split here: a reader never has to split again), ``mt_tags`` and
``mt_bad_probability`` (one per MT token), ``gap_tags`` and ``gap_bad_probability`` (N+1 for N MT
tokens: before the first token, between tokens, after the last; not interleaved with the words),
``src_tags`` and ``src_bad_probability`` (one per source token). A token is ``BAD`` when its
probability reaches the model's threshold of its kind.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from qe.infra.errors import QEInputError
from qe.wordmodel.features import KINDS
from qe.wordmodel.modelfile import WordModel, load_word_model
from qe.wordmodel.nmtprobs import WordLogprobs, read_word_logprobs
from qe.words.files import WordLevelData, read_word_level
from qe.words.predictions import KIND_FIELDS
from qe.words.tags import BAD, OK

MAX_TOKENS = 2000
"""The most tokens a source or MT line may hold (``ibm1``'s limit, docs/length-limits.md)."""
BLOCK = 2000


def read_inputs(
    model: WordModel,
    model_path: str | Path,
    src: str | Path,
    mt: str | Path,
    nmt_tokens: str | Path | None = None,
    nmt_logprobs: str | Path | None = None,
    alignments: str | Path | None = None,
) -> tuple[WordLevelData, WordLogprobs | None]:
    """The checked token lists (with the source-MT alignments when the model reads them) and, when
    the model reads them, the NMT log-probabilities."""
    given = nmt_tokens is not None or nmt_logprobs is not None
    if model.nmt and (nmt_tokens is None or nmt_logprobs is None):
        raise QEInputError(
            "the word model was trained with NMT log-probabilities: give --nmt-tokens and --nmt-logprobs",
            model_path,
        )
    if not model.nmt and given:
        raise QEInputError(
            "the word model was trained without NMT log-probabilities: leave out --nmt-tokens and "
            "--nmt-logprobs",
            model_path,
        )
    if model.alignments != (alignments is not None):
        raise QEInputError(
            "the word model reads each pair's source-MT alignments (its aligned family): give --alignments"
            if model.alignments
            else "the word model was trained without source-MT alignments: leave out --alignments",
            model_path,
        )
    data = read_word_level(src, mt, alignments=alignments)
    for path, lines in ((src, data.src), (mt, data.mt)):
        for number, tokens in enumerate(lines, start=1):
            if len(tokens) > MAX_TOKENS:
                raise QEInputError(f"{len(tokens):,} tokens: at most {MAX_TOKENS:,} are tagged", path, number)
    nmt = None
    if model.nmt:
        assert nmt_tokens is not None and nmt_logprobs is not None
        nmt = read_word_logprobs(nmt_tokens, nmt_logprobs, data.mt)
    return data, nmt


def _block(
    data: WordLevelData, nmt: WordLogprobs | None, rows: slice
) -> tuple[WordLevelData, WordLogprobs | None]:
    links = None if data.alignments is None else data.alignments[rows]
    part = WordLevelData(data.src[rows], data.mt[rows], alignments=links)
    if nmt is not None:
        nmt = dataclasses.replace(nmt, words=nmt.words[rows], sentence=nmt.sentence[rows])
    return part, nmt


def tag_rows(
    model: WordModel, data: WordLevelData, nmt: WordLogprobs | None, model_path: str | Path = ""
) -> Iterator[dict[str, object]]:
    """One object per pair (see the module docstring), in input order; ``qe serve`` answers with the
    same objects. A probability that is not finite is refused naming ``model_path`` (the model's doing)."""
    for start in range(0, len(data), BLOCK):
        part, part_nmt = _block(data, nmt, slice(start, start + BLOCK))
        tables, probability = model.tag(part, part_nmt)
        per_sentence = {kind: tables.sentences(kind, probability[kind]) for kind in KINDS}
        for k in range(len(part)):
            row: dict[str, object] = {
                "id": start + k,
                "src_tokens": list(part.src[k]),
                "mt_tokens": list(part.mt[k]),
            }
            for kind in KINDS:
                values = per_sentence[kind][k]
                if not np.isfinite(values).all():
                    raise QEInputError(
                        f"pair {start + k}: a {kind} probability is not a finite number", model_path
                    )
                threshold = model.thresholds[kind]
                row[f"{KIND_FIELDS[kind]}_tags"] = [BAD if p >= threshold else OK for p in values.tolist()]
                row[f"{KIND_FIELDS[kind]}_bad_probability"] = values.tolist()
            yield row


def tag_lines(
    model: WordModel, data: WordLevelData, nmt: WordLogprobs | None, model_path: str | Path = ""
) -> Iterator[str]:
    """One JSON line per pair (see the module docstring), in input order."""
    for row in tag_rows(model, data, nmt, model_path):
        yield json.dumps(row, allow_nan=False) + "\n"


def tag_files(
    model_path: str | Path,
    src: str | Path,
    mt: str | Path,
    nmt_tokens: str | Path | None = None,
    nmt_logprobs: str | Path | None = None,
    alignments: str | Path | None = None,
) -> Iterator[str]:
    """Load the model, read and check every input, then yield the JSON lines."""
    model = load_word_model(model_path)
    data, nmt = read_inputs(model, model_path, src, mt, nmt_tokens, nmt_logprobs, alignments)
    return tag_lines(model, data, nmt, model_path)
