"""Batch outputs: written whole or not at all, and never over the input.

A regular output file is written to ``OUT.partial`` beside it (:func:`kept_output`) and renamed
over it at the end. A batch that stops before then (Ctrl-C, SIGTERM, a full disk, a crash)
leaves the result lines it wrote there, and ``ctxasm batch --resume`` goes on after them
(:func:`read_partial` checks they are this input's). Any other output (a FIFO, a device,
``/dev/stdout``) is written through :func:`ctxasm.files.atomic_output`, as the results come.

:func:`check_not_input` is the rule for every command that writes a file from what it read:
``assemble --html``, ``report --html`` and ``eval``'s outputs apply it too."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ctxasm.errors import RequestError
from ctxasm.files import atomic_output, is_input, new_file_mode

__all__ = [
    "PARTIAL_SUFFIX",
    "Partial",
    "atomic_output",
    "check_not_input",
    "check_resumed",
    "kept_output",
    "new_file_mode",
    "partial_path",
    "read_partial",
    "resumable",
]

PARTIAL_SUFFIX = ".partial"


def check_not_input(
    source: str | Path,
    target: str | Path,
    *,
    field: str = "OUT",
    replaced: str = "the results would replace the requests",
) -> None:
    """Refuse a ``target`` that is the input ``source``, by name, link or path (the string
    ``-``: the file standard input reads, as in ``< in.jsonl``; a ``Path`` is always a file's
    name), or a folder that holds it. Writing the target
    would destroy the input. The target string ``-`` is standard output, which replaces no
    file (a ``Path``, and ``./-``, name a file). ``field`` names the option in the error, and
    ``replaced`` says what would be lost."""
    if target == "-":
        return
    same = is_input(source, target)
    if not same and source != "-" and os.path.isdir(target):  # a folder output replaces its files
        inside = Path(os.path.realpath(source))
        same = Path(os.path.realpath(target)) in inside.parents
    if same:
        read = "the file standard input reads" if source == "-" else f"the input {source}"
        raise RequestError(
            f"the output {target} is {read}: {replaced}; choose another output file", field=field
        )


def resumable(target: str) -> bool:
    """Whether ``target`` is written through ``OUT.partial`` (and so can be resumed): a regular
    file, or a name with nothing there yet; not a FIFO, a device or ``/dev/fd/N``."""
    if target == "-" or target.startswith(("/dev/", "/proc/")):
        return False
    try:
        return stat.S_ISREG(os.stat(target).st_mode)
    except OSError:  # not there yet, or a link to nothing (made at its target)
        return True


def partial_path(target: str | Path) -> Path:
    """Where a batch keeps the results it has written until it ends: ``OUT.partial`` beside
    the file ``target`` names (beside the file a symbolic link names), as the user wrote it."""
    named = os.path.realpath(target) if os.path.islink(target) else os.fspath(target)
    return Path(named + PARTIAL_SUFFIX)


@contextmanager
def kept_output(target: str | Path, *, append: bool = False) -> Iterator[IO[str]]:
    """A text file to write the results to (``OUT.partial``, appended to when ``append``); it
    becomes ``target`` when the block succeeds. When the block fails, the lines written so far
    stay in ``OUT.partial`` (removed when it holds none)."""
    path = Path(os.path.realpath(target))
    if path.is_dir():  # found now, not after the whole batch has run
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    partial = partial_path(target)
    # Opened without truncating, then locked, then emptied: a second batch writing the same
    # output at the same time (a cron job that overran) is refused, not interleaved.
    handle = open(partial, "a", encoding="utf-8")  # noqa: SIM115
    try:
        _lock(handle, partial)
    except BaseException:  # not this batch's file to clean up
        handle.close()
        raise
    try:
        with handle:
            if not append:
                handle.truncate(0)
            yield handle
        os.chmod(partial, new_file_mode(path))
        os.replace(partial, path)
    except BaseException:
        with suppress(OSError):
            if partial.stat().st_size == 0:
                partial.unlink()
        raise


@dataclass(frozen=True)
class Partial:
    """The result lines an interrupted batch left in ``path``: ``lines`` of them, ``failed``
    of those error records, the first of which is ``first_error`` (empty where none), and the
    ``last`` one (to check it against the input)."""

    path: Path
    lines: int
    failed: int
    last: bytes
    first_error: bytes = b""


def read_partial(target: str) -> Partial | None:
    """What ``OUT.partial`` of ``target`` holds, or ``None`` where there is none. A last line
    cut short (the process was killed while it wrote) is removed from the file: that request
    is assembled again. Reads a line at a time: memory follows the longest line."""
    path = partial_path(target)
    try:
        handle = open(path, "r+b")  # noqa: SIM115
    except FileNotFoundError:
        return None
    with handle:
        _lock(handle, path)
        lines = failed = kept = 0
        last = first_error = b""
        while line := handle.readline():
            if not line.endswith(b"\n"):
                handle.truncate(kept)  # cut short: written again
                break
            kept += len(line)
            lines += 1
            if line.startswith(b'{"error": '):
                failed += 1
                first_error = first_error or line
            last = line
    return Partial(path, lines, failed, last, first_error)


def check_resumed(partial: Partial, request: bytes, number: int, source: str) -> None:
    """Refuse to go on after ``partial`` where its last line is not the outcome of the input's
    request at line ``number`` (``request``): an error record names the line it was, a result
    carries the request's ``id``. The results would otherwise join the wrong requests."""
    try:
        record: Any = json.loads(partial.last)
        asked: Any = json.loads(request)
    except ValueError:  # a request that is no JSON has an error record: compared by line
        record, asked = _loaded(partial.last), None
    fits = True
    if isinstance(record, dict) and "error" in record:
        fits = record.get("line") == number
    elif isinstance(asked, dict) and "id" in asked:
        fits = isinstance(record, dict) and record.get("id") == asked["id"]
    if not fits:
        raise RequestError(
            f"{partial.path} does not continue {source}: its last result is not that of request "
            f"{partial.lines:,} (line {number:,}) of {source}; delete it to start over",
            field="OUT",
        )


def _loaded(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _lock(handle: IO[Any], partial: Path) -> None:
    """Hold an exclusive lock on ``partial`` while it is open (where the system has ``flock``);
    a :class:`RequestError` when another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks
        return
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RequestError(
            f"another batch is writing {partial} now: wait for it to end, or give another "
            "output file",
            field="OUT",
        ) from None
