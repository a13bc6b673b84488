"""``ctxasm``: assemble prompts from the command line (the console script's entry point).

A plain ``ctxasm assemble`` runs without building the Typer app (see
:mod:`ctxasm.cli.assemble_cmd`); every other command line, help and usage errors included,
goes to the app in :mod:`ctxasm.cli.app`, which ``app`` here names as well. Exit codes are
listed in :mod:`ctxasm.cli.exits`; every command exits through it.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from ctxasm.cli.assemble_cmd import AssembleOptions, assemble, plain_options
from ctxasm.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED, echo
from ctxasm.cli.request_input import HITS_HINT

if TYPE_CHECKING:
    from ctxasm.cli.app import app

__all__ = ["HITS_HINT", "app", "run"]


def __getattr__(name: str) -> Any:
    # The Typer app is built on first use: a plain `ctxasm assemble` never needs it.
    if name == "app":
        from ctxasm.cli.app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Commands that live long enough to win back fastokens' slower load (see docs/tokenizers.md):
# a service, and the thousands of assemblies of a batch or an evaluation. Every other command
# counts with tiktoken unless CTXASM_BPE_BACKEND says otherwise.
_LONG_LIVED = frozenset({"serve", "batch", "eval"})


class _Closed(io.RawIOBase):
    """A standard stream the process started without (``<&-``, ``>&-``): any read or write
    is an error naming it, which :func:`run` reports as one line (it was an internal error,
    or the result went nowhere with exit 0)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.buffer = self

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def readinto(self, _: Any) -> int:
        raise _ClosedStreamError(self.name)

    def write(self, _: Any) -> int:
        raise _ClosedStreamError(self.name)

    def isatty(self) -> bool:
        return False


class _ClosedStreamError(OSError):
    def __init__(self, name: str) -> None:
        super().__init__(errno.EBADF, f"{name} is closed")


def run() -> Any:
    """Console-script entry point."""
    for name, stream in (("stdin", "standard input"), ("stdout", "standard output")):
        if getattr(sys, name) is None:  # started with it closed
            setattr(sys, name, _Closed(stream))
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    if command not in _LONG_LIVED:
        os.environ.setdefault("CTXASM_BPE_BACKEND", "tiktoken")
    try:
        options = plain_options(sys.argv[1:])
        if options is not None:
            _run_plain(options)
        from ctxasm.cli.app import app

        return app(standalone_mode=True)
    except KeyboardInterrupt:
        echo("ctxasm: interrupted", err=True)
        raise SystemExit(130) from None
    except _ClosedStreamError as exc:
        echo(f"ctxasm: error: {exc.strerror}: give a file, or open it", err=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
    except Exception as exc:  # a bug, not a user mistake: one line, traceback on request
        if os.environ.get("CTXASM_DEBUG"):
            raise
        echo(
            f"ctxasm: internal error: {type(exc).__name__}: {exc} "
            "(set CTXASM_DEBUG=1 for the traceback, and please report it)",
            err=True,
        )
        raise SystemExit(EXIT_FAILED) from None


def _run_plain(options: AssembleOptions) -> NoReturn:
    """Run ``assemble`` and end the way a Typer command ends in standalone mode."""
    try:
        assemble(options)
    except EOFError:
        echo("", err=True)
        echo("Aborted!", err=True)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # The reader went away (`| head`): exit 1 without a second error when Python flushes
        # stdout on the way out.
        _discard_stdout()
        raise SystemExit(1) from None
    raise SystemExit(0)


def _discard_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor behind stdout
        pass
