"""Streaming JSONL batches: memory stays flat however long the input is.

Each input line is one request. Each output line is the result JSON of that request, or an error
record ``{"error": {"code", "message", "field"}, "line": n}`` (``n`` counts from 1); a bad line
never stops the batch. Blank lines are skipped and produce no output. Each line is read by
:mod:`ctxasm.jsonio`, the parser of the CLI and the service.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from ctxasm.assembler import Assembler
from ctxasm.errors import CtxasmError
from ctxasm.jsonio import decode_object

__all__ = ["BatchStats", "assemble_line", "assemble_lines", "read_lines"]

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass
class BatchStats:
    """How a batch went."""

    ok: int = 0
    failed: int = 0
    skipped: int = 0


def read_lines(stream: BinaryIO, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[bytes]:
    """Lines of ``stream``; a line longer than ``max_bytes`` is cut to ``max_bytes + 1`` bytes
    (so it is refused as too large) and the rest of it is skipped without being held."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            rest = line
            while rest and not rest.endswith(b"\n"):
                rest = stream.readline(1024 * 1024)
        yield line


def assemble_lines(
    lines: Iterable[bytes],
    write: Callable[[str], Any],
    assembler: Assembler,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_line: Callable[[int], Any] | None = None,
) -> BatchStats:
    """Assemble each request line and ``write`` one JSON line per request.

    ``on_line`` is called with the byte length of every line read (for progress bars).
    """
    stats = BatchStats()
    for number, raw in enumerate(lines, start=1):
        if on_line is not None:
            on_line(len(raw))
        outcome, line = assemble_line(raw, number, assembler, max_line_bytes=max_line_bytes)
        setattr(stats, outcome, getattr(stats, outcome) + 1)
        if line is not None:
            write(line + "\n")
    return stats


def assemble_line(
    raw: bytes, number: int, assembler: Assembler, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> tuple[str, str | None]:
    """One input line: (``"ok"``, ``"failed"`` or ``"skipped"``, the output JSON line without
    its newline, or ``None`` for a blank line). Every engine writes exactly these lines."""
    if not raw.strip():
        return "skipped", None
    try:
        data = decode_object(raw, max_bytes=max_line_bytes)
        record = assembler.assemble(data).to_dict()
        outcome = "ok"
    except CtxasmError as exc:
        record = {"error": exc.to_dict(), "line": number}
        outcome = "failed"
    except Exception as exc:  # a bug in ctxasm: report it for this line, keep going
        message = f"internal error ({type(exc).__name__}: {exc}); please report it"
        record = {
            "error": {"code": "internal_error", "message": message, "field": None},
            "line": number,
        }
        outcome = "failed"
    return outcome, json.dumps(record, ensure_ascii=False)
