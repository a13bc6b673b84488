"""The embedded store: SQLite (standard library) with FTS5 for lexical search.

Tables: ``documents`` (one row per document, with its tenant and a content hash), ``readers``
(who may read it), ``chunks`` (overlapping windows with their offsets) and ``chunks_fts`` (an
FTS5 index over chunk text, kept in step by triggers). Documents are written in batches, one
transaction per batch, so a crash mid-batch leaves every document of it as it was.

Access is enforced in SQL before anything is scored, with the same rules as the assembler's
access stage: a chunk is visible when its document's tenant is the principal's (or it has no
tenant) and, when the document lists readers, the principal or one of its groups is among them;
a document with neither is public and visible only with ``allow_public``. The rule is applied to
*access classes* (``access_classes``: one per tenant and reader set, see
:mod:`ctxasm.store.ranking`), and a chunk is visible when its class is.

Ranking is BM25 whose statistics (document frequencies, average length) are those of the
visible chunks only, summed from per-class statistics (``class_terms``) that every write
updates in its own transaction, so a chunk the principal may not read never shapes another's
score. The best ``k`` are found inside SQLite: term counts come from the FTS5 index
(``fts5vocab``), the BM25 sum and the ``LIMIT`` run in SQL over the visible classes, and only
those candidates are read and scored again in Python. A chunk's row id carries its access class
in its high bits (:data:`CLASS_SHIFT`), so the index's entries for chunks the principal may not
read are passed over on their row id alone, without a lookup; the lengths and chunk ids of the
rest are read from a covering index (``chunks_rank``), not from the rows with their text.

The schema version is ``PRAGMA user_version``: a store written by an older ctxasm is upgraded
when it is opened (once its tables are found to be that version's), one written by a newer one
is refused.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxasm.data import Passage, Principal
from ctxasm.errors import ConfigError, RequestError, StoreUnavailableError
from ctxasm.lexical import query_words
from ctxasm.store import sqlite_connections
from ctxasm.store.arguments import checked_doc_id, checked_retrieval
from ctxasm.store.chunking import Chunk
from ctxasm.store.documents import Document
from ctxasm.store.forms import form_ranges, with_forms
from ctxasm.store.ranking import (
    ClassDelta,
    ClassWords,
    VisibleStats,
    chunk_words,
    count_into,
    fused,
    only_hidden,
    rescored,
)
from ctxasm.store.records import (
    CHUNK_COLUMNS,
    VERSION_1_DOCUMENTS,
    VERSION_1_READERS,
    ChunkRow,
    Pending,
    StoreStats,
    batches,
    check_owners,
    checked_items,
    chunk_row,
    class_key,
    content_hash,
    document_row,
    open_class_key,
    outcomes,
    reader_names,
)
from ctxasm.store.scoped import PrincipalRetriever

__all__ = ["SCHEMA_VERSION", "SQLiteRow", "SQLiteStore", "StoreStats"]

SCHEMA_VERSION = 3
# A chunk's row id: its access class's id shifted left by this many bits, plus a number within
# the class (so 2**36 chunk ids per class, and class ids below 2**27).
CLASS_SHIFT = 36

# FTS5's tokenizer, of the index (chunks_fts) and of the query's terms (temp.query_terms).
_TOKENIZER = "unicode61 remove_diacritics 2"

_TABLES = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    title TEXT,
    url TEXT,
    tenant TEXT,
    has_readers INTEGER NOT NULL,
    timestamp TEXT,
    authority REAL,
    metadata TEXT NOT NULL DEFAULT '{}',
    content_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS readers (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    reader TEXT NOT NULL,
    PRIMARY KEY (doc_id, reader)
);
CREATE INDEX IF NOT EXISTS readers_by_name ON readers(reader, doc_id);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    words INTEGER NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB,
    class_id INTEGER
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='{tokenizer}'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
""".replace("{tokenizer}", _TOKENIZER)
# Version 2: access classes and their statistics, and term counts straight from the index.
_CLASSES = """
CREATE TABLE IF NOT EXISTS access_classes (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    tenant TEXT,
    has_readers INTEGER NOT NULL,
    chunks INTEGER NOT NULL DEFAULT 0,
    words INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS class_readers (
    reader TEXT NOT NULL,
    class_id INTEGER NOT NULL REFERENCES access_classes(id),
    PRIMARY KEY (reader, class_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS class_terms (
    term TEXT NOT NULL,
    class_id INTEGER NOT NULL REFERENCES access_classes(id),
    df INTEGER NOT NULL,
    PRIMARY KEY (term, class_id)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, instance);
"""
# Version 3: chunk row ids carry their class (CLASS_SHIFT), and what ranking reads of a chunk
# (its length and id) is in an index, away from its text.
_RANKS = """
CREATE INDEX IF NOT EXISTS chunks_rank ON chunks(id, words, chunk_id);
"""
# The columns, in order, of the tables of a store of each version that is upgraded when opened
# (ctxasm 0.1 set no user_version: 0, or 1). A database whose tables under these names differ
# is not a ctxasm store: it is refused before anything is written or locked, never upgraded.
_VERSION_1_COLUMNS = {
    "documents": VERSION_1_DOCUMENTS,
    "readers": VERSION_1_READERS,
    "chunks": ("id", "chunk_id", "doc_id", "seq", "start", "end", "words", "text", "embedding"),
    "chunks_fts": ("text",),
}
_VERSION_2_COLUMNS = {
    **_VERSION_1_COLUMNS,
    "chunks": (*_VERSION_1_COLUMNS["chunks"], "class_id"),
    "access_classes": ("id", "key", "tenant", "has_readers", "chunks", "words"),
    "class_readers": ("reader", "class_id"),
    "class_terms": ("term", "class_id", "df"),
}
_UPGRADED_COLUMNS = {0: _VERSION_1_COLUMNS, 1: _VERSION_1_COLUMNS, 2: _VERSION_2_COLUMNS}

