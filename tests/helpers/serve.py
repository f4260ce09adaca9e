"""A ``qe serve`` process on loopback for the tests: started on a free port, spoken to over real HTTP
(``http.client``), stopped with SIGTERM; and the models the serve tests train."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.helpers import REPO, write_lines
from tests.helpers.toy import EN, ES, sentences

START_SECONDS = 300  # loading a bundle on a busy 2-core machine
LISTENING = re.compile(r"on http://([^/]+)/ \(")


class Server:
    """A running server: :meth:`request` / :meth:`call` over HTTP; ``log`` holds its stderr lines."""

    def __init__(self, process: subprocess.Popen, address: str, log: list[str]) -> None:
        self.process = process
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)
        self.log = log

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def connection(self, timeout: float = 120) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """``(status, headers, body)`` of one request on a fresh connection."""
        connection = self.connection()
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def call(self, method: str, path: str, payload: Any = None, **headers: str) -> tuple[int, Any]:
        """``(status, JSON body)``: ``payload`` is sent as JSON (bytes as they are)."""
        body = payload if isinstance(payload, bytes) or payload is None else json.dumps(payload).encode()
        sent = {"Content-Type": "application/json", **headers} if body is not None else headers
        status, _, data = self.request(method, path, body, sent)
        return status, json.loads(data)

    def score(self, model: str, pairs: list[dict[str, Any]], **fields: Any) -> tuple[int, Any]:
        return self.call("POST", "/v1/score", {"model": model, "pairs": pairs, **fields})

    def batch(self, model: str, body: bytes, kind: str, query: str = "") -> tuple[int, dict[str, str], list]:
        """``(status, headers, JSON lines)`` of an upload to ``/v1/batch``."""
        status, headers, data = self.request(
            "POST", f"/v1/batch?model={model}{query}", body, {"Content-Type": kind}
        )
        return status, headers, [json.loads(line) for line in data.decode().splitlines()]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
        """Send ``sig`` and wait for the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)

    def worker_pids(self) -> list[int]:
        """The server's scoring workers: its children started by multiprocessing's spawn (from /proc)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                command = (stat.parent / "cmdline").read_bytes()
                if parent == self.process.pid and b"spawn_main" in command:
                    found.append(int(stat.parent.name))
        return sorted(found)


def start_server(models: list[Path], *args: str, cwd: Path | None = None) -> Server:
    """``qe serve --model ...`` on 127.0.0.1, any free port, once it says where it listens."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "qe", "serve", "--port", "0"]
    for model in models:
        argv += ["--model", str(model)]
    process = subprocess.Popen(
        [*argv, *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=cwd
    )
    log: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line.rstrip("\n"))
            match = LISTENING.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    ready.wait(START_SECONDS)
    if not found:
        process.kill()
        raise RuntimeError("qe serve did not start: " + " | ".join(log))
    return Server(process, found[0], log)


@contextlib.contextmanager
def serving(models: list[Path], *args: str) -> Iterator[Server]:
    """A server for the block, stopped (SIGTERM, then SIGKILL) after it."""
    server = start_server(models, *args)
    try:
        yield server
    finally:
        try:
            server.stop(timeout=60)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


def assert_one_line_error(status: int, body: Any, expected_status: int, *words: str, echo: str = "") -> str:
    """The error body is ``{"error": one line}`` with the expected status, naming ``words``, and
    neither a traceback nor a path of the server's (``echo``: the client's own text quoted back)."""
    assert status == expected_status, (status, body)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    message = body["error"]
    assert isinstance(message, str) and message and "\n" not in message and len(message) <= 400, message
    rest = message.replace(echo, "") if echo else message
    assert "Traceback" not in rest and str(REPO) not in rest and "/tmp/" not in rest, message
    for word in words:
        assert word in message, (word, message)
    return message


