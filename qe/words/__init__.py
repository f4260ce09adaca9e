"""Word-level QE data and word links: tags, the TER alignment to a post-edit, tags derived from it, the
readers, and IBM Model 1 lexical tables (``ibm1``: read by the ``ibm1`` features, built into bundles,
the word tagger's source-MT links)."""
