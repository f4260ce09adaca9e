"""The command registry: each module of ``qe.commands`` is one record, listed by ``qe --help`` from its
source (without importing it) and imported alone when it runs; a new command is one new file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import qe.commands
from qe.cli import main
from qe.commands import load_command, summaries

COMMANDS = Path(qe.commands.__file__).parent

HELLO = '''
"""``qe hello``: a command added as one file."""

from qe.commands import Command, register_command


def arguments(parser):
    parser.add_argument("--name", default="world")


def run(args):
    print(f"hello {args.name}")
    return 0


COMMAND = register_command(Command(name="hello", help="say hello", arguments=arguments, handler=run))
'''


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    """A second folder of the ``qe.commands`` package (as a command file dropped into it would be)."""
    monkeypatch.setattr(qe.commands, "__path__", [*qe.commands.__path__, str(tmp_path)])
    monkeypatch.setattr(qe.commands, "_REGISTRY", dict(qe.commands._REGISTRY))  # all forgotten after
    monkeypatch.setattr(qe.commands, "hello", None, raising=False)
    yield tmp_path
    sys.modules.pop("qe.commands.hello", None)


def test_every_command_module_is_one_record_and_help_reads_it_right():
    listed = summaries()
    modules = {path.stem for path in COMMANDS.glob("*.py")} - {"__init__", "options"}  # options: shared flags
    assert set(listed) == modules and list(listed) == sorted(modules)
    for name, help_text in listed.items():
        record = load_command(name)
        assert record is not None and record.name == name and record.help == help_text
    assert (
        load_command("options") is None
        and load_command("no_such") is None
        and load_command("__init__") is None
    )


def test_a_new_command_is_one_file(plugin_folder, capsys):
    (plugin_folder / "hello.py").write_text(HELLO, encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert any(line.split() == ["hello", "say", "hello"] for line in capsys.readouterr().out.splitlines())
    assert main(["hello", "--name", "qe"]) == 0 and capsys.readouterr().out == "hello qe\n"


def test_a_record_whose_help_is_not_a_plain_string_is_named(plugin_folder):
    (plugin_folder / "hello.py").write_text(HELLO.replace('help="say hello"', "help=HELP"), encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"hello\.py: COMMAND = Command\(\.\.\.\) gives its name and help as plain"
    ):
        summaries()


def test_a_command_of_sub_commands_prints_its_help_without_one(capsys):
    assert main(["resources"]) == 2
    assert capsys.readouterr().out.startswith("usage: qe resources [-h] ACTION ...")
