"""Streaming JSONL batches: memory stays flat however long the input is.

Each input line is one request. Each output line is the result JSON of that request, or an error
record ``{"error": {"code", "message", "field"}, "line": n}`` (``n`` counts from 1); a bad line
never stops the batch, unless it runs on past :data:`MAX_SKIPPED_BYTES` beyond the limit without
a line end (see :func:`read_lines`). A request's own ``id`` and ``metadata`` come back on its
line, on the result (first) as on the error record, so results can be joined back to their
requests. Blank lines are skipped and produce no output. Each line is read by
:mod:`ctxasm.jsonio`, the parser of the CLI and the service.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ctxasm.assembler import Assembler
from ctxasm.cache_state import CacheTotals
from ctxasm.data import Assembly
from ctxasm.errors import CtxasmError, RequestTooLargeError
from ctxasm.jsonio import decode_object, too_large
from ctxasm.schema import request_envelope

__all__ = ["MAX_SKIPPED_BYTES", "BatchStats", "assemble_line", "assemble_lines", "read_lines"]

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
# How far past the limit an over-long line is read to find its end, so that it can be skipped
# with an error record: an input whose line runs on further (/dev/zero, JSON without newlines)
# may never end, and stops the batch instead.
MAX_SKIPPED_BYTES = 1024 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


@dataclass
class BatchStats:
    """How a batch went (so far, while it runs)."""

    ok: int = 0
    failed: int = 0
    skipped: int = 0
    # Prompt-cache totals over the results that planned for it (docs/caching.md).
    cache: CacheTotals = field(default_factory=CacheTotals)
    # The first failed request, as "line N: its error's message" (see failed_line).
    first_failure: str | None = None

    @property
    def written(self) -> int:
        """Output lines written: one per request that was not blank."""
        return self.ok + self.failed

    def add(self, result: Assembly) -> None:
        """Count ``result``'s prompt-cache figures into :attr:`cache` (when it planned)."""
        self.cache.add(result.report.cache, result.report.total_tokens)

    def failed_line(self, record: str | bytes) -> None:
        """Note an error record written to the output (the first is kept, as
        :attr:`first_failure`, for the batch's last words); does not count it."""
        if self.first_failure is not None:
            return
        try:
            data = json.loads(record)
            error, line = data["error"], data["line"]
            self.first_failure = f"line {int(line)}: {error['message']}"
        except (ValueError, TypeError, KeyError):  # not a record this module wrote
            self.first_failure = None


def read_lines(
    stream: BinaryIO, max_bytes: int = DEFAULT_MAX_LINE_BYTES, *, name: str = "the input"
) -> Iterator[tuple[bytes, int]]:
    """Each line of ``stream`` without its end (``\n`` or ``\r\n``), with its size: a request
    of ``max_bytes`` is accepted whatever ends its line. A longer one is cut to ``max_bytes + 1``
    bytes (so it is refused as too large) and the rest of it is counted and skipped, a
    megabyte at a time, without being held. A line that runs on for more than
    :data:`MAX_SKIPPED_BYTES` past ``max_bytes`` raises :class:`RequestTooLargeError` naming
    the input (``name``) and the line: it may never end."""
    number = 0
    while True:
        line = stream.readline(max_bytes + 2)  # the longest request and "\r\n"
        if not line:
            return
        number += 1
        if line.endswith(b"\n"):
            line = line[: len(line) - _line_end(line)]
            yield line, len(line)
            continue
        size = len(line)
        if size > max_bytes:
            size = _skipped(stream, line, max_bytes, f"line {number} of {name}")
            line = line[: max_bytes + 1]
        yield line, size


