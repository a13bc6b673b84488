"""Exit codes, the one-line error exit every command shares, and the echo they print with.

Nothing here imports Typer: ``ctxasm assemble`` runs without it (see
:mod:`ctxasm.cli.assemble_cmd`), and its output and errors must be the same either way.
"""

from __future__ import annotations

import codecs
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from ctxasm.errors import EXIT_BAD_INPUT, EXIT_FAILED

if TYPE_CHECKING:
    from ctxasm.errors import CtxasmError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "echo",
    "error_line",
    "fail",
    "fail_with",
    "is_terminal",
    "visible",
]

# Control characters a terminal acts on (C0 but tab and newline, DEL, C1) and the bidi controls
# that reorder what it shows, written as escapes: a stored document's title or text must not
# set the terminal's title, write its clipboard, hide or reorder lines when it is shown.
_VISIBLE = {
    code: f"\\u{code:04x}"
    for code in (
        *range(0x20),
        *range(0x7F, 0xA0),
        0x200E,
        0x200F,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    )
    if code not in (0x09, 0x0A)
}


def visible(text: str) -> str:
    """``text`` with the control characters a terminal acts on written as JSON escapes
    (``\\u001b``, ``\\u202e``: JSON output stays JSON); a Windows line end stays a line end."""
    return text.replace("\r\n", "\n").translate(_VISIBLE)


def echo(message: str, *, err: bool = False, nl: bool = True) -> None:
    """Write ``message`` and a newline to stdout (stderr with ``err``) and flush, as
    ``typer.echo`` does, except that control characters are shown (see :func:`visible`) on a
    terminal and kept as they are elsewhere; a stream whose encoding is ASCII is written as
    UTF-8 (unencodable characters replaced)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no stream to write to (pythonw)
        return
    text = message + "\n" if nl else message
    # ctxasm writes no escape sequence of its own: on a terminal, those in data are shown;
    # a file or a pipe gets the data as it is (CSI sequences, alone, were dropped there)
    if is_terminal(stream):
        text = visible(text)
    binary = getattr(stream, "buffer", None)
    if binary is not None and _is_ascii(getattr(stream, "encoding", None) or "ascii"):
        stream.flush()
        binary.write(text.encode("utf-8", "replace"))
        binary.flush()
        return
    stream.write(text)
    stream.flush()


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (a closed or unusual stream is not)."""
    try:
        return bool(stream.isatty())
    except Exception:  # a closed or unusual stream: treat it as a file, as Click does
        return False


def _is_ascii(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "ascii"
    except LookupError:
        return False


def fail(message: str, code: int, *, then: str | None = None) -> NoReturn:
    """Print ``ctxasm: error: message`` on stderr (and the line ``then`` after it, when given)
    and exit with ``code``."""
    echo(f"ctxasm: error: {message}", err=True)
    if then is not None:
        echo(then, err=True)
    raise SystemExit(code)


def error_line(error: Mapping[str, Any]) -> str:
    """An error's JSON (``CtxasmError.to_dict()``) as one line: the message, then the field."""
    field = error.get("field")
    return f"{error['message']} [{field}]" if field else str(error["message"])


def fail_with(error: CtxasmError, *, then: str | None = None) -> NoReturn:
    """Exit for a ctxasm error with the exit code its class carries (2 for bad input, 1 for
    anything else), printing its JSON (:meth:`~ctxasm.errors.CtxasmError.to_dict`) as a line,
    and ``then`` after it when given."""
    fail(error_line(error.to_dict()), error.exit_code, then=then)
