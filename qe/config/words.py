"""A word-level run's config (``qe run`` with a ``[words]`` table): its rule. Checks across keys (a
dataset or files, NMT files in every split or none) are ``qe.run.words``'."""

from __future__ import annotations

from qe.config.rules import SEED, Bool, Fields, Int, Language, List, Number, Str, Text

SPLIT_ROLES = ("src", "mt", "tags", "source_tags", "post_edits", "alignments", "nmt_tokens", "nmt_logprobs")
"""The files of one split of a user's own data: tokenised source and MT, and the WMT ``.tags`` (gaps and
MT words interleaved) with ``.source_tags``, or post-edits to derive them from; source-MT alignments
(for deriving source tags; IBM1 links otherwise); the NMT pieces and their log-probabilities."""

SPLIT_FILES = Fields({role: Text() for role in SPLIT_ROLES}, required=("src", "mt"))

TOKEN_HEAD = Fields(
    {
        "top_layers": Int(1, 12),
        "lr": Number(0, 1, open_low=True),
        "head_lr": Number(0, 1, open_low=True),
        "batch_size": Int(1, 1024),
        "max_epochs": Int(1, 100),
        "patience": Int(1, 100),
        "bad_weight": Number(0, 100, open_low=True),
        "weight_decay": Number(0, 1, open_low=True),
        "clip_norm": Number(0, 100, open_low=True),
        "holdout": Number(0, 0.5, open_low=True),
        "seed": Int(0),
        "threads": Int(1, 64),
    }
)
"""``[words.tokenhead]``: the settings of the ``tokenhead`` family's e5 token head (the fields of
``qe.embeddings.e5tokenfile.TokenSettings``, each optional); only with ``tokenhead`` in ``families``."""
FAMILY_SETTINGS = {"tokenhead": TOKEN_HEAD}
"""The word feature families that take a settings table of their own, ``[words.<family>]``."""

WORDS = Fields(
    {
        "dataset": Text(),
        "nmt": Bool(),
        "families": List(Str(), min_len=1),
        "src_lang": Language(),
        "tgt_lang": Language(),
        "threshold": Str(("mcc", "f1_mult")),
        "learner": Str(("hgb", "crf", "auto")),
        "max_train_sentences": Int(1),
        "folds": Int(2, 20),
        "max_iter": Int(1, 5000),
        "learning_rate": Number(0, 1, open_low=True),
        "max_leaf_nodes": Int(2, 4096),
        "min_samples_leaf": Int(1),
        **FAMILY_SETTINGS,
        "train": SPLIT_FILES,
        "dev": SPLIT_FILES,
        "test": SPLIT_FILES,
    }
)
"""``[words]``: a registered ``dataset`` (``mlqe-pe/<pair>``: train, dev and test20, ``nmt`` for its NMT
log-probabilities) or ``[words.train]`` and ``[words.dev]`` files (``[words.test]`` optional); the
word feature ``families`` (``qe.wordmodel.families``; default: core, and nmt with NMT log-probabilities)
and the languages some of them need (``src_lang``, ``tgt_lang``; a dataset's are its pair's); the
threshold criterion chosen on dev; the learner (``"hgb"``, ``"crf"``, or ``"auto"``: both, chosen per
kind on dev); the featurizer's folds and the tagger's settings; a family's own settings table
(``[words.tokenhead]``)."""

WORD_RUN = Fields({"name": Text(), "description": Str(), "seed": SEED, "words": WORDS}, required=("words",))
"""A word-level run config: a name, a description, a seed and its ``[words]`` table."""
