"""Options that several commands share, declared once so that their help cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ctxasm.cli.request_input import DEFAULT_MAX_BYTES, MOST_MAX_BYTES

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "ConfigOption",
    "HtmlOption",
    "LineMaxBytesOption",
    "MaxBytesOption",
    "ProgressOption",
    "ResultMaxBytesOption",
    "page_file",
]

FORMATS = ("openai", "anthropic", "markdown", "text")

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="TOML or JSON config: request defaults, models, limits (default: $CTXASM_CONFIG).",
        show_default=False,
    ),
]


def _max_bytes(what: str) -> Any:
    """``--max-bytes``, refusing ``what`` (the input of the command) over N bytes."""
    return typer.Option(
        "--max-bytes",
        min=1,
        max=MOST_MAX_BYTES,
        metavar="N",
        help=f"Refuse {what} larger than N bytes.",
    )


# What each command reads: a request (assemble), a line of one (batch), a saved result (report).
MaxBytesOption = Annotated[int, _max_bytes("a request")]
LineMaxBytesOption = Annotated[int, _max_bytes("a line (one request)")]
ResultMaxBytesOption = Annotated[int, _max_bytes("a result")]
ProgressOption = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="Progress bar on standard error (default: on a terminal).",
        show_default=False,
    ),
]


def page_file(value: str) -> str:
    """An ``--html`` value as given: exactly ``-`` is standard output, anything else a file's
    name (``./-`` too, which a ``Path`` would shorten to ``-``). An empty one is refused
    (``Path("")`` is the current folder, and the error would blame the folder)."""
    if not value:
        raise typer.BadParameter("the file name is empty: name the page's file (report.html)")
    return value


HtmlOption = Annotated[
    str | None,
    typer.Option(
        "--html",
        metavar="FILE",
        parser=page_file,
        help="Write the report as one self-contained HTML page (opens from disk, offline).",
        show_default=False,
    ),
]
