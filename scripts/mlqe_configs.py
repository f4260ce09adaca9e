"""Write the MLQE-PE configs of the multilingual table (``configs/mlqe/``) from one place.

For every pair and label (``da``: z_mean of the direct assessments, ``pe``: HTER) one resource
bundle config (LMs, n-grams, IBM1 and post-edit statistics from the pair's own training split,
cross-fitted over 5 folds) and three experiment configs: ``baseline`` (QuEst-style baseline17 + SVR),
``nmt`` (the NMT model's log-probability features alone, SVR) and ``best`` (families and learner
chosen on the dev split, docs/mlqe-log.md; for ne-en, si-en and ru-en on the dev rows that do not
repeat a training pair). Issue 23 adds a second bundle, ``resources-<label>-<pair>-finetuned``: the
same members plus the USE-M encoder fine-tuned on the training labels (``[finetuned]``, cross-fitted;
its setting and epochs chosen on a held-out share of each model's training pairs), and two systems
on it: ``finetuned`` (the fine-tuned encoder's prediction alone, ridge) and ``stacked`` (``best``'s
families and learner plus that prediction). Issue 23 item 3 adds one model for many pairs
(``[data] datasets``, ``qe.data.pooled``; language-agnostic families only: the NMT model's
log-probabilities and the fine-tuned encoder): per label a bundle ``resources-<label>-pooled`` (the
encoder fine-tuned on the seven pairs' training splits pooled) and ``<label>-pooled`` (trained on
the seven pairs, each pair's test20 reported on its own), and for DA per pair the zero-shot bundle
``resources-da-<pair>-zeroshot`` and system ``da-<pair>-zeroshot`` (trained on the other six pairs,
tested on the held-out pair's test20). Issue 34 adds a third bundle per pair and label,
``resources-<label>-<pair>-crossencoder``: the usual members plus the e5 cross-encoder trained on the
training labels (``[crossencoder]``, cross-fitted; its epoch and number of trained layers chosen on a
held-out share of each model's training pairs), and two systems on it: ``crossencoder`` (its
prediction alone, ridge) and ``crossstacked`` (``best``'s families and learner plus that prediction).
Issue 34 build item 4 pools the cross-encoder as item 3 of issue 23 pools the fine-tuned encoder: per
label ``resources-<label>-crosspooled`` (the cross-encoder trained on the seven pairs' training splits
pooled) and ``<label>-crosspooled`` (its prediction alone, ridge, each pair's test20 reported on its
own), and for DA per pair ``resources-da-<pair>-crosszeroshot`` and ``da-<pair>-crosszeroshot`` (trained
on the other six pairs); each of their cross-encoders learns from a sample of 7,000 of the pooled
training pairs, each pair giving its share (``max_train_pairs``), as many as one pair's model reads.
Issue 32 step 6 adds, for HTER only, ``resources-pe-<pair>-wordtags``: the usual members plus the word
tagger trained on the pair's word tags and NMT log-probabilities (``[wordtags]``, cross-fitted), and
the system ``wordstacked`` (``best``'s families and learner plus the ``wordtags`` family).
``--check`` exits 1 when a written config differs from what this script makes.

    python scripts/mlqe_configs.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qe.data.sets.wmt20_mlqe import MLQE_PAIRS
from qe.embeddings.encoder import LANGUAGES
from qe.model.catalog import MULTILINGUAL

OUT = Path(__file__).resolve().parents[1] / "configs" / "mlqe"
LABELS = {"da": "mlqe-da", "pe": "mlqe-pe"}
TARGETS = {"da": "DA z_mean", "pe": "HTER"}
SYSTEMS = ("baseline", "nmt", "best", "finetuned", "stacked", "crossencoder", "crossstacked")
FINETUNED_SYSTEMS = ("finetuned", "stacked")  # on the bundle with the fine-tuned encoder
CROSS_SYSTEMS = ("crossencoder", "crossstacked")  # on the bundle with the e5 cross-encoder
WORD_SYSTEMS = ("wordstacked",)  # HTER only: on the bundle with the word tagger
NEURAL = (
    {s: "finetuned" for s in FINETUNED_SYSTEMS}
    | {s: "crossencoder" for s in CROSS_SYSTEMS}
    | {s: "wordtags" for s in WORD_SYSTEMS}
)
"""The member (and bundle variant, family) each neural system reads."""
OVERLAPPING_DEV = ("ne-en", "si-en", "ru-en")  # upstream dev repeats training pairs (docs/own-data.md)
DEV_ROWS = {False: "the dev split", True: "the dev rows that do not repeat a training pair"}
DESCRIPTIONS = {
    "baseline": "QuEst-style baseline: baseline17 from the training split's cross-fitted resources, SVR",
    "nmt": "the NMT model's token log-probabilities alone (nmt family, 27 features), SVR",
    "best": "the best of the candidates tried on dev (docs/mlqe-log.md)",
    "finetuned": "the USE-M encoder fine-tuned on the training labels (cross-fitted), its prediction "
    "alone, ridge",
    "stacked": "the best system's families and learner plus the fine-tuned encoder's prediction",
    "crossencoder": "the e5 cross-encoder (source and MT read together, top layers trained on the "
    "training labels, cross-fitted), its prediction alone, ridge",
    "crossstacked": "the best system's families and learner plus the e5 cross-encoder's prediction",
    "wordstacked": "the best system's families and learner plus the word tagger's predictions summed up "
    "per pair (wordtags, cross-fitted)",
    "pooled": "one model for the seven pairs: the NMT log-probabilities and the encoder fine-tuned on "
    "every pair's training labels (pooled, cross-fitted), ridge",
    "zeroshot": "zero-shot: the NMT log-probabilities and the encoder fine-tuned on the other six "
    "pairs' training labels, ridge; no label of the tested pair is read",
    "crosspooled": "one model for the seven pairs: the e5 cross-encoder trained on a sample of every "
    "pair's training labels (pooled, cross-fitted), its prediction alone, ridge",
    "crosszeroshot": "zero-shot: the e5 cross-encoder trained on a sample of the other six pairs' "
    "training labels, its prediction alone, ridge; no label of the tested pair is read",
}
# The fine-tuned encoder's grid, each setting tried on a held-out tenth of every model's training
# pairs (early stopping there too): the encoder frozen (a head on its vectors) or its pooling and DAN
# layers trained, a linear or a 256-unit tanh head. Training every weight (unfreeze "all") gained
# 0.007 dev Pearson on en-de for 20 to 100 times the CPU of "top" (docs/neural.md): not in the grid.
FINETUNED = {"unfreeze": ["head", "top"], "lr": [1e-4], "hidden": [0, 256], "max_epochs": 6, "patience": 2}
# The e5 cross-encoder: issue 34's gate setting (top 4 layers beat 2 on en-de and ro-en dev, AdamW 1e-4,
# head 1e-3 of 256 tanh units, batches of 32, at most 5 epochs, patience 2, seed 13), the epoch now chosen
# on a held-out tenth of each model's training pairs instead of dev (docs/neural.md).
CROSSENCODER = {"top_layers": [4], "max_epochs": 5, "patience": 2, "holdout": 0.1}
# Pooled or zero-shot, each cross-encoder learns from 7,000 of the pooled training pairs (a seeded sample,
# each pair giving its share: 1,000 of each of seven pairs, about 1,167 of each of six), as many as one
# pair's model: the seven pairs' 49,000 would cost seven times a pair's bundle (about 1.5 hours on 2 cores).
POOLED_TRAIN_PAIRS = 7000
VARIANTS = {"finetuned": ("finetuned", FINETUNED), "crossencoder": ("crossencoder", CROSSENCODER)}
"""A bundle variant: the member table it adds to the pair's usual members."""
VARIANT_TEXT = {
    "finetuned": ("the fine-tuned encoder", "and the USE-M encoder fine-tuned on its labels "),
    "crossencoder": ("the e5 cross-encoder", "and the e5 cross-encoder trained on its labels "),
    "wordtags": ("the word tagger", "and the word tagger trained on its word tags "),
}


