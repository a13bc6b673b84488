"""Help pages that name values by what they are (``QUESTION``, ``PATH...``), not by their
Python type (Typer's default shows ``QUESTION <str>`` and ``PATH <list[Path]>``)."""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperCommand

__all__ = ["WordsCommand"]


class WordsCommand(TyperCommand):
    """A command whose help lists each argument by its metavar, with ``...`` when it repeats;
    options are listed as Typer lists them (their metavars are set where they are declared)."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "").upper()
                arguments.append((name + ("..." if param.nargs != 1 else ""), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
