"""Resource bundles: a directory of language resources plus ``manifest.json``, built from a TOML config.

A bundle holds named members, each one file built from plain-text corpora (or, for unigram
counts, read from a Moses truecase model). Each kind of member is one record in
``qe.bundle.kinds`` (``qe.bundle.members``: its config table and rule, the
files it writes, how it is built, checked and loaded):

==============  =======================================  ==========================================
kind            member names (config section)            loaded as
==============  =======================================  ==========================================
``kenlm``       ``lm.<key>`` (``[lm.<key>]``)            ``qe.resources.lm.LanguageModel``
``kenlm``       ``poslm.<key>`` (``[poslm.<key>]``)      ``LanguageModel`` (of part-of-speech tags)
``ngrams``      ``ngrams.<key>`` (``[ngrams.<key>]``)    ``qe.resources.ngrams.NgramCounts``
``unigrams``    ``unigrams.<key>`` (``[unigrams.<key>]``) ``NgramCounts`` (order 1, from a truecase model)
``ibm1``        ``ibm1.s2t`` / ``ibm1.t2s`` (``[ibm1]``)  ``qe.words.ibm1.IBM1Table``
``edits``       ``edits`` (``[edits]``)                  ``qe.resources.edits.EditModel``
``mt2``         ``mt2`` (``[mt2]``)                      ``qe.resources.mt2.SecondMT`` (Apertium)
``folds``       ``cross_fit`` (a QE corpus, below)       ``qe.resources.crossfit.FoldMap``
==============  =======================================  ==========================================

A corpus may be the QE training split itself (``[corpora.NAME] dataset = "mlqe-pe/en-de"``, or the
files ``src``, ``mt`` and optionally ``post_edits``; its target side is the post-edits, or the MT
with ``target = "mt"``). Members built from it (``lm``, ``poslm``, ``ngrams``, ``ibm1``) are
cross-fitted (``cross_fit = 5`` folds by default, see ``qe.resources.crossfit``): the manifest entry
of such a member lists one extra file per fold under ``folds``, and ``bundle.fold_view(k)`` is the
bundle seen by a training pair of fold k. ``cross_fit = true`` on a plain corpus masks its lines
that repeat a training sentence in the same way; ``cross_fit = false`` on a QE corpus builds
in-sample tables (recorded in the manifest as ``in_sample``, and warned about).

The manifest records the corpora (paths, sha256, lines, bytes), the text settings, each
member's settings, file size, build time and summary, and the result of the leakage check.
N-gram counts and IBM1 tables are written as binary ``.npz`` tables (no parsing at load, see
``qe.infra.arrays``); bundles built before, with ``.tsv.gz`` / ``.txt`` tables, still load.
Members are loaded lazily, on first use, and kept; ``bundle.get(name, **options)`` caches one
object per name and options. Building refuses corpora that share a sentence (compared
lower-cased, whitespace collapsed) or a near-duplicate (chrF >= ``near_duplicate_chrf`` after
normalising digits and punctuation, see ``qe.resources.leakage``) with the evaluation files listed
in ``[leakage]``, except the QE training split (the pairs of the QE corpus, or of ``[edits]``):
its repeats of the evaluation data are the data, reported in the manifest's ``leakage.repeats``
and kept (refused only past ``MAX_REPEAT_SHARE`` of an evaluation file: the evaluation data itself).

Config layout (paths relative to the data directory)::

    name = "wmt12-en-es"
    [languages]  src = "en"  tgt = "es"
    [text]       style = "wmt12"  case = "lower"          # optional [text.src] / [text.tgt] overrides
    [leakage]    eval_files = ["wmt12-qe/test_set/source.eng", ...]  near_duplicate_chrf = 0.9  # 0: off
    [corpora.NAME]  src = "..."  tgt = "..."              # either side may be missing
    [lm.src]     side = "src"  order = 3  corpora = [...]  # corpora default: all with that side
    [ngrams.src] side = "src"  max_order = 3
    [unigrams.src]  side = "src"  truecase_model = "..."
    [ibm1]       iterations = 5  directions = ["s2t", "t2s"]  min_prob = 0.001
    [edits]      dataset = "wmt12-en-es"  split = "train"  folds = 5  seed = 0
    [corpora.qe] dataset = "mlqe-pe/en-de"  cross_fit = 5  seed = 0   # the QE training split
    [mt2]        engine = "apertium"  pair = "eng-spa"    # a second MT system (pseudo-references)
    [edits]      src = "..."  mt = "..."  post_edits = "..."  labels = "..."   # or the user's files

``[edits]`` learns word-level post-editing statistics from training data with post-edits and
labels: a registered dataset's *training* split (any with post-edits: ``wmt12-en-es``,
``mlqe-pe/<pair>``, ``mlqe-da/<pair>``; its test split is refused) or line-aligned files,
cross-fitted so that training pairs never see their own post-edit (see ``qe.resources.edits``).

One module per job: ``runtime`` (``ResourceBundle``, ``open_bundle``: the manifest, lazy loading),
``sections`` (each section's rule beside its frozen dataclass; ``BundleConfig``, the view of a
checked config that every builder reads), ``config`` (reading and checking a bundle config), ``corpora``
(reading them), ``overlap`` (the leakage check), ``crossfitting`` (folds and per-fold members), ``members``
(the member-kind registry, the build context) and ``build`` (``build_bundle``: all of it, and the manifest).
"""

from __future__ import annotations

from qe.bundle.build import build_bundle
from qe.bundle.config import read_bundle_config
from qe.bundle.runtime import (
    DEFAULT_BUNDLE_DIR,
    MANIFEST,
    ResourceBundle,
    clear_loaded_members,
    clear_verified_members,
    open_bundle,
    with_mt2,
)
from qe.bundle.sections import BundleConfig

__all__ = [
    "DEFAULT_BUNDLE_DIR",
    "MANIFEST",
    "BundleConfig",
    "ResourceBundle",
    "build_bundle",
    "clear_loaded_members",
    "clear_verified_members",
    "open_bundle",
    "read_bundle_config",
    "with_mt2",
]
