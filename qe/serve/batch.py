"""``POST /v1/batch``: a TSV or JSONL upload, each line parsed and checked as it arrives and written to
a temporary file (so memory holds one line, not the upload), then scored a chunk at a time with the
results streamed back as JSON lines: memory stays bounded however many pairs come."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

from qe.infra.io import UTF8_BOM
from qe.serve.errors import ApiError
from qe.serve.pairs import check_pair, loads, on_line, parse_pair
from qe.serve.settings import Limits

FORMATS = {"tsv": "text/tab-separated-values", "jsonl": "application/x-ndjson"}
JSONL_TYPES = {
    "application/x-ndjson",
    "application/jsonl",
    "application/x-jsonlines",
    "application/json-lines",
}
LINE_BYTES_PER_CHAR = 64  # a line may hold this many bytes per character of the text limit (+ 64 KB)


def upload_format(given: str | None, content_type: str | None) -> str:
    """``tsv`` or ``jsonl``: the ``format`` query parameter, else the upload's content type."""
    if given is not None:
        if given not in FORMATS:
            raise ApiError(422, "format: expected tsv or jsonl")
        return given
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == FORMATS["tsv"]:
        return "tsv"
    if kind in JSONL_TYPES:
        return "jsonl"
    raise ApiError(
        400,
        "say what the upload is: Content-Type text/tab-separated-values or application/x-ndjson, "
        "or ?format=tsv|jsonl",
    )


class Upload:
    """An upload read line by line (:meth:`feed`, :meth:`finish`): every pair checked against the model
    (``model``: its ``/v1/models`` description) and the limits, then kept in a temporary file."""

    def __init__(self, fmt: str, model: dict[str, Any], limits: Limits) -> None:
        self.fmt = fmt
        self.model = model
        self.limits = limits
        self.max_line = LINE_BYTES_PER_CHAR * limits.chars + (64 << 10)
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.pairs = 0
        self.line = 0
        self.header: list[str] | None = None
        self._rest = b""

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the upload: check and keep every line they complete."""
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        for raw in lines:
            self._take(raw)
        if len(self._rest) > self.max_line:
            raise ApiError(413, f"line {self.line + 1}: longer than {self.max_line:,} bytes")

    def finish(self) -> None:
        """The upload is complete: check its last line; refuse an upload without pairs."""
        if self._rest:
            self._take(self._rest)
            self._rest = b""
        if not self.pairs:
            raise ApiError(422, "the upload holds no pairs" + (" (only a header)" if self.header else ""))
        self.file.flush()
        self.file.seek(0)

    def chunks(self, size: int) -> Iterator[list[list[Any]]]:
        """The kept pairs, ``[index, id, src, mt, inputs]`` each, ``size`` at a time."""
        chunk: list[list[Any]] = []
        for raw in self.file:
            chunk.append(json.loads(raw))
            if len(chunk) == size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    def close(self) -> None:
        self.file.close()

    def _take(self, raw: bytes) -> None:
        self.line += 1
        if self.line == 1:
            raw = raw.removeprefix(UTF8_BOM)
        if len(raw) > self.max_line:
            raise ApiError(413, f"line {self.line}: longer than {self.max_line:,} bytes")
        try:
            text = raw.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError(400, f"line {self.line}: not valid UTF-8 (byte {exc.start + 1})") from None
        if self.fmt == "tsv" and self.header is None:
            self.header = self._columns(text)
            return
        if not text.strip():
            raise ApiError(422, f"line {self.line}: blank line")
        if self.pairs >= self.limits.batch_pairs:
            raise ApiError(
                413, f"line {self.line}: more than the {self.limits.batch_pairs:,} pairs one upload may hold"
            )
        value = self._row(text) if self.fmt == "tsv" else loads(text, f"line {self.line}")
        where = on_line(self.line)
        pair_id, src, mt, extra = check_pair(parse_pair(value, where), where, self.model, self.limits.chars)
        record = [self.pairs, self.pairs if pair_id is None else pair_id, src, mt, extra]
        self.file.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
        self.pairs += 1

    def _columns(self, text: str) -> list[str]:
        columns = text.split("\t")
        takes = ["id", "src", "mt", *self.model["pair_inputs"]]
        for number, column in enumerate(columns, 1):
            if column not in takes:  # named by its place: the line may be a sentence (no header)
                raise ApiError(
                    422,
                    f"line 1: column {number} is not one model {self.model['name']} takes "
                    f"({', '.join(takes)}); the first line names the columns",
                )
        if len(set(columns)) != len(columns):
            raise ApiError(422, "line 1: a column is named twice")
        missing = [name for name in takes if name != "id" and name not in columns]
        if missing:
            raise ApiError(
                422, f"line 1: no column {missing[0]} (the first line names the columns: {', '.join(takes)})"
            )
        return columns

    def _row(self, text: str) -> dict[str, Any]:
        assert self.header is not None
        cells = text.split("\t")
        if len(cells) != len(self.header):
            raise ApiError(
                422, f"line {self.line}: {len(cells)} fields, but the header names {len(self.header)}"
            )
        row: dict[str, Any] = dict(zip(self.header, cells, strict=True))
        if row.get("id") == "":
            row["id"] = None
        return row