# The visibility rule, in SQL, over access classes (parameters :tenant, :public, :names and
# :open_keys). A class is visible when its tenant is the principal's or none, one of the
# principal's names reads it or it has no reader list, and it is not public (neither tenant nor
# readers) unless :public. The classes are found from the principal's side, so the time follows
# its names and the classes they reach, not the store's classes times the names (a scan of
# every class probing each name took 9 s for 2,000 classes and 20,000 groups): those with
# readers through class_readers' (reader, class_id) key, and those without (one per tenant) by
# their keys (:open_keys, see records.open_class_key). CROSS JOIN keeps SQLite's planner from
# turning either loop round into a scan.
_RULE = """(k.tenant IS NULL OR k.tenant = :tenant)
    AND (k.tenant IS NOT NULL OR k.has_readers = 1 OR :public)"""
_VISIBLE_CLASSES = f"""
    SELECT k.id FROM json_each(:names) AS n
    CROSS JOIN class_readers r ON r.reader = n.value
    CROSS JOIN access_classes k ON k.id = r.class_id
    WHERE {_RULE}
    UNION
    SELECT k.id FROM json_each(:open_keys) AS n
    CROSS JOIN access_classes k ON k.key = n.value
    WHERE k.has_readers = 0 AND {_RULE}
"""
# The best candidates by BM25 over the visible classes, computed from the FTS5 index (whose
# entries for other classes are passed over by their row id's class bits).
_TOP = """
SELECT v.doc FROM (
    SELECT doc, term, count(*) AS tf FROM chunks_vocab
    WHERE term IN (SELECT key FROM json_each(:weights)) AND (doc >> {shift}) IN ({classes})
    GROUP BY doc, term
) AS v
JOIN json_each(:weights) AS w ON w.key = v.term
JOIN chunks c INDEXED BY chunks_rank ON c.id = v.doc
GROUP BY v.doc
ORDER BY sum(w.value * v.tf * :k1p1 / (v.tf + :norm0 + :norm1 * c.words)) DESC, c.chunk_id
LIMIT :pool
"""
# The distinct words of one range of the vocabulary (see ctxasm.store.forms), in the given
# classes, first in byte order: the key's index range is read in order, the other classes' rows
# in it passed over (the class id is in the key), until :limit words are found.
_FORMS = """
SELECT DISTINCT term FROM class_terms WHERE term >= :first AND term < :after {classes}
ORDER BY term LIMIT :limit
"""
_FTS_TERM = re.compile(r"\w+", re.UNICODE)
# A write's change of one class's term counts (parameters: the class id, and a JSON object of
# each term's change), and the removal of the terms it leaves in no chunk of the class.
_ADD_TERMS = """
INSERT INTO class_terms (class_id, term, df)
SELECT ?1, key, value FROM json_each(?2) WHERE value != 0 ORDER BY key
ON CONFLICT (term, class_id) DO UPDATE SET df = df + excluded.df
"""
_DROP_TERMS = """
DELETE FROM class_terms WHERE class_id = ?1 AND df <= 0
AND term IN (SELECT key FROM json_each(?2) WHERE value < 0)
"""
# The query's terms, tokenized by FTS5 as the index was (chunks_fts above, with the same
# _TOKENIZER; see SQLiteStore._fts_forms).
_QUERY_TERMS = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_terms USING fts5(t, tokenize='{_TOKENIZER}')"
)
_QUERY_FORMS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_forms USING fts5vocab(temp, query_terms, "
    "instance)"
)
# Chunks are written through this table (see SQLiteStore._insert_chunks); it lives in the
# connection's temporary database and is empty between writes.
_CHUNK_FIELDS = 'id, chunk_id, doc_id, seq, start, "end", words, text, embedding, class_id'
_MARKS = ", ".join("?" for _ in _CHUNK_FIELDS.split(","))
_STAGED_CHUNKS = f"CREATE TEMP TABLE IF NOT EXISTS staged_chunks ({_CHUNK_FIELDS})"


SCORE_DIGITS = 6  # a passage's score is rounded to this many decimals
# Where fewer than k of the candidate pool score above 0 (see SQLiteStore.retrieve), the pool is
# read again this many times larger, at most this many times: memory stays bounded by k.
_POOL_GROWTH = 4
_POOL_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class SQLiteRow(ChunkRow):
    """A chunk read back, with its vector (float32 bytes; ``None`` without an embedder)."""

    embedding: bytes | None


