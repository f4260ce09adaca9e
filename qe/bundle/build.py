"""Building a bundle from its config: corpora read and checked for leakage, every member built by its
kind (``qe.bundle.members``), the cross-fitted versions, and the manifest, in a staged
directory moved into place at the end."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qe import __version__
from qe.bundle.config import read_bundle_config, text_configs
from qe.bundle.corpora import read_corpora, resolve, shown_path
from qe.bundle.crossfitting import cross_fit_members, plan_cross_fitting
from qe.bundle.kinds.edits import edits_dataset
from qe.bundle.members import BuildContext, build_members, member_kinds
from qe.bundle.overlap import check_overlaps
from qe.bundle.runtime import DEFAULT_BUNDLE_DIR, MANIFEST, ResourceBundle
from qe.bundle.sections import SIDES, BundleConfig
from qe.data import resolve_data_dir
from qe.infra.errors import naming
from qe.infra.io import atomic_write, sha256_file
from qe.infra.outputs import BUNDLE_FORMAT as FORMAT
from qe.infra.outputs import check_output_dir, staged_dir
from qe.infra.workers import exit_with_parent_everywhere


def _errors_name_the_config(build: Callable[..., ResourceBundle]) -> Callable[..., ResourceBundle]:
    """Errors of ``build(config_path, ...)`` that name no file name the bundle config."""

    @functools.wraps(build)
    def wrapper(config_path: str | Path, *args: Any, **kwargs: Any) -> ResourceBundle:
        with naming(config_path):
            return build(config_path, *args, **kwargs)

    return wrapper


@_errors_name_the_config
def build_bundle(
    config_path: str | Path,
    output: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    allow_overlap: bool = False,
    drop_overlap: bool | None = None,
    overwrite: bool = False,
    n_jobs: int = 2,
    progress: bool = True,
    token_cache_dir: str | Path | None = None,
) -> ResourceBundle:
    """Build every member of a bundle config into ``output`` (default ``models/resources/<name>``).

    Checks first (before any long step): corpus files exist, are UTF-8 and non-empty, the two
    sides of a parallel corpus have the same number of lines, and no corpus line copies or nearly
    copies a line of the ``[leakage] eval_files`` (unless ``allow_overlap``; see
    ``qe.resources.leakage``), except the training split's repeats (see ``qe.bundle.overlap``).
    With ``drop_overlap`` (default: ``[leakage] drop_overlap``) such lines (both sides of a parallel
    line, the whole training pair) are left out of every member instead, ``[edits]`` included, and
    listed in the manifest's ``leakage.dropped``. Members built from a QE training split are
    cross-fitted (see ``qe.bundle``). The bundle is built in a temporary directory beside
    ``output`` and moved into place at the end.
    """
    start = time.perf_counter()
    config_path = Path(config_path)
    config = read_bundle_config(config_path)
    root = resolve_data_dir(data_dir)
    output = Path(output) if output is not None else DEFAULT_BUNDLE_DIR / config.name
    inputs = [config_path, *_input_files(config, root), root]
    check_output_dir(output, "bundle", overwrite=overwrite, inputs=inputs)
    from qe.bundle.pieces import bundle_pieces
    from qe.infra.errors import require

    require(bundle_pieces(config), f"cannot build the {config.languages.pair} bundle", config_path)
    text = text_configs(config, config_path)

    corpora = read_corpora(config, root)
    # the QE corpora's target sides, resolved: the manifest's config says which text was used
    config = config.with_corpora(
        {name: config.corpora[name].completed(target=c.target) for name, c in corpora.items() if c.target}
    )
    edits = edits_dataset(config.members.get("edits"), root)
    if drop_overlap is None:
        drop_overlap = config.leakage.drop_overlap
    leakage, keep_edits = check_overlaps(config, root, corpora, edits, allow_overlap, drop_overlap)
    fold_map = plan_cross_fitting(config, corpora)

    exit_with_parent_everywhere()
    with staged_dir(output, "bundle", overwrite=overwrite, inputs=inputs) as work:
        context = BuildContext(
            config_path,
            root,
            corpora,
            text,
            work,
            n_jobs,
            progress,
            token_cache_dir,
            edits=None if edits is None else (edits, keep_edits),
        )
        members = build_members(config, context)
        cross_fit = cross_fit_members(config, context, members, fold_map)
        manifest = {
            "format": FORMAT,
            "name": config.name,
            "description": config.description,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "qe_version": __version__,
            "config_file": str(config_path),
            "config": config.to_document(),
            "languages": config.languages.to_document(),
            "text": {side: cfg.to_dict() for side, cfg in text.items()},
            "text_signature": {side: cfg.signature() for side, cfg in text.items()},
            "corpora": {
                name: {
                    side: {
                        "path": shown_path(root, path)
                        if corpus.qe is not None
                        else getattr(config.corpora[name], side),
                        "sha256": sha256_file(path),
                        "bytes": path.stat().st_size,
                        "lines": len(corpus.lines[side]),
                    }
                    for side, path in corpus.files.items()
                }
                for name, corpus in corpora.items()
            },
            "leakage": leakage,
            "cross_fit": cross_fit,
            "members": members,
            "build_seconds": round(time.perf_counter() - start, 3),
        }
        with atomic_write(work / MANIFEST) as handle:
            json.dump(manifest, handle, indent=2, sort_keys=True, ensure_ascii=False)
            handle.write("\n")
        _share_permissions(work)
    return ResourceBundle(output)


def _input_files(config: BundleConfig, root: Path) -> list[Path]:
    """The files a bundle config reads (corpora, evaluation files, truecase models, what member kinds
    read besides the corpora): the bundle directory must never hold one."""
    files = [
        resolve(root, path)
        for table in config.corpora.values()
        for key in (*SIDES, "mt", "post_edits")
        if (path := getattr(table, key)) is not None
    ]
    files += [resolve(root, path) for path in config.leakage.eval_files]
    text = config.text
    files += [
        resolve(root, t.truecase_model) for t in (text, text.src, text.tgt) if t.truecase_model is not None
    ]
    files += [
        resolve(root, path)
        for kind in member_kinds()
        if kind.inputs is not None
        for _, table in kind.tables(config)
        for path in kind.inputs(table)
    ]
    return files


def _share_permissions(folder: Path) -> None:
    """Give the bundle the usual permissions (temporary files are created private)."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for item in folder.iterdir():
        if item.is_file():
            item.chmod(0o666 & ~umask)
