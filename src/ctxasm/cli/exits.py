"""Exit codes and the one-line error exit every command shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from ctxasm.errors import CtxasmError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "fail", "fail_with"]

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def fail(message: str, code: int) -> NoReturn:
    """Print ``ctxasm: error: message`` on stderr and exit with ``code``."""
    typer.echo(f"ctxasm: error: {message}", err=True)
    raise typer.Exit(code)


def fail_with(error: CtxasmError) -> NoReturn:
    """Exit for a ctxasm error: 2 for bad input (naming the field), 1 for anything else."""
    from ctxasm.errors import BudgetError, ConfigError, RequestError

    where = f" [{error.field}]" if error.field else ""
    bad_input = isinstance(error, RequestError | BudgetError | ConfigError)
    fail(f"{error.message}{where}", EXIT_BAD_INPUT if bad_input else EXIT_FAILED)