def _not_a_folder(path: Path) -> str:
    """Why the folder of ``path`` cannot be made or used: the first of its parents that is
    not a folder."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return f"{parent} is a file, not a folder"
    return f"its folder {path.parent} cannot be made"


class SQLiteStore:
    """A document store in one SQLite file (see the module docstring)."""

    def __init__(
        self, path: str | Path, embedder: str | None = None, *, create: bool = True
    ) -> None:
        """``embedder`` (a spec such as ``"hashing"``, see :mod:`ctxasm.embeddings`) adds a
        vector to every chunk written, and vector similarity to retrieval: the lexical
        candidates' vectors are compared with the query's, and the two rankings fused by
        reciprocal rank fusion, as in the PostgreSQL store. Without ``create``, a file that
        holds no store (an empty one) is refused rather than made one; a database of other
        tables is refused either way. ``read_only`` tells whether the store was opened
        read-only, its file or folder being read-only (see
        :mod:`ctxasm.store.sqlite_connections`): it is read, and a write fails with a
        StoreUnavailableError."""
        self.path = Path(path)
        self._create = create
        self.embedder = None
        if embedder is not None:
            from ctxasm.embeddings import get_embedder

            self.embedder = get_embedder(embedder)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.read_only = self._connect()
        except (FileExistsError, NotADirectoryError):
            raise ConfigError(
                f"cannot open the store {self.path}: {_not_a_folder(self.path)}"
            ) from None
        except sqlite3.Error as exc:
            cannot = _cannot_write(exc)
            if cannot is None:
                raise ConfigError(f"cannot open the store {self.path}: {exc}") from None
            raise StoreUnavailableError(
                f"the store {self.path} cannot be used: {cannot} ({exc})"
            ) from None
        except OSError as exc:
            raise ConfigError(f"cannot open the store {self.path}: {exc}") from None
        # Closed when close() is called, when the store is collected, or when the interpreter
        # exits, whichever comes first: each leaves the store readable from a read-only folder.
        self._closer = weakref.finalize(
            self, sqlite_connections.close, self._db, read_only=self.read_only
        )
        self._lock = threading.Lock()
        self._dimension_checked = False

    def _connect(self) -> bool:
        """Open the store read-write, or read-only where it is there and its file or folder
        cannot be written (see :mod:`ctxasm.store.sqlite_connections`); whether read-only. A
        read-only store is read as any other, and its first write fails as one (a
        StoreUnavailableError, see _locked)."""
        try:
            self._open(sqlite_connections.open_read_write, read_only=False)
            return False
        except sqlite3.Error as exc:
            if not sqlite_connections.refused_as_read_only(exc) or not self.path.is_file():
                raise
        try:
            self._open(sqlite_connections.open_read_only, read_only=True)
        except sqlite3.Error as exc:
            if sqlite_connections.refused_as_read_only(
                exc
            ) and sqlite_connections.unreadable_without_shm(self.path):
                raise StoreUnavailableError(
                    f"the store {self.path} cannot be used: its folder cannot be written, and "
                    "the store was left in write-ahead-log mode (by an older ctxasm, or another "
                    f"program), which SQLite reads only by making {self.path.name}-shm beside "
                    "it; open the store once where its folder can be written (any ctxasm "
                    "command, ask too), and it is left readable from a read-only folder"
                ) from None
            raise
        return True

    def _open(self, connect: Callable[[Path], sqlite3.Connection], *, read_only: bool) -> None:
        """Connect and ready the connection (closed again if that fails): the tables made or
        upgraded, WAL mode where it can write, and the connection's own tables for reading
        query words as FTS5 does (_fts_forms)."""
        self._db = connect(self.path)
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._prepare()  # first: a file refused as no store is left as it was
            if not read_only:
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute(_QUERY_TERMS)
            self._db.execute(_QUERY_FORMS)
        except BaseException:
            self._db.close()
            raise

    def _prepare(self) -> None:
        """Create the tables, or upgrade a store an older ctxasm wrote (refusing a newer one)."""
        db = self._db
        version = self._version()
        if version == SCHEMA_VERSION:
            return
        checked = self._check_columns(version)
        if checked == SCHEMA_VERSION:
            return
        with _write_transaction(db):
            # Read again under the write lock: another process may have created or upgraded
            # the store since (doing it twice fails); the tables of a version other than the
            # one checked are checked now, when nothing can change them.
            version = self._version()
            if version == SCHEMA_VERSION:
                return
            if version != checked:
                self._check_columns(version)
            old = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'documents'").fetchone()
            if old is None:
                self._check_empty()
                for statement in _statements(_TABLES + _CLASSES + _RANKS):
                    db.execute(statement)
            else:
                if version < 2:
                    self._upgrade_to_2()
                self._upgrade_to_3()
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _check_columns(self, version: int) -> int:
        """Refuse a database that holds tables but not those of a store of ``version``, with
        their columns (:data:`_VERSION_1_COLUMNS`): one with a ``documents`` table of its own
        was taken for a version-1 store, and its upgrade failed on an SQL error. Nothing is
        locked yet, so another process may create or upgrade the store between the reading of
        its version and of its tables: where the tables differ, the version is read again, and
        a database is refused only when it stayed the same (versions only grow, so this ends);
        otherwise the tables are checked against the version found (none for the current one).
        The version whose tables were found."""
        while not self._has_columns(version):
            found = self._version()
            if found <= version:
                raise self._other_tables()
            if found == SCHEMA_VERSION:
                return found
            version = found
        return version

    def _has_columns(self, version: int) -> bool:
        """Whether the database holds no table, or the tables of a store of ``version``."""
        if not self._tables():
            return True  # an empty file: made a store, or refused as none (_check_empty)
        expected = _UPGRADED_COLUMNS.get(version)  # none for a user_version below 0
        if expected is None:
            return False
        for table, columns in expected.items():
            found = self._db.execute(
                "SELECT name FROM pragma_table_info(?) ORDER BY cid", (table,)
            ).fetchall()
            if tuple(name for (name,) in found) != columns:
                return False
        return True

    def _check_empty(self) -> None:
        """Refuse to create a store in a database that holds other tables, or, when opened
        without ``create``, in an empty file."""
        if self._tables():
            raise self._other_tables()
        if not self._create:
            raise ConfigError(
                f"no store at {self.path}: the file is empty; index documents into it first "
                "(ctxasm index)",
                field="store",
            )

    def _tables(self) -> list[str]:
        """The names of the database's first tables (four at most), in order."""
        return [
            name
            for (name,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 4"
            )
        ]

    def _other_tables(self) -> ConfigError:
        """The refusal of a database that is not a ctxasm store, naming its first tables."""
        return ConfigError(
            f"{self.path} is a database of other tables ({', '.join(self._tables()[:3])}), not "
            "a ctxasm store; name another file",
            field="store",
        )

    def _version(self) -> int:
        """The store's schema version, refusing one a newer ctxasm wrote."""
        version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"the store {self.path} has schema version {version}, written by a newer "
                f"ctxasm; this one reads versions up to {SCHEMA_VERSION}: upgrade ctxasm",
                field="store",
            )
        return version

    def _upgrade_to_2(self) -> None:
        """Version 1 had no access classes: add them and count every document into its class."""
        db = self._db
        db.execute("ALTER TABLE chunks ADD COLUMN class_id INTEGER")
        for statement in _statements(_CLASSES):
            db.execute(statement)
        deltas: dict[int, ClassDelta] = {}
        documents = db.execute("SELECT doc_id, tenant, has_readers FROM documents").fetchall()
        for doc_id, tenant, has_readers in documents:
            names = [
                r for (r,) in db.execute("SELECT reader FROM readers WHERE doc_id = ?", (doc_id,))
            ]
            document = Document(
                doc_id, "", tenant=tenant, readers=tuple(names) if has_readers else None
            )
            class_id = self._class_id(document)
            db.execute("UPDATE chunks SET class_id = ? WHERE doc_id = ?", (class_id, doc_id))
            texts = [
                t for (t,) in db.execute("SELECT text FROM chunks WHERE doc_id = ?", (doc_id,))
            ]
            count_into(deltas, class_id, texts)
        self._apply(deltas)

    def _upgrade_to_3(self) -> None:
        """Version 2 numbered chunks in one sequence: put each chunk's class in its row id's
        high bits (keeping the order within a class), rebuild the full-text index for the new
        ids, and index what ranking reads (3.7 s for 100,000 chunks, once)."""
        db = self._db
        top, unclassed = db.execute(
            "SELECT max(id), count(*) - count(class_id) FROM chunks"
        ).fetchone()
        problem = None
        if unclassed:
            problem = f"{unclassed} chunks have no access class"
        elif top is not None and top >= 1 << CLASS_SHIFT:
            problem = f"its chunk ids reach 2**{CLASS_SHIFT}"
        if problem is not None:
            raise ConfigError(
                f"cannot upgrade the store {self.path} to schema version 3: {problem}; index "
                "its documents into a new store",
                field="store",
            )
        db.execute("DROP TRIGGER IF EXISTS chunks_ai")
        db.execute("DROP TRIGGER IF EXISTS chunks_ad")
        db.execute(f"UPDATE chunks SET id = (class_id << {CLASS_SHIFT}) | id")
        db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")
        for statement in _statements(_TABLES + _RANKS):
            db.execute(statement)

    def close(self) -> None:
        """Close the store's connection; the last one to the store leaves it in
        rollback-journal mode (see :func:`ctxasm.store.sqlite_connections.close`)."""
        self._closer()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The connection for this thread alone. A database another process keeps locked past
        SQLite's busy timeout (5 s: an index run writing) is a StoreUnavailableError, which a
        service answers 503, not an internal error."""
        with self._lock:
            try:
                yield
            except sqlite3.OperationalError as exc:
                cannot = _cannot_write(exc)
                if cannot is not None:
                    raise StoreUnavailableError(
                        f"the store {self.path} cannot be used: {cannot} ({exc}); what was "
                        "written before stays, and the same command can be run again"
                    ) from None
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                raise StoreUnavailableError(
                    f"the store {self.path} is busy: another process is writing to it ({exc}); "
                    "try again when it is done"
                ) from None

    def upsert(self, document: Document, chunks: Sequence[Chunk]) -> str:
        """Store ``document`` and its chunks: ``"added"``, ``"updated"`` (old chunks replaced
        atomically) or ``"unchanged"`` (same content: nothing written)."""
        return self.upsert_many([(document, chunks)])[0]

    def upsert_many(self, items: Sequence[tuple[Document, Sequence[Chunk]]]) -> list[str]:
        """:meth:`upsert` for many documents, in one transaction per run of distinct document
        ids (a repeated id starts the next run): the outcome of each, in order. If a document
        fails, nothing of its run is written; the runs before it stay written."""
        pending = [self._pending(document, chunks) for document, chunks in checked_items(items)]
        outcomes: list[str] = []
        for batch in batches(pending):
            outcomes.extend(self._write(batch))
        return outcomes

    def _check_dimension(self) -> None:
        """Refuse to add vectors of another size than the store's (one run may name its own
        embedder): its lookups compare the query's vector with vectors of one size."""
        if self._dimension_checked or self.embedder is None:
            return
        with self._locked():
            row = self._db.execute(
                "SELECT length(embedding) FROM chunks WHERE embedding IS NOT NULL LIMIT 1"
            ).fetchone()
        size = 4 * self.embedder.dimension  # float32
        if row is not None and row[0] != size:
            raise RequestError(
                f"the store {self.path} holds vectors of {row[0] // 4} dimensions, and the "
                f"embedder {self.embedder.name} makes {size // 4}: index with the embedder the "
                "store was written with",
                field="store",
            )
        self._dimension_checked = True

    def _pending(self, document: Document, chunks: Sequence[Chunk]) -> Pending:
        digest = content_hash(document, chunks, self.embedder.name if self.embedder else "")
        vectors: list[bytes | None] = [None] * len(chunks)
        if self.embedder is not None and chunks:
            self._check_dimension()
            embedded = self.embedder.embed([c.text for c in chunks])
            vectors = [row.astype("float32").tobytes() for row in embedded]
        return Pending(document, chunks, digest, vectors)

    def _write(self, batch: list[Pending]) -> list[str]:
        db = self._db
        with self._locked():
            known, changed = self._stored(batch)
            if changed:
                with _write_transaction(db):
                    # Read again under the write lock: another process may have deleted an id
                    # and indexed it under another tenant since (its document must not be
                    # written over), or written the same version already.
                    known, changed = self._stored(batch)
                    if changed:
                        replaced = [
                            p.document.doc_id for p in changed if p.document.doc_id in known
                        ]
                        self._replace(changed, replaced)
        return outcomes(batch, known)

    def _stored(self, batch: list[Pending]) -> tuple[dict[str, str], list[Pending]]:
        """The stored content hash of each id of ``batch`` that is stored, and the documents
        whose hash differs; a document whose id another tenant owns raises (``check_owners``)."""
        marks = ", ".join("?" for _ in batch)
        stored = self._db.execute(
            f"SELECT doc_id, content_hash, tenant FROM documents WHERE doc_id IN ({marks})",
            [p.document.doc_id for p in batch],
        ).fetchall()
        check_owners(batch, {doc_id: tenant for doc_id, _, tenant in stored})
        known = {doc_id: digest for doc_id, digest, _ in stored}
        return known, [p for p in batch if known.get(p.document.doc_id) != p.digest]

    def _replace(self, batch: list[Pending], replaced: list[str]) -> None:
        """Write ``batch`` (inside a transaction), removing the ``replaced`` versions first."""
        db = self._db
        deltas: dict[int, ClassDelta] = {}
        self._uncount(replaced, deltas)
        if replaced:  # one statement: FTS5 flushes its pending index data after each one
            db.execute(
                "DELETE FROM documents WHERE doc_id IN (SELECT value FROM json_each(?))",
                (json.dumps(replaced, ensure_ascii=False),),
            )
        classes: dict[tuple[str | None, tuple[str, ...] | None], int] = {}
        documents: list[tuple[Any, ...]] = []
        readers: list[tuple[str, str]] = []
        chunks: list[tuple[Any, ...]] = []
        gathered = ClassWords()
        for item in batch:
            document = item.document
            access = (document.tenant, document.readers)
            class_id = classes.get(access)
            if class_id is None:
                class_id = classes[access] = self._class_id(document)
            documents.append(document_row(document, item.digest))
            readers.extend((document.doc_id, r) for r in reader_names(document))
            chunks.extend(_chunk_rows(item, class_id, gathered))
        gathered.count_into(deltas)
        db.executemany(
            "INSERT INTO documents (doc_id, title, url, tenant, has_readers, timestamp, "
            "authority, metadata, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            documents,
        )
        db.executemany("INSERT INTO readers (doc_id, reader) VALUES (?, ?)", readers)
        self._insert_chunks(chunks)
        self._apply(deltas)

    def _insert_chunks(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert chunk rows (without their ids; the class id last) in one statement, through
        a temporary table, in row id order: FTS5 flushes its pending index data after every
        statement and before every row id lower than the last, so a row at a time
        (``executemany``), or in the batch's order (its classes' ranges interleaved), writes
        and merges index segments thousands of times per batch (twice the time in all)."""
        db = self._db
        db.execute(_STAGED_CHUNKS)
        ids = self._chunk_ids(Counter(row[-1] for row in rows))
        staged = [(next(ids[row[-1]]), *row) for row in rows]
        db.executemany(
            f"INSERT INTO temp.staged_chunks ({_CHUNK_FIELDS}) VALUES ({_MARKS})", staged
        )
        db.execute(
            f"INSERT INTO chunks ({_CHUNK_FIELDS}) SELECT {_CHUNK_FIELDS} FROM "
            "temp.staged_chunks ORDER BY id"
        )
        db.execute("DELETE FROM temp.staged_chunks")

    def _chunk_ids(self, wanted: Counter[int]) -> dict[int, Iterator[int]]:
        """Free row ids for new chunks, ``wanted[class_id]`` of them per class, in the class's
        range (see :data:`CLASS_SHIFT`): after its last chunk, else before its first."""
        found: dict[int, Iterator[int]] = {}
        for class_id, count in wanted.items():
            if class_id >= 1 << (63 - CLASS_SHIFT):
                raise ConfigError(
                    f"the store {self.path} has more access classes than it can number "
                    f"(2**{63 - CLASS_SHIFT})",
                    field="store",
                )
            low = class_id << CLASS_SHIFT
            high = low + (1 << CLASS_SHIFT) - 1  # the class's last id (at most 2**63 - 1)
            ends = [
                self._db.execute(
                    f"SELECT id FROM chunks WHERE id BETWEEN ? AND ? ORDER BY id {way} LIMIT 1",
                    (low, high),
                ).fetchone()
                for way in ("DESC", "ASC")
            ]
            if ends[0] is None:
                start = low
            elif ends[0][0] + count <= high:
                start = ends[0][0] + 1
            elif ends[1] is not None and ends[1][0] - count >= low:
                start = ends[1][0] - count
            else:
                raise ConfigError(
                    f"the store {self.path} has no chunk ids left for access class {class_id} "
                    f"(2**{CLASS_SHIFT} per class): index its documents into a new store",
                    field="store",
                )
            found[class_id] = itertools.count(start)
        return found

    def _class_id(self, document: Document) -> int:
        """The id of the document's access class, created (with its readers) if new."""
        key = class_key(document)
        row = self._db.execute("SELECT id FROM access_classes WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return int(row[0])
        cursor = self._db.execute(
            "INSERT INTO access_classes (key, tenant, has_readers) VALUES (?, ?, ?)",
            (key, document.tenant, int(document.readers is not None)),
        )
        class_id = int(cursor.lastrowid or 0)
        self._db.executemany(
            "INSERT INTO class_readers (reader, class_id) VALUES (?, ?)",
            [(r, class_id) for r in reader_names(document)],
        )
        return class_id

    def _uncount(self, doc_ids: list[str], deltas: dict[int, ClassDelta]) -> None:
        """Take the chunks of these documents out of their classes' statistics."""
        for doc_id in doc_ids:
            rows = self._db.execute(
                "SELECT class_id, text FROM chunks WHERE doc_id = ?", (doc_id,)
            ).fetchall()
            for class_id, text in rows:
                count_into(deltas, class_id, [text], sign=-1)

    def _apply(self, deltas: dict[int, ClassDelta]) -> None:
        db = self._db
        for class_id, delta in sorted(deltas.items()):
            db.execute(
                "UPDATE access_classes SET chunks = chunks + ?, words = words + ? WHERE id = ?",
                (delta.chunks, delta.words, class_id),
            )
            if not delta.terms:
                continue
            # The changes as one JSON object, added in the key's order by one statement: a
            # row at a time (executemany, rows sorted in Python) took 1.6 times as long.
            changes = json.dumps(delta.terms, ensure_ascii=False)
            db.execute(_ADD_TERMS, (class_id, changes))
            if min(delta.terms.values()) < 0:
                db.execute(_DROP_TERMS, (class_id, changes))

    def delete(self, doc_id: str) -> bool:
        """Remove a document, its readers, chunks and index rows; whether it existed."""
        doc_id = checked_doc_id(doc_id)
        with self._locked(), _write_transaction(self._db):
            deltas: dict[int, ClassDelta] = {}
            self._uncount([doc_id], deltas)
            gone = self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._apply(deltas)
        return gone.rowcount > 0

    def stored_ids(self, doc_ids: Iterable[str]) -> set[str]:
        """Which of ``doc_ids`` the store holds: one query, each id looked up in the
        documents' key (:func:`ctxasm.store.index_paths` finds files stored twice with it)."""
        wanted = json.dumps(list(doc_ids))
        with self._locked():
            rows = self._db.execute(
                "SELECT doc_id FROM documents WHERE doc_id IN (SELECT value FROM json_each(?))",
                (wanted,),
            ).fetchall()
        return {doc_id for (doc_id,) in rows}

    def stats(self) -> StoreStats:
        with self._locked():
            documents = self._db.execute("SELECT count(*) FROM documents").fetchone()[0]
            chunks = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return StoreStats(documents, chunks)

    def retrieve(
        self, query: str, principal: Principal | None, k: int = 50, *, allow_public: bool = False
    ) -> list[Passage]:
        """The ``k`` best visible chunks for ``query`` (its words, each with its other forms
        among the visible chunks' words: see :mod:`ctxasm.store.forms`) by BM25 over the
        visible chunks (fused with vector similarity when the store has an embedder), as
        passages carrying their offsets, scores and access data. The work and the memory are
        bounded by ``k``: the candidates read are at most 64 times the first pool of ``2 k``
        (see _POOL_ROUNDS)."""
        query, k, principal = checked_retrieval(query, principal, k, allow_public)
        terms = [t for t in query_words(query) if _FTS_TERM.fullmatch(t)]
        if not terms:
            return []
        with self._locked():
            classes = self._visible_classes(principal, allow_public)
            terms = self._with_forms(terms, classes) if classes else terms
            stats = self._statistics(classes, terms)
            if not stats.total:
                return []
            pool = max(4 * k, 200) if self.embedder is not None else max(2 * k, 20)
            most = pool * _POOL_GROWTH**_POOL_ROUNDS
            while True:
                rows = self._candidates(classes, stats, terms, pool)
                scored = rescored(rows, terms, stats)
                # FTS5 finds words by their folded forms ("cafe" for "café", "flush" in
                # "flush_all"), which the exact score does not count: where those fill the
                # pool, the chunks that hold the words themselves lie further down.
                found = sum(1 for score, _ in scored if score > 0)
                if found >= k or len(rows) < pool or pool >= most:
                    break
                pool *= _POOL_GROWTH
            readers = self._readers({row.doc_id for row in rows if row.has_readers})
        near = self._nearest(query, rows, max(2 * k, 20))
        if near:
            scored = fused(scored, near)
        return [
            row.passage(score, readers.get(row.doc_id, ()), SCORE_DIGITS)
            for score, row in scored[:k]
            if score > 0
        ]

    def hidden_matches(
        self, query: str, principal: Principal | None, *, allow_public: bool = False
    ) -> bool:
        """Whether chunks this principal may not read (with these arguments) hold a term of
        ``query`` or a form of one while none it may read does (see
        :func:`ctxasm.store.ranking.only_hidden`): the words :meth:`retrieve` searches, their
        forms found among the visible classes' words as it finds them, and among every
        class's, so that a question this principal finds nothing for is told whether one it
        may not read holds a form of its words."""
        query, _, principal = checked_retrieval(query, principal, 1, allow_public)
        terms = [t for t in query_words(query) if _FTS_TERM.fullmatch(t)]
        if not terms:
            return False
        with self._locked():
            visible = self._visible_classes(principal, allow_public)
            found = self._with_forms(terms, visible) if visible else terms
            terms = [*found, *self._with_forms(terms, None)]
            holding = [
                int(class_id)
                for (class_id,) in self._db.execute(
                    "SELECT DISTINCT class_id FROM class_terms "
                    "WHERE term IN (SELECT value FROM json_each(?)) AND df > 0",
                    (json.dumps(terms),),
                )
            ]
        return only_hidden(holding, visible)

    def for_principal(
        self, principal: Principal | None, *, allow_public: bool = False
    ) -> PrincipalRetriever:
        """This store as a :class:`ctxasm.Retriever` (``retrieve(query, k)``) for
        ``principal``."""
        return PrincipalRetriever(self, principal, allow_public)

    def _visible_classes(self, principal: Principal | None, allow_public: bool) -> list[int]:
        """The ids of the access classes ``principal`` may read (see _VISIBLE_CLASSES), in
        order."""
        ids = [] if principal is None else [principal.id, *principal.groups]
        # The names as one JSON array: SQLite finds a named parameter by a linear search, so
        # one per group made 40,000 groups take 9 s. No principal: no reader list admits
        # anyone. The keys: the classes without readers of the principal's tenant and of none.
        tenant = None if principal is None else principal.tenant
        params = {
            "names": json.dumps(ids),
            "open_keys": json.dumps([open_class_key(tenant), open_class_key(None)]),
            "tenant": tenant,
            "public": int(allow_public),
        }
        rows = self._db.execute(_VISIBLE_CLASSES, params).fetchall()
        return sorted(int(row[0]) for row in rows)

    def _with_forms(self, terms: list[str], classes: list[int] | None) -> list[str]:
        """``terms``, each followed by its other forms among the words of ``classes`` (the
        visible ones; ``None``: every class), read range by range (see
        :mod:`ctxasm.store.forms`)."""
        ranges, limit = form_ranges(terms)
        listed = "" if classes is None else f"AND class_id IN ({', '.join(map(str, classes))})"
        sql = _FORMS.format(classes=listed)
        vocabulary = [
            word
            for first, after in ranges
            for (word,) in self._db.execute(sql, {"first": first, "after": after, "limit": limit})
        ]
        return [t for t in with_forms(terms, vocabulary) if _FTS_TERM.fullmatch(t)]

    def _statistics(self, classes: list[int], terms: list[str]) -> VisibleStats:
        """Chunk count, word count and term frequencies summed over the visible classes."""
        if not classes:
            return VisibleStats(0, 0, {})
        listed = ", ".join(str(c) for c in classes)
        total, words = self._db.execute(
            f"SELECT sum(chunks), sum(words) FROM access_classes WHERE id IN ({listed})"
        ).fetchone()
        # the terms as one JSON array: with their forms, they may pass SQLite's limit on
        # parameters
        frequencies = dict(
            self._db.execute(
                "SELECT term, sum(df) FROM class_terms WHERE term IN "
                f"(SELECT value FROM json_each(?)) AND class_id IN ({listed}) GROUP BY term",
                (json.dumps(terms),),
            ).fetchall()
        )
        return VisibleStats(int(total or 0), int(words or 0), frequencies)

    def _candidates(
        self, classes: list[int], stats: VisibleStats, terms: list[str], pool: int
    ) -> list[SQLiteRow]:
        """The rows of the ``pool`` best visible chunks by BM25, ranked inside SQLite."""
        weights = stats.weights(terms)
        by_form: dict[str, float] = {}
        for (_, idf), forms in zip(weights, self._fts_forms([t for t, _ in weights]), strict=True):
            # A term FTS5 cuts in pieces (at "_", say: Python's words keep it whole) is found
            # by its pieces, sharing its weight; rescoring then counts the whole term.
            for form in forms:
                by_form[form] = max(by_form.get(form, 0.0), idf / len(forms))
        if not by_form:
            return []
        # The forms are looked up from the weights' keys: one bound parameter, however many
        # pieces FTS5 cuts the words into (a named parameter each took time quadratic in them).
        params: dict[str, object] = {**stats.sql_parameters(), "pool": pool}
        params["weights"] = json.dumps(dict(sorted(by_form.items())))
        sql = _TOP.format(classes=", ".join(str(c) for c in classes), shift=CLASS_SHIFT)
        ids = [row[0] for row in self._db.execute(sql, params)]
        if not ids:
            return []
        # The ids as one JSON array: a parameter each passed SQLite's limit on them (32,766 in
        # its default build) once a pool grew past it.
        found = self._db.execute(
            f"SELECT {CHUNK_COLUMNS}, c.embedding FROM chunks c "
            "JOIN documents d ON d.doc_id = c.doc_id "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
        return [SQLiteRow(*row) for row in found]

    def _fts_forms(self, terms: list[str]) -> list[list[str]]:
        """Each term as the FTS5 index holds it, told by FTS5's own tokenizer (the index's,
        in a table in the connection's temporary database): folding it in Python missed
        Hangul, kana with voicing marks, й, accented Greek, ligatures and superscripts, whose
        chunks were then never found."""
        db = self._db
        db.execute("DELETE FROM temp.query_terms")
        db.executemany("INSERT INTO temp.query_terms (rowid, t) VALUES (?, ?)", enumerate(terms))
        forms: list[list[str]] = [[] for _ in terms]
        for row, form in db.execute(
            'SELECT doc, term FROM temp.query_forms ORDER BY doc, "offset"'
        ):
            forms[row].append(form)
        db.execute("DELETE FROM temp.query_terms")
        return forms

    def _nearest(self, query: str, rows: list[SQLiteRow], count: int) -> list[SQLiteRow]:
        """The candidates closest to the query's vector, nearest first; none without an
        embedder. (Measured against brute force over every visible vector: see
        docs/store.md.)"""
        if self.embedder is None:
            return []
        import numpy as np

        target = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        size = target.nbytes  # vectors of another size come from another embedder: not compared
        rows = [row for row in rows if row.embedding is not None and len(row.embedding) == size]
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(row.embedding or b"" for row in rows), dtype=np.float32)
        similarity = matrix.reshape(len(rows), -1) @ target
        order = sorted(range(len(rows)), key=lambda i: (-float(similarity[i]), rows[i].chunk_id))
        return [rows[i] for i in order[:count] if similarity[i] > 0.05]

    def _readers(self, doc_ids: set[str]) -> dict[str, tuple[str, ...]]:
        if not doc_ids:
            return {}
        marks = ", ".join("?" for _ in doc_ids)
        found: dict[str, list[str]] = {}
        for doc_id, reader in self._db.execute(
            f"SELECT doc_id, reader FROM readers WHERE doc_id IN ({marks}) ORDER BY reader",
            sorted(doc_ids),
        ):
            found.setdefault(doc_id, []).append(reader)
        return {doc_id: tuple(names) for doc_id, names in found.items()}


# SQLite's errors that say the database file cannot be written at all (every later write would
# fail alike, so an index run stops at the first), by the name of their primary code.
_CANNOT_WRITE = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_IOERR": "the disk gave an I/O error (is it full, or gone?)",
    "SQLITE_READONLY": "the file or its folder is read-only",
    "SQLITE_CANTOPEN": (
        "the file cannot be opened or made (its folder gone or read-only, or no permission)"
    ),
}