def _variant(finetuned: bool | str) -> str:
    """``True``: "finetuned" (the older spelling), ``False``: "" (the plain bundle), else the name."""
    return "finetuned" if finetuned is True else finetuned or ""


def bundle_name(label: str, pair: str, finetuned: bool | str = False) -> str:
    """The bundle's name and its folder under models/resources (and its config's stem, after
    ``resources-``); ``finetuned``: the variant with the fine-tuned encoder (True or "finetuned") or
    with the e5 cross-encoder ("crossencoder")."""
    variant = _variant(finetuned)
    return f"mlqe-{label}-{pair}" + (f"-{variant}" if variant else "")


def bundle_config(label: str, pair: str, finetuned: bool | str = False) -> dict:
    """LMs (source, post-edits), source n-grams, IBM1 and edits from the training split, cross-fitted
    (with a variant: and the fine-tuned encoder or the e5 cross-encoder)."""
    src, tgt = pair.split("-")
    dataset = f"{LABELS[label]}/{pair}"
    test20 = f"mlqe-pe/post-editing/{pair}-test20/test20"
    variant = _variant(finetuned)
    extra = {VARIANTS[variant][0]: dict(VARIANTS[variant][1])} if variant in VARIANTS else {}
    if variant == "wordtags":  # MLQE-PE's word tags and NMT log-probabilities of the training split
        extra = {"wordtags": {"dataset": f"mlqe-pe/{pair}", "nmt": True}}
    return {
        "name": bundle_name(label, pair, finetuned),
        "description": "LMs, n-grams, IBM1"
        + (f", edit statistics and {VARIANT_TEXT[variant][0]}" if variant else " and edit statistics")
        + f" from the {dataset} training split, cross-fitted (5 folds)",
        "languages": {"src": src, "tgt": tgt},
        "text": {"style": "moses", "case": "lower"},
        "leakage": {"eval_files": [f"{test20}.{side}" for side in ("src", "mt", "pe")], "drop_overlap": True},
        "corpora": {"qe": {"dataset": dataset, "cross_fit": 5, "seed": 0}},
        "lm": {"src": {"side": "src", "order": 3}, "tgt": {"side": "tgt", "order": 3}},
        "ngrams": {"src": {"side": "src", "max_order": 3}},
        "ibm1": {"iterations": 5},
        "edits": {"dataset": dataset},
        **extra,
    }


