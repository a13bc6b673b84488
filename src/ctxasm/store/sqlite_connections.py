"""How the SQLite store's connections are opened and closed, so that a store can be read where
its folder cannot be written (a read-only mount, a folder without write permission).

While open, a store is in write-ahead-log (WAL) mode: readers never wait for a writer, and a
crash loses at most the transaction being written. Reading a WAL database takes a ``-shm`` file
beside it, which SQLite makes when the store is opened and removes when its last connection
closes; in a folder that cannot be written it can be made by no one, and SQLite cannot read the
store at all, not even with ``?mode=ro`` (SQLite's "WAL mode on read-only media": it reads one
only where the ``-shm`` and ``-wal`` files exist already, the folder can be written, or the
file is opened ``immutable``). So the last connection to close leaves the store in
rollback-journal mode (:func:`close`), which a read-only connection reads with nothing beside
it; the next connection that can write puts it back in WAL mode.

``immutable=1`` is never used: it tells SQLite that no one changes the file, and takes no lock.
A folder that this process cannot write may still be written by another (its owner, or a
writable mount of the same volume), and an immutable reader's pages would then change under it
(wrong answers, or a "malformed" error). A read-only connection (``?mode=ro``) takes SQLite's
locks and follows such a writer: a write puts the store in WAL mode with its ``-wal`` and
``-shm`` files, which the reader then reads through.
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress
from pathlib import Path

# The header of an SQLite database, and the offsets of its read and write format versions:
# 2 (both) in WAL mode, 1 in rollback-journal mode.
_MAGIC = b"SQLite format 3\x00"
_FORMAT_VERSIONS = slice(18, 20)
_WAL = b"\x02\x02"


def open_read_write(path: Path) -> sqlite3.Connection:
    """A connection that reads and writes ``path`` (SQLite opens a file it cannot write
    read-only by itself; its first write then fails as read-only)."""
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


def open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to ``path`` (``?mode=ro``): it never makes a file beside it
    where the store is in rollback-journal mode, and fails on its first write."""
    uri = f"{path.absolute().as_uri()}?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)


def refused_as_read_only(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says that the file or its folder cannot be written (SQLite's
    ``SQLITE_READONLY`` codes, or ``SQLITE_CANTOPEN``: on a read-only mount the ``-shm`` file
    cannot be made, and the store opened read-write fails so)."""
    name = getattr(exc, "sqlite_errorname", None)
    return isinstance(name, str) and name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))


def unreadable_without_shm(path: Path) -> bool:
    """Whether ``path`` is a database in WAL mode with no ``-shm`` file beside it: where its
    folder cannot be written, SQLite cannot read it (see the module docstring). A store a
    ctxasm before this one closed is so."""
    try:
        with path.open("rb") as file:
            header = file.read(_FORMAT_VERSIONS.stop)
    except OSError:
        return False
    wal = header.startswith(_MAGIC) and header[_FORMAT_VERSIONS] == _WAL
    return wal and not path.with_name(path.name + "-shm").exists()


def close(db: sqlite3.Connection, *, read_only: bool) -> None:
    """Close ``db``; the last connection to the store leaves it in rollback-journal mode first
    (a full checkpoint, which SQLite's last close does anyway, and the journal mode written in
    the header, in one transaction). Another connection still open holds a lock on the store
    (in WAL mode every connection does, so SQLite's last close is told apart): the switch fails
    at once, without waiting, and the store is left in WAL mode for that connection, which
    switches it when it closes. A switch that fails for another reason (a full disk) leaves the
    store in WAL mode too, as it was."""
    if not read_only:
        with suppress(sqlite3.Error):
            db.execute("PRAGMA busy_timeout = 0")
            db.execute("PRAGMA journal_mode = DELETE")
    db.close()
