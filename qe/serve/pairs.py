"""Checks of a request's pairs before any worker sees them, shared by ``/v1/score`` (where a message
names ``pairs[INDEX].FIELD``) and ``/v1/batch`` (``line N: FIELD``): every text is a string, not blank,
without NUL or lone surrogates, within the length limit; each model input is given, and nothing else.
Also a JSON body's first checks (:func:`read_body`), before any pair is looked at."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from typing import Any

from pydantic import ValidationError

from qe.infra.errors import QEInputError
from qe.infra.io import is_blank, parse_bounded
from qe.serve.errors import ApiError
from qe.serve.schemas import Pair

BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")
MAX_ID = 200  # characters of a string id


class Where:
    """Names the pair being checked (``pairs[3]`` in a JSON body, ``line 4`` in an upload) and its
    fields (``pairs[3].src``, ``line 4: src``)."""

    def __init__(self, pair: str, separator: str) -> None:
        self.pair = pair
        self.separator = separator

    def __call__(self, field: str) -> str:
        return f"{self.pair}{self.separator}{field}"


def in_body(index: int) -> Where:
    return Where(f"pairs[{index}]", ".")


def on_line(line: int) -> Where:
    return Where(f"line {line}", ": ")


class _Constant(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _Constant(f"{name} is not JSON")


def loads(text: str, what: str) -> Any:
    """JSON ``text`` (``what``: "the body", "line 4") as RFC 8259 has it: no NaN / Infinity, and
    nested at most ``qe.infra.io.MAX_NESTING`` deep; anything else is 400 with one line."""
    try:
        return parse_bounded(lambda t: json.loads(t, parse_constant=_no_constant), text, None, what)
    except QEInputError as exc:
        raise ApiError(400, str(exc)) from None
    except (json.JSONDecodeError, _Constant) as exc:
        raise ApiError(400, f"{what} is not valid JSON: {exc}") from None
    except ValueError:  # Python's limit on the digits of an integer
        raise ApiError(400, f"{what} is not valid JSON: it holds a number too long to read") from None


def read_body(body: bytes, max_pairs: int, keys: Sequence[str]) -> Any:
    """A JSON body's value, refused at its first fault before any model validates it: not UTF-8, not
    JSON (400); a key at the top level other than ``keys`` (422) or more than ``max_pairs`` pairs
    (413). Slow for the largest bodies (a 2 MB one takes up to a second), so run off the event loop."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"the body is not valid UTF-8 (byte {exc.start + 1})") from None
    value = loads(text, "the body")
    if isinstance(value, dict):
        if any(key not in keys for key in value):
            raise ApiError(422, unknown_key("", keys))
        pairs = value.get("pairs")
        if isinstance(pairs, list) and len(pairs) > max_pairs:
            raise ApiError(
                413,
                f"pairs: {len(pairs):,} pairs, more than the {max_pairs:,} this server takes in one "
                "request (POST /v1/batch takes more)",
            )
    return value


UNION_TAG = re.compile(r"(str|int|float|bool|none|(list|dict)\[.*\])")
"""How pydantic names the member of a union (``id: str | int``) that a value was tried against."""


def location(loc: tuple[Any, ...]) -> tuple[str, bool]:
    """A pydantic error location as the request writes it (``("pairs", 3, "src")`` -> ``pairs[3].src``),
    and whether it ended in a union's member (then the value fitted none of the field's types)."""
    parts = list(loc)
    union = len(parts) > 1 and isinstance(parts[-1], str) and UNION_TAG.fullmatch(parts[-1]) is not None
    out = ""
    for part in parts[:-1] if union else parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out, union


