"""A second MT system: Apertium (rule-based, offline, Debian packages) behind one long-lived pipe.

``Apertium(pair).translate(sentences)`` returns one translation per sentence, the text that
``apertium -u PAIR < file`` gives for a file holding just that sentence (in a file of many lines,
Apertium lets a line without final punctuation run on into the next one, and its tagger carries what
it met in one sentence into the next ones; we do neither: see ``_Pipeline``). One pipeline per
(Python) process and pair runs the pair's mode in null-flush mode (the stages that ``apertium -z``
runs): each sentence goes in as Apertium stream text ending in ``\\0`` and comes back ending in
``\\0`` before the next one is sent (about 3.5 ms a sentence for eng-spa). The text (de)formatting
of ``apertium-destxt`` / ``apertium-retxt`` is done here, because those tools swallow the ``\\0``:
stream characters are backslash-escaped and blanks other than one space become "superblanks", so no
input can split or merge sentences. Line breaks inside a sentence become spaces (a translation is
always one line). A sentinel sentence closes every batch and must come back unchanged, which proves
the outputs are still in step.

Translations are cached on disk by sentence hash (``$QE_CACHE_DIR/mt2`` or ``~/.cache/qe/mt2``: a
folder per pair and installed data version, one JSON file per batch, each written atomically; a
corrupt file is dropped with a warning and its sentences translated again). A pipeline that dies or
stalls is restarted once; a second failure raises ``QEInputError`` and caches nothing of that call.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, cache_root, disk_caches_allowed, parse_bounded
from qe.infra.memo import make_room

MEMO_SENTENCES = 200_000
"""Translations kept in memory (the cache file keeps every one)."""

log = logging.getLogger(__name__)

CACHE_VERSION = 1
"""Bumped when the cache layout or the (de)formatting below changes."""

PROTOCOL = 2
"""How sentences go through Apertium (2: each as if it came first, ``_Pipeline``). Part of the data
signature, so the cache folder, a bundle's ``mt2`` member and the signature of every run using it
change with it."""

DEFAULT_DATADIR = Path("/usr/share/apertium")
DEFAULT_TIMEOUT = 120.0
"""Seconds without any output (while sentences are pending) before the pipeline counts as stalled."""

DEBIAN_PAIRS = (
    "afr-nld", "arg-cat", "bel-rus", "cat-ita", "cat-srd", "dan-nor", "en-gl", "eng-cat", "eng-spa", "eo-ca",
    "eo-es", "eo-fr", "es-gl", "es-pt", "es-ro", "eu-en", "eu-es", "fr-es", "fra-cat", "fra-frp",
    "hbs-eng", "hbs-mkd", "hbs-slv", "ind-zlm", "isl-eng", "isl-swe", "mkd-bul", "mkd-eng", "nno-nob",
    "oc-ca", "oc-es", "oci-fra", "pol-szl", "por-cat", "pt-gl", "rus-ukr", "spa-arg", "spa-ast", "spa-cat",
    "spa-ita", "srd-ita", "swe-dan", "swe-nor", "urd-hin",
)  # fmt: skip
"""The language pairs with a Debian 12 package ``apertium-<pair>`` (``apt-cache search apertium``).
A package installs the modes of both directions (``apertium-eng-spa``: ``eng-spa``, ``spa-eng``, ...)."""

APERTIUM_CODES = {
    "afr": "af", "arg": "an", "bel": "be", "bul": "bg", "cat": "ca", "dan": "da", "deu": "de", "eng": "en",
    "epo": "eo", "eus": "eu", "fra": "fr", "glg": "gl", "hin": "hi", "ind": "id", "isl": "is", "ita": "it",
    "mkd": "mk", "nld": "nl", "nno": "nn", "nob": "nb", "nor": "no", "oci": "oc", "pol": "pl", "por": "pt",
    "ron": "ro", "rus": "ru", "slv": "sl", "spa": "es", "srd": "sc", "swe": "sv", "ukr": "uk", "urd": "ur",
    "ces": "cs", "est": "et", "jpn": "ja", "nep": "ne", "sin": "si", "zho": "zh",
}  # fmt: skip
"""Apertium's three-letter codes (ISO 639-3) with a two-letter one: the Debian pairs' languages and
MLQE-PE's; a code not listed here is not checked against the declared languages."""

