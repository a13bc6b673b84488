"""Files written whole or not at all, with the permissions a user expects.

:func:`atomic_output` writes to a hidden temporary file beside the target and renames it over the
target only when the block ends without an exception, so readers never see half a file and an
interrupted run leaves neither a partial target nor the temporary file; :func:`write_atomic`
does the same for bytes made beforehand (a report page, a dataset). The finished file gets the
mode of the file it replaces, else ``0o666`` less the process umask (what ``open`` would have
given it), not the ``0o600`` of a temporary file. A link is followed (the file it names is
replaced, beside itself), and what is not a regular file (a pipe, a device) is written to.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

__all__ = [
    "TooLargeError",
    "atomic_output",
    "is_input",
    "new_file_mode",
    "read_bounded",
    "write_atomic",
]


class TooLargeError(ValueError):
    """A file holds more than a reader takes (see :func:`read_bounded`); ``size`` is its size
    where it is known (a regular file), else ``None``."""

    def __init__(self, message: str, size: int | None = None) -> None:
        super().__init__(message)
        self.size = size


def read_bounded(source: str | Path | BinaryIO, most_bytes: int) -> bytes:
    """The bytes of the file at ``source``, or of an open binary stream (standard input), of at
    most ``most_bytes``; :class:`TooLargeError` beyond (a regular file by its size, before a
    byte is read; a device such as /dev/zero or a pipe, which may never end, once it has given
    one byte more), an ``OSError`` where it cannot be read. A named pipe is read as it comes
    (``--config <(...)`` names one)."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as stream:
            return read_bounded(stream, most_bytes)
    try:
        status = os.fstat(source.fileno())
        left = status.st_size - source.tell() if stat.S_ISREG(status.st_mode) else None
    except (OSError, ValueError):  # a stream in memory (io.UnsupportedOperation is both)
        left = None
    if left is not None and left > most_bytes:
        raise TooLargeError(f"it is {left:,} bytes, more than {most_bytes:,}", left)
    data = source.read(most_bytes + 1)
    if len(data) > most_bytes:
        raise TooLargeError(f"it holds more than {most_bytes:,} bytes")
    return data


def is_input(source: str | Path, target: str | Path) -> bool:
    """Whether writing ``target`` would replace the regular file that ``source`` names (the
    string ``-``: the file standard input reads, as in ``< data.jsonl``; a ``Path`` is always a
    file's name). The files are compared by device and
    inode, so a second name, a link or another path to the same file counts. A target that
    does not exist yet is not the input. Neither is a pipe or a device, because writing to
    one replaces nothing."""
    try:
        written = os.stat(target)
        read = _stdin_status() if source == "-" else os.stat(source)
    except (OSError, ValueError):  # missing, unreadable or unnamable: not the same file
        return False
    return read is not None and stat.S_ISREG(written.st_mode) and os.path.samestat(read, written)


def _stdin_status() -> os.stat_result | None:
    """What standard input reads, or ``None`` when it is no file (closed, or a stream in
    memory, as under a test runner)."""
    stream = sys.stdin
    if stream is None:
        return None
    try:
        return os.fstat(stream.fileno())
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return None


def new_file_mode(target: Path, *, folder: bool = False) -> int:
    """The mode ``target`` should end with: its current one, else ``0o666`` (a ``folder``:
    ``0o777``) under the umask."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0o022)  # reading the umask means setting it; put it straight back
        os.umask(umask)
        return (0o777 if folder else 0o666) & ~umask


@contextmanager
def atomic_output(target: str | Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file to write (text in UTF-8, or ``binary``); it becomes ``target`` when the block
    succeeds (see the module). A symbolic link stays one: the file it names is replaced. A
    pipe, a device or a socket (a FIFO, ``>(gzip > out.gz)``) cannot be replaced, only
    written to: it is, as the block writes; so is a descriptor this process has open
    (``/dev/stdout``, ``/dev/fd/3``), as it was opened (a shell's ``>>`` appends)."""
    path = Path(target)
    if path.is_dir():  # found now, not after the whole batch has run
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    mode, encoding = ("wb", None) if binary else ("w", "utf-8")
    descriptor = _open_descriptor(str(target))
    if descriptor is not None:  # "/dev/stdout" of "... >> results.jsonl": appended, as opened
        with os.fdopen(os.dup(descriptor), mode, encoding=encoding) as stream:
            yield stream
        return
    try:
        kind = os.stat(path).st_mode
    except OSError:  # not there yet (or a link to nothing, made at its target)
        kind = None
    if kind is not None and not stat.S_ISREG(kind):
        with open(path, mode, encoding=encoding) as stream:
            yield stream
        return
    path = Path(os.path.realpath(path))
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".part"
    )
    try:
        with os.fdopen(descriptor, mode, encoding=encoding) as handle:
            yield handle
        os.chmod(temporary, new_file_mode(path))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


_DESCRIPTOR = re.compile(r"/(?:dev/(?:fd/(\d+)|(stdout|stderr))|proc/(?:self|\d+)/fd/(\d+))")


def _open_descriptor(target: str) -> int | None:
    """The descriptor this process has open that ``target`` names (``/dev/stdout``,
    ``/dev/fd/3``, ``/proc/self/fd/1``): written through, never replaced or truncated (a
    shell may have opened it to append)."""
    found = _DESCRIPTOR.fullmatch(target)
    if found is None:
        return None
    number, stream, proc = found.groups()
    if stream is not None:
        return 1 if stream == "stdout" else 2
    return int(number if number is not None else proc)


def write_atomic(target: str | Path, data: bytes) -> None:
    """Write ``data`` to ``target`` whole or not at all (see :func:`atomic_output`): a full
    disk leaves the file that was there."""
    with atomic_output(target, binary=True) as out:
        out.write(data)
