"""The features stage: each split's feature table, from registered feature sets, the split's own feature
table and the config's feature families (extracted through the per-family cache, ``qe.features.cache``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from qe.data import QEDataset, load_registered_features
from qe.data.splits import has_text, languages, registered_dataset
from qe.features.base import Pairs
from qe.features.cache import extract_cached
from qe.infra.errors import QEInputError
from qe.run.context import RunContext


@dataclass
class SplitData:
    """One split ready for learning: the dataset and its feature table (rows aligned)."""

    dataset: QEDataset
    features: pd.DataFrame
    extraction_seconds: dict[str, float] = field(
        default_factory=dict
    )  # per family (cache hits: as first run)
    table_sha256: str | None = None  # of the split's precomputed feature table, if any

    def without(self, rows: list[int]) -> SplitData:
        """The split without the pairs at ``rows`` (dev pairs repeating training pairs)."""
        drop = set(rows)
        keep = [k for k in range(len(self.dataset)) if k not in drop]
        features = self.features.iloc[keep].reset_index(drop=True)
        return SplitData(self.dataset.subset(keep), features, self.extraction_seconds, self.table_sha256)


def check_families(ctx: RunContext) -> None:
    """Before any extraction: refuse families whose pieces this machine or the bundle lacks (all of them
    in one message), and note once what the installed taggers cost them."""
    from qe.doctor import tagless
    from qe.doctor.pieces import experiment_pieces
    from qe.infra.errors import require

    config, bundle = ctx.config, ctx.bundle()
    families, _ = ctx.made_families("train")
    pair = "-".join((languages(config.data, bundle) or {}).values()) or "this language pair"
    require(experiment_pieces(config, bundle, families=families), f"features for {pair}", config.config_file)
    tagless.say(tagless.family_losses(families, bundle))


def build_split(ctx: RunContext, split: str) -> SplitData:
    """Compute or read every feature the config asks for on one split."""
    config = ctx.config
    loaded = ctx.loaded(split)
    dataset = loaded.dataset
    data, features = config.data, config.features
    tables: list[pd.DataFrame] = []
    seconds: dict[str, float] = {}
    for feature_set in features.sets:
        assert data.dataset is not None, "the schema refuses feature sets without a dataset"
        tables.append(
            load_registered_features(data.dataset, feature_set, data.split_name(split), data.data_dir)
        )
    if loaded.table is not None:
        tables.append(loaded.table.features)
    if features.families:
        if not has_text(dataset):
            raise QEInputError(
                f"[features] families need sentences, but [data.{split}] gives only a feature table "
                "(add src / mt files or a table, or drop the families)",
                config.config_file,
            )
        table, seconds = _extract_families(ctx, dataset, split)
        tables.append(table)
    for table in tables:
        if len(table) != len(dataset):
            raise QEInputError(
                f"a feature table for {split} has {len(table)} rows but the data has {len(dataset)}"
            )
    table = pd.concat([t.reset_index(drop=True) for t in tables], axis=1)
    sha = loaded.table.sha256[:16] if loaded.table is not None else None
    return SplitData(dataset=dataset, features=table, extraction_seconds=seconds, table_sha256=sha)


def _extract_families(
    ctx: RunContext, dataset: QEDataset, split: str
) -> tuple[pd.DataFrame, dict[str, float]]:
    from qe.features.registry import check_line_inputs

    resources = ctx.bundle()
    families, inputs = ctx.families(split)
    # A line input that is neither given nor provided by the dataset or the bundle is refused.
    check_line_inputs(families, {*inputs, *dataset.inputs}, resources)
    extra, origins = dict(dataset.inputs), dict(dataset.input_origins)
    for name, path in inputs.items():  # files named in [data.<split>] replace the dataset's own
        extra[name] = ctx.line_input(path)
        origins[name] = (str(path), 1)
        if len(extra[name]) != len(dataset):
            raise QEInputError(f"has {len(extra[name])} lines but the {split} data has {len(dataset)}", path)
    pairs = Pairs.of(dataset.src, dataset.mt, extra=extra, origins=origins, ids=dataset.ids)
    return extract_cached(
        families,
        pairs,
        resources,
        dataset=cache_label(ctx, split),
        n_jobs=ctx.config.cv.n_jobs,
        progress=ctx.progress,
        bind=False,
        data_hash=ctx.data_key(split, extra, inputs),
    )


def cache_label(ctx: RunContext, split: str) -> str:
    """A readable, config-independent label for the feature cache's file names (the sentences and
    inputs are in the cache key): the registered dataset and split, else ``data``, plus the
    data's fingerprint."""
    prefix = ctx.dataset(split).name if registered_dataset(ctx.config.data) is not None else "data"
    return f"{prefix}-{ctx.fingerprint(split)}".replace("/", "_")