SENTINEL = "Qesentinelzx"
"""Closes every batch; an unknown word that Apertium passes through unchanged."""
CHUNK = 4
"""Sentences sent to a pipeline together (see ``_Pipeline._chunk``)."""
TAGGER = "apertium-tagger"
"""The stage whose state outlives a sentence (see ``_Pipeline``)."""

_ESCAPED = re.compile(r"([\[\]\\/@<>^${}])")  # apertium-destxt's escape characters
_BLANK_RUN = re.compile(r"[ \t~]+")  # its space characters, less the line breaks we remove first
_LINE_BREAKS = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines splits on
_NONCHARACTERS = re.compile(
    "[\ufdd0-\ufdef"
    + "".join(chr(plane << 16 | low) for plane in range(17) for low in (0xFFFE, 0xFFFF))
    + "]"
)
"""Unicode noncharacters: U+FFFF makes Apertium's pipeline lose its place (a space is sent instead)."""
_FORMAT = re.compile(r"\.\[\]|\[\\@|\\([\[\]\\/@<>^${}])|[\[\]]")  # apertium-retxt's rules
_MODE_PATH = re.compile(r"'(/[^']+)'|(/\S+)")


def deformat(text: str) -> str:
    """``text`` (one line) as ``apertium-destxt`` writes it: escapes, superblanks, end-of-text ``.[]``."""
    text = _NONCHARACTERS.sub(" ", _LINE_BREAKS.sub(" ", text)).replace("\x00", "")
    out: list[str] = []
    pos = 0
    for match in _BLANK_RUN.finditer(text):
        out.append(_ESCAPED.sub(r"\\\1", text[pos : match.start()]))
        run = match.group()
        out.append(run if run == " " else f"[{run}]")
        pos = match.end()
    tail = text[pos:]
    if tail:
        out.append(_ESCAPED.sub(r"\\\1", tail))
        out.append(".[]")
    else:  # the end-of-text dot goes before trailing blanks
        out.insert(len(out) - 1 if out else 0, ".[]")
    return "".join(out)


def reformat(stream: str) -> str:
    """Apertium output stream as plain text, as ``apertium-retxt`` writes it (one line)."""
    text = _FORMAT.sub(lambda m: "@" if m.group() == "[\\@" else (m.group(1) or ""), stream)
    return _LINE_BREAKS.sub(" ", text)


def datadir_default() -> Path:
    """``$APERTIUM_DATADIR`` (as the ``apertium`` command reads it) or /usr/share/apertium."""
    return Path(os.environ.get("APERTIUM_DATADIR") or DEFAULT_DATADIR)


def installed_pairs(datadir: str | Path | None = None) -> list[str]:
    """The installed translation directions (mode names, as ``apertium -l`` lists them), sorted."""
    modes = Path(datadir or datadir_default()) / "modes"
    return sorted(path.stem for path in modes.glob("*.mode"))


def reverse_pair(pair: str, datadir: str | Path | None = None) -> str | None:
    """The installed pair translating back (``eng-spa`` -> ``spa-eng``), or None."""
    src, _, tgt = pair.partition("_")[0].partition("-")
    installed = installed_pairs(datadir)
    back = f"{tgt}-{src}"
    if back in installed:
        return back
    variants = [name for name in installed if name.startswith(back + "_")]
    return variants[0] if variants else None


def pair_languages(pair: str) -> tuple[str, str]:
    """The source and target languages of an Apertium pair as two-letter codes where they have one
    (``eng-spa`` -> ``("en", "es")``, ``spa-eng_US`` -> ``("es", "en")``)."""
    src, _, tgt = pair.partition("_")[0].partition("-")
    return APERTIUM_CODES.get(src, src), APERTIUM_CODES.get(tgt, tgt)


def check_direction(
    pair: str, languages: dict[str, str | None] | None, where: str | Path | None = None
) -> None:
    """Refuse a pair that does not translate the data's source language into its MT's language
    (``spa-eng`` for English-Spanish data gave pseudo-references of the wrong language, silently)."""
    if not languages:
        return
    src, tgt = pair_languages(pair)
    declared = (languages.get("src"), languages.get("tgt"))
    known = all(len(code) == 2 for code in (src, tgt))  # else a code we cannot compare
    if known and all(declared) and (src, tgt) != declared:
        raise QEInputError(
            f"the Apertium pair '{pair}' translates {src} into {tgt}, but the data is {declared[0]} -> "
            f"{declared[1]}: a pseudo-reference must translate the source into the MT's language",
            where,
        )


