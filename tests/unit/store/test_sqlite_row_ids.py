"""The SQLite store's chunk row ids: each carries its access class in its high bits (so ranking
passes over other classes' index entries by row id alone), ids freed at either end of a class's
range are used again, a full range is refused without writing anything, and a version-2 store
(one sequence of ids) is renumbered when opened."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from ctxasm import ConfigError
from ctxasm.data import Principal
from ctxasm.store import Chunk, Document, SQLiteStore, chunk_text
from ctxasm.store import sqlite as sqlite_store

DOCS = [
    Document("a", "The river bridge spans the harbour. Lanterns line the river.", tenant="t1"),
    Document("b", "A meadow by the river. The orchard is quiet.", tenant="t1", readers=("g1",)),
    Document("c", "The harbour lantern burns all night by the bridge.", tenant="t2"),
    Document("d", "Public notes on the river and its bridge.", tenant=None, readers=None),
]
READER = Principal("u", "t1", ("g1",))
# The triggers of versions 1 and 2, which numbered chunks in one sequence.
V2_TRIGGERS = """
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
"""


def _store(path: Path) -> SQLiteStore:
    store = SQLiteStore(path)
    store.upsert_many([(d, chunk_text(d.text, 8, 2)) for d in DOCS])
    return store


def _answers(store: SQLiteStore) -> list[list[tuple[str, float | None]]]:
    public = Principal("p", None, ())
    return [
        [(p.id, p.score) for p in store.retrieve(query, who, allow_public=True)]
        for query in ("river bridge", "harbour lantern night", "orchard meadow")
        for who in (READER, Principal("v", "t2", ()), public)
    ]


def _intact(store: SQLiteStore) -> None:
    """Every chunk's id carries its class, and the full-text index matches the chunks."""
    db = store._db
    shift = sqlite_store.CLASS_SHIFT
    wrong = db.execute(f"SELECT count(*) FROM chunks WHERE id >> {shift} != class_id")
    assert wrong.fetchone() == (0,)
    db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")


