"""``ctxasm assemble`` without Typer: its command line, read directly, and its body.

Building the Typer app imports Typer, Click and pydantic (to check option values), which costs
more than assembling a small request. :func:`plain_options` reads a command line that is
plainly ``assemble`` with options of the usual form and values that need no checking: a known
flag, a non-negative whole number where one is due, at most one FILE. It returns ``None`` for
anything else (``-h``, an unknown or abbreviated flag, ``--``, a value Typer might coerce or
refuse, shell completion, Windows) and the caller hands the command line to the Typer app,
which prints the help or the usage error. Both routes run :func:`assemble`, so the output, the
errors and the exit codes are the same; the Typer declaration of the options is in
:mod:`ctxasm.cli.app`, and a test holds :data:`FLAGS` to it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ctxasm.cli.exits import echo, fail_with
from ctxasm.cli.notices import nothing_fit
from ctxasm.cli.request_input import (
    DEFAULT_MAX_BYTES,
    MOST_MAX_BYTES,
    check_not_config,
    open_assembler,
    read_input,
    request_fields,
)

MAX_INDENT = 16  # wider only makes the output larger, and a huge one fills the disk

__all__ = ["FLAGS", "MAX_INDENT", "REPORT_FLAG", "AssembleOptions", "assemble", "plain_options"]


@dataclass(frozen=True, slots=True)
class AssembleOptions:
    """The arguments of ``ctxasm assemble`` (see its ``--help``)."""

    source: str = "-"
    query: str | None = None
    model: str | None = None
    fmt: str | None = None
    max_context_tokens: int | None = None
    report: bool = False
    html: str | None = None  # as given: exactly "-" is standard output
    indent: int | None = None
    config: Path | None = None
    max_bytes: int = DEFAULT_MAX_BYTES


def _text(value: str) -> str:
    return value


def _path(value: str) -> Path | None:
    return Path(value) if value else None


def _page(value: str) -> str | None:
    return value or None  # not a Path: it would read ./- (a file) as - (standard output)


def _count(minimum: int, maximum: int | None = None) -> Callable[[str], int | None]:
    def read(value: str) -> int | None:
        # Up to 18 plain digits without a leading zero: read by Typer as by int().
        plain = value.isascii() and value.isdigit() and len(value) <= 18
        if not plain or (value[0] == "0" and value != "0"):
            return None
        number = int(value)
        within = number >= minimum and (maximum is None or number <= maximum)
        return number if within else None

    return read


# Each value-taking flag: the AssembleOptions field it sets and how its value is read (None:
# not plainly valid, so Typer decides). --report, the one flag without a value, is apart.
FLAGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--query": ("query", _text),
    "--model": ("model", _text),
    "--format": ("fmt", _text),
    "--max-context-tokens": ("max_context_tokens", _count(1)),
    "--budget": ("max_context_tokens", _count(1)),  # ask's name for it
    "--html": ("html", _page),
    "--indent": ("indent", _count(0, MAX_INDENT)),
    "--config": ("config", _path),
    "--max-bytes": ("max_bytes", _count(1, MOST_MAX_BYTES)),
}
REPORT_FLAG = "--report"


def plain_options(argv: Sequence[str]) -> AssembleOptions | None:
    """The options of ``argv`` (the arguments after the program name) when it is a plain
    ``assemble`` command line, else ``None``: then the Typer app must read it."""
    # On Windows, Click expands wildcards in the arguments.
    if not argv or argv[0] != "assemble" or os.name == "nt" or _completing():
        return None
    options, source, rest = AssembleOptions(), None, list(argv[1:])
    while rest:
        token = rest.pop(0)
        if token == "-" or not token.startswith("-"):
            if source is not None:
                return None
            source = token
            continue
        flag, has_value, value = token.partition("=")
        if flag == REPORT_FLAG and not has_value:
            options = replace(options, report=True)
            continue
        if flag not in FLAGS:
            return None
        if not has_value:
            if not rest or (rest[0].startswith("-") and rest[0] != "-"):
                return None
            value = rest.pop(0)
        field, read = FLAGS[flag]
        parsed = read(value)
        if parsed is None:
            return None
        options = replace(options, **{field: parsed})
    return options if source is None else replace(options, source=source)


def _completing() -> bool:
    # Typer answers shell completion when _<PROG>_COMPLETE is set; leave that to it.
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


def assemble(options: AssembleOptions) -> None:
    """Assemble one request: JSON in, the result JSON on stdout, the report table on stderr
    with ``report``, the HTML report in a file with ``html``; a ctxasm error exits with its
    code and one line on stderr."""
    from ctxasm.errors import CtxasmError
    from ctxasm.schema import request_envelope

    given = {"query": options.query, "model": options.model, "format": options.fmt}
    overrides: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if options.max_context_tokens is not None:
        overrides["max_context_tokens"] = options.max_context_tokens
    try:
        if options.html is not None:  # checked before the input is read or anything written
            from ctxasm.batch.files import check_not_input
            from ctxasm.cli.report_view import check_page_target

            check_page_target(options.html, "html", stdout="the result JSON")
            replaced = "the page would replace the request"
            check_not_input(options.source, options.html, field="html", replaced=replaced)
            check_not_config(options.config, options.html, "html", "the page")
        assembler = open_assembler(options.config)
        raw = read_input(options.source, options.max_bytes)
        data = request_fields(raw, overrides, options.source)
        result = assembler.assemble(data)
        output = {**request_envelope(data), **result.to_dict()}
    except CtxasmError as error:
        fail_with(error)
    if options.html is not None:
        from ctxasm.cli.report_view import write_html

        write_html(output, options.html)
    echo(json.dumps(output, ensure_ascii=False, indent=options.indent))
    if options.report:
        from ctxasm.cli.report_view import print_report

        print_report(output["report"])
    warning = nothing_fit(output["report"])
    if warning is not None:
        echo(f"ctxasm: {warning}", err=True)
