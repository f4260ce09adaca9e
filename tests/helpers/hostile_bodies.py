"""2 MB JSON bodies that cost a server the most to read (issue 33): each fits the default body limit
and is refused, but only after it has been parsed. Used by ``tests/hostile/test_serve_busy_bodies.py``
and ``benchmarks/serve_hostile_bodies.py``."""

from __future__ import annotations

import json

LIMIT = 2 << 20  # qe serve's default --max-body-bytes


def _fit(parts: list[str], head: str, tail: str) -> bytes:
    """``head`` + as many of ``parts`` (comma-separated) as fit the limit + ``tail``, as UTF-8."""
    room = LIMIT - len(head) - len(tail) - 16
    kept, size = [], 0
    for part in parts:
        size += len(part) + 1
        if size > room:
            break
        kept.append(part)
    return (head + ",".join(kept) + tail).encode()


def _bodies() -> dict[str, bytes]:
    pair = json.dumps({"src": "one two", "mt": "uno dos"})
    return {
        "zeros": _fit(["0"] * LIMIT, "[", "]"),
        "unknown-keys": _fit([f'"k{k:06d}":0' for k in range(LIMIT)], "{", "}"),
        "pair-keys": _fit([f'"k{k:06d}":0' for k in range(LIMIT)], '{"model":"model","pairs":[{', "}]}"),
        "escapes": _fit(["\\ud83d\\ude00"] * LIMIT, '{"model":"model","pairs":[{"mt":"x","src":"', '"}]}'),
        "pairs": _fit([pair] * LIMIT, '{"model":"model","pairs":[', "]}"),
        "nested-at-the-end": _fit(
            ["0"] * LIMIT, '{"model":"model","pairs":[],"x":[', ",[" + "[" * 70 + "]" * 71 + "]}"
        ),
    }


HOSTILE_BODIES = _bodies()
"""By name: an array of a million zeros, 180,000 unknown keys at the top level or in one pair, a text
of 150,000 escaped emoji, 60,000 pairs (over the pairs limit), and a body nested too deep at its end."""