def debian_package(pair: str) -> str | None:
    """The Debian package holding an Apertium pair (either direction), or None if Debian has none."""
    langs = pair.partition("_")[0].split("-")
    if len(langs) != 2:
        return None
    for name in (f"{langs[0]}-{langs[1]}", f"{langs[1]}-{langs[0]}"):
        if name in DEBIAN_PAIRS:
            return f"apertium-{name}"
    return None


def _missing_pair_message(pair: str, installed: list[str]) -> str:
    package = debian_package(pair)
    have = f" (installed: {', '.join(installed)})" if installed else " (no pair is installed)"
    if package:
        return f"Apertium pair '{pair}' is not installed{have}: install the Debian package {package}"
    return (
        f"Apertium pair '{pair}' is not installed{have} and no Debian package provides it "
        "(`apt-cache search apertium` lists the pairs)"
    )


def default_cache_dir() -> Path:
    """``$QE_CACHE_DIR/mt2`` or ``~/.cache/qe/mt2`` (beside the feature cache)."""
    return cache_root() / "mt2"


def sentence_key(sentence: str) -> str:
    """The cache key of one sentence: a 128-bit BLAKE2 hash of its UTF-8 text."""
    return hashlib.blake2b(sentence.encode("utf-8"), digest_size=16).hexdigest()


def split_at_tagger(script: str) -> tuple[str, str, str]:
    """A ``-z`` mode script cut around its part-of-speech tagger: (the stages before it, the tagger
    stage, the stages after it); ``(script, "", "")`` when there is no tagger stage with stages on
    both sides of it. Stages are separated by ``" | "`` in the scripts ``apertium-wblank-mode`` writes."""
    stages = script.split(" | ")
    tagger = [k for k, stage in enumerate(stages) if stage.lstrip().startswith(TAGGER)]
    if len(tagger) != 1 or tagger[0] in (0, len(stages) - 1):
        return script, "", ""
    k = tagger[0]
    return " | ".join(stages[:k]), stages[k].strip(), " | ".join(stages[k + 1 :])


class _PipeFailure(Exception):
    """The pipeline died, stalled or lost alignment; ``done`` sentences had come back."""

    def __init__(self, message: str, done: int):
        super().__init__(message)
        self.done = done


