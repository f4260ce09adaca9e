"""The text of the configs ``qe init`` writes: an experiment config that says in comments which families
are in, which are out and why, and the resource bundle config it reads (LMs, n-grams, IBM1 and edit
statistics from the user's training split, cross-fitted, plus any corpora named).

The default learner is the recipe the MLQE-PE best systems were chosen with on dev (docs/mlqe-log.md):
the mean of an RBF SVR (C 1, epsilon a tenth of the labels' spread, gamma 0.3 / features), gradient
boosting and ridge regression, which of them to average chosen on the dev split (or by CV): all three,
the SVR and boosting, or boosting alone.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qe.doctor.choice import Choice

if TYPE_CHECKING:
    import numpy as np

WRITTEN_BY = "# Written by `qe init`"
"""The first line of every file qe init writes: how it recognises a resources config of its own."""

EXACT_SVR_UP_TO = 10_000
"""Training pairs up to which the average's SVR is the exact one (above: the Nyström SVR, whose time
grows linearly with the rows; docs/learners.md)."""

BOOSTING = {"learning_rate": 0.03, "max_iter": 600, "max_depth": 4}
"""The gradient-boosting member of the MLQE-PE best systems (chosen on dev, docs/mlqe-log.md)."""

WEIGHTS = [[1, 1, 1], [1, 1, 0], [0, 1, 0]]
"""The candidates the average's weights are chosen from (SVR, boosting, ridge)."""


CV_LINES = ("[cv]", "n_jobs = -1  # one worker per core: the same numbers as one worker, sooner")


def toml(value: object) -> str:
    """A TOML value: strings, numbers and lists of them in their JSON spelling (valid TOML for these)."""
    return json.dumps(value, ensure_ascii=False)


def relative(path: Path, folder: Path) -> str:
    """Relative to the config's folder when the file is inside it, else absolute."""
    path, folder = path.resolve(), folder.resolve()
    return path.relative_to(folder).as_posix() if path.is_relative_to(folder) else str(path)


@dataclass(frozen=True)
class Plan:
    """What ``qe init`` writes, decided from the user's files and this machine."""

    name: str
    out: Path
    src_lang: str
    tgt_lang: str
    splits: dict[str, dict[str, Path]]  # split -> role (src, mt, labels, post_edits, an input) -> file
    choices: list[Choice]
    rows: int  # training pairs
    label_sd: float
    label_range: tuple[float, float] | None = None
    corpora: Sequence[tuple[Path, Path]] = ()
    features: int = 0  # columns of the chosen families (for the SVR's gamma)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.out.parent if str(self.out.parent) else Path(".")

    @property
    def bundle_config(self) -> Path:
        return self.out.with_name(f"{self.out.stem}-resources.toml")

    @property
    def bundle_dir(self) -> str:
        return f"models/resources/{self.name}"

    @property
    def chosen(self) -> list[Choice]:
        return [c for c in self.choices if c.chosen]

    @property
    def members(self) -> set[str]:
        return {member for choice in self.chosen for member in choice.members}


def data_lines(plan: Plan) -> list[str]:
    """``[data]``: the languages, the declared range and each split's files."""
    lines = ["[data]", f"languages = {{ src = {toml(plan.src_lang)}, tgt = {toml(plan.tgt_lang)} }}"]
    if plan.label_range:
        low, high = plan.label_range
        lines.append(f"label_range = [{low:g}, {high:g}]  # checked; clips predictions")
    if "dev" in plan.splits:
        lines.append('fit_on = "train+dev"  # chosen on dev, then fitted on train and dev')
    for split, files in plan.splits.items():
        lines += ["", f"[data.{split}]"]
        lines += [f"{role} = {toml(relative(path, plan.folder))}" for role, path in files.items()]
    return lines


