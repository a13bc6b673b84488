"""The SQLite store's per-access-class statistics (kept by every write, equal to a recount over
the chunks), batched writes, and schema versions (an older store upgraded, a newer refused)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from ctxasm import ConfigError
from ctxasm.data import Principal
from ctxasm.errors import StoreUnavailableError
from ctxasm.lexical import phrase_key
from ctxasm.store import Document, SQLiteStore, chunk_text
from ctxasm.store.sqlite import SCHEMA_VERSION

DOCS = [
    Document(
        "a",
        "The river bridge spans the harbour. Lanterns line the river.",
        tenant="t1",
        readers=("g1",),
    ),
    Document(
        "b", "A meadow by the river. The orchard is quiet.", tenant="t1", readers=("g1", "g2")
    ),
    Document("c", "The harbour lantern burns all night by the bridge.", tenant="t2", readers=None),
    Document("d", "Public notes on the river and its bridge.", tenant=None, readers=None),
]

# The version-1 schema, as ctxasm 0.1 wrote it: no access classes.
V1 = """
CREATE TABLE documents (doc_id TEXT PRIMARY KEY, title TEXT, url TEXT, tenant TEXT,
    has_readers INTEGER NOT NULL, timestamp TEXT, authority REAL,
    metadata TEXT NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL);