def validation_error(error: dict[str, Any], where: Where | None = None) -> ApiError:
    """One pydantic error as one line (``where``: names the pair's fields): 413 for too many pairs,
    else 422."""
    place, union = location(tuple(error.get("loc", ())))
    where = where(place or "pair") if where else (place or "the body")
    kind = error.get("type", "")
    got = type(error.get("input")).__name__
    if kind == "missing":
        return ApiError(422, f"{where}: missing")
    if kind == "too_short":
        return ApiError(422, f"{where}: empty (nothing to score)")
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return ApiError(422, f"{where}: expected a JSON object (got {got})")
    if kind == "extra_forbidden":  # the place is the client's key: named by where it stands instead
        return ApiError(422, unknown_key(location(tuple(error.get("loc", ()))[:-1])[0]))
    if kind == "too_long":
        limit = error["ctx"]["max_length"]
        return ApiError(413, f"{where}: more than the {limit:,} this server takes in one request")
    if union:
        return ApiError(422, f"{where}: of none of the types this field takes (got {got})")
    return ApiError(422, f"{where}: {error.get('msg', 'invalid')} (got {got})")


def unknown_key(place: str, takes: Collection[str] = ()) -> str:
    """The line for a key the request does not take, at ``place`` (``""``: the top level), naming the
    keys it ``takes`` but never the one given (it is the client's text)."""
    where = f"{place}: an unknown key" if place else "the body: an unknown key at the top level"
    return f"{where} (a request takes {', '.join(takes)})" if takes else where


def check_text(value: str, where: str, limit: int) -> str:
    """``value`` if it is text one can score; else 422 (413 when only too long) naming ``where``."""
    if not isinstance(value, str):
        raise ApiError(422, f"{where}: Input should be a valid string (got {type(value).__name__})")
    if len(value) > limit:
        raise ApiError(413, f"{where}: {len(value):,} characters, more than the {limit:,} this server takes")
    bad = BAD_CHARACTER.search(value)
    if bad:
        code = ord(bad.group())
        what = "a NUL character" if code == 0 else f"a lone surrogate (U+{code:04X}, not text)"
        raise ApiError(422, f"{where}: holds {what} at character {bad.start()}")
    if is_blank(value):
        raise ApiError(422, f"{where}: is blank (nothing visible to score)")
    return value


def check_tokens(value: str, where: str, limit: int) -> None:
    """A word model's text holds at most ``limit`` tokens (split at whitespace); else 422 naming
    ``where``."""
    count = len(value.split())
    if count > limit:
        raise ApiError(422, f"{where}: {count:,} tokens, more than the {limit:,} a word model tags")


def parse_pair(value: Any, where: Where) -> Pair:
    """A pair from a JSONL line or TSV row, checked by the same model as ``/v1/score``'s pairs."""
    try:
        return Pair.model_validate(value)
    except ValidationError as exc:
        raise validation_error(exc.errors(include_url=False)[0], where) from None


def check_pair(
    pair: Pair, where: Where, model: dict[str, Any], limit: int
) -> tuple[Any, str, str, dict[str, str]]:
    """``(id, src, mt, inputs)`` of one pair, checked against the model's declared per-pair inputs
    (``model``: its ``/v1/models`` description) and the character ``limit``."""
    inputs = model["pair_inputs"]
    limit = min(limit, model["family_max_chars"] or limit)
    given = pair.model_extra or {}
    for name in inputs:
        if name not in given:
            raise ApiError(
                422,
                f"{where(name)}: missing (model {model['name']} needs {', '.join(inputs)} with each pair)",
            )
    if any(key not in inputs for key in given):  # the key is the client's text: not quoted back
        takes = ", ".join(("id", "src", "mt", *inputs))
        raise ApiError(
            422,
            f"{where.pair}: a key that is not a field of a pair for model {model['name']} (it takes {takes})",
        )
    if isinstance(pair.id, str) and (len(pair.id) > MAX_ID or BAD_CHARACTER.search(pair.id)):
        raise ApiError(
            422, f"{where('id')}: expected at most {MAX_ID} characters, without NUL or lone surrogates"
        )
    extra = {name: check_text(given[name], where(name), limit) for name in inputs}
    return pair.id, check_text(pair.src, where("src"), limit), check_text(pair.mt, where("mt"), limit), extra
