"""Foundations every layer stands on: errors (``errors``), safe file reading and atomic writing (``io``),
what qe may overwrite (``outputs``), worker processes (``workers``), the parallel backend and Dask
(``parallel``), bounded memos (``memo``) and expected durations (``expected``)."""