class _Pipeline:
    """One running pair mode in null-flush mode, fed ``CHUNK`` sentences at a time.

    The mode runs as three process groups joined by pipes: the stages before the tagger, the tagger
    (with ``-d``: it reports each new ambiguity class on stderr), the stages after it. Apertium's HMM
    tagger replaces its class for unknown words whenever it meets an ambiguity class its model does
    not know, and keeps the replacement for every later sentence, so a translation depended on the
    sentences sent before it. A sentence after which the tagger spoke is followed by a new tagger (about
    5 ms; the other stages stay), and a chunk it spoke in is sent again a sentence at a time, so every
    sentence is translated as if it were the first one: what ``apertium -u PAIR`` gives for a file
    holding just that sentence.
    """

    def __init__(self, script: str, env: dict[str, str]):
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self._env = env
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the pipeline)
        head, self._tagger_script, tail = split_at_tagger(script)
        first = self._start(head, subprocess.PIPE, subprocess.PIPE, self._stderr)
        self.groups = [first]
        if self._tagger_script:
            last = self._start(tail, subprocess.PIPE, subprocess.PIPE, self._stderr)
            self._tagger_stderr = tempfile.TemporaryFile()  # noqa: SIM115
            self.groups = [first, last]
            self.groups.insert(1, self._start_tagger())
        self.stdin, self.stdout = first.stdin, self.groups[-1].stdout
        self.tagger_restarts = 0

    def _start(self, stages: str, stdin: Any, stdout: Any, stderr: Any) -> subprocess.Popen:
        """One process group running ``stages`` (``$1`` = ``-n`` for ``-u``, ``$2`` = the tagger's ``-d``)."""
        return subprocess.Popen(
            ["bash", "-c", stages, "apertium", "-n", "-d"],
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=self._env,
            start_new_session=True,  # its own process group: kill() ends every stage
        )

    def _start_tagger(self) -> subprocess.Popen:
        """A new tagger between the first and the last group (on the same pipes)."""
        self._heard = os.fstat(self._tagger_stderr.fileno()).st_size
        first, last = self.groups[0], self.groups[-1]
        return self._start(f"exec {self._tagger_script}", first.stdout, last.stdin, self._tagger_stderr)

    def _tagger_spoke(self) -> bool:
        """Whether the tagger wrote anything (a new ambiguity class) since it was started."""
        return len(self.groups) == 3 and os.fstat(self._tagger_stderr.fileno()).st_size != self._heard

    def _renew_tagger(self) -> None:
        """A new tagger in place of this one (the other stages stay)."""
        _kill_group(self.groups[1])
        self.groups[1] = self._start_tagger()
        self.tagger_restarts += 1

    def alive(self) -> bool:
        return self.pid == os.getpid() and all(group.poll() is None for group in self.groups)

    def stderr_tail(self) -> str:
        """The last line any stage wrote on stderr (the tagger's own reports aside)."""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 2000))
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            return lines[-1].strip() if lines else ""
        return ""

    def translate(self, streams: list[str], timeout: float) -> list[str]:
        """Raw output streams for deformatted ``streams``, one each; a sentinel closes the call and
        must come back unchanged."""
        streams = [*streams, deformat(SENTINEL)]
        outputs: list[str] = []
        try:
            for begin in range(0, len(streams), CHUNK):
                outputs += self._chunk(streams[begin : begin + CHUNK], timeout, done=len(outputs))
            if reformat(outputs[-1]).strip() != SENTINEL:
                message = "outputs out of step with inputs (the sentinel came back changed)"
                raise _PipeFailure(message, len(streams) - 1)
        except _PipeFailure:
            self.kill()
            raise
        return outputs[:-1]

    def _chunk(self, streams: list[str], timeout: float, done: int) -> list[str]:
        """The outputs of a few sentences sent together (the stages then work on them at once). Should
        the tagger speak meanwhile, one of them changed its state and a later one may differ from its
        translation alone: a new tagger, and each sentence sent again on its own, a new tagger after
        any it spoke on (so each output is the one its sentence gives alone)."""
        if len(streams) > 1:
            outputs = self._exchange(streams, timeout, done)
            if not self._tagger_spoke():
                return outputs
            self._renew_tagger()
        outputs = []
        for stream in streams:
            outputs += self._exchange([stream], timeout, done + len(outputs))
            if self._tagger_spoke():
                self._renew_tagger()
        return outputs

    def _exchange(self, streams: list[str], timeout: float, done: int) -> list[str]:
        """Send ``streams`` and read their outputs (``done`` sentences of the call are back)."""
        payload = "".join(stream + "\x00" for stream in streams).encode("utf-8")

        def write() -> None:  # in a thread, so a full output pipe cannot block us while we feed it
            with contextlib.suppress(OSError, ValueError):
                assert self.stdin is not None
                self.stdin.write(payload)
                self.stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            return self._read(len(streams), timeout, done)
        except _PipeFailure:
            self.kill()  # also unblocks the writer
            raise
        finally:
            writer.join()

    def _read(self, count: int, timeout: float, done: int) -> list[str]:
        """``count`` null-terminated outputs, and nothing after them."""
        assert self.stdout is not None
        fd = self.stdout.fileno()
        outputs: list[bytes] = []
        buffer = b""
        while len(outputs) < count:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise _PipeFailure(f"no output for {timeout:g} s", done + len(outputs))
            data = os.read(fd, 1 << 16)
            if not data:
                status, detail = self._exit_status(within=1.0), self.stderr_tail()
                raise _PipeFailure(status + (f": {detail}" if detail else ""), done + len(outputs))
            *complete, buffer = (buffer + data).split(b"\x00")
            outputs += complete
        if len(outputs) > count or buffer:
            raise _PipeFailure("more outputs than inputs", done + count)
        return [output.decode("utf-8", "replace") for output in outputs]

    def _exit_status(self, within: float) -> str:
        """How the first group that ended did, looked at without reaping it (its process group stays
        ours to kill)."""
        deadline = time.monotonic() + within
        while True:
            for group in self.groups:
                try:
                    info = os.waitid(os.P_PID, group.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    return "exited"
                if info is not None:
                    how = "exited with code" if info.si_code == os.CLD_EXITED else "killed by signal"
                    return f"{how} {info.si_status}"
            if time.monotonic() > deadline:
                return "stopped sending output"
            time.sleep(0.02)

    def kill(self) -> None:
        """End every stage of the pipeline (its process groups) and reap them."""
        if self.pid != os.getpid():  # a forked child must not touch its parent's pipeline
            return
        for group in self.groups:
            _kill_group(group)

    def close(self) -> None:
        """Kill the pipeline and release its pipes."""
        if self.pid != os.getpid():
            return
        self.kill()
        files = [self._stderr, getattr(self, "_tagger_stderr", None)]
        for stream in [*(s for group in self.groups for s in (group.stdin, group.stdout)), *files]:
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()


def _kill_group(group: subprocess.Popen) -> None:
    """Kill a process group we started and reap its leader."""
    if group.returncode is None:  # not reaped yet, so the group id cannot belong to anyone else
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group.pid, signal.SIGKILL)
    group.wait()


