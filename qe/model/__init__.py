"""Saved models: the file and its manifest (``file``, ``manifest``), what a file may hold (``allowlist``),
scoring with numpy alone (``numpy``), a model held ready to score (``scoring``), and the ready-made models
(``catalog``, ``build``)."""