def qe_predict_scores(model: Path, pairs: list[dict[str, str]], folder: Path) -> list[str]:
    """The score column `qe predict` prints for the pairs (src / mt written into ``folder``)."""
    src = write_lines(folder / "src.txt", [p["src"] for p in pairs])
    mt = write_lines(folder / "mt.txt", [p["mt"] for p in pairs])
    result = subprocess.run(
        [sys.executable, "-m", "qe", "predict", "--model", str(model), "--src", str(src), "--mt", str(mt)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    return [line.split("\t")[1] for line in result.stdout.splitlines()[1:]]


def wait_until(check, seconds: float = 120.0) -> bool:
    """Poll ``check()`` until it is true (or ``seconds`` pass)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def nmt_model(root: Path) -> Path:
    """A small SVR on the surface and nmt families (no bundle): each pair needs ``nmt_logprobs``."""
    from qe.run.config import load_config
    from qe.run.pipeline import run_experiment

    lines = ['name = "nmt-toy"', "[data]", "label_range = [0, 1]"]
    for split, n, seed in (("train", 60, 0), ("test", 20, 1)):
        src, mt = sentences(n, EN, seed), sentences(n, ES, seed + 10)
        rng = [((k * 7919) % 97) / 97 for k in range(n)]
        write_lines(root / f"{split}.src", src)
        write_lines(root / f"{split}.mt", mt)
        write_lines(root / f"{split}.labels", [f"{x:.3f}" for x in rng])
        logprobs = [
            " ".join(f"-{0.1 + ((k + j) % 9) / 10:.2f}" for j in range(len(m.split()) + 1))
            for k, m in enumerate(mt)
        ]
        write_lines(root / f"{split}.lp", logprobs)
        files = {"src": "src", "mt": "mt", "labels": "labels", "nmt_logprobs": "lp"}
        lines += [f"[data.{split}]"] + [f'{key} = "{root / f"{split}.{ext}"}"' for key, ext in files.items()]
    lines += ["[features]", 'families = ["surface", "nmt"]', "[features.settings.nmt]", "model_score = false"]
    lines += ["[learner]", 'name = "svr"', "[cv]", "folds = 3"]
    (root / "nmt.toml").write_text("\n".join(lines) + "\n")
    run_experiment(load_config(root / "nmt.toml"), root / "run", progress=False)
    model = root / "nmt-toy.skops"
    model.write_bytes((root / "run" / "model.skops").read_bytes())
    return model


PAIR = {"src": "The house is red.", "mt": "La casa es roja."}


def still_serving(server: Server, model: str = "model") -> None:
    """After an attack: the server answers its health check and scores a pair."""
    assert server.call("GET", "/healthz") == (200, {"status": "ok"})
    status, body = server.score(model, [PAIR])
    assert status == 200 and len(body["results"]) == 1, body


def post_raw(server: Server, path: str, headers: dict[str, str], chunks: Iterator[bytes]) -> tuple[int, Any]:
    """``(status, JSON body)`` of a POST whose body is sent from a thread while the answer is read, as
    a client does that reads the answer to a body the server refuses before taking it all."""
    sock = socket.create_connection((server.host, server.port), timeout=120)
    head = f"POST {path} HTTP/1.1\r\nHost: {server.host}\r\n"
    head += "".join(f"{key}: {value}\r\n" for key, value in headers.items()) + "\r\n"

    def send() -> None:
        with contextlib.suppress(OSError):
            sock.sendall(head.encode())
            for chunk in chunks:
                sock.sendall(chunk)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    response = http.client.HTTPResponse(sock)
    try:
        response.begin()
        data = response.read()
    finally:
        sock.close()
    sender.join(120)
    return response.status, json.loads(data)


def raw_request(
    server: Server, data: bytes, method: str = "GET", timeout: float = 60
) -> tuple[int, dict[str, str], bytes]:
    """``(status, headers, body)`` of the answer to ``data`` sent as it is on a fresh connection: for
    requests ``http.client`` would not write (no Host, two Hosts, a NUL in a header, a bad chunk)."""
    sock = socket.create_connection((server.host, server.port), timeout=timeout)
    try:
        sock.sendall(data)
        response = http.client.HTTPResponse(sock, method=method)
        response.begin()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        sock.close()


def json_error(status: int, headers: dict[str, str], data: bytes) -> tuple[int, Any]:
    """``(status, JSON body)`` of an answer that must be JSON (its content type says so)."""
    assert headers.get("content-type", "").startswith("application/json"), (status, headers, data[:200])
    return status, json.loads(data)


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` in MB (from /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def deleted_files_open(pid: int) -> list[str]:
    """The files process ``pid`` holds open that have no name any more (anonymous temporary files)."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.endswith(" (deleted)"):
                found.append(target)
    return found


WORDS_CONFIG = """name = "words-serve"
seed = 1

[words]
dataset = "mlqe-pe/en-de"
max_train_sentences = 300
max_iter = 40
"""


def en_de(data_dir: Path, split: str, suffix: str) -> list[str]:
    """MLQE-PE en-de post-editing lines (tokenized) of ``split`` (train, dev, test20)."""
    path = data_dir / "mlqe-pe" / "post-editing" / f"en-de-{split}" / f"{split}.{suffix}"
    return path.read_text(encoding="utf-8").splitlines()


def word_model(root: Path) -> Path:
    """A small word model (``qe run`` with a ``[words]`` config: 300 en-de training sentences, 40
    iterations; a few seconds), served as ``words-en-de``. Needs QE_DATA_DIR."""
    from qe.cli import main

    config = write_lines(root / "words.toml", WORDS_CONFIG.splitlines())
    assert main(["run", str(config), "--output-dir", str(root / "run"), "--quiet"]) == 0
    model = root / "words-en-de.qwords"
    model.write_bytes((root / "run" / "model.qwords").read_bytes())
    return model


def qe_predict_words(model: Path, pairs: list[dict[str, str]], folder: Path) -> list[dict[str, Any]]:
    """The JSON lines `qe predict --words` writes for the pairs (src / mt written into ``folder``)."""
    src = write_lines(folder / "words-src.txt", [p["src"] for p in pairs])
    mt = write_lines(folder / "words-mt.txt", [p["mt"] for p in pairs])
    argv = ["predict", "--words", "--model", str(model), "--src", str(src), "--mt", str(mt)]
    result = subprocess.run(
        [sys.executable, "-m", "qe", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    return [json.loads(line) for line in result.stdout.splitlines()]
