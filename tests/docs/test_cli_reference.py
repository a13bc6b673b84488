"""docs/cli.md cannot drift from the command line: its synopsis names every command and exactly
the option flags each one has, and the page names no flag that no command has."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main
from markdown_it import MarkdownIt

from ctxasm.cli.main import app

CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_FLAG = re.compile(r"(?<![\w/-])-{1,2}[A-Za-z][\w-]*")
_LONG_FLAG = re.compile(r"(?<![\w/-])--[A-Za-z][\w-]*")


def _real_flags() -> dict[str, set[str]]:
    """Every command path (``ctxasm``, ``ctxasm assemble``, ...) with its option flags."""
    flags: dict[str, set[str]] = {}

    # Typer carries its own copy of click, so commands are read by their attributes.
    def walk(path: str, command: Any) -> None:
        flags[path] = {
            flag
            for param in command.params
            if param.param_type_name == "option"
            for flag in (*param.opts, *param.secondary_opts)
        }
        for name, sub in getattr(command, "commands", {}).items():
            walk(f"{path} {name}", sub)

    walk("ctxasm", typer.main.get_command(app))
    return flags


def _synopsis() -> str:
    for token in MarkdownIt("commonmark").parse(CLI_PAGE.read_text()):
        if token.type == "fence" and token.content.startswith("ctxasm "):
            return token.content
    raise AssertionError("docs/cli.md has no synopsis block starting with `ctxasm `")


def _documented_flags(commands: set[str]) -> dict[str, set[str]]:
    """The synopsis entries (a ``ctxasm ...`` line and its indented continuation lines), each
    under the longest command path it starts with, with the flags it names."""
    documented: dict[str, set[str]] = {}
    current = ""
    for line in _synopsis().splitlines():
        if line.startswith("ctxasm"):
            words = line.split()
            current = max(
                (c for c in commands if words[: len(c.split())] == c.split()),
                key=lambda c: len(c.split()),
            )
            documented.setdefault(current, set())
        # `--progress/--no-progress` names both flags; `[--json/--text]` too.
        documented[current] |= set(_FLAG.findall(line.replace("/", " ")))
    return documented


def _help_flags() -> set[str]:
    """``-h``/``--help``: every command has them, and the page may name them anywhere."""
    root = typer.main.get_command(app)
    names: list[str] = root.get_help_option_names(
        root.make_context("ctxasm", [], resilient_parsing=True)
    )
    return set(names)


def test_synopsis_names_every_command_with_exactly_its_flags() -> None:
    real = _real_flags()
    documented = _documented_flags(set(real))
    assert {path: flags - _help_flags() for path, flags in documented.items()} == real


def test_page_names_no_flag_that_does_not_exist() -> None:
    every_flag = set().union(*_real_flags().values(), _help_flags())
    named = set(_LONG_FLAG.findall(CLI_PAGE.read_text().replace("/", " ")))
    assert named - every_flag == set()