_PIPELINES: dict[tuple[str, str, str], _Pipeline] = {}
_PIPELINES_LOCK = threading.Lock()


@atexit.register
def close_all() -> None:
    """End every Apertium pipeline this process started (also run at exit)."""
    with _PIPELINES_LOCK:
        for pipeline in _PIPELINES.values():
            pipeline.close()
        _PIPELINES.clear()


class Apertium:
    """An installed Apertium pair (``eng-spa``...) translating lists of sentences, with a disk cache.

    ``cache_dir=None`` uses ``default_cache_dir()``; ``use_cache=False`` neither reads nor writes it.
    ``datadir`` is Apertium's data directory (``apertium -d``; default ``$APERTIUM_DATADIR`` or
    /usr/share/apertium). Raises ``QEInputError`` naming the Debian package when the engine or the
    pair is not installed.
    """

    def __init__(
        self,
        pair: str = "eng-spa",
        *,
        cache_dir: str | Path | None = None,
        use_cache: bool = True,
        datadir: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ):
        if not isinstance(pair, str) or not re.fullmatch(r"[A-Za-z0-9_]+-[A-Za-z0-9_-]+", pair):
            raise QEInputError(f"not an Apertium pair name: {pair!r} (expected e.g. 'eng-spa')")
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise QEInputError(f"timeout must be a positive number of seconds, got {timeout!r}")
        wblank_mode = shutil.which("apertium-wblank-mode")
        if wblank_mode is None or shutil.which("bash") is None:
            package = debian_package(pair) or "apertium-<pair>"
            raise QEInputError(f"Apertium is not installed: install the Debian packages apertium, {package}")
        self.pair = pair
        self.datadir = Path(datadir) if datadir is not None else datadir_default()
        installed = installed_pairs(self.datadir)
        if pair not in installed:
            raise QEInputError(_missing_pair_message(pair, installed))
        mode_file = self.datadir / "modes" / f"{pair}.mode"
        made = subprocess.run([wblank_mode, "-z", mode_file], capture_output=True, text=True, check=False)
        if made.returncode != 0 or not made.stdout.strip():
            detail = (made.stderr.strip().splitlines() or ["no output"])[-1]
            raise QEInputError(f"cannot read the Apertium mode of '{pair}': {detail}", mode_file)
        self.script = made.stdout.strip()  # the mode's stages, each with -z (null flush)
        self.timeout = float(timeout)
        self.use_cache = use_cache
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.signature = self._data_signature()
        self._memo: dict[str, str] | None = None

    def __repr__(self) -> str:
        return f"Apertium({self.pair!r})"

    def reverse(self) -> Apertium:
        """The Apertium pair translating back (for back-translation), with the same settings."""
        back = reverse_pair(self.pair, self.datadir)
        if back is None:
            src, _, tgt = self.pair.partition("_")[0].partition("-")
            raise QEInputError(_missing_pair_message(f"{tgt}-{src}", installed_pairs(self.datadir)))
        settings = {"cache_dir": self.cache_dir, "use_cache": self.use_cache, "timeout": self.timeout}
        return Apertium(back, datadir=self.datadir, **settings)

    def _data_signature(self) -> str:
        """A hash of ``PROTOCOL``, the pipeline command and the size and time of each file and tool in it."""
        digest = hashlib.sha256(f"protocol {PROTOCOL}\n{self.script}".encode())
        paths = [m.group(1) or m.group(2) for m in _MODE_PATH.finditer(self.script)]
        tools = sorted(set(re.findall(r"(?:^|\|)\s*([\w.-]+)", self.script)))
        for path in [*paths, *(shutil.which(tool) or tool for tool in tools)]:
            with contextlib.suppress(OSError):
                stat = os.stat(path)
                digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        return digest.hexdigest()[:16]

    # -- the cache ---------------------------------------------------------------------------

    def _use_cache(self) -> bool:
        """Read and write the disk cache: asked for, and allowed in this process (not in a server)."""
        return self.use_cache and disk_caches_allowed()

    @property
    def cache_path(self) -> Path:
        """The cache folder of this pair and installed data version: one JSON file per batch written."""
        return self.cache_dir / f"{self.pair}-{self.signature}"

    def _load_cache(self) -> dict[str, str]:
        translations: dict[str, str] = {}
        for path in sorted(self.cache_path.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                ok = (
                    isinstance(data, dict)
                    and data.get("version") == CACHE_VERSION
                    and data.get("pair") == self.pair
                    and isinstance(data.get("translations"), dict)
                    and all(isinstance(v, str) for v in data["translations"].values())
                )
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                ok = False
            if ok:
                translations.update(data["translations"])
            else:
                log.warning("ignoring corrupt Apertium translation cache %s: it will be rebuilt", path)
                with contextlib.suppress(OSError):
                    path.unlink()
        return translations

    def _save_cache(self, new: dict[str, str]) -> None:
        """Write ``new`` translations as one more file (atomically; named by their keys)."""
        name = hashlib.sha256("".join(sorted(new)).encode("ascii")).hexdigest()[:24]
        payload = {"version": CACHE_VERSION, "pair": self.pair, "translations": new}
        try:
            with atomic_write(self.cache_path / f"{name}.json") as handle:
                json.dump(payload, handle, ensure_ascii=False)
        except OSError as exc:
            log.warning("could not write the Apertium translation cache in %s (%s)", self.cache_path, exc)

    # -- translation -------------------------------------------------------------------------

    def _pipeline(self) -> _Pipeline:
        key = (self.script, str(self.datadir), self.pair)
        with _PIPELINES_LOCK:
            pipeline = _PIPELINES.get(key)
            if pipeline is None or not pipeline.alive():
                if pipeline is not None:
                    pipeline.close()
                env = {**os.environ, "LC_ALL": "C.UTF-8"}
                pipeline = _PIPELINES[key] = _Pipeline(self.script, env)
            return pipeline

    def _discard(self, pipeline: _Pipeline) -> None:
        key = (self.script, str(self.datadir), self.pair)
        with _PIPELINES_LOCK:
            if _PIPELINES.get(key) is pipeline:
                del _PIPELINES[key]
        pipeline.close()

    def _run(self, sentences: list[str]) -> list[str]:
        """Translations through the pipeline: restarted once if it fails, then QEInputError."""
        streams = [deformat(s) for s in sentences]
        failure: _PipeFailure | None = None
        for _attempt in range(2):
            pipeline = self._pipeline()
            try:
                with pipeline.lock:
                    return [reformat(out) for out in pipeline.translate(streams, self.timeout)]
            except _PipeFailure as exc:
                self._discard(pipeline)
                failure = exc
                where = f"at sentence {min(exc.done + 1, len(sentences))} of {len(sentences)}"
                log.warning("Apertium %s failed %s (%s)", self.pair, where, exc)
        raise QEInputError(f"Apertium {self.pair} failed twice, {where}: {failure}")

    def translate(self, sentences: Iterable[str]) -> list[str]:
        """One translation per sentence, in order (cached ones are not sent to Apertium again)."""
        if isinstance(sentences, str | bytes) or not isinstance(sentences, Iterable):
            raise QEInputError(f"expected a list of sentences, got {type(sentences).__name__}")
        sentences = list(sentences)
        keys: list[str] = []
        for index, sentence in enumerate(sentences, start=1):
            if not isinstance(sentence, str):
                raise QEInputError(f"sentence {index} is a {type(sentence).__name__}, not text")
            try:
                keys.append(sentence_key(sentence))
            except UnicodeEncodeError as exc:
                raise QEInputError(f"sentence {index} is not valid Unicode ({exc.reason})") from None
        if self._memo is None:
            self._memo = self._load_cache() if self._use_cache() else {}
        todo = {key: s for key, s in zip(keys, sentences, strict=True) if key not in self._memo}
        if todo:
            fresh = dict(zip(todo, self._run(list(todo.values())), strict=True))
            if self._use_cache():
                self._save_cache(fresh)
            found = [fresh[key] if key in fresh else self._memo[key] for key in keys]
            make_room(self._memo, MEMO_SENTENCES, adding=len(fresh))  # the cache file keeps them
            self._memo.update(fresh)
            return found
        return [self._memo[key] for key in keys]


# ====================================================================== the bundle member

ENGINES = ("apertium",)
PROVIDES = ("pseudo_ref", "back_translation")
"""The per-pair inputs a second MT system supplies to feature families (``qe.features.base.PairInput``)."""


class SecondMT:
    """A resource bundle's ``mt2`` member: a second MT system behind the inputs families declare.

    ``pseudo_ref`` is the source translated by this system, ``back_translation`` the MT translated
    back into the source language (the reverse pair, when one is installed). The engine starts in
    each process on first use (a pickled member carries only its settings). ``expected`` is the
    installed data signature recorded when the bundle was built: a different installation (another
    package version) gives different translations, so it is warned about once.
    """

    def __init__(self, engine: str = "apertium", pair: str = "eng-spa", expected: str | None = None) -> None:
        if engine not in ENGINES:
            raise QEInputError(f"mt2: unknown engine {engine!r} (known: {', '.join(ENGINES)})")
        self.engine, self.pair, self.expected = engine, pair, expected
        self._engines: dict[str, Apertium] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_engines": {}}

    def __repr__(self) -> str:
        return f"SecondMT({self.engine!r}, {self.pair!r})"

    def forward(self) -> Apertium:
        """The engine translating source sentences (checked to be installed)."""
        if "forward" not in self._engines:
            engine = Apertium(self.pair)
            if self.expected and engine.signature != self.expected:
                log.warning(
                    "mt2: Apertium %s differs from the installation the bundle was built with "
                    "(data signature %s, built with %s): its translations, and so the features, may differ",
                    self.pair,
                    engine.signature,
                    self.expected,
                )
            self._engines["forward"] = engine
        return self._engines["forward"]

    def backward(self) -> Apertium:
        """The engine translating MT output back into the source language."""
        if "backward" not in self._engines:
            self._engines["backward"] = self.forward().reverse()
        return self._engines["backward"]

    def provide(self, name: str, batch: object) -> list[str]:
        """The lines of input ``name`` for a batch of pairs (``src`` / ``mt`` lists)."""
        if name == "pseudo_ref":
            return self.forward().translate(batch.src)  # type: ignore[attr-defined]
        if name == "back_translation":
            return self.backward().translate(batch.mt)  # type: ignore[attr-defined]
        raise QEInputError(f"mt2 cannot provide {name!r} (it provides {', '.join(PROVIDES)})")

    def describe(self) -> dict[str, object]:
        """What the member is, for a bundle manifest or a model: engine, pair, installed data signature."""
        engine = self.forward()
        return {"engine": self.engine, "pair": self.pair, "signature": engine.signature}

    def save(self, path: str | Path) -> None:
        """Write the member file (its settings and data signature), atomically."""
        with atomic_write(path) as handle:
            json.dump({"format": "qe-mt2/1", **self.describe()}, handle, sort_keys=True)
            handle.write("\n")

    @classmethod
    def load(cls, path: str | Path, languages: dict[str, str | None] | None = None) -> SecondMT:
        """Read a member file written by :meth:`save` (no engine is started until used), refusing a
        pair that does not translate ``languages`` (the bundle's) the right way round."""
        try:
            data = parse_bounded(json.loads, Path(path).read_text(encoding="utf-8"), path, "mt2 member file")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise QEInputError("corrupt mt2 member file (not qe-mt2/1 JSON)", path) from None
        if (
            not isinstance(data, dict)
            or data.get("format") != "qe-mt2/1"
            or not isinstance(data.get("pair"), str)
        ):
            raise QEInputError("corrupt mt2 member file (not qe-mt2/1 JSON)", path)
        check_direction(data["pair"], languages, path)
        return cls(str(data.get("engine")), data["pair"], data.get("signature"))
