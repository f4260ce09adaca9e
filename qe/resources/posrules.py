"""The UPOS tags a spaCy ``attribute_ruler`` leaves on a tagged ``Doc``, without running its Matcher.

A spaCy pipeline's attribute ruler turns the tagger's fine tags into UPOS (``TAG == "NN"`` ->
``NOUN``, ``TAG == "PRP"`` and ``LOWER == "it"`` -> ``PRON``, ...): its Matcher finds every rule
matching every token, then the rules are applied in the order they were added, so the last
matching rule that sets ``POS`` decides; a token no such rule matches keeps the POS the earlier
components gave it (none for the English tagger, which spaCy prints as ``""``). The Matcher took
about a third of the tagging time; ``PosRules`` computes the same tags from a table kept per
distinct (tag, word, ...) seen.

Only rules whose every token pattern tests ``TAG``, ``POS``, ``LOWER``, ``ORTH``/``TEXT``,
``IS_SPACE`` or ``DEP`` by value, ``IN`` or ``NOT_IN`` are understood. ``DEP`` is always empty
here (the tagging pipelines run without a parser), so a rule that needs a dependency label never
matches and is dropped, as the Matcher would; a rule of several tokens that could match, or any
other pattern, makes ``PosRules.of`` return None and the caller runs the ruler itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qe.infra.memo import make_room

_ATTRIBUTES = ("TAG", "POS", "LOWER", "ORTH", "IS_SPACE")  # read from the Doc, in this order
_ALIASES = {"TEXT": "ORTH"}
Predicate = Callable[[Any], bool]


class _Equals:
    """The test ``value == equals``."""

    def __init__(self, equals: Any) -> None:
        self.equals = equals

    def __call__(self, value: Any) -> bool:
        return value == self.equals


def _value_test(spec: Any) -> Predicate | None:
    """A test of one attribute value: equality, ``IN`` or ``NOT_IN``; None for anything else."""
    if isinstance(spec, str | bool | int):
        return _Equals(spec)
    if isinstance(spec, dict) and len(spec) == 1:
        ((operator, options),) = spec.items()
        if isinstance(options, list | tuple) and all(isinstance(o, str | bool | int) for o in options):
            allowed = frozenset(options)
            if operator == "IN":
                return lambda value: value in allowed
            if operator == "NOT_IN":
                return lambda value: value not in allowed
    return None


def _token_test(spec: dict[str, Any]) -> dict[str, Predicate] | None:
    """Per-attribute tests of one token pattern, ``{}`` if it can never match here (it needs a
    dependency label), None if it is not understood."""
    tests: dict[str, Predicate] = {}
    for key, value in spec.items():
        name = _ALIASES.get(str(key).upper(), str(key).upper())
        test = _value_test(value)
        if test is None:
            return None
        if name == "DEP":
            if not test(""):
                return {}
            continue
        if name not in _ATTRIBUTES:
            return None
        tests[name] = test
    return tests or None  # an empty pattern matches every token: leave it to spaCy


class PosRules:
    """The ``POS``-setting rules of an attribute ruler, in order, as tests on token attributes."""

    _MEMO_LIMIT = 1_000_000  # distinct (tag, POS, word, space) rows remembered

    def __init__(self, rules: list[tuple[list[dict[str, Predicate]], str]]) -> None:
        self.rules = rules  # (alternative token patterns, the POS set), in the ruler's order
        self._memo: dict[tuple, str] = {}
        # The rules to try for a tag: those testing TAG == that tag, and those testing it otherwise.
        self._by_tag: dict[str, list[int]] = {}
        self._any_tag: list[int] = []
        for number, (alternatives, _) in enumerate(rules):
            tags = {getattr(tests.get("TAG"), "equals", None) for tests in alternatives}
            if None in tags:
                self._any_tag.append(number)
            else:
                for tag in tags:
                    self._by_tag.setdefault(tag, []).append(number)

    @classmethod
    def of(cls, ruler: Any) -> PosRules | None:
        """The rules of a spaCy ``AttributeRuler`` (None when some rule is not understood)."""
        rules = []
        for entry in ruler.patterns:
            attrs = {str(k).upper(): v for k, v in entry["attrs"].items()}
            if "POS" not in attrs:
                continue
            if not isinstance(attrs["POS"], str):
                return None
            alternatives = []
            for pattern in entry["patterns"]:
                tests = [_token_test(spec) for spec in pattern]
                if any(t is None for t in tests):
                    return None
                if any(t == {} for t in tests):
                    continue  # needs a dependency label
                if len(pattern) != 1:
                    return None
                alternatives.append(tests[0])
            if alternatives:
                rules.append((alternatives, attrs["POS"]))
        return cls(rules)

    def rule_pos(self, values: dict[str, Any]) -> str | None:
        """The POS the last matching rule sets for a token with these attribute values (None: none)."""
        for number in sorted({*self._by_tag.get(values["TAG"], ()), *self._any_tag}, reverse=True):
            alternatives, pos = self.rules[number]
            if any(all(test(values[name]) for name, test in tests.items()) for tests in alternatives):
                return pos
        return None

    def tags(self, doc: Any) -> tuple[str, ...]:
        """The UPOS tag of every token of a tagged ``Doc`` after the rules (``""`` when none)."""
        from spacy.attrs import IS_SPACE, LOWER, ORTH, POS, TAG
        from spacy.parts_of_speech import NAMES

        if not len(doc):
            return ()
        strings = doc.vocab.strings
        memo = self._memo
        out = []
        for row in doc.to_array([TAG, POS, LOWER, ORTH, IS_SPACE]).tolist():
            key = tuple(row)
            if key not in memo:
                make_room(memo, self._MEMO_LIMIT)
                tag, pos, lower, orth, space = row
                values = {
                    "TAG": strings[tag] if tag else "",
                    "POS": NAMES.get(pos, ""),
                    "LOWER": strings[lower],
                    "ORTH": strings[orth],
                    "IS_SPACE": bool(space),
                }
                found = self.rule_pos(values)
                memo[key] = values["POS"] if found is None else found
            out.append(memo[key])
        return tuple(out)
