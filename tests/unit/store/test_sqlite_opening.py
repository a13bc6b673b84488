"""How the SQLite store is opened: a store another process creates while this one checks the
file is opened, not refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ctxasm.data import Principal
from ctxasm.errors import ConfigError
from ctxasm.store import Document, SQLiteStore, chunk_text

ANN = Principal("ann", "acme")


def _danube(store: SQLiteStore) -> None:
    doc = Document("danube", "The Danube flows into the Black Sea.", tenant="acme")
    store.upsert(doc, chunk_text(doc.text, 64, 8))


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
