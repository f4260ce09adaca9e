"""Experiment configs: the rules (``rules``), each section's rule beside its frozen dataclass (``data``,
``features``, ``learner``, ``selection``, ``cv``, ``report``), the experiment composed of them
(``experiment``), typed views and back (``document``), and reading a config file (``load``)."""