def feature_lines(plan: Plan) -> list[str]:
    """``[features]``: the chosen families, each in or out with its reason, the bundle, the settings."""
    width = max(len(choice.family) for choice in plan.choices)
    lines = ["[features]", "# In (what each reads):"]
    lines += [f"#   {c.family:<{width}}  {c.why}" for c in plan.choices if c.chosen]
    out = [c for c in plan.choices if not c.chosen]
    if out:
        lines.append("# Out (why):")
        lines += [f"#   {c.family:<{width}}  {c.why}" for c in out]
    lines.append(f"families = {toml([c.family for c in plan.chosen])}")
    if plan.members:
        lines += [
            f"resources = {toml(plan.bundle_dir)}",
            f"resources_config = {toml(plan.bundle_config.name)}  # qe run builds it from this when missing",
        ]
    for choice in plan.chosen:
        if choice.settings:
            lines += ["", f"[features.settings.{choice.family}]"]
            lines += [f"{key} = {toml(value)}" for key, value in choice.settings.items()]
    return lines


def learner_lines(plan: Plan) -> list[str]:
    """``[learner]``: the mean of an SVR, gradient boosting and ridge, its weights chosen on dev / by CV."""
    exact = plan.rows <= EXACT_SVR_UP_TO
    svr = "svr" if exact else "svr_fast"
    epsilon = float(f"{plan.label_sd / 10:.2g}") or 0.01
    gamma = float(f"{0.3 / max(plan.features, 1):.4g}")
    where = "the dev split" if "dev" in plan.splits else "5-fold CV on the training split"
    kind = (
        f"the exact RBF SVR ({plan.rows:,} training pairs, at most {EXACT_SVR_UP_TO:,})"
        if exact
        else f"the Nyström RBF SVR ({plan.rows:,} training pairs, more than {EXACT_SVR_UP_TO:,})"
    )
    return [
        f"# The mean of {kind},",
        "# gradient boosting and ridge regression: the recipe the MLQE-PE best systems were chosen with",
        f"# (docs/mlqe-log.md). Which of them to average is chosen on {where} by Pearson's",
        "# correlation: all three, the SVR and boosting, or boosting alone (weights, in member order);",
        '# scoring = "MAE" chooses by absolute error instead.',
        "[learner]",
        'name = "average"',
        'scoring = "Pearson"',
        "",
        f"# C 1, epsilon a tenth of the labels' spread, gamma 0.3 / the {plan.features} features",
        "[[learner.params.members]]",
        f'name = "{svr}"',
        f"params = {{ C = 1.0, epsilon = {epsilon:g}, gamma = {gamma:g} }}",
        "",
        "[[learner.params.members]]",
        'name = "gradient_boosting"',
        "params = { " + ", ".join(f"{k} = {v:g}" for k, v in BOOSTING.items()) + " }",
        "",
        "[[learner.params.members]]",
        'name = "ridge"',
        "",
        "[learner.grid]",
        f"weights = {toml(WEIGHTS)}",
    ]


def render_rich(plan: Plan) -> str:
    """The experiment config of the strongest system the data and this machine support."""
    lines = [
        f"{WRITTEN_BY}; run it with: qe run {plan.out} --output-dir runs/{plan.name}",
        "# The strongest config your files and this machine support (`qe init --light`: surface features",
        "# and a fast SVR only). Families and what they read: `qe features --list`; docs/own-data.md.",
        f"name = {toml(plan.name)}",
        "",
        *data_lines(plan),
        "",
        *feature_lines(plan),
        "",
        *learner_lines(plan),
        "",
        *CV_LINES,
        "",
    ]
    return "\n".join(lines)


