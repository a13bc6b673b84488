"""Exit codes and the one-line error exit every command shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from ctxasm.errors import EXIT_BAD_INPUT, EXIT_FAILED

if TYPE_CHECKING:
    from ctxasm.errors import CtxasmError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "error_line", "fail", "fail_with"]


def fail(message: str, code: int) -> NoReturn:
    """Print ``ctxasm: error: message`` on stderr and exit with ``code``."""
    typer.echo(f"ctxasm: error: {message}", err=True)
    raise typer.Exit(code)


def error_line(error: Mapping[str, Any]) -> str:
    """An error's JSON (``CtxasmError.to_dict()``) as one line: the message, then the field."""
    field = error.get("field")
    return f"{error['message']} [{field}]" if field else str(error["message"])


def fail_with(error: CtxasmError) -> NoReturn:
    """Exit for a ctxasm error with the exit code its class carries (2 for bad input, 1 for
    anything else), printing its JSON (:meth:`~ctxasm.errors.CtxasmError.to_dict`) as a line."""
    fail(error_line(error.to_dict()), error.exit_code)
