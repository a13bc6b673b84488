"""Help that fits a user's habits: ``-h`` everywhere, a bare ``ctxasm`` shows help, and every
parameter has help text and a metavar that is a word, not a Python type."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer.core import TyperArgument, TyperGroup
from typer.testing import CliRunner

from ctxasm.cli.main import app

COMMANDS = (
    "assemble",
    "batch",
    "models",
    "report",
    "eval",
    "check-citations",
    "index",
    "delete",
    "ask",
    "serve",
)
# Type names Click and Typer print when no metavar is given.
TYPE_NAMES = re.compile(
    r"<[a-z][^>]*>|\b(TEXT|INTEGER|FLOAT|BOOLEAN|FILENAME|UUID|DATETIME|RANGE)\b"
)


def _root() -> TyperGroup:
    command = typer.main.get_command(app)
    assert isinstance(command, TyperGroup)
    return command


def test_the_command_list_is_complete() -> None:
    assert tuple(_root().commands) == COMMANDS


@pytest.mark.parametrize("flag", ["-h", "--help"])
@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_dash_h_works_everywhere(command: str, flag: str) -> None:
    done = CliRunner().invoke(app, [command, flag] if command else [flag])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"Usage: ctxasm {command}".rstrip() + " [OPTIONS]")
    assert "  -h, --help " in done.stdout


def test_a_bare_ctxasm_prints_the_help_and_exits_2() -> None:
    """As Typer's no_args_is_help does (a command is missing: a usage error, like Click's)."""
    done = CliRunner().invoke(app, [])
    assert done.exit_code == 2
    assert done.stdout == ""
    full = CliRunner().invoke(app, ["--help"]).stdout
    assert done.stderr == full


def _params() -> list[tuple[str, Any]]:
    root = _root()
    found = [("ctxasm", param) for param in root.params]
    for name, command in root.commands.items():
        found.extend((name, param) for param in command.params)
    return found


@pytest.mark.parametrize(
    ("command", "param"), _params(), ids=lambda v: v if isinstance(v, str) else v.name
)
def test_every_parameter_has_help_and_a_word_for_its_value(command: str, param: Any) -> None:
    if param.name == "help":
        return
    assert getattr(param, "help", None), f"{command} {param.name}: no help text"
    takes_value = isinstance(param, TyperArgument) or not getattr(param, "is_flag", False)
    if takes_value:
        assert param.metavar, f"{command} {param.name}: no metavar (help would show its type)"
        assert re.fullmatch(r"[A-Z][A-Z_]*|[A-Z,.]+|[a-z|]+", param.metavar), param.metavar
        assert not TYPE_NAMES.search(param.metavar), param.metavar


@pytest.mark.parametrize("command", COMMANDS)
def test_no_help_page_shows_a_type_name(command: str) -> None:
    page = CliRunner().invoke(app, [command, "--help"], terminal_width=200).stdout
    assert TYPE_NAMES.findall(page) == []


def test_arguments_read_as_words() -> None:
    pages = {
        command: CliRunner().invoke(app, [command, "-h"], terminal_width=200).stdout
        for command in ("assemble", "index", "ask", "batch")
    }
    assert pages["assemble"].splitlines()[0] == "Usage: ctxasm assemble [OPTIONS] [FILE]"
    assert pages["index"].splitlines()[0] == "Usage: ctxasm index [OPTIONS] {PATH}..."
    assert "\n  PATH...  Files or folders" in pages["index"]
    assert "\n  QUESTION  The question.  [required]" in pages["ask"]
    assert "\n  IN   Input JSONL" in pages["batch"]


def test_ask_shows_the_budget_default() -> None:
    page = CliRunner().invoke(app, ["ask", "-h"], terminal_width=200).stdout
    assert (
        "--budget N  Most tokens for the sources.  [default: (all the model's window leaves "
        "after the reserved output); x>=1]"
    ) in re.sub(r" {2,}", "  ", page)


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        ("assemble", "a request"),
        ("batch", "a line (one request)"),
        ("report", "a result"),  # report reads a saved result, never a request or a batch line
    ],
)
def test_max_bytes_names_what_each_command_reads(command: str, refused: str) -> None:
    page = CliRunner().invoke(app, [command, "-h"], terminal_width=200).stdout
    assert f"--max-bytes N  Refuse {refused} larger than N bytes." in re.sub(r" {2,}", "  ", page)
