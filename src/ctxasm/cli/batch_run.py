"""File handling for ``ctxasm batch``: atomic output, a progress bar, clean interruption, and
going on after an interrupted run (``--resume``, see :mod:`ctxasm.batch.files`)."""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import IO, BinaryIO

from ctxasm.assembler import Assembler
from ctxasm.batch.files import (
    Partial,
    atomic_output,
    check_not_input,
    check_resumed,
    kept_output,
    partial_path,
    read_partial,
    resumable,
)
from ctxasm.batch.jsonl import BatchStats, assemble_lines, read_lines
from ctxasm.cli.progress import progress_bar
from ctxasm.errors import CtxasmError, RequestError

__all__ = [
    "BatchInterruptedError",
    "exit_code",
    "interrupted_message",
    "kept_message",
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
def _output(target: str, *, append: bool = False) -> Iterator[_Output]:
    if target == "-":
        yield _Output(sys.stdout, "standard output")
        try:
            sys.stdout.flush()
        except OSError as exc:
            raise _cannot_write("standard output", exc) from None
        return
    manager = kept_output(target, append=append) if resumable(target) else atomic_output(target)
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
def _signals_raise() -> Iterator[list[int]]:
    """While the batch runs, SIGINT and SIGTERM end it through the normal exception path. The
    signals received are also kept in the list given: Python ignores an exception raised in a
    callback it runs on its own (a weak reference's, during garbage collection), so a signal
    that lands there would be lost, and the batch run to its end (see :func:`_until_signalled`)."""
    received: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        raise _Signalled(signum)

    if threading.current_thread() is not threading.main_thread():
        yield received  # only the main thread may set handlers; the caller's own then apply
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _until_signalled(
    items: Iterable[tuple[bytes, int]], received: list[int]
) -> Iterator[tuple[bytes, int]]:
    """``items``, stopped by :class:`_Signalled` before the next one (and after the last) once
    a signal was ``received`` whose exception was lost."""
    for item in items:
        if received:
            raise _Signalled(received[0])
        yield item
    if received:
        raise _Signalled(received[0])


def run_batch(
    source: str,
    target: str,
    assembler: Assembler,
    *,
    max_bytes: int,
    progress: bool,
    resume: bool = False,
) -> BatchStats:
    """Assemble every request line of ``source`` into ``target``; on SIGINT or SIGTERM raise
    :class:`BatchInterruptedError` (``target`` untouched; the lines written so far kept in
    ``OUT.partial``). With ``resume``, go on after the lines ``OUT.partial`` holds."""
    check_not_input(source, target)
    partial = _partial(source, target, resume)
    stats = BatchStats()
    if partial is not None:
        stats.ok, stats.failed = partial.lines - partial.failed, partial.failed
        if partial.first_error:
            stats.failed_line(partial.first_error)
    try:
        with (
            _signals_raise() as received,
            _input(source) as (stream, total),
            _output(target, append=partial is not None) as out,
        ):
            name = "standard input" if source == "-" else source
            lines = read_lines(stream, max_bytes, name=name)
            first = 1 if partial is None else _skip(lines, partial, name) + 1
            left = None if total is None else max(0, total - first + 1)
            with progress_bar("assembling", show=progress, total=left, requests=True) as bar:
                return assemble_lines(
                    _until_signalled(lines, received),
                    out.write,
                    assembler,
                    max_line_bytes=max_bytes,
                    on_request=lambda outcome: bar.advance(failed=stats.failed),
                    stats=stats,
                    first_line=first,
                )
    except _Signalled as signalled:
        raise BatchInterruptedError(signalled.signum, stats) from None


def _partial(source: str, target: str, resume: bool) -> Partial | None:
    """The lines an interrupted run left, to go on after (``resume``); refuses to start over
    them without ``resume``, which would lose them."""
    if not resumable(target):
        if resume:
            raise RequestError(
                "--resume needs an output file (the results of an interrupted run are kept "
                f"beside it), not {'standard output' if target == '-' else target}",
                field="--resume",
            )
        return None
    check_not_input(source, partial_path(target))
    partial = read_partial(target)
    if partial is not None and partial.lines == 0 and not resume:
        return None  # nothing to lose: written over
    if partial is not None and not resume:
        raise RequestError(
            f"{partial.path} holds {partial.lines:,} result lines of an interrupted batch: add "
            "--resume to go on after them, or delete it to start over",
            field="OUT",
        )
    return partial


def _skip(lines: Iterator[tuple[bytes, int]], partial: Partial, source: str) -> int:
    """Read past the requests whose results ``partial`` holds; the number of the last line
    read (0 when it holds none)."""
    if partial.lines == 0:
        return 0
    done = number = 0
    for number, (raw, _) in enumerate(lines, start=1):
        if raw.strip():  # a blank line has no result line
            done += 1
            if done == partial.lines:
                check_resumed(partial, raw, number, source)
                return number
    raise RequestError(
        f"{partial.path} holds {partial.lines:,} result lines but {source} has {done:,} "
        "requests: it is not this input's; delete it to start over",
        field="OUT",
    )


def run_ray_batch(source: str, target: str, config: str | None, *, max_bytes: int) -> BatchStats:
    """:func:`ctxasm.batch.ray_engine.run_batch`, with SIGINT and SIGTERM ending it as they end
    a local batch (Ray's own handler aborted the process: exit 134 and a C stack dump)."""
    from ctxasm.batch.ray_engine import run_batch, start_ray

    check_not_input(source, target)
    start_ray()  # before the handlers: Ray sets its own when it starts
    try:
        with _signals_raise() as received:
            stats = run_batch(source, target, config, max_bytes=max_bytes)
            if received:  # its exception was lost (see _signals_raise)
                raise _Signalled(received[0])
            return stats
    except _Signalled as signalled:
        raise BatchInterruptedError(signalled.signum, BatchStats()) from None


def interrupted_message(error: BatchInterruptedError, target: str) -> str:
    """What an interrupted batch did, for standard error."""
    done = error.stats.written
    name = signal.Signals(error.signum).name
    if target == "-":
        return f"ctxasm: interrupted by {name}: {done:,} result lines were written to stdout"
    if not resumable(target):
        return f"ctxasm: interrupted by {name}: {done:,} result lines were written to {target}"
    kept = partial_path(target)
    if done == 0 or not kept.exists():
        return (
            f"ctxasm: interrupted by {name} before any result line; {target} was not written: "
            "run it again"
        )
    return (
        f"ctxasm: interrupted by {name} after {done:,} result lines; {target} was not written, "
        f"the lines are kept in {kept}: run the same command with --resume to go on after them"
    )


def kept_message(target: str) -> str | None:
    """For a batch stopped by an error: where the lines it wrote are kept, if anywhere."""
    if not resumable(target):
        return None
    kept = partial_path(target)
    if not kept.exists():
        return None
    return (
        f"ctxasm: the result lines written before it are kept in {kept}: --resume goes on "
        "after them"
    )


def exit_code(error: BatchInterruptedError) -> int:
    """The shell's code for death by that signal: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + error.signum
