"""The models a server offers, by the name requests use: ``--model NAME|PATH`` turned into a name and a
file, in one function (:func:`resolve_model`), so that a request only ever names a model from the
server's own list and never a file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from qe.infra.errors import QEInputError
from qe.model.catalog import model_argument

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A served model's name: what ``"model"`` in a request must equal (a file's stem for a path)."""

WORDS_SUFFIX = ".qwords"
"""A word model's file (``qe run`` with a ``[words]`` config): served through ``POST /v1/words``."""

REQUEST = "<request>"
"""The "file" a request's texts are read from, for the families' messages: line N is pair N - 1."""


@dataclass(frozen=True)
class ModelEntry:
    """One served model: the name requests use and the model file it was resolved to."""

    name: str
    path: Path

    @property
    def words(self) -> bool:
        """Whether it is a word model (tags words) rather than a sentence model (scores pairs)."""
        return self.path.suffix == WORDS_SUFFIX


def resolve_model(text: str) -> ModelEntry:
    """``--model``'s value as a served model: a ready-made model's name
    (:func:`qe.model.catalog.model_argument`: its built file, ``MODELS/NAME.skops``) or a model file, served
    under its file name without ``.skops`` (a sentence model) or ``.qwords`` (a word model)."""
    path = model_argument(text)
    if not path.is_file():
        raise QEInputError("model file not found" if not path.exists() else "is not a model file", path)
    name = path.name.removesuffix(".skops") if path.suffix != WORDS_SUFFIX else path.stem
    if not NAME.fullmatch(name):
        raise QEInputError(
            "a served model's file name must be letters, digits, '.', '_' or '-' (it is the name "
            "requests use); rename or link the file",
            path,
        )
    return ModelEntry(name, path.resolve())


def resolve_models(texts: list[str]) -> tuple[ModelEntry, ...]:
    """Every ``--model`` value resolved; two models under one name are refused."""
    entries: dict[str, ModelEntry] = {}
    for text in texts:
        entry = resolve_model(text)
        if entry.name in entries:
            raise QEInputError(
                f"two --model values are served as {entry.name!r}; give one of them another name"
            )
        entries[entry.name] = entry
    return tuple(entries.values())