CREATE TABLE readers (doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    reader TEXT NOT NULL, PRIMARY KEY (doc_id, reader));
CREATE TABLE chunks (id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, words INTEGER NOT NULL, text TEXT NOT NULL,
    embedding BLOB);
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
"""


def _recount(store: SQLiteStore) -> dict[tuple[str | None, tuple[str, ...] | None], object]:
    """Class statistics recomputed from the chunks, keyed by (tenant, readers)."""
    found: dict[tuple[str | None, tuple[str, ...] | None], list[object]] = {}
    for doc_id, tenant, has_readers, text in store._db.execute(
        "SELECT d.doc_id, d.tenant, d.has_readers, c.text FROM chunks c "
        "JOIN documents d ON d.doc_id = c.doc_id"
    ):
        names = [
            r
            for (r,) in store._db.execute("SELECT reader FROM readers WHERE doc_id = ?", (doc_id,))
        ]
        key = (tenant, tuple(sorted(names)) if has_readers else None)
        words = phrase_key(text).split()
        entry = found.setdefault(key, [0, 0, Counter()])
        entry[0] += 1  # type: ignore[operator]
        entry[1] += len(words)  # type: ignore[operator]
        entry[2].update(set(words))  # type: ignore[union-attr]
    return {key: (n, w, dict(terms)) for key, (n, w, terms) in found.items()}  # type: ignore[misc]


def _kept(store: SQLiteStore) -> dict[tuple[str | None, tuple[str, ...] | None], object]:
    """Class statistics as the store keeps them (classes with no chunks left out)."""
    kept = {}
    for class_id, tenant, has_readers, chunks, words in store._db.execute(
        "SELECT id, tenant, has_readers, chunks, words FROM access_classes WHERE chunks > 0"
    ):
        names = [
            r
            for (r,) in store._db.execute(
                "SELECT reader FROM class_readers WHERE class_id = ?", (class_id,)
            )
        ]
        terms = dict(
            store._db.execute("SELECT term, df FROM class_terms WHERE class_id = ?", (class_id,))
        )
        kept[(tenant, tuple(sorted(names)) if has_readers else None)] = (chunks, words, terms)
    return kept


def _write(store: SQLiteStore, documents: list[Document]) -> list[str]:
    return store.upsert_many([(d, chunk_text(d.text, 8, 2)) for d in documents])


def test_statistics_follow_adds_updates_and_deletes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    assert _write(store, DOCS) == ["added", "added", "added", "added"]
    assert _kept(store) == _recount(store)
    moved = Document(
        "b", "Now the orchard belongs to another reader set.", tenant="t1", readers=("g2",)
    )
    assert _write(store, [moved, DOCS[0]]) == ["updated", "unchanged"]
    assert store.delete("c") is True  # another tenant's document moves by delete and add
    moved = Document("c", "The lantern now burns for the first tenant.", tenant="t1")
    assert _write(store, [moved]) == ["added"]
    assert _kept(store) == _recount(store)
    assert store.delete("a") is True
    assert _kept(store) == _recount(store)
    assert store._db.execute("SELECT count(*) FROM class_terms WHERE df <= 0").fetchone() == (0,)
    store.close()


def _v1_store(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(V1)
    for document in DOCS[:3]:
        db.execute(
            "INSERT INTO documents (doc_id, tenant, has_readers, content_hash) VALUES (?, ?, ?, ?)",
            (document.doc_id, document.tenant, int(document.readers is not None), "old"),
        )
        db.executemany(
            "INSERT INTO readers VALUES (?, ?)",
            [(document.doc_id, r) for r in document.readers or ()],
        )
        db.execute(
            'INSERT INTO chunks (chunk_id, doc_id, seq, start, "end", words, text) '
            "VALUES (?, ?, 0, 0, ?, ?, ?)",
            (
                f"{document.doc_id}#0",
                document.doc_id,
                len(document.text),
                len(phrase_key(document.text).split()),
                document.text,
            ),
        )
    db.commit()
    db.close()


def test_a_version_1_store_is_upgraded_when_opened(tmp_path: Path) -> None:
    _v1_store(tmp_path / "old.db")
    old = SQLiteStore(tmp_path / "old.db")
    assert old._db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert _kept(old) == _recount(old)
    fresh = SQLiteStore(tmp_path / "new.db")
    fresh.upsert_many([(d, chunk_text(d.text, 256, 0)) for d in DOCS[:3]])
    who = Principal("u", "t1", ("g1",))
    upgraded = [(p.id, p.score) for p in old.retrieve("river bridge harbour", who)]
    assert upgraded == [(p.id, p.score) for p in fresh.retrieve("river bridge harbour", who)]
    assert [doc_id for doc_id, _ in upgraded] == ["a#0", "b#0"]
    old.close()
    fresh.close()


def test_a_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.db").close()
    db = sqlite3.connect(tmp_path / "s.db")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(ConfigError) as caught:
        SQLiteStore(tmp_path / "s.db")
    assert caught.value.message == (
        f"the store {tmp_path / 's.db'} has schema "
        f"version {SCHEMA_VERSION + 1}, written by a newer ctxasm; this one reads versions up "
        f"to {SCHEMA_VERSION}: upgrade ctxasm"
    )


def test_accented_words_are_ranked_inside_sqlite_and_scored_exactly(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    documents = [
        Document("es", "Hugo Rodríguez Romero plays in Galicia.", tenant="t1", readers=("g1",)),
        Document("en", "Rodriguez is a common name.", tenant="t1", readers=("g1",)),
    ]
    _write(store, documents)
    found = store.retrieve("Rodríguez Galicia", Principal("u", "t1", ("g1",)))
    # FTS5 folds the accent, so both are candidates; BM25 counts words as written
    assert [(p.id, p.score) for p in found] == [("es#0", 1.336587)]  # BM25 by hand
    store.close()


@pytest.mark.parametrize(
    "word",
    ["Русский", "ψυχή", "한국어", "ひらがなでです", "ﬁle", "x²", "café", "flush_all_buffers"],
)
def test_every_word_a_readable_chunk_holds_finds_it(tmp_path: Path, word: str) -> None:
    # The query's words were folded in Python (NFKD, combining marks dropped), which FTS5's
    # tokenizer does not do for these: the chunk was never a candidate, and ask said there was
    # no relevant context. Words with "_" were left out of the candidate search altogether.
    store = SQLiteStore(tmp_path / "s.db")
    documents = [
        Document("hit", f"Notes: the word {word} is here.", tenant="t1", readers=("g1",)),
        Document("other", "Nothing to see in this one at all.", tenant="t1", readers=("g1",)),
    ]
    _write(store, documents)
    found = store.retrieve(f"Where is {word}?", Principal("u", "t1", ("g1",)))
    assert [p.id.split("#")[0] for p in found][:1] == ["hit"]
    store.close()


def test_a_store_another_process_keeps_locked_is_unavailable_not_an_internal_error(
    tmp_path: Path,
) -> None:
    # `ctxasm delete` beside a long index run printed "internal error: OperationalError:
    # database is locked ... please report it"
    store = SQLiteStore(tmp_path / "s.db")
    _write(store, [Document("a", "Some text.", tenant="t1", readers=("g1",))])
    writer = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # what another writer holds while it writes
    try:
        with pytest.raises(StoreUnavailableError) as caught:
            store.delete("a")
        assert "is busy: another process is writing to it" in caught.value.message
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert store.delete("a") is True  # nothing was lost, and the store works again
    store.close()


def test_indexing_a_busy_store_stops_at_once_instead_of_per_document(tmp_path: Path) -> None:
    # Each document was retried alone after the batch failed, and each waited for the lock:
    # with the database down, 12 documents took 42 s before the run gave up.
    from ctxasm.store import index_paths

    for n in range(6):
        (tmp_path / f"d{n}.md").write_text(f"# D{n}\n\nText number {n}.", encoding="utf-8")
    store = SQLiteStore(tmp_path / "s.db")
    store._db.execute("PRAGMA busy_timeout = 200")
    writer = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:  # not recorded against each document in turn: the run stops
        with pytest.raises(StoreUnavailableError):
            index_paths(store, [tmp_path], tenant="t")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert index_paths(store, [tmp_path], tenant="t").added == 6
    store.close()