# Families of the "best" candidates: the NMT model's log-probabilities, surface counts, the QuEst
# baseline, LM and IBM1 scores and post-edit statistics (resources from the training split).
FAMILIES = ["nmt", "surface", "baseline17", "lm", "ibm1", "edits"]
GB = {"name": "gradient_boosting", "params": {"learning_rate": 0.03, "max_iter": 600, "max_depth": 4}}

# Chosen on the dev split (docs/mlqe-log.md; OVERLAPPING_DEV pairs: on the dev rows that are not
# training pairs): the SVR's C for baseline and nmt (epsilon = a tenth of the training labels'
# standard deviation, gamma = 1 / features), and the best of four candidates: FAMILIES with GB
# ("A-gb"), FAMILIES + embeddings (64 projections) with GB ("A+emb64-gb"), with the average of an
# SVR (C = 1, gamma = 0.3 / features) and GB ("-avg"), or of SVR, GB and ridge ("-avg3"). en-de
# adds the spelling family (Hunspell en / de; "+spelling"), a later idea also chosen on dev.
CHOICES: dict[tuple[str, str], dict] = {
    ("da", "ro-en"): {
        "epsilon": 0.096,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg",
        "gamma": 0.001389,
    },
    ("da", "et-en"): {
        "epsilon": 0.095,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001389,
    },
    ("da", "ne-en"): {
        "epsilon": 0.094,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001389,
    },
    ("da", "si-en"): {
        "epsilon": 0.096,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001389,
    },
    ("da", "ru-en"): {"epsilon": 0.093, "baseline_C": 1.0, "nmt_C": 3.0, "best": "A+emb64-gb"},
    ("da", "en-de"): {
        "epsilon": 0.084,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64+spelling-avg3",
        "gamma": 0.001045,
    },
    ("da", "en-zh"): {
        "epsilon": 0.092,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001068,
    },
    ("pe", "ro-en"): {
        "epsilon": 0.024,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001389,
    },
    ("pe", "et-en"): {
        "epsilon": 0.023,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001389,
    },
    ("pe", "ne-en"): {"epsilon": 0.025, "baseline_C": 1.0, "nmt_C": 1.0, "best": "A-gb"},
    ("pe", "si-en"): {
        "epsilon": 0.024,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001389,
    },
    ("pe", "ru-en"): {
        "epsilon": 0.03,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001068,
    },
    ("pe", "en-de"): {
        "epsilon": 0.019,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64+spelling-avg3",
        "gamma": 0.001045,
    },
    ("pe", "en-zh"): {
        "epsilon": 0.026,
        "baseline_C": 1.0,
        "nmt_C": 1.0,
        "best": "A+emb64-avg3",
        "gamma": 0.001068,
    },
}


