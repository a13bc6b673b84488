"""File handling for ``ctxasm batch``: atomic output, a progress bar, clean interruption."""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import IO, BinaryIO

from ctxasm.assembler import Assembler
from ctxasm.batch.files import atomic_output, check_not_input
from ctxasm.batch.jsonl import BatchStats, assemble_lines, read_lines
from ctxasm.cli.progress import progress_bar
from ctxasm.errors import CtxasmError

__all__ = [
    "BatchInterruptedError",
    "exit_code",
    "interrupted_message",
    "run_batch",
]


class BatchInterruptedError(Exception):
    """SIGINT or SIGTERM arrived; ``stats`` says how far the batch got."""

    def __init__(self, signum: int, stats: BatchStats) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.stats = stats


class _Signalled(BaseException):
    """Raised by the signal handler, so that no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Output:
    """The output's ``write``, its failures (a full disk, a closed pipe) named as the output's,
    not the input's."""

    def __init__(self, handle: IO[str], name: str) -> None:
        self.handle = handle
        self.name = name

    def write(self, text: str) -> None:
        try:
            self.handle.write(text)
        except OSError as exc:
            raise _cannot_write(self.name, exc) from None


def _cannot_write(name: str, exc: OSError) -> CtxasmError:
    return CtxasmError(f"cannot write {name}: {exc.strerror or exc}", field="OUT")


@contextmanager
def _output(target: str) -> Iterator[_Output]:
    if target == "-":
        yield _Output(sys.stdout, "standard output")
        try:
            sys.stdout.flush()
        except OSError as exc:
            raise _cannot_write("standard output", exc) from None
        return
    manager = atomic_output(target)
    try:
        handle = manager.__enter__()
    except OSError as exc:  # a folder, no such folder, no permission: bad input, by its name
        raise OSError(exc.errno, exc.strerror, target) from None
    try:
        yield _Output(handle, target)
    except BaseException:
        # The temporary file is removed; closing a file that could not be written fails again,
        # and the first error is the one to report.
        with suppress(OSError):
            manager.__exit__(*sys.exc_info())
        raise
    try:
        manager.__exit__(None, None, None)
    except OSError as exc:
        raise _cannot_write(target, exc) from None


@contextmanager
def _input(source: str) -> Iterator[tuple[BinaryIO, int | None]]:
    """The input stream and its number of lines (for a file; ``None`` for standard input)."""
    if source == "-":
        yield sys.stdin.buffer, None
        return
    with open(source, "rb") as handle:
        # A pipe or a terminal (<(...), /dev/stdin) is read once: counted first, it was gone.
        total = _count_lines(handle) if stat.S_ISREG(os.fstat(handle.fileno()).st_mode) else None
        yield handle, total


def _count_lines(handle: BinaryIO) -> int:
    count, last = 0, b"\n"
    while chunk := handle.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    handle.seek(0)
    return count + (last != b"\n")


@contextmanager
def _signals_raise() -> Iterator[None]:
    """While the batch runs, SIGINT and SIGTERM end it through the normal exception path."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Signalled(signum)

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; the caller's own then apply
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_batch(
    source: str, target: str, assembler: Assembler, *, max_bytes: int, progress: bool
) -> BatchStats:
    """Assemble every request line of ``source`` into ``target``; on SIGINT or SIGTERM raise
    :class:`BatchInterruptedError` once the output is cleaned up (``target`` untouched)."""
    stats = BatchStats()
    check_not_input(source, target)
    try:
        with _signals_raise(), _input(source) as (stream, total), _output(target) as out:
            name = "standard input" if source == "-" else source
            lines = read_lines(stream, max_bytes, name=name)
            with progress_bar("assembling", show=progress, total=total, requests=True) as bar:
                return assemble_lines(
                    lines,
                    out.write,
                    assembler,
                    max_line_bytes=max_bytes,
                    on_request=lambda outcome: bar.advance(failed=stats.failed),
                    stats=stats,
                )
    except _Signalled as signalled:
        raise BatchInterruptedError(signalled.signum, stats) from None


def run_ray_batch(source: str, target: str, config: str | None, *, max_bytes: int) -> BatchStats:
    """:func:`ctxasm.batch.ray_engine.run_batch`, with SIGINT and SIGTERM ending it as they end
    a local batch (Ray's own handler aborted the process: exit 134 and a C stack dump)."""
    from ctxasm.batch.ray_engine import run_batch, start_ray

    check_not_input(source, target)
    start_ray()  # before the handlers: Ray sets its own when it starts
    try:
        with _signals_raise():
            return run_batch(source, target, config, max_bytes=max_bytes)
    except _Signalled as signalled:
        raise BatchInterruptedError(signalled.signum, BatchStats()) from None


def interrupted_message(error: BatchInterruptedError, target: str) -> str:
    """What an interrupted batch did, for standard error."""
    done = error.stats.written
    name = signal.Signals(error.signum).name
    if target == "-":
        return f"ctxasm: interrupted by {name}: {done:,} result lines were written to stdout"
    return (
        f"ctxasm: interrupted by {name} after {done:,} result lines; {target} was not written "
        "(an interrupted batch leaves no partial file): run it again"
    )


def exit_code(error: BatchInterruptedError) -> int:
    """The shell's code for death by that signal: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + error.signum
