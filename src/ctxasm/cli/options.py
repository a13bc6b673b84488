"""Options that several commands share, declared once so that their help cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ctxasm.cli.request_input import DEFAULT_MAX_BYTES, MOST_MAX_BYTES

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "ConfigOption",
    "HtmlOption",
    "MaxBytesOption",
    "ProgressOption",
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
MaxBytesOption = Annotated[
    int,
    typer.Option(
        "--max-bytes",
        min=1,
        max=MOST_MAX_BYTES,
        metavar="N",
        help="Refuse a request (or batch line) larger than N bytes.",
    ),
]
ProgressOption = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="Progress bar on standard error (default: on a terminal).",
        show_default=False,
    ),
]

HtmlOption = Annotated[
    Path | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="Write the report as one self-contained HTML page (opens from disk, offline).",
        show_default=False,
    ),
]