def _cannot_write(exc: sqlite3.Error) -> str | None:
    """Why ``exc`` means the store cannot be written at all, or ``None``."""
    name = getattr(exc, "sqlite_errorname", None)  # "SQLITE_IOERR_WRITE": its primary code first
    if not isinstance(name, str):
        return None
    return next((why for code, why in _CANNOT_WRITE.items() if name.startswith(code)), None)


@contextmanager
def _write_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """A write transaction around the block: committed when it ends, rolled back when it (or
    the commit) raises, and the error raised as it was. After some errors (a full disk, an I/O
    error, no memory, a trigger's RAISE(ROLLBACK)) SQLite has rolled the transaction back
    itself, and a ROLLBACK then would fail ("no transaction is active") in place of the
    error that says what went wrong."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _chunk_rows(item: Pending, class_id: int, gathered: ClassWords) -> list[tuple[Any, ...]]:
    """The ``chunks`` rows of one document (see :data:`_CHUNK_FIELDS`), each chunk's words
    ``gathered`` on the way for its class's statistics (found once, for both)."""
    doc_id = item.document.doc_id
    rows = []
    for seq, chunk in enumerate(item.chunks):
        found = chunk_words(chunk.text)
        gathered.add(class_id, set(found), len(found))
        rows.append((*chunk_row(doc_id, seq, chunk, len(found)), item.vectors[seq], class_id))
    return rows


def _statements(script: str) -> list[str]:
    """The statements of a schema script (triggers keep their inner semicolons)."""
    statements, current = [], ""
    for line in script.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return statements
