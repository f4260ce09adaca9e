"""``[mt2]``: a second MT system (Apertium) whose output serves as pseudo-reference: its settings
(``mt2.json``), loaded as ``qe.resources.mt2.SecondMT``; the pair must translate the bundle's source
language into its target language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qe.bundle.members import BuildContext, ConfigTable, MemberKind, register_member
from qe.bundle.sections import BundleConfig
from qe.config.rules import MT2


def _check(config: BundleConfig, key: str, table: ConfigTable, config_path: Path) -> None:
    from qe.resources.mt2 import check_direction

    check_direction(table["pair"], config.languages.to_document(), config_path)


def _build(
    context: BuildContext, key: str, table: ConfigTable, outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    from qe.resources.mt2 import SecondMT

    mt2 = SecondMT(table.get("engine", "apertium"), table["pair"])
    mt2.save(outputs["mt2"])
    return {"mt2": context.entry("mt2", outputs["mt2"], None, [], mt2.describe())}


def _load(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> Any:
    from qe.resources.mt2 import SecondMT

    return SecondMT.load(path, manifest.get("languages"))


register_member(
    MemberKind(
        kind="mt2",
        load=_load,
        section="mt2",
        rule=MT2,
        files=lambda key, table: {"mt2": "mt2.json"},
        build=_build,
        check=_check,
    )
)
