"""Text: normalization, tokenization and casing done once per dataset (``processing``, with the Moses
tokenizer of ``fastmoses``), spaCy pipelines by language (``nlp``) and script checks (``langid``)."""