def best_families(label: str, pair: str) -> tuple[list[str], dict]:
    """The best candidate's families and family settings."""
    choice = CHOICES[label, pair]
    if not choice["best"].startswith("A+emb"):
        return list(FAMILIES), {}
    src = pair.split("-")[0]
    settings = {"projections": choice.get("projections", 64), "n_jobs": 2}
    if src not in LANGUAGES:  # the encoder does not cover ro, et, ne, si: encode the English MT only
        settings["sides"] = "mt"
    spelling = ["spelling"] if "+spelling" in choice["best"] else []
    return [*FAMILIES, "embeddings", *spelling], {"embeddings": settings}


def experiment_config(label: str, pair: str, system: str) -> dict:
    """One system's experiment config (learner parameters frozen from the dev-split choices)."""
    choice = CHOICES[label, pair]
    # fit_on: every system is fitted on train + dev once dev has chosen (docs/mlqe-log.md, session 6)
    data: dict = {"dataset": f"{LABELS[label]}/{pair}", "dev_split": "dev", "fit_on": "train+dev"}
    if pair in OVERLAPPING_DEV:
        data["allow_overlap"] = True
    features: dict = {}
    if system == "baseline":
        features = {"families": ["baseline17"], "resources": f"models/resources/{bundle_name(label, pair)}"}
        learner = {"name": "svr", "params": {"C": choice["baseline_C"], "epsilon": choice["epsilon"]}}
    elif system == "nmt":
        features = {"families": ["nmt"]}
        learner = {"name": "svr", "params": {"C": choice["nmt_C"], "epsilon": choice["epsilon"]}}
    elif system in ("finetuned", "crossencoder"):
        features = {
            "families": [system],
            "resources": f"models/resources/{bundle_name(label, pair, system)}",
        }
        learner = {"name": "ridge"}
    else:
        families, settings = best_families(label, pair)
        neural = NEURAL.get(system, "")  # stacked, crossstacked: the best system plus that prediction
        features = {
            "families": families + ([neural] if neural else []),
            "resources": f"models/resources/{bundle_name(label, pair, neural)}",
        }
        if settings:
            features["settings"] = settings
        if choice["best"].endswith("-gb"):
            learner = {"name": GB["name"], "params": dict(GB["params"])}
        else:
            svr = {
                "name": "svr",
                "params": {"C": 1.0, "epsilon": choice["epsilon"], "gamma": choice["gamma"]},
            }
            members = [svr, GB, {"name": "ridge"}] if choice["best"].endswith("-avg3") else [svr, GB]
            learner = {"name": "average", "params": {"members": members}}
    return {
        "name": f"mlqe-{label}-{pair}-{system}",
        "description": DESCRIPTIONS[system],
        "seed": 42,
        "data": data,
        "features": features,
        "learner": learner,
        "cv": {"folds": 5, "n_jobs": 2},
    }


# One model for many pairs: DA z_mean labels are pooled as they are (per-annotator z-scores already;
# per-pair z-scoring changed the pooled nmt + ridge dev Pearson by -0.006, each pair's by 0.002 at
# most, docs/neural.md), HTER labels z-scored per pair (training means 0.18 to 0.62).
NORMALISE = {"da": "none", "pe": "pair"}
POOLED_FAMILIES = ["nmt", "finetuned"]  # language-agnostic (qe.config.features.POOLED_FAMILIES)


def pooled_system(pair: str | None = None, cross: bool = False) -> str:
    """``pooled`` or (with ``pair``) ``zeroshot``; with ``cross``, on the e5 cross-encoder: ``crosspooled``
    or ``crosszeroshot``."""
    return ("cross" if cross else "") + ("pooled" if pair is None else "zeroshot")


def pooled_name(label: str, pair: str | None = None, cross: bool = False) -> str:
    """The pooled bundle's (or, with ``pair``, that pair's zero-shot bundle's) name and folder; ``cross``:
    the one with the e5 cross-encoder."""
    return f"mlqe-{label}" + (f"-{pair}" if pair else "") + f"-{pooled_system(pair, cross)}"


