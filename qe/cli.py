"""The ``qe`` command: one sub-command per module in ``qe.commands``; bad input exits 2 with one line."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Callable

from qe import __version__
from qe.errors import QEInputError, Terminated

# Each module in qe/commands/ defines ``register(subparsers)`` which adds its parser and sets
# ``func`` (taking the parsed namespace, returning an exit code). The top-level parser lists every
# command from this table (name -> the one-line help its module gives) and imports only the module
# of the command being run, so ``qe --help`` and each command start without the others' imports.
COMMANDS: dict[str, str] = {
    "run": "train on the training split (choices by CV), evaluate on test, write a run directory",
    "evaluate": "score predictions against gold labels (MAE, RMSE, DeltaAvg, Spearman, ...)",
    "compare": "print the test metrics of runs beside the published table",
    "predict": "score new source / MT pairs with a saved model",
    "ablate": "for every feature family: the system without it and the family alone (CV, test, bootstrap)",
    "report": "write report.md and report.html (metrics, published systems, figures) into a run directory",
    "features": "list the feature catalogue, or extract features from source / MT files",
    "resources": "build or inspect language-resource bundles",
    "init": "write a working experiment config for your own files (no Python needed)",
    "models": "build the ready-made models by name, or list them (name, languages, figures)",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser listing every command; only ``command``'s module is imported, to build
    its full sub-parser (the others are names with their help, enough for ``qe --help``)."""
    parser = argparse.ArgumentParser(
        prog="qe",
        description="Sentence-level quality estimation for machine translation.",
    )
    parser.add_argument("--version", action="version", version=f"qe {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if name == command:
            try:
                module = importlib.import_module(f"qe.commands.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"qe.commands.{name}":
                    raise
            else:
                module.register(subparsers)
                continue
        subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


def chosen_command(argv: list[str]) -> str | None:
    """The command named on a command line: its first argument that is not an option (the
    top-level options, ``--help`` and ``--version``, take no value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (0 ok, 2 bad input or usage, 1 internal error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(chosen_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    restore = _terminate_like_ctrl_c()
    try:
        return int(args.func(args) or 0)
    except QEInputError as exc:
        print(f"qe: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (e.g. `| head`): not an error
        return 0
    except OSError as exc:  # the system refused a file operation (disk full, read-only, name too long)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"qe: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("qe: interrupted", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    finally:
        restore()


def _terminate_like_ctrl_c() -> Callable[[], None]:
    """Turn SIGTERM into :class:`Terminated` (a KeyboardInterrupt) while a command runs, so that it
    cleans up as after Ctrl-C; a second SIGTERM ends the process at once. Returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:  # ignored by whoever started us: keep it so
        return lambda: None

    def handler(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


if __name__ == "__main__":
    sys.exit(main())
