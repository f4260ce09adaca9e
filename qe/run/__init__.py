"""A run (``qe run``, ``qe ablate``): a pipeline of stages around one context, a module each, in order.

``context`` (the bundle, splits, families and learner, made once) -> ``splits`` (load the data) ->
``features`` (each split's feature table) -> ``selection`` (fitted on train) -> ``fit`` (the learner,
hyperparameters by CV or on dev) -> ``evaluate`` (CV, dev and test metrics) -> ``against`` (the
``[[report.against]]`` systems and the published table) -> ``persist`` (signature, manifest, run
directory); ``pipeline`` runs them.
"""
