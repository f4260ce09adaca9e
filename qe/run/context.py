"""One run's context: what every stage of a run shares, made once per process and handed to the stages.

A run opens its resource bundle once, loads and fingerprints each data split once, makes and binds each
feature family once and makes its learner once; the signature, the model manifest, the
``[[report.against]]`` systems and ``qe ablate``'s variants ask the context instead of doing it again.
The other systems of a run (:meth:`RunContext.system`) share its caches, each keyed by what decides the
object: a bundle by its path and ``[mt2]``, a split by the config's ``[data]``, a family by its bundle
and settings, the learner by its config and the data's size.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import PredefinedSplit

from qe.config.document import thaw
from qe.config.experiment import ExperimentConfig
from qe.config.features import split_settings
from qe.data import QEDataset
from qe.data.splits import LoadedSplit, languages, load_split
from qe.features.base import FeatureFamily
from qe.infra.errors import QEInputError
from qe.infra.io import read_lines, sha256_file
from qe.run.config import config_learner


def _key(*parts: Any) -> str:
    return json.dumps(thaw(parts), sort_keys=True, default=str)


@dataclass
class _Made:
    """The objects a run has made, by key (shared by the systems of one run)."""

    bundles: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, LoadedSplit] = field(default_factory=dict)
    fingerprints: dict[str, str] = field(default_factory=dict)
    data_keys: dict[str, str] = field(default_factory=dict)
    input_lines: dict[str, list[str]] = field(default_factory=dict)  # line-input files, by path
    input_digests: dict[str, str] = field(default_factory=dict)  # sha256 of input files, by path
    families: dict[str, FeatureFamily] = field(default_factory=dict)
    bound: set[int] = field(default_factory=set)  # id() of the families bound to their bundle
    learners: dict[str, Any] = field(default_factory=dict)
    selectors: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunContext:
    """One system's config and progress switch, with the run's shared bundle, splits, families and
    learner (each made on first use)."""

    config: ExperimentConfig
    progress: bool = False
    made: _Made = field(default_factory=_Made, repr=False)

    def system(self, config: ExperimentConfig) -> RunContext:
        """The context of another system of this run (a ``[[report.against]]`` entry): its own config,
        this run's bundles, splits, families and learners."""
        return RunContext(config, self.progress, self.made)

    # ------------------------------------------------------------------ resources

    def _bundle_key(self) -> str:
        return _key(self.config.features.resources, self.config.mt2)

    def bundle(self) -> Any:
        """The config's resource bundle with its ``[mt2]`` attached, or None; opened once."""
        key = self._bundle_key()
        if key not in self.made.bundles:
            self.made.bundles[key] = _open_bundle(self.config, self.progress)
        return self.made.bundles[key]

    # ------------------------------------------------------------------ data

    def _split_key(self, split: str) -> str:
        return _key(self.config.data, split)

    def loaded(self, split: str) -> LoadedSplit:
        """The ``train``, ``dev`` or ``test`` split the config names (and its feature table); loaded once."""
        key = self._split_key(split)
        if key not in self.made.splits:
            self.made.splits[key] = load_split(self.config.data, split)
        return self.made.splits[key]

    def dataset(self, split: str) -> QEDataset:
        """The sentences and labels of a split."""
        return self.loaded(split).dataset

    def fingerprint(self, split: str) -> str:
        """The split's ``QEDataset.fingerprint`` (for the signature, the manifest, cache file names); once."""
        key = self._split_key(split)
        if key not in self.made.fingerprints:
            self.made.fingerprints[key] = self.dataset(split).fingerprint()
        return self.made.fingerprints[key]

    def line_input(self, path: str) -> list[str]:
        """A line-input file named in ``[data.<split>]`` (NMT log-probabilities, ...), read and hashed once
        per run (its sha256: :meth:`input_digest`)."""
        path = str(path)
        if path not in self.made.input_lines:
            digest = hashlib.sha256()
            self.made.input_lines[path] = read_lines(path, digest=digest)
            self.made.input_digests[path] = digest.hexdigest()
        return self.made.input_lines[path]

    def input_digest(self, path: str) -> str:
        """The sha256 of an input file (in the signature and the feature cache's key), hashed once per run:
        as it was read by :meth:`line_input`, else read for it."""
        path = str(path)
        if path not in self.made.input_digests:
            self.made.input_digests[path] = sha256_file(path)
        return self.made.input_digests[path]

    def data_key(self, split: str, extra: dict[str, list[Any]], files: dict[str, str]) -> str:
        """The feature cache's hash of the split's ids, sentences and the ``extra`` inputs read with them
        (``TextDigest.cache_key``), the dataset's own or, by name, from ``files``; once per split and set
        of inputs. It reuses the digests the split's fingerprint and the input files took: no text is
        hashed again."""
        key = _key(self._split_key(split), sorted(extra), files)
        if key not in self.made.data_keys:
            digest = self.dataset(split).digest()
            inputs = {
                name: self.input_digest(files[name]) if name in files else digest.inputs[name]
                for name in extra
            }
            self.made.data_keys[key] = digest.cache_key(inputs)
        return self.made.data_keys[key]

    # ------------------------------------------------------------------ features

    def made_families(self, split: str) -> tuple[list[FeatureFamily], dict[str, str]]:
        """The config's families for one split, not yet bound, and the line inputs named in
        ``[data.<split>]`` that they read. Inputs such as decoder logs become settings, so a family is
        made once per bundle and settings: the same object for every split and system that agree."""
        from qe.features.registry import make_families, route_inputs, with_languages

        names = list(self.config.features.families)
        settings = split_settings(self.config.features.settings, split)
        if self.bundle() is None:  # the families learn the language pair from the config
            settings = with_languages(names, settings, languages(self.config.data))
        given = dict(self.config.data.files(split))
        lines, settings = route_inputs(names, given, settings, strict=False)
        keys = {name: _key(self._bundle_key(), name, settings.get(name, {})) for name in names}
        missing = [name for name in names if keys[name] not in self.made.families]
        for name, family in zip(missing, make_families(missing, settings), strict=True):
            self.made.families[keys[name]] = family
        return [self.made.families[keys[name]] for name in names], lines

    def families(self, split: str) -> tuple[list[FeatureFamily], dict[str, str]]:
        """:meth:`made_families`, each bound to the bundle (once)."""
        families, lines = self.made_families(split)
        for family in families:
            if id(family) not in self.made.bound:
                family.bind(self.bundle())
                self.made.bound.add(id(family))
        return families, lines

    # ------------------------------------------------------------------ learner

    def learner(self, n_rows: int, dev_rows: int | None = None) -> Any:
        """An unfitted copy of the config's learner for ``n_rows`` training rows (its grid scored on
        ``dev_rows`` dev rows after them, when given); made once per learner config and sizes."""
        config = self.config
        key = _key(config.learner, config.seed, config.cv, n_rows, dev_rows)
        if key not in self.made.learners:
            tune_on = None
            if dev_rows is not None:
                tune_on = PredefinedSplit(np.r_[np.full(n_rows, -1), np.zeros(dev_rows)])
            try:
                self.made.learners[key] = config_learner(
                    config, n_jobs=config.cv.n_jobs, cv=tune_on, n_rows=n_rows
                )
            except QEInputError as exc:
                if exc.path is not None:
                    raise
                raise QEInputError(exc.message, config.config_file) from None
        return clone(self.made.learners[key])

    # ------------------------------------------------------------------ selection

    def selector(self) -> Any:
        """An unfitted copy of the config's ``[selection]`` selector, with the parameters its record takes
        from the run (``SelectorRecord.from_run``: seed, CV folds, jobs) where the config leaves them
        unset; made (and its parameters checked) once per selection config."""
        from qe.selection import make_selector, registered_selectors

        config = self.config
        spec = config.selection
        assert spec is not None, "a config without [selection] has no selector"
        key = _key(spec, config.seed, config.cv)
        if key not in self.made.selectors:
            params = thaw(spec.params)
            record = registered_selectors().get(spec.name)
            if record is not None:  # an unknown name: make_selector says so
                run = record.run_defaults(config.seed, config.cv.folds, config.cv.n_jobs)
                for param, value in run.items():
                    params.setdefault(param, value)
            try:
                self.made.selectors[key] = make_selector(spec.name, **params)
            except QEInputError as exc:
                if exc.path is not None:
                    raise
                raise QEInputError(exc.message, config.config_file) from None
        return clone(self.made.selectors[key])


