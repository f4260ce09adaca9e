"""The registry of ``qe`` commands: each module of this package holds one :class:`Command` record, which
registers itself when the module is imported, so adding a command is adding one file.

A command is imported only when it runs: ``qe --help`` lists the commands by reading each record's
``name`` and ``help`` from its module's source (:func:`summaries`) instead of importing the modules,
whose imports (numpy, the streaming machinery, bundles) are most of a command's start-up. That is
why a module assigns its record to ``COMMAND`` at the left margin, with its ``name`` and ``help``
spelled as plain strings in the ``Command(...)`` call.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple


class Command(NamedTuple):
    """One ``qe`` command: its name (that of its module), the one-line ``help`` of ``qe --help``, the
    ``description`` of its own ``--help``, ``arguments(parser)`` adding its options, and
    ``handler(args)`` running it (returns the exit code). A command without a handler (one made of
    sub-commands that set their own) prints its help and exits 2 when none is named. (A named tuple
    rather than a dataclass: ``qe --help`` imports this module, and dataclasses costs it a third.)"""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int] | None = None
    description: str | None = None

    def add_to(self, subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """Add this command's parser (with its arguments and handler) to ``qe``'s sub-parsers."""
        parser = subparsers.add_parser(self.name, help=self.help, description=self.description)
        parser.set_defaults(func=self.handler or (lambda args: (parser.print_help(), 2)[1]))
        self.arguments(parser)
        return parser


_REGISTRY: dict[str, Command] = {}


def register_command(command: Command) -> Command:
    """Add a command to the registry (each command module calls it once, on import)."""
    if _REGISTRY.get(command.name, command) is not command:
        raise ValueError(f"command {command.name!r} registered twice")
    _REGISTRY[command.name] = command
    return command


def load_command(name: str) -> Command | None:
    """The command ``name``: its module is imported (and nothing else); None if there is no such
    command (no module of that name, or a module that is not a command, e.g. ``options``)."""
    module = f"{__name__}.{name}"
    if name.startswith("_") or not name.isidentifier() or importlib.util.find_spec(module) is None:
        return None
    importlib.import_module(module)
    return _REGISTRY.get(name)


def summaries() -> dict[str, str]:
    """Every command's name -> its one-line help, in name order, read from the records in the
    modules' source: no command module is imported (nor ``pkgutil``, which imports ``inspect``)."""
    found: dict[str, str] = {}
    for folder in __path__:
        for path in Path(folder).glob("*.py"):
            if not path.stem.startswith("_") and (record := _record(path)) is not None:
                found[record[0]] = record[1]
    return dict(sorted(found.items()))


def _record(path: Path) -> tuple[str, str] | None:
    """The ``name`` and ``help`` of a module's record, the statement ``COMMAND = ...`` at the left
    margin, parsed alone (parsing the whole modules would make ``qe --help`` take half again as long)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("COMMAND = ")), None)
    if first is None:
        return None
    statement = None
    for last in range(first, len(lines)):  # the shortest run of lines that parses is the statement
        try:
            statement = ast.parse("\n".join(lines[first : last + 1]))
            break
        except SyntaxError:
            continue
    nodes = ast.walk(statement) if statement else ()
    calls = [n for n in nodes if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Command"]
    try:
        given = {keyword.arg: keyword.value for keyword in calls[0].keywords}
        return ast.literal_eval(given["name"]), ast.literal_eval(given["help"])
    except (IndexError, KeyError, ValueError):
        raise ValueError(f"{path}: COMMAND = Command(...) gives its name and help as plain strings") from None
