"""How the SQLite store writes a batch: chunk rows go in through a temporary table in one
statement (values kept exactly, ids in order), replaced documents leave in one statement
(their chunks, index rows and statistics with them), one access class per tenant and reader
set, and nothing staged survives a write, failed or not."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ctxasm.store import Chunk, Document, SQLiteStore, chunk_text


def _rows(store: SQLiteStore) -> list[tuple[Any, ...]]:
    return store._db.execute(
        'SELECT chunk_id, doc_id, seq, start, "end", words, text, typeof(start), typeof(words), '
        "class_id FROM chunks ORDER BY id"
    ).fetchall()


def _staged(store: SQLiteStore) -> int:
    """Rows left in the staging table (none when a rolled-back write took the table too)."""
    exists = "SELECT 1 FROM sqlite_temp_master WHERE name = 'staged_chunks'"
    if store._db.execute(exists).fetchone() is None:
        return 0
    return int(store._db.execute("SELECT count(*) FROM temp.staged_chunks").fetchone()[0])


def test_chunk_rows_keep_every_value_and_the_order_given(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    odd = "Nul \x00 inside, café, 🦜 and 日本語."
    first = Document("a", odd + " Second sentence.", tenant="t", readers=("r",))
    second = Document("b", "Plain words here.", tenant="t", readers=("r",))
    chunks = [Chunk(0, len(odd), odd), Chunk(len(odd) + 1, len(first.text), "Second sentence.")]
    store.upsert_many([(first, chunks), (second, [Chunk(0, 17, "Plain words here.")])])
    ints = ("integer", "integer", 1)  # the types of start and words, and the one class
    assert _rows(store) == [
        ("a#0", "a", 0, 0, len(odd), 5, odd, *ints),
        ("a#1", "a", 1, len(odd) + 1, len(first.text), 2, "Second sentence.", *ints),
        ("b#0", "b", 0, 0, 17, 3, "Plain words here.", *ints),
    ]
    assert _staged(store) == 0
    store.close()


def test_vectors_are_stored_with_their_chunks(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "v.db", embedder="hashing")
    document = Document("a", "The river flows. The bridge stands.", tenant="t")
    chunks = chunk_text(document.text, 8, 2)
    store.upsert(document, chunks)
    assert store.embedder is not None
    expected = [
        row.astype("float32").tobytes() for row in store.embedder.embed([c.text for c in chunks])
    ]
    stored = [blob for (blob,) in store._db.execute("SELECT embedding FROM chunks ORDER BY id")]
    assert stored == expected
    store.close()


def test_nothing_stays_staged_when_a_write_fails(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "f.db")
    document = Document("a", "The river flows. " * 20, tenant="t")
    store._db.execute(
        "CREATE TEMP TRIGGER refuse BEFORE INSERT ON chunks WHEN new.seq = 1 "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    with pytest.raises(sqlite3.DatabaseError, match="refused"):
        store.upsert(document, chunk_text(document.text, 16, 4))
    assert (_staged(store), store.stats().documents, store.stats().chunks) == (0, 0, 0)
    store._db.execute("DROP TRIGGER temp.refuse")
    assert store.upsert(document, chunk_text(document.text, 16, 4)) == "added"
    assert _staged(store) == 0
    store.close()


# SQLite rolls the transaction back itself after some errors (a full disk, an I/O error, no
# memory); a trigger's RAISE(ROLLBACK) does the same, and stands in for them here.
FULL = "database or disk is full (simulated)"


def test_an_error_after_which_sqlite_rolled_back_is_raised_as_it_was(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    kept = Document("a", "The river flows. " * 20, tenant="t")
    store.upsert(kept, chunk_text(kept.text, 16, 4))
    before = (_rows(store), _statistics(store))
    for table, when in (("chunks", "INSERT"), ("documents", "DELETE")):
        store._db.execute(
            f"CREATE TEMP TRIGGER full_{table} BEFORE {when} ON {table} "
            f"BEGIN SELECT RAISE(ROLLBACK, '{FULL}'); END"
        )
    new = Document("b", "The otter swims. " * 20, tenant="t")
    # Both said "cannot rollback - no transaction is active", the cause lost.
    with pytest.raises(sqlite3.DatabaseError) as written:
        store.upsert(new, chunk_text(new.text, 16, 4))
    with pytest.raises(sqlite3.DatabaseError) as deleted:
        store.delete("a")
    assert (str(written.value), str(deleted.value)) == (FULL, FULL)
    assert (_rows(store), _statistics(store)) == before
    assert not store._db.in_transaction
    store._db.execute("DROP TRIGGER temp.full_chunks")
    store._db.execute("DROP TRIGGER temp.full_documents")
    assert store.upsert(new, chunk_text(new.text, 16, 4)) == "added"
    assert store.delete("a") is True
    assert store._db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    store.close()


def _statistics(store: SQLiteStore) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    classes = store._db.execute(
        "SELECT key, chunks, words FROM access_classes WHERE chunks > 0 ORDER BY key"
    ).fetchall()
    terms = store._db.execute(
        "SELECT k.key, t.term, t.df FROM class_terms t JOIN access_classes k ON k.id = t.class_id "
        "ORDER BY k.key, t.term"
    ).fetchall()
    return classes, terms


def _versions(word: str) -> list[tuple[Document, list[Chunk]]]:
    documents = [
        Document(f"d{i}", f"The {word}{i} crosses the river. A {word} rests here.", tenant="t")
        for i in range(30)
    ]
    return [(d, chunk_text(d.text, 8, 2)) for d in documents]


def test_a_batch_of_updates_replaces_every_old_version(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "u.db")
    store.upsert_many(_versions("heron"))
    assert store.upsert_many(_versions("otter")) == ["updated"] * 30
    fresh = SQLiteStore(tmp_path / "fresh.db")
    fresh.upsert_many(_versions("otter"))
    assert _statistics(store) == _statistics(fresh)
    assert [r[:7] for r in _rows(store)] == [r[:7] for r in _rows(fresh)]
    matches = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    assert store._db.execute(matches, ("heron",)).fetchone() == (0,)
    assert (
        store._db.execute(matches, ("otter",)).fetchone()
        == fresh._db.execute(matches, ("otter",)).fetchone()
    )
    store.close()
    fresh.close()


def test_documents_with_the_same_tenant_and_readers_share_one_class(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "c.db")
    documents = [
        Document("a", "One river.", tenant="t", readers=("x", "y")),
        Document("b", "Two rivers.", tenant="t", readers=("y", "x")),
        Document("c", "Three rivers.", tenant="t", readers=("x",)),
        Document("d", "Four rivers.", tenant="t", readers=("y", "x", "x")),
    ]
    store.upsert_many([(d, chunk_text(d.text, 8, 2)) for d in documents])
    assert store._db.execute("SELECT doc_id, class_id FROM chunks ORDER BY doc_id").fetchall() == [
        ("a", 1),
        ("b", 1),
        ("c", 2),
        ("d", 1),
    ]
    store.close()


def test_owners_are_read_again_under_the_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer (a second connection, as another process) deletes tenant u's document
    and indexes its own under the same id after u's writer read the owners and before it
    took the write lock: u's write is refused, and t's document stays."""
    import ctxasm.store.sqlite as sqlite_store
    from ctxasm import Principal, RequestError

    path = tmp_path / "s.db"
    ours, theirs = SQLiteStore(path), SQLiteStore(path)
    text = "umbrella old version"
    ours.upsert(Document("x", text, tenant="u"), chunk_text(text, 64, 8))
    real = sqlite_store.check_owners

    def meanwhile(batch: Any, owners: Any) -> None:
        real(batch, owners)
        monkeypatch.setattr(sqlite_store, "check_owners", real)
        theirs.delete("x")
        payroll = "tango confidential payroll of tenant t"
        theirs.upsert(Document("x", payroll, tenant="t"), chunk_text(payroll, 64, 8))

    monkeypatch.setattr(sqlite_store, "check_owners", meanwhile)
    new = "umbrella new version"
    with pytest.raises(RequestError, match="under another tenant"):
        ours.upsert(Document("x", new, tenant="u"), chunk_text(new, 64, 8))
    kept = theirs.retrieve("tango payroll", Principal("tim", "t"))
    assert [p.text for p in kept] == ["tango confidential payroll of tenant t"]
    assert _staged(ours) == 0
