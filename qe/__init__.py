"""qe: sentence-level quality estimation for machine translation."""

__version__ = "0.1.0"
