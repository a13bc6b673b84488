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
    "decode_input",
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


BATCH_HINT = "one request per line? use `ctxasm batch`"


def decode_input(raw: bytes, source: str, what: str = "request") -> Any:
    """The JSON value of the input read from ``source`` (a file, or ``-``: standard input), as
    :func:`ctxasm.jsonio.decode_json` reads it, with what a person at a terminal needs told: an
    empty input (nothing, or only white space) is named as such, and a request followed by more
    JSON on a line of its own (a JSONL file) gets :data:`BATCH_HINT`. The errors are the
    :class:`~ctxasm.errors.InvalidJSONError` of any malformed JSON (exit 2)."""
    from ctxasm.errors import InvalidJSONError
    from ctxasm.jsonio import decode_json

    try:
        return decode_json(raw, what=what)
    except InvalidJSONError as error:
        if not raw.removeprefix(b"\xef\xbb\xbf").strip(b" \t\r\n"):  # the parser says "empty"
            where = "standard input held" if source == "-" else f"{source} holds"
            blank = "nothing" if not raw else "only white space"
            said = f"{error.message}: {where} {blank}"
        elif what == "request" and _more_on_a_new_line(raw):
            said = f"{error.message}; {BATCH_HINT}"
        else:
            raise
        raise InvalidJSONError(said, field=error.field) from None


def _more_on_a_new_line(raw: bytes) -> bool:
    """Whether ``raw`` opens with one whole JSON value and, after a line end, holds more: the
    lines of a JSONL file, not one request. (Only asked of input already refused as JSON.)"""
    import json

    try:
        text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
        start = len(text) - len(text.lstrip(" \t\r\n"))
        _, end = json.JSONDecoder().raw_decode(text, start)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    rest = text[end:]
    between = rest[: len(rest) - len(rest.lstrip(" \t\r\n"))]
    return "\n" in between and len(between) < len(rest)


def request_fields(raw: bytes, overrides: dict[str, Any], source: str = "-") -> dict[str, Any]:
    """The request object read from ``source`` (see :func:`decode_input`), or one built from a
    bare list of hits (as its ``hits``) and ``--query``; the options given on the command line
    replace the request's fields."""
    from ctxasm.errors import InvalidJSONError
    from ctxasm.jsonio import decode_object

    value = decode_input(raw, source)
    if isinstance(value, list):
        if "query" not in overrides:
            raise InvalidJSONError(
                f"the request must be a JSON object, got an array; {HITS_HINT}", field="request"
            )
        value = {"hits": value}
    elif not isinstance(value, dict):
        decode_object(raw)  # the message every entry point gives for a JSON value of this kind
    return {**value, **overrides}
