"""The ``qe`` command: one sub-command per module in ``qe.commands``; bad input exits 2 with one line."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable

from qe import __version__
from qe.commands import load_command, summaries
from qe.infra.errors import QEInputError, Terminated


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser listing every command (``qe.commands``' records, read without importing
    them); only ``command``'s module is imported, to build its full sub-parser."""
    parser = argparse.ArgumentParser(
        prog="qe",
        description="Sentence-level quality estimation for machine translation.",
    )
    parser.add_argument("--version", action="version", version=f"qe {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = load_command(command) if command else None
    for name, help_text in summaries().items():
        if chosen is not None and name == chosen.name:
            chosen.add_to(subparsers)
        else:
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
