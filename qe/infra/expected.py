"""Expected durations, said before a long stage starts, in the form a person reads (``about 3 min``)."""

from __future__ import annotations


def shown_duration(seconds: float) -> str:
    """``about 40 s`` / ``about 12 min`` / ``about 2 h 5 min``."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"about {minutes} min" if minutes < 90 else f"about {minutes // 60} h {minutes % 60} min"