def pooled_bundle_config(label: str, pair: str | None = None, cross: bool = False) -> dict:
    """The USE-M encoder fine-tuned (``cross``: the e5 cross-encoder trained, on a sample of
    ``POOLED_TRAIN_PAIRS``) on the pooled training splits of every pair (with ``pair``: of every other
    pair, for zero-shot), cross-fitted; no per-pair member (they are built for one pair). Lines of any
    pair's test20 are left out."""
    pairs = [p for p in MLQE_PAIRS if p != pair]
    evals = [
        f"mlqe-pe/post-editing/{p}-test20/test20.{side}" for p in MLQE_PAIRS for side in ("src", "mt", "pe")
    ]
    what = "every MLQE-PE pair's" if pair is None else f"the six MLQE-PE pairs other than {pair}:"
    if cross:
        member = {"crossencoder": {**CROSSENCODER, "max_train_pairs": POOLED_TRAIN_PAIRS}}
        trained = f"the e5 cross-encoder trained on {POOLED_TRAIN_PAIRS:,} pairs sampled from"
    else:
        member, trained = {"finetuned": dict(FINETUNED)}, "the USE-M encoder fine-tuned on"
    return {
        "name": pooled_name(label, pair, cross),
        "description": f"{trained} {what} training splits pooled, cross-fitted (5 folds)",
        "languages": {"src": "mul", "tgt": "mul"},  # ISO 639 "multiple languages": pairs of each side
        "text": {"style": "moses", "case": "lower"},
        "leakage": {"eval_files": evals, "drop_overlap": True},
        "corpora": {
            "qe": {
                "datasets": [f"{LABELS[label]}/{p}" for p in pairs],
                "normalise": NORMALISE[label],
                "cross_fit": 5,
                "seed": 0,
            }
        },
        **member,
    }


def pooled_config(label: str, pair: str | None = None, cross: bool = False) -> dict:
    """The pooled system (with ``pair``: that pair's zero-shot system): the NMT model's
    log-probabilities and the pooled encoder's prediction (``cross``: the pooled e5 cross-encoder's
    prediction alone), ridge, on the pooled training splits; dev is the pooled dev splits (the
    held-out pair's is never read)."""
    pairs = [p for p in MLQE_PAIRS if p != pair]
    data: dict = {
        "datasets": [f"{LABELS[label]}/{p}" for p in pairs],
        "normalise": NORMALISE[label],
        "dev_split": "dev",
        "fit_on": "train+dev",
        "allow_overlap": True,  # three pairs' dev splits repeat training pairs (OVERLAPPING_DEV)
    }
    if pair is not None:
        data["test_dataset"] = f"{LABELS[label]}/{pair}"
    return {
        "name": pooled_name(label, pair, cross),
        "description": DESCRIPTIONS[pooled_system(pair, cross)],
        "seed": 42,
        "data": data,
        "features": {
            "families": ["crossencoder"] if cross else list(POOLED_FAMILIES),
            "resources": f"models/resources/{pooled_name(label, pair, cross)}",
        },
        "learner": {"name": "ridge"},
        "cv": {"folds": 5, "n_jobs": 2},
    }


def multilingual_config() -> dict:
    """The pooled DA system on the fine-tuned encoder alone: text without the NMT model's
    log-probabilities (any user's) can be scored, whatever its language pair; ridge maps the
    encoder's prediction onto the DA scale. Reads the pooled bundle."""
    config = pooled_config("da")
    config["name"] = MULTILINGUAL
    config["description"] = (
        "for any language pair: the encoder fine-tuned on the seven MLQE-PE pairs' DA labels (pooled), "
        "its prediction alone, ridge"
    )
    config["features"]["families"] = ["finetuned"]
    return config


def render_multilingual() -> str:
    lines = [
        "MLQE-PE, DA z_mean, the seven pairs pooled, the fine-tuned encoder alone: a model for text of",
        "any language pair, with no labels of its own (the ready model mlqe-da-multilingual).",
        "Written by scripts/mlqe_configs.py (edit that, not this file).",
        "qe models build mlqe-da-multilingual   (builds models/resources/mlqe-da-pooled first)",
    ]
    return header(lines) + tomli_w.dumps(multilingual_config())


def render_pooled(label: str, pair: str | None, bundle: bool, cross: bool = False) -> str:
    name = pooled_name(label, pair, cross).removeprefix("mlqe-")
    what = (
        f"MLQE-PE, {TARGETS[label]}, one model for the seven pairs (each pair's test20 reported on its own)"
        if pair is None
        else f"MLQE-PE {pair}, {TARGETS[label]}, zero-shot: trained on the other six pairs alone"
    )
    lines = [f"{what}" + (", the e5 cross-encoder." if cross else ".")]
    if cross:
        share = "1,000 of each of the seven" if pair is None else "about 1,167 of each of the six"
        pooled = len(MLQE_PAIRS) - (pair is not None)
        lines += [
            f"max_train_pairs = {POOLED_TRAIN_PAIRS}: each of the bundle's six cross-encoders learns from "
            f"a seeded sample of {POOLED_TRAIN_PAIRS:,}",
            f"pooled training pairs, {share} pairs (a fold's model: those its fold does not mask),",
            f"as many as one pair's model reads; all would cost about {pooled} times a pair's bundle.",
        ]
    lines.append("Written by scripts/mlqe_configs.py (edit that, not this file).")
    if bundle:
        lines.append(
            f"qe resources build configs/mlqe/resources-{name}.toml --output models/resources/mlqe-{name}"
        )
        return header(lines) + tomli_w.dumps(pooled_bundle_config(label, pair, cross))
    lines.append(f"qe resources build configs/mlqe/resources-{name}.toml   (once)")
    lines.append(f"qe run configs/mlqe/{name}.toml --output-dir runs/mlqe-{name}")
    return header(lines) + tomli_w.dumps(pooled_config(label, pair, cross))


