"""docs/cli.md's option tables are what main.py's parsers hold now (tools/cli_reference.py)."""

from __future__ import annotations

import argparse

import main
from tools import cli_reference


def test_the_committed_reference_is_the_generated_one():
    page = cli_reference.PAGE.read_text(encoding="utf-8")
    assert cli_reference.render(page) == page, "run python -m tools.cli_reference"


def test_every_flag_of_every_command_has_a_row():
    page = cli_reference.PAGE.read_text(encoding="utf-8")
    subparsers = next(a for a in main.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subparsers.choices) == list(main.COMMANDS)
    for name, parser in subparsers.choices.items():
        section = page.split(f"### `{name}`", 1)[1].split("### ", 1)[0]
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in section, (name, flag)


def test_a_new_flag_changes_the_reference():
    parser = argparse.ArgumentParser(prog="orator say", description="speak")
    parser.add_argument("--rate", type=float, default=1.5, metavar="R", help="how fast | how slow")
    parser.add_argument("--quiet", action="store_true", help="say less (default %(default)s)")
    assert cli_reference.command_table("say", parser) == [
        "### `say`", "", "speak", "", "| option | what |", "|---|---|",
        "| `--rate R` | how fast \\| how slow (default 1.5) |",
        "| `--quiet` | say less (default False) |", ""]