def render_bundle(plan: Plan) -> str:
    """The bundle config: the members the chosen families read, from the training split (cross-fitted,
    lines shared with the dev and test files left out) and the corpora named."""
    members, train = plan.members, plan.splits["train"]
    evaluated = [path for split in ("dev", "test") for role, path in plan.splits.get(split, {}).items()]
    evaluated = [path for path in evaluated if path.name and _text_role(plan, path)]
    lines = [
        f"{WRITTEN_BY}; qe run builds it into {plan.bundle_dir} when it is missing",
        f"name = {toml(plan.name)}",
        "",
        "[languages]",
        f"src = {toml(plan.src_lang)}",
        f"tgt = {toml(plan.tgt_lang)}",
        "",
        "[text]  # how the members tokenize (Moses tokenizer, lower-cased)",
        'style = "moses"',
        'case = "lower"',
        "",
        "[leakage]  # lines of a corpus shared with your dev and test files are left out of every member",
        f"eval_files = {toml([str(path.resolve()) for path in evaluated])}",
        "drop_overlap = true",
        "",
        "[corpora.qe]  # your training split: each pair is scored by tables built without it (5 folds)",
        f"src = {toml(str(train['src'].resolve()))}",
        f"mt = {toml(str(train['mt'].resolve()))}",
    ]
    if "post_edits" in train:
        lines.append(f"post_edits = {toml(str(train['post_edits'].resolve()))}")
    lines += ["cross_fit = 5", "seed = 0"]
    for k, (src, tgt) in enumerate(plan.corpora, start=1):
        lines += [
            "",
            f"[corpora.extra{k}]  # a corpus you named (--corpus)",
            f"src = {toml(str(src.resolve()))}",
            f"tgt = {toml(str(tgt.resolve()))}",
            "cross_fit = true  # its lines repeating a training sentence are left out per fold",
        ]
    if "lm" in members:
        lines += ["", "[lm.src]", 'side = "src"', "order = 3", "", "[lm.tgt]", 'side = "tgt"', "order = 3"]
    if "ngrams.src" in members:
        lines += ["", "[ngrams.src]", 'side = "src"', "max_order = 3"]
    if "ngrams.tgt" in members:
        lines += [
            "",
            "[ngrams.tgt]  # the MT's words, for linguistic's unknown words",
            'side = "tgt"',
            "max_order = 1",
        ]
    if "ibm1" in members:
        lines += ["", "[ibm1]", "iterations = 5"]
    if "edits" in members:
        lines += ["", "[edits]  # word edit rates of the training post-edits (never the test ones)"]
        roles = ("src", "mt", "post_edits", "labels")
        lines += [f"{role} = {toml(str(train[role].resolve()))}" for role in roles if role in train]
    if "mt2" in members:
        pair = next(c.resource for c in plan.chosen if "mt2" in c.members)
        lines += ["", "[mt2]  # a second MT system for pseudo-references", 'engine = "apertium"']
        lines.append(f"pair = {toml(pair)}")
    return "\n".join([*lines, ""])


def _text_role(plan: Plan, path: Path) -> bool:
    """Whether ``path`` is a text file of a split (source, MT, post-edits), not labels or an input."""
    return any(
        role in ("src", "mt", "post_edits") and given == path
        for files in plan.splits.values()
        for role, given in files.items()
    )


# ------------------------------------------------------------------ the quick config (--light)


def svr_grid(labels: np.ndarray) -> dict[str, list[float]]:
    """The default SVR grid with epsilon (the error ignored) scaled to the labels' spread: the
    default's 0.1-0.3 suit a 1-5 scale (std ~0.85), not HTER in [0, 1] (std ~0.2)."""
    import numpy as np

    from qe.learners.factory import DEFAULT_SVR_GRID

    scale = float(np.std(labels)) / 0.85 or 1.0
    return {**DEFAULT_SVR_GRID, "epsilon": [float(f"{e * scale:.2g}") for e in DEFAULT_SVR_GRID["epsilon"]]}


