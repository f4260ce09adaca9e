"""A scoring worker process: it loads every served model once (and scores one pair with each, so the
first request is as fast as the thousandth), then answers its parent's score requests over a pipe
until the pipe closes. It ignores SIGINT and SIGTERM (the parent drains and then closes the pipe) and
ends when its parent dies.

A message is a list of requests ``(name, src, mt, extra, start, detail)`` (``detail``: ``""``,
``"unusual"`` or ``"features"``, see ``ServedModel.score``), answered by a list of
``("ok", results, clipped)`` or ``("error", status, message)``, the message one line that names no file
of the server's. Several requests for one model are scored in one pass (their pairs together), which
costs little more than one of them alone; should that pass fail, or the clipped scores not be told
apart, each request is scored alone, so that its answer is what it would have been by itself."""

from __future__ import annotations

import ast
import os
import re
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

from qe.infra.errors import QEInputError
from qe.serve.names import REQUEST, ModelEntry

INTERNAL = "the server could not score this request (its log says why)"


def serve_forever(
    conn: Connection, entries: tuple[ModelEntry, ...], parent_pid: int, memo_entries: int | None = None
) -> None:
    """The worker's main function (run in a spawned process); ``memo_entries`` caps every per-word
    memo (``qe.infra.memo``), so that the worker's memory does not grow with the words it sees."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from qe.infra.workers import exit_with_parent

    exit_with_parent(parent_pid)
    prepare_worker_process(memo_entries)
    try:
        models = {entry.name: load_served(entry) for entry in entries}
        for model in models.values():
            model.warm_up()
    except QEInputError as exc:
        conn.send(("failed", str(exc)))
        return
    except Exception as exc:  # a model that loads but cannot score: the operator reads it, one line
        conn.send(("failed", f"a served model cannot score ({type(exc).__name__}: {exc})"))
        return
    conn.send(("ready", [model.describe() for model in models.values()]))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the parent closed the pipe (shutdown) or died
            return
        conn.send(answer_all(models, request))


def load_served(entry: ModelEntry) -> Any:
    """A served model: a word model (``.qwords``, ``qe.serve.servedwords``) or a sentence model."""
    if entry.words:
        from qe.serve.servedwords import ServedWordModel

        return ServedWordModel(entry)
    from qe.serve.served import ServedModel

    return ServedModel(entry)


def prepare_worker_process(memo_entries: int | None) -> None:
    """What a worker process sets before it loads a model: one BLAS thread, as `qe predict` scores (a
    pool per worker spins on every small product; ``--workers`` scales instead), no disk cache of
    anything made from the requests' texts, and every per-word memo capped at ``memo_entries``."""
    from qe.infra.io import allow_disk_caches
    from qe.infra.memo import cap_memos
    from qe.infra.workers import one_blas_thread_for_good

    one_blas_thread_for_good()
    allow_disk_caches(False)
    cap_memos(memo_entries)


def answer_all(models: dict[str, Any], requests: list[tuple]) -> list[tuple]:
    """The answers to a message's requests, in order."""
    if len(requests) > 1:
        merged = _merged(models, requests)
        if merged is not None:
            return merged
    return [answer(models, request) for request in requests]


def _merged(models: dict[str, Any], requests: list[tuple]) -> list[tuple] | None:
    """The requests (one model, one feature flag, the same inputs) scored in one pass; None if that
    pass fails (each is then scored alone, for its own message) or if which scores were clipped to
    the label range cannot be told from the scores (one sits on a bound without being clipped)."""
    name, _, _, inputs, _, detail = requests[0]
    model = models[name]
    src = [text for request in requests for text in request[1]]
    mt = [text for request in requests for text in request[2]]
    extra = {key: [text for request in requests for text in request[3][key]] for key in inputs}
    try:
        results, clipped = model.score(src, mt, extra, 0, detail)
    except Exception:
        return None
    bounds = model.label.range or ()
    answers, at = [], 0
    for request in requests:
        part = results[at : at + len(request[1])]
        at += len(request[1])
        answers.append(("ok", part, sum(result["score"] in bounds for result in part) if clipped else 0))
    if sum(answer[2] for answer in answers) != clipped:
        return None
    return answers


QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
"""A Python string literal in a message (how a family quotes the word it refuses: ``'x'``)."""
PAIR_TEXT = "(a word of the pair)"


def without_pair_text(message: str, texts: list[str]) -> str:
    """``message`` with every quoted piece of the pair's ``texts`` replaced by :data:`PAIR_TEXT`:
    a family quotes the word it refuses, which the API never sends back (it names the pair)."""

    def hide(match: re.Match) -> str:
        try:
            quoted = ast.literal_eval(match.group())
        except (ValueError, SyntaxError):
            quoted = match.group()[1:-1]
        return PAIR_TEXT if quoted and any(quoted in text for text in texts) else match.group()

    return QUOTED.sub(hide, message)


def answer(models: dict[str, Any], request: tuple) -> tuple:
    """The answer to one score request; a refusal of the client's text is 422, anything else 500."""
    name, src, mt, extra, start, detail = request
    try:
        results, clipped = models[name].score(src, mt, extra, start, detail)
    except QEInputError as exc:
        if exc.path == REQUEST and exc.line is not None:  # a family refused one pair's text
            k = exc.line - 1 - start
            texts = [src[k], mt[k], *(values[k] for values in extra.values())] if 0 <= k < len(src) else []
            return ("error", 422, f"pairs[{exc.line - 1}]: {without_pair_text(exc.message, texts)}")
        if exc.path is not None:  # a file of the server's (its bundle): not the client's doing
            print(f"qe serve: worker {os.getpid()}: {exc}", file=sys.stderr, flush=True)
            return ("error", 500, INTERNAL)
        return ("error", 422, str(exc))
    except Exception:
        print(f"qe serve: worker {os.getpid()}: scoring failed:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return ("error", 500, INTERNAL)
    return ("ok", results, clipped)
