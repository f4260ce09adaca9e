"""Language resources and the bundle that holds them: language models, n-gram tables, IBM1 lexicons,
post-edit statistics, POS taggers, spelling dictionaries, a second MT system (``mt2``), the leakage check
and cross-fitting; ``bundle`` builds, describes and opens a bundle."""
