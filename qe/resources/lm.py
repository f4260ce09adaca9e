"""KenLM n-gram language models: find the KenLM tools, train a model, and score tokenized sentences.

Training runs KenLM's ``lmplz`` (modified Kneser-Ney) and ``build_binary``; scoring uses the ``kenlm``
Python module. Both sides split tokens on the same (Python ``str.split``) whitespace, so a corpus
and the sentences scored against it are tokenized identically.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError

log = logging.getLogger(__name__)

KENLM_BIN_ENV = "QE_KENLM_BIN"
"""Environment variable naming a directory holding ``lmplz``, ``build_binary`` and ``query``."""

REPO_TOOLS_BIN = Path(__file__).resolve().parents[2] / ".tools" / "kenlm" / "bin"
"""Where ``scripts/install_kenlm.sh`` builds the KenLM tools."""

INSTALL_HINT = (
    "run `make install` (or scripts/install_kenlm.sh) to build the KenLM tools, "
    f"or set {KENLM_BIN_ENV} to the directory holding them"
)
MIN_ORDER = 2  # the kenlm query module cannot load unigram models
MAX_ORDER = 6  # KenLM's default compile-time limit (KENLM_MAX_ORDER)
UNK = "<unk>"
# KenLM's reserved words: lmplz refuses them inside a corpus, and the query module gives them
# meaningless scores inside a sentence. We drop them from training text and score them as unknown.
_RESERVED = frozenset({"<s>", "</s>", UNK})
_DISCOUNT_FAILURE = ("BadDiscountException", "--discount_fallback")
_STDERR_TAIL_BYTES = 16_384


def find_kenlm_binary(name: str) -> Path:
    """Locate a KenLM command-line tool: ``$QE_KENLM_BIN``, then ``<repo>/.tools/kenlm/bin``, then PATH."""
    searched: list[Path] = []
    env_dir = os.environ.get(KENLM_BIN_ENV)
    if env_dir:
        searched.append(Path(env_dir) / name)
    searched.append(REPO_TOOLS_BIN / name)
    for candidate in searched:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    places = ", ".join(str(p.parent) for p in searched)
    raise QEInputError(f"KenLM tool '{name}' not found (looked in {places} and PATH); {INSTALL_HINT}")


# --------------------------------------------------------------------------------------------------
# Training


def train_lm(
    corpus: Path | str | Sequence[Path] | Iterable[str],
    out_path: Path | str,
    order: int = 3,
    binary: bool = True,
    memory: str = "20%",
    progress: bool = False,
    label: str | None = None,
) -> Path:
    """Estimate an ``order``-gram modified Kneser-Ney LM from tokenized text and write it to ``out_path``.

    ``corpus`` is a file path (a ``str`` is taken as a path too), a list of file paths, or an iterable
    of text lines; tokens are whitespace-separated. Blank lines and KenLM's reserved words are skipped.
    If the corpus is too small for lmplz to estimate discounts, it is retried with
    ``--discount_fallback`` and a warning is logged. The output is a KenLM probing binary
    (``binary=True``) or an ARPA file, written atomically. ``memory`` is lmplz's ``-S`` (e.g. "20%",
    "1G"). ``label`` names the model in messages (a bundle member such as ``lm.src``; default: the
    corpus). Returns ``out_path``.
    """
    if not isinstance(order, int) or not MIN_ORDER <= order <= MAX_ORDER:
        raise QEInputError(
            f"language model order must be an integer from {MIN_ORDER} to {MAX_ORDER}, got {order!r}"
        )
    out_path = Path(out_path)
    lmplz = find_kenlm_binary("lmplz")
    build_binary = find_kenlm_binary("build_binary") if binary else None
    out_path.parent.mkdir(parents=True, exist_ok=True)
    # Work beside the output: same filesystem, so the final rename is atomic; lmplz's own temporary
    # files go there too rather than into a possibly small /tmp.
    work = Path(tempfile.mkdtemp(prefix=f".{out_path.name}.", suffix=".tmp", dir=out_path.parent))
    try:
        text = work / "corpus.txt"
        corpus_name = _write_corpus(corpus, text)
        name = label or corpus_name
        arpa = work / "lm.arpa"
        base_cmd = [str(lmplz), "-o", str(order), "-S", memory, "-T", str(work / "lmplz-")]
        code, stderr = _run(base_cmd, stdin=text, stdout=arpa, progress=progress)
        if code != 0 and any(marker in stderr for marker in _DISCOUNT_FAILURE):
            log.warning(
                "%s: corpus too small for lmplz to estimate Kneser-Ney discounts; "
                "retrying with --discount_fallback (fixed discounts, a lower-quality model)",
                name,
            )
            code, stderr = _run(
                [*base_cmd, "--discount_fallback"], stdin=text, stdout=arpa, progress=progress
            )
        if code != 0:
            raise QEInputError(f"lmplz failed (exit {code}): {_tool_message(stderr)}", name)
        result = arpa
        if build_binary is not None:
            result = work / "lm.bin"
            code, stderr = _run(
                [str(build_binary), "probing", str(arpa), str(result)],
                stdin=None,
                stdout=None,
                progress=progress,
            )
            if code != 0:
                raise QEInputError(f"build_binary failed (exit {code}): {_tool_message(stderr)}", out_path)
        os.replace(result, out_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out_path


def _write_corpus(corpus: Any, dest: Path) -> str:
    """Validate and normalise the corpus into ``dest`` (single spaces, no blank lines); return its name."""
    sources = _corpus_sources(corpus)
    names: list[str] = []
    with open(dest, "wb") as out:
        for name, lines in sources:
            names.append(name)
            n_tokens = 0
            for number, line in lines:
                tokens = [tok for tok in line.split() if tok not in _RESERVED]
                if not tokens:
                    continue
                try:
                    out.write((" ".join(tokens) + "\n").encode("utf-8"))
                except UnicodeEncodeError as exc:
                    raise QEInputError(f"text is not valid Unicode ({exc.reason})", name, number) from None
                n_tokens += len(tokens)
            if n_tokens == 0:
                raise QEInputError("corpus is empty: no tokens to train a language model on", name)
    return names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} more)"


def _corpus_sources(corpus: Any) -> Iterator[tuple[str, Iterator[tuple[int, str]]]]:
    """Yield (name, numbered lines) for a path, a list of paths, or an iterable of lines."""
    if isinstance(corpus, str | os.PathLike):
        yield str(corpus), _file_lines(Path(corpus))
        return
    if isinstance(corpus, bytes):
        raise TypeError("corpus must be a path, a list of paths or an iterable of str lines, not bytes")
    items = iter(corpus)
    first = next(items, None)
    if first is None:
        raise QEInputError("corpus is empty: no tokens to train a language model on", "<corpus>")
    if isinstance(first, os.PathLike):
        for item in itertools.chain([first], items):
            if not isinstance(item, str | os.PathLike):
                raise TypeError(f"a corpus list of paths holds a {type(item).__name__}")
            yield str(item), _file_lines(Path(item))
        return
    yield "<corpus>", _memory_lines(itertools.chain([first], items))


def _file_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of a corpus file, strictly UTF-8 (a leading BOM is ignored)."""
    if not path.is_file():
        raise QEInputError("corpus file not found", path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise QEInputError(f"invalid UTF-8 at byte {exc.start}", path, number) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            yield number, text


def _memory_lines(lines: Iterable[Any]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(lines, start=1):
        if not isinstance(line, str):
            raise TypeError(f"corpus line {number} is a {type(line).__name__}, not str")
        yield number, line


def _run(cmd: list[str], stdin: Path | None, stdout: Path | None, progress: bool) -> tuple[int, str]:
    """Run a KenLM tool; return its exit code and the tail of its stderr (echoed live if ``progress``).

    With ``stdout=None`` the tool's stdout is merged into the captured stream.
    """
    with contextlib.ExitStack() as files:
        fin = subprocess.DEVNULL if stdin is None else files.enter_context(open(stdin, "rb"))
        fout = None if stdout is None else files.enter_context(open(stdout, "wb"))
        proc = subprocess.Popen(
            cmd,
            stdin=fin,
            stdout=subprocess.PIPE if fout is None else fout,
            stderr=subprocess.STDOUT if fout is None else subprocess.PIPE,
        )
        stream = proc.stdout if fout is None else proc.stderr
        assert stream is not None
        tail = b""
        with stream:
            for chunk in iter(lambda: stream.read1(4096), b""):
                tail = (tail + chunk)[-_STDERR_TAIL_BYTES:]
                if progress:
                    sys.stderr.write(chunk.decode("utf-8", "replace"))
                    sys.stderr.flush()
        code = proc.wait()
    return code, tail.decode("utf-8", "replace")


_PROGRESS_LINE = re.compile(r"^[\s*\-0-9|]*$|^===|^Chain sizes|^Warning: changing sort block")


def _tool_message(stderr: str) -> str:
    """The informative last lines of a KenLM tool's output, on one line."""
    lines = [ln.strip() for ln in stderr.splitlines()]
    lines = [ln for ln in lines if ln and not _PROGRESS_LINE.match(ln)]
    return _shorten(" ".join(lines[-3:]) or "no error message")


def _shorten(message: str, limit: int = 400) -> str:
    """Drop C++ source locations and signatures from a KenLM error message and cap its length."""
    message = re.sub(r"\S+\.(?:cc|hh):\d+ in .*? threw (\w+)", r"\1", message)
    message = re.sub(r"\s+", " ", message).strip()
    return message if len(message) <= limit else message[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------------
# Scoring


def clean_token(token: str) -> str:
    """A token as KenLM sees it: inner whitespace becomes '_'; empty or reserved words become <unk>."""
    cleaned = "_".join(token.split())
    return UNK if not cleaned or cleaned in _RESERVED else cleaned


class LanguageModel:
    """A KenLM model (ARPA or binary), loaded lazily and shared per process; pickled by path only.

    Unpickling (e.g. in a joblib worker) does not copy the model: the worker loads the file itself,
    once, through a per-process cache keyed by the file's path, size and modification time.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not self.path.is_file():
            problem = "is not a file" if self.path.exists() else "file not found"
            raise QEInputError(f"language model {problem}", self.path)
        self._model: Any = None

    def __reduce__(self) -> tuple[type[LanguageModel], tuple[Path]]:
        return type(self), (self.path.absolute(),)

    def __repr__(self) -> str:
        return f"LanguageModel({str(self.path)!r})"

    @property
    def model(self) -> Any:
        """The underlying ``kenlm.Model`` (loaded on first use)."""
        if self._model is None:
            try:
                stat = self.path.stat()
            except OSError as exc:
                raise QEInputError(f"cannot read language model: {exc.strerror}", self.path) from None
            try:
                self._model = _load_kenlm(str(self.path.resolve()), stat.st_size, stat.st_mtime_ns)
            except QEInputError as exc:  # name the file as the caller gave it
                raise QEInputError(exc.message, self.path) from None
        return self._model

    def load(self) -> LanguageModel:
        """Load the model now (instead of at first use), so a bad file fails early; returns self."""
        _ = self.model
        return self

    @property
    def order(self) -> int:
        """The model's n-gram order."""
        return int(self.model.order)

    def log10_prob(
        self, tokens: Sequence[str], bos: bool = True, eos: bool = True, *, skip_oov: bool = False
    ) -> float:
        """Total log10 probability of the tokens (plus ``</s>`` if ``eos``), given ``<s>`` if ``bos``.

        With the defaults this is SRILM ``ngram -ppl``'s "logprob" for an open-vocabulary model
        (unknown words scored as ``<unk>``); ``skip_oov=True`` leaves unknown words out of the sum,
        as SRILM does for a closed-vocabulary model.
        """
        sentence = self._sentence(tokens)
        if skip_oov:
            scores = self.model.full_scores(sentence, bos=bos, eos=eos)
            return float(sum(prob for prob, _, oov in scores if not oov))
        return float(self.model.score(sentence, bos=bos, eos=eos))

    def full_scores(
        self, tokens: Sequence[str], bos: bool = True, eos: bool = True
    ) -> list[tuple[float, int, bool]]:
        """Per token (then ``</s>`` if ``eos``): (log10 prob, length of the n-gram used, is OOV)."""
        scores = self.model.full_scores(self._sentence(tokens), bos=bos, eos=eos)
        return [(float(prob), int(length), bool(oov)) for prob, length, oov in scores]

    def perplexity(self, tokens: Sequence[str], eos: bool = True) -> float:
        """Perplexity over the tokens (and ``</s>`` if ``eos``), given ``<s>``: 10^(-logprob / count)."""
        count = len(tokens) + int(eos)
        if count == 0:
            raise ValueError("perplexity of an empty sentence without </s> is undefined")
        return float(10.0 ** (-self.log10_prob(tokens, bos=True, eos=eos) / count))

    def is_oov(self, word: str) -> bool:
        """True if the word is not in the model's vocabulary (``<unk>`` itself counts as unknown)."""
        return clean_token(word) not in self.model

    @staticmethod
    def _sentence(tokens: Sequence[str]) -> str:
        if isinstance(tokens, str):
            raise TypeError("tokens must be a sequence of token strings, not one str")
        return " ".join(clean_token(tok) for tok in tokens)


@functools.lru_cache(maxsize=8)
def _load_kenlm(path: str, size: int, mtime_ns: int) -> Any:
    """Load a model once per process and file version (size and mtime are part of the cache key)."""
    del size, mtime_ns
    try:
        import kenlm
    except ImportError:
        raise QEInputError(
            "the kenlm Python module is not installed: pip install kenlm==0.3.0 (the 'lm' extra), "
            "or run scripts/install_kenlm.sh",
            path,
        ) from None
    config = kenlm.Config()
    config.show_progress = False
    try:
        return kenlm.Model(path, config)
    except UnicodeDecodeError:  # kenlm fails to decode its own error message on binary garbage
        raise QEInputError("not a valid KenLM model (ARPA or binary)", path) from None
    except Exception as exc:  # kenlm raises OSError for unreadable, truncated or malformed files
        reason = re.sub(r"^Cannot read model '.*?' \(", "", str(exc)).rstrip(")")
        raise QEInputError(
            f"not a valid KenLM model (ARPA or binary): {_without_content(reason)}", path
        ) from None


def _without_content(reason: str) -> str:
    """A KenLM load error without the text it quotes from the file (e.g. its first line)."""
    head, quoted, _ = reason.partition('first non-empty line was "')
    if quoted:
        head += "its first non-empty line is not \\data\\ (not an ARPA file)"
    return _shorten(head.split('"', 1)[0])