def test_every_chunk_id_carries_its_access_class(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    _intact(store)
    classes = {
        class_id
        for (class_id,) in store._db.execute(f"SELECT id >> {sqlite_store.CLASS_SHIFT} FROM chunks")
    }
    assert len(classes) == 4  # four documents, four (tenant, readers) classes
    store.close()


def _as_version_2(path: Path) -> None:
    """Rewrite a store as version 2 wrote it: chunks numbered 1, 2, ... in one sequence and no
    ranking index."""
    db = sqlite3.connect(path)
    db.executescript("DROP INDEX chunks_rank; DROP TRIGGER chunks_ai; DROP TRIGGER chunks_ad;")
    ids = [i for (i,) in db.execute("SELECT id FROM chunks ORDER BY chunk_id")]
    for number, old in enumerate(ids, start=1):
        db.execute("UPDATE chunks SET id = ? WHERE id = ?", (number, old))
    db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")
    db.executescript(V2_TRIGGERS)
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()


def test_a_version_2_store_is_renumbered_when_opened(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    before = _answers(store)
    store.close()
    _as_version_2(tmp_path / "s.db")
    old = sqlite3.connect(tmp_path / "s.db")
    assert old.execute("SELECT max(id) FROM chunks").fetchone()[0] < 20
    old.close()

    upgraded = SQLiteStore(tmp_path / "s.db")
    assert upgraded._db.execute("PRAGMA user_version").fetchone() == (sqlite_store.SCHEMA_VERSION,)
    _intact(upgraded)
    assert _answers(upgraded) == before
    # writes and deletes go on as in a new store
    assert upgraded.delete("a") is True
    upgraded.upsert_many([(DOCS[0], chunk_text(DOCS[0].text, 8, 2))])
    _intact(upgraded)
    assert _answers(upgraded) == before
    upgraded.close()


def _version_2_with(path: Path, sql: str) -> None:
    """A version 2 store at ``path``, then changed by ``sql``."""
    _store(path).close()
    _as_version_2(path)
    db = sqlite3.connect(path)
    db.execute(sql)
    db.commit()
    db.close()


def _left_as_version_2(db: sqlite3.Connection) -> None:
    assert db.execute("PRAGMA user_version").fetchone() == (2,)
    assert db.execute("SELECT max(id) FROM chunks").fetchone()[0] < 20


def test_a_version_2_store_that_cannot_be_renumbered_is_left_as_it_was(tmp_path: Path) -> None:
    _version_2_with(tmp_path / "s.db", "UPDATE chunks SET class_id = NULL WHERE chunk_id = 'a#0'")
    with pytest.raises(ConfigError) as caught:
        SQLiteStore(tmp_path / "s.db")
    assert caught.value.message == (
        f"cannot upgrade the store {tmp_path / 's.db'} to schema version 3: 1 chunks have no "
        "access class; index its documents into a new store"
    )
    db = sqlite3.connect(tmp_path / "s.db")
    _left_as_version_2(db)
    db.close()


def test_an_upgrade_sqlite_rolled_back_itself_reports_why(tmp_path: Path) -> None:
    # SQLite rolls back by itself after a full disk or an I/O error, as after this trigger's
    # RAISE(ROLLBACK); the ROLLBACK that followed failed and its message took the cause's place.
    _version_2_with(
        tmp_path / "s.db",
        "CREATE TRIGGER full BEFORE UPDATE ON chunks "
        "BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full (simulated)'); END",
    )
    with pytest.raises(ConfigError) as caught:
        SQLiteStore(tmp_path / "s.db")
    assert caught.value.message == (
        f"cannot open the store {tmp_path / 's.db'}: database or disk is full (simulated)"
    )
    db = sqlite3.connect(tmp_path / "s.db")
    _left_as_version_2(db)
    db.execute("DROP TRIGGER full")
    db.commit()
    db.close()
    upgraded = SQLiteStore(tmp_path / "s.db")
    _intact(upgraded)
    upgraded.close()


def _document(doc_id: str, words: str) -> tuple[Document, list[Chunk]]:
    """A document of class (t1, g1) with one chunk per word of ``words``."""
    chunks, start = [], 0
    for word in words.split():
        chunks.append(Chunk(start, start + len(word), word))
        start += len(word) + 1
    return Document(doc_id, words, tenant="t1", readers=("g1",)), chunks


def test_ids_freed_at_either_end_are_used_again_and_a_full_class_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "CLASS_SHIFT", 3)  # 8 ids per class
    store = SQLiteStore(tmp_path / "s.db")
    store.upsert_many([_document("a", "alder ash aspen"), _document("b", "birch beech box")])

    def ids(doc_id: str) -> list[int]:
        rows = store._db.execute("SELECT id FROM chunks WHERE doc_id = ? ORDER BY seq", (doc_id,))
        return [i for (i,) in rows]

    assert ids("a") + ids("b") == [8, 9, 10, 11, 12, 13]  # class 1: ids 8 to 15
    with pytest.raises(ConfigError) as caught:
        store.upsert_many([_document("c", "cedar cherry chestnut")])
    assert caught.value.message == (
        f"the store {tmp_path / 's.db'} has no chunk ids left for access class 1 (2**3 per "
        "class): index its documents into a new store"
    )
    assert ids("c") == []  # nothing of the refused batch was written
    assert [p.id for p in store.retrieve("birch", READER)] == ["b#0"]

    assert store.delete("a") is True
    store.upsert_many([_document("c", "cedar cherry chestnut")])
    assert ids("c") == [8, 9, 10]  # before the class's first chunk
    assert store.delete("b") is True
    store.upsert_many([_document("d", "dogwood")])
    assert ids("d") == [11]  # after its last
    _intact(store)
    assert [p.id for p in store.retrieve("cherry dogwood", READER)] == ["c#1", "d#0"]
    store.close()


def test_the_last_class_that_can_be_numbered_takes_chunks(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    shift = sqlite_store.CLASS_SHIFT
    last = (1 << (63 - shift)) - 1
    store._db.execute(  # a class numbered just before: the next one is the last
        "INSERT INTO access_classes (id, key, tenant, has_readers) VALUES (?, 'k', 'x', 0)",
        (last - 1,),
    )
    store.upsert_many([_document("a", "alder ash")])
    ids = [i for (i,) in store._db.execute("SELECT id FROM chunks ORDER BY id")]
    assert ids == [last << shift, (last << shift) + 1]  # the range ends at 2**63 - 1
    assert [p.id for p in store.retrieve("ash", READER)] == ["a#1"]
    with pytest.raises(ConfigError) as caught:
        store._chunk_ids(Counter({last + 1: 1}))
    assert caught.value.message == (
        f"the store {tmp_path / 's.db'} has more access classes than it can number (2**27)"
    )
    store.close()


def test_two_openings_of_an_old_store_upgrade_it_once(tmp_path: Path) -> None:
    """Two processes (here threads, each with its connection) open a version-2 store while a
    writer holds the lock: both read version 2, the first to get the lock upgrades it, and the
    second, reading the version again under the lock, finds nothing left to do."""
    import threading
    import time

    store = _store(tmp_path / "s.db")
    before = _answers(store)
    store.close()
    _as_version_2(tmp_path / "s.db")
    writer = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    opened: list[SQLiteStore | BaseException] = []

    def open_it() -> None:
        try:
            opened.append(SQLiteStore(tmp_path / "s.db"))
        except BaseException as exc:  # reported by the assertion below
            opened.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # both have read the version and wait for the lock
    writer.execute("COMMIT")
    writer.close()
    for thread in threads:
        thread.join(timeout=30)
    assert all(isinstance(each, SQLiteStore) for each in opened), opened
    for each in opened:
        assert isinstance(each, SQLiteStore)
        _intact(each)
        assert _answers(each) == before
        each.close()
