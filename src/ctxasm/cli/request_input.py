"""Where a command's requests and configuration come from: a file or standard input (never
more than ``--max-bytes`` of it), a bare list of retriever hits, and ``--config`` or
``$CTXASM_CONFIG``.

Nothing here imports Typer (see :mod:`ctxasm.cli.assemble_cmd`); library modules are imported
by the functions that need them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxasm.cli.exits import EXIT_BAD_INPUT, echo, fail, is_terminal

if TYPE_CHECKING:
    from ctxasm.assembler import Assembler

__all__ = [
    "DEFAULT_MAX_BYTES",
    "HITS_HINT",
    "MOST_MAX_BYTES",
    "check_not_config",
    "config_file",
    "open_assembler",
    "read_input",
    "request_fields",
]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MOST_MAX_BYTES = 2**53  # the most --max-bytes takes (a larger one overflowed a read's size)
HITS_HINT = "for a list of retriever hits, give the question with --query"


def config_file(config: Path | None) -> str | None:
    """The config file a command reads: ``config`` (``--config``), else ``$CTXASM_CONFIG``,
    else none (the built-in defaults)."""
    return str(config) if config is not None else os.environ.get("CTXASM_CONFIG") or None


def open_assembler(config: Path | None) -> Assembler:
    """The assembler of :func:`config_file`, else of the built-in defaults."""
    from ctxasm.assembler import Assembler

    return Assembler(config_file(config))


def check_not_config(config: Path | None, target: str | Path, field: str, output: str) -> None:
    """Refuse ``target`` (the option ``field``, which writes ``output``) when it is the config
    file the command reads (see :func:`config_file` and
    :func:`ctxasm.batch.files.check_not_input`): the output would replace it."""
    from ctxasm.batch.files import check_not_input

    source = config_file(config)
    if source is not None:  # a Path: a file named "-" is no standard input
        replaced = f"{output} would replace the config"
        check_not_input(Path(source), target, field=field, replaced=replaced)


def read_input(source: str, max_bytes: int, what: str = "request") -> bytes:
    """At most ``max_bytes`` of the input (:func:`ctxasm.files.read_bounded`); over that, an
    error stating the input's size where it is known (a regular file, named or on standard
    input: a pipe or a device is not read past the limit, as it may never end). ``what`` names
    the input: the request, or a saved result."""
    from ctxasm.files import TooLargeError, read_bounded

    if source == "-" and is_terminal(sys.stdin):  # a bare command waited silently for JSON
        echo(
            f"ctxasm: reading the {what} from standard input (end it with Ctrl-D); "
            "give a file to read it from, or pipe one in",
            err=True,
        )
    try:
        return read_bounded(sys.stdin.buffer if source == "-" else source, max_bytes)
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror}", EXIT_BAD_INPUT)
    except TooLargeError as exc:
        from ctxasm.jsonio import too_large

        error = too_large(max_bytes, what, size=exc.size)
        fail(f"{error.message} [{what}]", EXIT_BAD_INPUT)


def request_fields(raw: bytes, overrides: dict[str, Any]) -> dict[str, Any]:
    """The request object, or one built from a bare list of hits and ``--query``; the options
    given on the command line replace the request's fields."""
    from ctxasm.errors import InvalidJSONError
    from ctxasm.hits import passages_from_hits
    from ctxasm.jsonio import decode_json, decode_object

    value = decode_json(raw)
    if isinstance(value, list):
        if "query" not in overrides:
            raise InvalidJSONError(
                f"the request must be a JSON object, got an array; {HITS_HINT}", field="request"
            )
        value = {"passages": passages_from_hits(value)}
    elif not isinstance(value, dict):
        decode_object(raw)  # the message every entry point gives for a JSON value of this kind
    return {**value, **overrides}