def _skipped(stream: BinaryIO, start: bytes, max_bytes: int, where: str) -> int:
    """The size of the over-long line that begins with ``start``, once the rest of it is read
    from ``stream`` to its end (and dropped); :class:`RequestTooLargeError` for ``where`` when
    it runs on past :data:`MAX_SKIPPED_BYTES` beyond ``max_bytes``."""
    longest = max_bytes + MAX_SKIPPED_BYTES  # the longest line skipped, its end not counted
    size, tail = len(start), start[-2:]
    while not tail.endswith(b"\n") and size < longest + 2:
        chunk = stream.readline(min(_SKIP_CHUNK, longest + 2 - size))
        if not chunk:
            break
        size += len(chunk)
        tail = (tail + chunk)[-2:]
    size -= _line_end(tail)
    if size > longest:
        past = f"{MAX_SKIPPED_BYTES // 2**30:,} GiB"
        raise RequestTooLargeError(
            f"{where} runs on for more than {past} past the limit of {max_bytes:,} bytes "
            "without a line end: the batch stops, as an input with no line ends (a device such "
            "as /dev/zero, JSON without newlines) would be read forever. A line over the limit "
            f"is skipped, with an error record, when it ends within {past}; give one request "
            "per line",
            field="IN",
        )
    return size


def _line_end(data: bytes) -> int:
    """The length of the line end ``data`` ends with: 2 for ``\r\n``, 1 for ``\n``, else 0."""
    return 2 if data.endswith(b"\r\n") else 1 if data.endswith(b"\n") else 0


def assemble_lines(
    lines: Iterable[tuple[bytes, int]],
    write: Callable[[str], Any],
    assembler: Assembler,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_request: Callable[[str], Any] | None = None,
    stats: BatchStats | None = None,
    first_line: int = 1,
) -> BatchStats:
    """Assemble each request line (from :func:`read_lines`) and ``write`` one JSON line per
    request; error records count lines from ``first_line`` (where the input was read past the
    lines before it, to resume).

    ``on_request`` is called after each line with its outcome (``"ok"``, ``"failed"`` or
    ``"skipped"``), for progress bars; ``stats``, when given, is updated as the batch goes, so
    the caller knows how far it got if it is interrupted.
    """
    stats = BatchStats() if stats is None else stats
    for number, (raw, size) in enumerate(lines, start=first_line):
        outcome, line, result = _assemble(
            raw, number, assembler, max_line_bytes=max_line_bytes, size=size
        )
        if line is not None:
            write(line + "\n")
        if result is not None:
            stats.add(result)
        elif outcome == "failed" and line is not None:
            stats.failed_line(line)
        setattr(stats, outcome, getattr(stats, outcome) + 1)
        if on_request is not None:
            on_request(outcome)
    return stats


def assemble_line(
    raw: bytes,
    number: int,
    assembler: Assembler,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    size: int | None = None,
) -> tuple[str, str | None]:
    """One input line: (``"ok"``, ``"failed"`` or ``"skipped"``, the output JSON line without
    its newline, or ``None`` for a blank line). ``size`` is the line's real length when ``raw``
    was cut short. Every engine writes exactly these lines."""
    outcome, line, _ = _assemble(raw, number, assembler, max_line_bytes=max_line_bytes, size=size)
    return outcome, line


def _assemble(
    raw: bytes, number: int, assembler: Assembler, *, max_line_bytes: int, size: int | None
) -> tuple[str, str | None, Assembly | None]:
    """:func:`assemble_line`, with the assembly when there is one."""
    if not raw.strip():
        return "skipped", None, None
    envelope: dict[str, Any] = {}
    result = None
    try:
        if size is not None and size > max_line_bytes:
            raise too_large(max_line_bytes, size=size)
        data = decode_object(raw, max_bytes=max_line_bytes)
        envelope = request_envelope(data)
        result = assembler.assemble(data)
        record = {**envelope, **result.to_dict()}
        outcome = "ok"
    except CtxasmError as exc:
        record = {"error": exc.to_dict(), "line": number, **envelope}
        outcome = "failed"
    except Exception as exc:  # a bug in ctxasm: report it for this line, keep going
        message = f"internal error ({type(exc).__name__}: {exc}); please report it"
        error = {"code": "internal_error", "message": message, "field": None}
        record = {"error": error, "line": number, **envelope}
        outcome = "failed"
    return outcome, json.dumps(record, ensure_ascii=False), result if outcome == "ok" else None
