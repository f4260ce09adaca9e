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
# ``func`` (taking the parsed namespace, returning an exit code).
COMMAND_MODULES = [
    "run",
    "evaluate",
    "compare",
    "predict",
    "ablate",
    "report",
    "features",
    "resources",
    "init",
]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="qe",
        description="Sentence-level quality estimation for machine translation.",
    )
    parser.add_argument("--version", action="version", version=f"qe {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"qe.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"qe.commands.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (0 ok, 2 bad input or usage, 1 internal error)."""
    parser = build_parser()
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
