"""How the SQLite store is opened and closed: in write-ahead-log mode while open, left in
rollback-journal mode by the last connection to close (however it closes), so that a folder that
cannot be written can still be read; and a store another process creates while this one checks
the file is opened, not refused. (Read-only folders themselves: tests/cli/test_store_cli.py,
which runs the command where the folder cannot be written.)"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ctxasm.data import Principal
from ctxasm.errors import ConfigError
from ctxasm.store import Document, SQLiteStore, chunk_text

ANN = Principal("ann", "acme")


def _journal(path: Path) -> str:
    """The journal mode the database's header records: SQLite's read and write versions."""
    versions = path.read_bytes()[18:20]
    return {b"\x01\x01": "rollback", b"\x02\x02": "wal"}[versions]


def _danube(store: SQLiteStore) -> None:
    doc = Document("danube", "The Danube flows into the Black Sea.", tenant="acme")
    store.upsert(doc, chunk_text(doc.text, 64, 8))


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_last_connection_to_close_leaves_the_store_in_rollback_journal_mode(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    first = SQLiteStore(path)
    _danube(first)
    second = SQLiteStore(path)
    assert _journal(path) == "wal"
    first.close()  # the second is open still: the store stays in WAL mode for it
    assert (_journal(path), _files(tmp_path)) == ("wal", ["s.db", "s.db-shm", "s.db-wal"])
    second.close()
    assert (_journal(path), _files(tmp_path)) == ("rollback", ["s.db"])
    again = SQLiteStore(path)
    assert (_journal(path), again.read_only) == ("wal", False)
    assert [p.doc_id for p in again.retrieve("Danube", ANN)] == ["danube"]
    again.close()
    again.close()  # a second close does nothing
    assert _journal(path) == "rollback"


def test_a_store_never_closed_is_left_so_when_the_interpreter_exits(tmp_path: Path) -> None:
    # The CLI never calls close(): the connection was closed as the interpreter ended, and the
    # store stayed in WAL mode, unreadable from a folder that cannot be written.
    script = (
        "import sys\n"
        "from ctxasm.store import Document, SQLiteStore, chunk_text\n"
        "store = SQLiteStore(sys.argv[1])\n"
        "doc = Document('danube', 'The Danube flows into the Black Sea.', tenant='acme')\n"
        "store.upsert(doc, chunk_text(doc.text, 64, 8))\n"
    )
    path = tmp_path / "s.db"
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert (_journal(path), _files(tmp_path)) == ("rollback", ["s.db"])


def test_a_store_collected_unclosed_is_left_so(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    _danube(store)
    del store  # its connection is closed with it
    assert (_journal(path), _files(tmp_path)) == ("rollback", ["s.db"])


def test_a_refused_database_is_closed_as_it_was(tmp_path: Path) -> None:
    # Refused as no store: closed without the switch, which would write its header.
    other = tmp_path / "app.db"
    db = sqlite3.connect(other)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE users (name TEXT)")
    db.close()
    before = other.read_bytes()
    with pytest.raises(ConfigError, match=r"other tables \(users\), not a ctxasm store"):
        SQLiteStore(other)
    assert (other.read_bytes(), _files(tmp_path)) == (before, ["app.db"])


def test_a_store_another_process_creates_meanwhile_is_opened_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Review rv42-2: this connection read version 0 (no store), another process created the
    # store and committed, and the tables then read were version 3's, compared with version
    # 1's columns: "... is a database of other tables (access_classes, chunks, chunks_fts),
    # not a ctxasm store". The other process is played by a second store, made at that moment.
    path = tmp_path / "new.db"
    original = SQLiteStore._has_columns
    made: list[SQLiteStore] = []

    def made_by_another_meanwhile(store: SQLiteStore, version: int) -> bool:
        if not made:
            made.append(store)
            other = SQLiteStore(path)
            _danube(other)
            other.close()
        return original(store, version)

    monkeypatch.setattr(SQLiteStore, "_has_columns", made_by_another_meanwhile)
    store = SQLiteStore(path)
    assert len(made) == 1  # the interleaving happened
    assert [p.doc_id for p in store.retrieve("Danube", ANN)] == ["danube"]
    store.close()


def test_a_database_of_other_tables_is_refused_when_its_version_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The version is read again before refusing: it changed for a store another process made,
    # and not for another application's database, which is refused as before.
    other = tmp_path / "app.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE documents (id INTEGER PRIMARY KEY, body TEXT)")
    db.close()
    checked: list[int] = []
    original = SQLiteStore._has_columns

    def recording(store: SQLiteStore, version: int) -> bool:
        checked.append(version)
        return original(store, version)

    monkeypatch.setattr(SQLiteStore, "_has_columns", recording)
    with pytest.raises(ConfigError, match=r"other tables \(documents\), not a ctxasm store"):
        SQLiteStore(other)
    assert checked == [0]