def _open_bundle(config: ExperimentConfig, progress: bool = True) -> Any:
    """The config's resource bundle (with the config's ``[mt2]`` attached), or None; built first from
    ``[features] resources_config`` when it is not there yet."""
    from qe.bundle import open_bundle, with_mt2

    resources = config.features.resources
    if resources and config.features.resources_config and not (Path(resources) / "manifest.json").is_file():
        _build_bundle(config, progress)
    bundle = open_bundle(resources) if resources else None
    if not config.mt2:
        return bundle
    from qe.resources.mt2 import check_direction

    check_direction(config.mt2["pair"], languages(config.data, bundle), config.config_file)
    try:
        return with_mt2(bundle, thaw(config.mt2))
    except QEInputError as exc:  # a pair or engine that is not installed: name the config
        if exc.path is not None:
            raise
        raise QEInputError(f"[mt2]: {exc.message}", config.config_file) from None


def _build_bundle(config: ExperimentConfig, progress: bool) -> None:
    """Build the bundle a config names from its ``resources_config``, saying so first."""
    from qe.bundle import build_bundle

    source = config.features.resources_config
    print(f"qe: {config.features.resources} is not built yet: building it from {source}", file=sys.stderr)
    build_bundle(source, config.features.resources, data_dir=config.data.data_dir, progress=progress)
