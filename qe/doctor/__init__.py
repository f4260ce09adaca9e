"""What a language pair is missing: the pieces a config needs that this machine lacks (``pieces``) and
what the POS-based features lose for a language no tagger covers (``tagless``)."""