def header(lines: list[str]) -> str:
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)


def render_bundle(label: str, pair: str, finetuned: bool | str = False) -> str:
    name = bundle_name(label, pair, finetuned)
    variant = _variant(finetuned)
    what = VARIANT_TEXT[variant][1] if variant else ""
    return header(
        [
            f"Resources of MLQE-PE {pair} ({TARGETS[label]}) {what}from its own training split alone,",
            "cross-fitted over 5 folds; lines shared with test20 are left out. Written by",
            "scripts/mlqe_configs.py (edit that, not this file).",
            f"qe resources build configs/mlqe/resources-{name.removeprefix('mlqe-')}.toml "
            f"--output models/resources/{name}",
        ]
    ) + tomli_w.dumps(bundle_config(label, pair, finetuned))


def render_experiment(label: str, pair: str, system: str) -> str:
    config = experiment_config(label, pair, system)
    lines = [
        f"MLQE-PE {pair}, {TARGETS[label]}: {DESCRIPTIONS[system]}.",
        f"Parameters chosen on {DEV_ROWS[pair in OVERLAPPING_DEV]}, then fitted on train + dev "
        "(docs/mlqe-log.md); test20 only reports.",
        "Written by scripts/mlqe_configs.py (edit that, not this file).",
    ]
    if "resources" in config["features"]:
        bundle = bundle_name(label, pair, NEURAL.get(system, "")).removeprefix("mlqe-")
        lines.append(f"qe resources build configs/mlqe/resources-{bundle}.toml   (once)")
    lines.append(
        f"qe run configs/mlqe/{label}-{pair}-{system}.toml --output-dir runs/mlqe-{label}-{pair}-{system}"
    )
    return header(lines) + tomli_w.dumps(config)


def written() -> dict[Path, str]:
    """Every config file this script makes, by path."""
    files = {}
    for label in LABELS:
        for pair in MLQE_PAIRS:
            files[OUT / f"resources-{label}-{pair}.toml"] = render_bundle(label, pair)
            files[OUT / f"resources-{label}-{pair}-finetuned.toml"] = render_bundle(label, pair, True)
            files[OUT / f"resources-{label}-{pair}-crossencoder.toml"] = render_bundle(
                label, pair, "crossencoder"
            )
            if (label, pair) in CHOICES:
                for system in SYSTEMS:
                    files[OUT / f"{label}-{pair}-{system}.toml"] = render_experiment(label, pair, system)
            if label == "pe":  # word tags come with the post-edits
                files[OUT / f"resources-{label}-{pair}-wordtags.toml"] = render_bundle(
                    label, pair, "wordtags"
                )
                for system in WORD_SYSTEMS:
                    files[OUT / f"{label}-{pair}-{system}.toml"] = render_experiment(label, pair, system)
        for cross in (False, True):
            name = pooled_name(label, None, cross).removeprefix("mlqe-")
            files[OUT / f"resources-{name}.toml"] = render_pooled(label, None, True, cross)
            files[OUT / f"{name}.toml"] = render_pooled(label, None, False, cross)
    files[OUT / "da-multilingual.toml"] = render_multilingual()
    for pair in MLQE_PAIRS:
        for cross in (False, True):
            name = pooled_name("da", pair, cross).removeprefix("mlqe-")
            files[OUT / f"resources-{name}.toml"] = render_pooled("da", pair, True, cross)
            files[OUT / f"{name}.toml"] = render_pooled("da", pair, False, cross)
    return files


def main() -> int:
    files = written()
    if "--check" in sys.argv:
        stale = [
            p.name for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"stale MLQE configs ({', '.join(stale)}): run python scripts/mlqe_configs.py")
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} configs in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