def render_config(
    args: argparse.Namespace,
    name: str,
    folder: Path,
    bundle: Path | None,
    grid: dict[str, list[float]],
    rows: int,
) -> str:
    """The experiment config's text (with comments on what to change)."""
    lines = [
        f"{WRITTEN_BY}; run it with: qe run {args.out} --output-dir runs/{name}",
        f"name = {toml(name)}",
        "",
        "[data]",
        f"languages = {{ src = {toml(args.src_lang)}, tgt = {toml(args.tgt_lang)} }}",
    ]
    if args.label_range:
        lines.append(
            f"label_range = [{args.label_range[0]:g}, {args.label_range[1]:g}]  # checked; clips predictions"
        )
    splits = {
        "train": {"src": args.src, "mt": args.mt, "labels": args.labels, "post_edits": args.post_edits},
        "test": {"src": args.test_src, "mt": args.test_mt, "labels": args.test_labels},
    }
    for split, files in splits.items():
        lines += ["", f"[data.{split}]"]
        lines += [f"{role} = {toml(relative(path, folder))}" for role, path in files.items() if path]
    lines += [
        "",
        "[features]",
        "# Features that need no resource bundle. More: `qe features --list`; language models,",
        "# IBM1 and n-gram families need `qe resources build` (see docs/own-data.md).",
        'families = ["surface"]',
    ]
    if bundle is not None:
        lines += [
            f"# After `qe resources build {bundle.name} --output models/resources/{name}`, use the",
            "# post-edits too (word edit rates learned from the training post-edits, cross-fitted):",
            '# families = ["surface", "edits"]',
            f'# resources = "models/resources/{name}"',
        ]
    lines += [
        "",
        "[features.settings.surface]",
        f"src_lang = {toml(args.src_lang)}",
        f"tgt_lang = {toml(args.tgt_lang)}",
        "",
        *light_learner_lines(rows, grid),
        "",
        *CV_LINES,
        "",
    ]
    return "\n".join(lines)


def light_learner_lines(rows: int, grid: dict[str, list[float]]) -> list[str]:
    """The ``[learner]`` section for ``rows`` training pairs: the exact SVR and ``grid`` up to
    :data:`~qe.learners.factory.FAST_ABOVE` rows, the large-data SVR and its default grid above
    (the exact grid's time grows faster than the rows: hours at 13,000; docs/learners.md)."""
    from qe.learners.factory import FAST_ABOVE

    if rows > FAST_ABOVE:
        return [
            f"# {rows:,} training pairs, more than {FAST_ABOVE:,}: the large-data SVR (RBF kernel through",
            f"# a Nyström map + linear SVR; docs/learners.md). Up to {FAST_ABOVE:,} pairs: the exact SVR.",
            "[learner]",
            'name = "svr_fast"',
            'grid = "default"  # C, gamma, epsilon chosen by 5-fold CV, scaled to the labels and features',
        ]
    return [
        f"# {rows:,} training pairs, at most {FAST_ABOVE:,}: the exact RBF SVR (above: svr_fast)",
        "[learner]",
        'name = "svr"',
        "",
        "[learner.grid]  # chosen by 5-fold CV on the training data; epsilon scaled to the labels' spread",
        *(f"{key} = [{', '.join(f'{v:g}' for v in values)}]" for key, values in grid.items()),
    ]


def render_bundle_light(args: argparse.Namespace, name: str, bundle: Path) -> str:
    """A resource bundle config learning the ``edits`` member from the training post-edits."""
    files = {"src": args.src, "mt": args.mt, "post_edits": args.post_edits, "labels": args.labels}
    return "\n".join(
        [
            f"{WRITTEN_BY}; build: qe resources build {bundle} --output models/resources/{name}",
            f"name = {toml(name)}",
            "",
            "[languages]",
            f"src = {toml(args.src_lang)}",
            f"tgt = {toml(args.tgt_lang)}",
            "",
            "[text]  # how the edits member tokenizes (Moses tokenizer, lower-cased)",
            'style = "moses"',
            'case = "lower"',
            "",
            "[edits]  # word edit rates of the training post-edits (never the test ones)",
            *(f"{role} = {toml(str(path.resolve()))}" for role, path in files.items()),
            "",
        ]
    )
