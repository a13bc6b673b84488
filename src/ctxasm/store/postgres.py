"""The production store: PostgreSQL with pgvector (the ``postgres`` extra).

Same tables, access rules and access classes as the SQLite store (see
:mod:`ctxasm.store.sqlite` and :mod:`ctxasm.store.ranking`), with two differences in how chunks
are found:

- lexical search: a GIN index over each chunk's distinct words and its class marker finds the
  visible chunks holding a query term. Each chunk also keeps a *bound vector* (a pgvector
  ``sparsevec``: its words' BM25 shares at the store's reference length, rounded up, in
  hashed buckets; the reference follows the average while the store is small, see
  :data:`ctxasm.store.postgres_rows.REFERENCE_SETTLES`), so one inner product per match, in
  C, ranks the matches by a score that BM25 over the visible chunks can exceed by a known
  factor at most. The first of that ranking are read and scored exactly in Python, and more
  are read until no chunk left out could rank among the ``k`` best
  (:func:`ctxasm.store.ranking.exact_best`): the result is the exact BM25 ranking over the
  visible chunks, whatever the approximation;
- vectors: every chunk's embedding (``vector(256)``, from the offline hashing embedder) is in
  ``chunk_vectors``, under an HNSW index with the access condition in the same ``WHERE`` as
  the ``ORDER BY`` distance (pgvector's iterative index scans, so a principal who sees a small
  share of the corpus still gets ``k`` neighbours). The index is built in one pass rather than
  row by row (five times cheaper): rows of a write join a *tail* outside it (each row has a
  ``generation``, the index covers those up to the store's), searched exactly beside the
  index, and the index is rebuilt over everything when the tail grows as large as what it
  covers, so a store loaded in batches builds it a few times in all. A store builds no index
  until it first holds ``FIRST_INDEX`` vectors: its searches are exact, about as fast at that
  size as the index's filtered search, and its loads build no graph. Past ``TAIL_MAX`` rows
  of tail, writes go into the index row by row, so the exact search stays bounded; inside
  :meth:`PostgresStore.bulk` (``ctxasm index`` opens one) they stay in the tail, and the index
  is rebuilt once at the end.

The two rankings are fused by reciprocal rank fusion (:func:`ctxasm.store.ranking.fused`),
whose score the passages carry. They are searched side by side: the vectors on a second pooled
connection while the first ranks the words, when the pool has one free at once (a retrieval
never waits for a second connection), else both on one connection in one round trip.

Documents are written in batches (``COPY``), one transaction per batch, an index rebuild
included; a batch's changes of the class statistics pass through a temporary table (where a
role may not make one, its TEMPORARY privilege revoked, they go as array parameters instead:
slower, the same rows).

As a service dependency: connections come from a pool (``pool_size``), every statement runs
under ``statement_timeout_ms``, a connection broken by a database restart is replaced on the
next request, and while the database is unreachable requests fail fast with
:class:`~ctxasm.errors.StoreUnavailableError` (an HTTP service answers 503), as do writes of a
session that may not write the store at all (a role without the privileges, a read replica),
which name why. The schema version is kept in ``ctxasm_schema``: an older store is upgraded
when opened, a newer one refused, and so is one missing some of its tables (see
:func:`ctxasm.store.postgres_schema._schema_version`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ctxasm.data import Passage, Principal
from ctxasm.errors import ConfigError, RequestError, StoreUnavailableError, install_hint
from ctxasm.lexical import query_words
from ctxasm.store import postgres_schema
from ctxasm.store.arguments import (
    check_for_postgres,
    checked_doc_id,
    checked_retrieval,
    without_secrets,
)
from ctxasm.store.chunking import Chunk
from ctxasm.store.documents import Document
from ctxasm.store.postgres_rows import (
    _VECTOR,
    BOUND_DIMENSION,
    DIMENSION,
    REFERENCE_LOCK,
    _apply,
    _chunk_rows,
    _chunk_words,
    _reference,
    _stage,
    _terms,
    _update,
    lock_reference,
    rewrite_bounds,
)
from ctxasm.store.postgres_schema import (
    _SCHEMA,
    _STORAGE,
    INDEX_MEMORY_MB,
    SCHEMA_VERSION,
    _check_index_names,
    _drop_stale_indexes,
    _Plan,
    _plan,
    _rebuild,
    _schema_version,
)
from ctxasm.store.postgres_search import (
    _HOLDING,
    _ROWS,  # noqa: F401 - re-exported for the tests
    PostgresRow,
    _Lexical,
    _statistics,
    _vector,
    form_parameters,
    form_words,
    nearest_query,
)
from ctxasm.store.ranking import ClassDelta, chunk_words, count_into, fused, only_hidden
from ctxasm.store.records import (
    Pending,
    StoreStats,
    batches,
    check_owners,
    checked_items,
    class_key,
    content_hash,
    document_row,
    outcomes,
    reader_names,
)
from ctxasm.store.scoped import PrincipalRetriever

__all__ = ["SCHEMA_VERSION", "PostgresRow", "PostgresStore"]

# Vector neighbours further than this (cosine distance) share nothing with the query.
MAX_DISTANCE = 0.95
SCORE_DIGITS = 8  # a passage's score is rounded to this many decimals
SPARE_WAIT_S = 0.005  # how long a retrieval waits for a second connection, else does without


# The largest values of the store URL's options: PostgreSQL's own limits on the settings they
# become (timeouts in ms and maintenance_work_mem in kB are 32-bit integers), and a pool no
# server would accept.
MAX_POOL_SIZE = 1000
MAX_TIMEOUT_MS = 2_147_483_647
MAX_INDEX_MEMORY_MB = 2_097_151


def _unavailable(exc: Exception) -> StoreUnavailableError:
    import psycopg

    detail = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return StoreUnavailableError(
            f"the PostgreSQL store did not answer within its statement timeout ({detail}); "
            "retry, or raise statement_timeout_ms in the store URL",
            field="store",
        )
    return StoreUnavailableError(
        f"the PostgreSQL store is unavailable ({detail}); retry when the database is back: "
        "connections are re-established on the next request",
        field="store",
    )


def _tables_changed(exc: Exception) -> StoreUnavailableError:
    """The error for a store whose tables were dropped or altered after it was opened (a reset
    by hand while a service runs): checked only when a store is opened, so it is opened again."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return StoreUnavailableError(
        f"the PostgreSQL store's tables were dropped or changed after it was opened ({detail}); "
        "open the store again (restart `ctxasm serve`), after `ctxasm index` if it was reset",
        field="store",
    )


def _cannot_write(exc: Exception, database: str, role: str) -> StoreUnavailableError:
    """The error for a session that may not write the store at all (a role without the
    privileges, a read replica): every later write would fail alike, so a run stops at the
    first (as the SQLite store does at a read-only file), and says how to let it write."""
    import psycopg

    detail = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        why = (
            f"cannot be written: the session is read-only ({detail}), as on a read replica or "
            "with default_transaction_read_only; write through the primary server"
        )
    else:
        why = (
            f"cannot be used by the role '{role}', which lacks a privilege on its tables "
            f"({detail}); grant it SELECT, INSERT, UPDATE and DELETE on them and USAGE on "
            "their sequences, or use the role that made the store"
        )
    return StoreUnavailableError(
        f"the PostgreSQL store in database '{database}' {why}; what was written before stays, "
        "and the same command can be run again",
        field="store",
    )


class PostgresStore:
    """A document store in PostgreSQL with pgvector (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 4,
        statement_timeout_ms: int = 30_000,
        write_timeout_ms: int = 600_000,
        index_memory_mb: int = INDEX_MEMORY_MB,
        create: bool = True,
    ) -> None:
        """``pool_size`` connections at most; a query is cancelled after
        ``statement_timeout_ms``, a statement of a batch write (a ``COPY`` of thousands of
        chunks, or an index rebuild) after ``write_timeout_ms`` (0: never); an HNSW index
        build is given up to ``index_memory_mb`` of ``maintenance_work_mem`` (about 2 kB a
        vector keeps its graph in memory). Fails with a :class:`ConfigError` when the
        database cannot be reached or its schema is newer than this ctxasm."""
        try:
            import psycopg
            import psycopg_pool  # noqa: F401 - checked here, used by _pool
        except ImportError:
            raise ConfigError(
                "the PostgreSQL store needs psycopg and psycopg_pool: " + install_hint("postgres"),
                field="store",
            ) from None
        for option, value, low, high in (
            ("pool_size", pool_size, 1, MAX_POOL_SIZE),
            ("statement_timeout_ms", statement_timeout_ms, 0, MAX_TIMEOUT_MS),
            ("write_timeout_ms", write_timeout_ms, 0, MAX_TIMEOUT_MS),
            ("index_memory_mb", index_memory_mb, 64, MAX_INDEX_MEMORY_MB),
        ):
            if not low <= value <= high:
                raise ConfigError(
                    f"store option {option} must be between {low} and {high:,}, got {value}",
                    field="store",
                )
        self._write_timeout = int(write_timeout_ms)
        self._index_memory_mb = int(index_memory_mb)
        timeout = int(statement_timeout_ms)
        self._classes: dict[str, int] = {}
        self._classes_lock = threading.Lock()
        self._bulk_loads = 0  # bulk() blocks open (see bulk)
        self._bulk_lock = threading.Lock()
        from ctxasm.embeddings import HashingEmbedder

        self._embedder = HashingEmbedder(DIMENSION)
        self._pool = _pool(url, pool_size, timeout)
        try:
            # one direct connection first: an unreachable database fails at once, saying why
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as connection:
                self._prepare(connection, create=create)
                # how errors name the store (never from the URL: it may hold the password)
                self._where = (connection.info.dbname, connection.info.user)
            self._pool.open(wait=False)
        except (psycopg.Error, OSError) as exc:
            self._pool.close()
            detail = without_secrets(" ".join(str(exc).split()), url)  # one line
            raise ConfigError(
                f"cannot open the PostgreSQL store: {detail or type(exc).__name__}", field="store"
            ) from None
        except ConfigError:
            self._pool.close()
            raise

    @contextmanager
    def _connection(self, *, retried: bool = False) -> Iterator[Any]:
        """A pooled connection; database and pool failures become StoreUnavailableError (so
        does a session that may not write the store: see :func:`_cannot_write`), but for a
        deadlock where the caller writes again (``retried``): it is no outage, and the write
        that met another one's rows tries again (see :meth:`_write`)."""
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with self._pool.connection() as connection:
                yield connection
        except psycopg.errors.DeadlockDetected as exc:
            if retried:
                raise
            raise _unavailable(exc) from None
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction) as exc:
            raise _cannot_write(exc, *self._where) from None
        except psycopg.errors.ProgramLimitExceeded as exc:  # not an outage: too big to store
            raise RequestError(
                f"the PostgreSQL store cannot hold this: {' '.join(str(exc).split())[:300]}",
                field="document",
            ) from None
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise _unavailable(exc) from None
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as exc:
            raise _tables_changed(exc) from None

    @contextmanager
    def _spare_connection(self) -> Iterator[Any]:
        """A second pooled connection if one is free at once, else ``None``: a request that
        holds one never waits for another, so requests cannot hold each other up."""
        from psycopg_pool import PoolTimeout

        try:
            connection = self._pool.getconn(timeout=SPARE_WAIT_S)
        except PoolTimeout:
            yield None
            return
        try:
            yield connection
        finally:
            self._pool.putconn(connection)

    def _prepare(self, db: Any, *, create: bool = True) -> None:
        """Create the tables (unless ``create`` is false: then a database without them is
        refused), or upgrade a store an older ctxasm wrote (refusing a newer one); one process
        at a time (an advisory lock), in one transaction: a store refused (a foreign table or
        index under one of its names, some of its tables missing) is left as it was."""
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(7106817)")
            version = _schema_version(db)
            if version is None and not create:
                raise ConfigError(
                    "no ctxasm store in this PostgreSQL database; index documents into it "
                    "first (ctxasm index)",
                    field="store",
                )
            if version is not None and version > SCHEMA_VERSION:
                raise ConfigError(
                    f"the PostgreSQL store has schema version {version}, written by a newer "
                    f"ctxasm; this one reads versions up to {SCHEMA_VERSION}: upgrade ctxasm",
                    field="store",
                )
            if version == SCHEMA_VERSION:
                return
            _check_index_names(db)
            if version == 1:
                self._upgrade_to_2(db)
            if version in (1, 2):
                self._upgrade_to_3(db)
            db.execute(_SCHEMA)
            db.execute(_STORAGE)
            db.execute("DELETE FROM ctxasm_schema")
            db.execute("INSERT INTO ctxasm_schema VALUES (%s)", (SCHEMA_VERSION,))

    def _upgrade_to_2(self, db: Any) -> None:
        """Version 1 had no access classes and no term counts: add both, chunk by chunk."""
        db.execute(_SCHEMA.split("CREATE TABLE IF NOT EXISTS documents", maxsplit=1)[0])
        db.execute("ALTER TABLE chunks ADD COLUMN class_id BIGINT")
        deltas: dict[int, ClassDelta] = {}
        documents = db.execute("SELECT doc_id, tenant, has_readers FROM documents").fetchall()
        for doc_id, tenant, has_readers in documents:
            names = db.execute("SELECT reader FROM readers WHERE doc_id = %s", (doc_id,)).fetchall()
            readers = tuple(n for (n,) in names) if has_readers else None
            document = Document(doc_id, "", tenant=tenant, readers=readers)
            class_id = self._class_id(db, document, {})
            rows = db.execute("SELECT id, text FROM chunks WHERE doc_id = %s", (doc_id,)).fetchall()
            for chunk_id, text in rows:
                db.execute(
                    "UPDATE chunks SET terms = %s, class_id = %s WHERE id = %s",
                    (_terms(Counter(chunk_words(text)), class_id), class_id, chunk_id),
                )
            count_into(deltas, class_id, (text for _, text in rows))
        _update(db, deltas)
        db.execute("ALTER TABLE chunks ALTER COLUMN class_id SET NOT NULL")

    def _upgrade_to_3(self, db: Any) -> None:
        """Version 2 kept vectors (under a per-row HNSW index) and term counts in ``chunks``:
        move the vectors to ``chunk_vectors`` (indexed in one pass), give every chunk a bound
        vector instead of its counts."""
        db.execute(f"ALTER TABLE chunks ADD COLUMN bound sparsevec({BOUND_DIMENSION})")
        db.execute(_SCHEMA[_SCHEMA.index("CREATE TABLE IF NOT EXISTS chunk_vectors") :])
        db.execute(
            "INSERT INTO chunk_vectors (id, class_id, generation, embedding) "
            "SELECT id, class_id, 1, embedding FROM chunks"
        )
        db.execute("DROP INDEX IF EXISTS chunks_embedding")
        db.execute("ALTER TABLE chunks DROP COLUMN embedding, DROP COLUMN IF EXISTS counts")
        # words compare byte by byte (their order is never used): cheaper index upkeep
        db.execute('ALTER TABLE chunks ALTER COLUMN terms TYPE TEXT[] COLLATE "C"')
        db.execute('ALTER TABLE class_terms ALTER COLUMN term TYPE TEXT COLLATE "C"')
        db.execute("ALTER TABLE class_terms DROP CONSTRAINT IF EXISTS class_terms_class_id_fkey")
        average, rows = db.execute("SELECT avg(words), count(*) FROM chunks").fetchone()
        if average is None:
            return
        reference = max(float(average), 1.0)
        db.execute("UPDATE store_state SET reference_words = %s", (reference,))
        rewrite_bounds(db, reference)
        if rows >= postgres_schema.FIRST_INDEX:  # read here: tests make it small
            _rebuild(db, 1, rows, memory_mb=self._index_memory_mb)

    def close(self) -> None:
        self._pool.close()

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A bulk load: writes inside it put their vectors in the tail outside the HNSW index,
        however long it grows, and the index is rebuilt once when the last open ``bulk`` ends
        (where the tail calls for it: see :func:`ctxasm.store.postgres_schema._plan`). Asks
        meanwhile search the tail exactly: slower, never less exact. On an exception nothing is
        rebuilt; the next write decides as usual."""
        with self._bulk_lock:
            self._bulk_loads += 1
        try:
            yield
        finally:
            with self._bulk_lock:
                self._bulk_loads -= 1
                last = self._bulk_loads == 0
        if last:
            self._settle()

    def _settle(self) -> None:
        """Rebuild the index after a bulk load, if its tail calls for it: with no statement
        timeout (over a million vectors it takes longer than a batch's), as the load asked."""
        with self._connection() as db:
            with db.transaction():
                db.execute("SET LOCAL statement_timeout = 0")
                plan = _plan(db, 0, settle=True)
                if plan.rebuild is not None:
                    _rebuild(db, plan.rebuild, memory_mb=self._index_memory_mb)
            if plan.rebuild is not None:
                _drop_stale_indexes(db, plan.rebuild)

    def upsert(self, document: Document, chunks: Sequence[Chunk]) -> str:
        """Store ``document`` and its chunks: ``"added"``, ``"updated"`` or ``"unchanged"``."""
        return self.upsert_many([(document, chunks)])[0]

    def upsert_many(self, items: Sequence[tuple[Document, Sequence[Chunk]]]) -> list[str]:
        """:meth:`upsert` for many documents, in one transaction per run of distinct document
        ids (a repeated id starts the next run): the outcome of each, in order. If a document
        fails, nothing of its run is written; the runs before it stay written."""
        items = checked_items(items)
        for document, _ in items:  # what PostgreSQL cannot store is refused before any SQL
            check_for_postgres(document)
        pending = []
        for document, chunks in items:
            digest = content_hash(document, chunks, self._embedder.name)
            # the vectors are made while the database indexes the chunks (see _replace)
            pending.append(Pending(document, chunks, digest, [None] * len(chunks)))
        written: list[str] = []
        for batch in batches(pending):
            written.extend(self._write(batch))
        return written

    def _write(self, batch: list[Pending]) -> list[str]:
        """Write a batch; where another writer added one of its new documents meanwhile (the
        batch read it as new, then its COPY met that writer's row), the batch is rolled back
        and written again, reading it as known. Writers that keep meeting each other get a
        :class:`RequestError`, after which ``index_paths`` writes the batch's documents one
        by one, as for any failed batch."""
        import psycopg

        for _ in range(_WRITE_TRIES):
            try:
                return self._write_once(batch)
            except (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected) as exc:
                conflict = " ".join(str(exc).split())[:200]
        raise RequestError(
            f"other writers kept writing documents of this batch at the same time "
            f"({conflict}); write them again",
            field="items",
        )

    def _write_once(self, batch: list[Pending]) -> list[str]:
        with self._connection(retried=True) as db:
            # another tenant's document of one of these ids is refused under its lock (_replace)
            known = dict(
                db.execute(
                    "SELECT doc_id, content_hash FROM documents WHERE doc_id = ANY(%s)",
                    ([p.document.doc_id for p in batch],),
                ).fetchall()
            )
            # in id order: writers of the same new documents lock them in one order
            changed = sorted(
                (p for p in batch if known.get(p.document.doc_id) != p.digest),
                key=lambda p: p.document.doc_id,
            )
            if changed:
                fresh: dict[str, int] = {}
                with db.transaction():
                    db.execute(f"SET LOCAL statement_timeout = {self._write_timeout}")
                    movable, lengths = lock_reference(db, changed)
                    plan = _plan(db, sum(len(p.chunks) for p in changed), bulk=self._bulk_loads > 0)
                    replaced = [p.document.doc_id for p in changed if p.document.doc_id in known]
                    self._replace(
                        db, changed, replaced, plan, fresh, movable=movable, lengths=lengths
                    )
                    if plan.rebuild is not None:
                        _rebuild(db, plan.rebuild, memory_mb=self._index_memory_mb)
                with self._classes_lock:
                    self._classes.update(fresh)
                if plan.rebuild is not None:
                    _drop_stale_indexes(db, plan.rebuild)
        return outcomes(batch, known)

    def _replace(
        self,
        db: Any,
        batch: list[Pending],
        replaced: list[str],
        plan: _Plan,
        fresh: dict[str, int],
        *,
        movable: bool = False,
        lengths: list[int] | None = None,
    ) -> None:
        """Write ``batch`` (inside a transaction), removing the ``replaced`` versions first.
        Python's work overlaps the database's: the chunk rows and vectors are made while the
        database updates the classes' statistics."""
        deltas: dict[int, ClassDelta] = {}
        tenants = _lock_documents(db, replaced)  # a concurrent delete may have taken some
        check_owners(batch, tenants)  # and a concurrent writer given one to another tenant
        replaced = list(tenants)
        if replaced:
            for class_id, text in db.execute(
                "SELECT class_id, text FROM chunks WHERE doc_id = ANY(%s)", (replaced,)
            ):
                count_into(deltas, class_id, [text], sign=-1)
            db.execute("DELETE FROM documents WHERE doc_id = ANY(%s)", (replaced,))
        reference = _reference(db, batch, movable=movable, lengths=lengths)
        classes = [self._class_id(db, item.document, fresh) for item in batch]
        if not _classes_hold(db, batch, classes, fresh):
            # The ids this process remembers name other classes now (the database was reset
            # or restored beneath it): forgotten, and each looked up again.
            with self._classes_lock:
                self._classes.clear()
            classes = [self._class_id(db, item.document, fresh) for item in batch]
        ids = [
            row[0]
            for row in db.execute(
                "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) "
                "FROM generate_series(1, %s)",
                (sum(len(item.chunks) for item in batch),),
            )
        ]
        with db.cursor() as cursor:
            with cursor.copy(
                "COPY documents (doc_id, title, url, tenant, has_readers, timestamp, authority, "
                "metadata, content_hash) FROM STDIN"
            ) as copy:
                for item in batch:
                    copy.write_row(document_row(item.document, item.digest))
            with cursor.copy("COPY readers (doc_id, reader) FROM STDIN") as copy:
                for item in batch:
                    for reader in reader_names(item.document):
                        copy.write_row((item.document.doc_id, reader))
            # each chunk's words and their counts, found once for its row and its vector
            words, counts = _chunk_words(batch, classes, deltas)
            changes = _stage(db, deltas)  # a COPY: before the pipeline, which cannot hold one
            with db.pipeline():
                _apply(db, changes)  # sent whole, not awaited: the rows are made meanwhile
                rows = _chunk_rows(batch, classes, reference, words, counts)
                vectors = self._embedder.embed_words(words, counts).astype(">f4")
            with cursor.copy(
                'COPY chunks (id, chunk_id, doc_id, seq, start, "end", words, text, terms, '
                "class_id, bound) FROM STDIN"
            ) as copy:
                for chunk_id, row in zip(ids, rows, strict=True):
                    copy.write_row((chunk_id, *row))
            owners = (c for item, c in zip(batch, classes, strict=True) for _ in item.chunks)
            with cursor.copy(
                "COPY chunk_vectors (id, class_id, generation, embedding) FROM STDIN "
                "(FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int8", "int4", "bytea"])  # bytea: pgvector's own form
                for chunk_id, class_id, vector in zip(ids, owners, vectors, strict=True):
                    vector_bytes = _VECTOR + vector.tobytes()
                    copy.write_row((chunk_id, class_id, plan.generation, vector_bytes))

    def _class_id(self, db: Any, document: Document, fresh: dict[str, int]) -> int:
        """The id of the document's access class, created if new. New ids go to ``fresh``,
        remembered by the caller once its transaction commits (a rollback may undo them)."""
        key = class_key(document)
        with self._classes_lock:
            if key in self._classes:
                return self._classes[key]
        if key in fresh:
            return fresh[key]
        readers = None if document.readers is None else reader_names(document)
        db.execute(
            "INSERT INTO access_classes (key, tenant, readers) VALUES (%s, %s, %s) "
            "ON CONFLICT (key) DO NOTHING",
            (key, document.tenant, readers),
        )
        row = db.execute("SELECT id FROM access_classes WHERE key = %s", (key,)).fetchone()
        fresh[key] = int(row[0])
        return int(row[0])

    def delete(self, doc_id: str) -> bool:
        doc_id = checked_doc_id(doc_id)
        with self._connection() as db, db.transaction():
            # before any row lock: a write that moves the reference rewrites every chunk
            db.execute("SELECT pg_advisory_xact_lock_shared(%s)", (REFERENCE_LOCK,))
            for _ in range(_LOCK_TRIES):
                locked = _lock_documents(db, [doc_id])
                # Nothing locked: gone, or replaced by a writer that committed while this one
                # waited (the new version is seen by the next statement, so it is tried again).
                if locked or _absent(db, doc_id):
                    break
            if not locked:
                return False
            deltas: dict[int, ClassDelta] = {}
            for class_id, text in db.execute(
                "SELECT class_id, text FROM chunks WHERE doc_id = %s", (doc_id,)
            ):
                count_into(deltas, class_id, [text], sign=-1)
            gone = db.execute("DELETE FROM documents WHERE doc_id = %s", (doc_id,))
            _update(db, deltas)
        return bool(gone.rowcount > 0)

    def stored_ids(self, doc_ids: Iterable[str]) -> set[str]:
        """Which of ``doc_ids`` the store holds: one query, each id looked up in the
        documents' key (:func:`ctxasm.store.index_paths` finds files stored twice with it)."""
        with self._connection() as db:
            rows = db.execute(
                "SELECT doc_id FROM documents WHERE doc_id = ANY(%s)", (list(doc_ids),)
            ).fetchall()
        return {str(doc_id) for (doc_id,) in rows}

    def stats(self) -> StoreStats:
        with self._connection() as db:
            documents = db.execute("SELECT count(*) FROM documents").fetchone()
            chunks = db.execute("SELECT count(*) FROM chunks").fetchone()
        return StoreStats(int(documents[0]), int(chunks[0]))

    def retrieve(
        self, query: str, principal: Principal | None, k: int = 50, *, allow_public: bool = False
    ) -> list[Passage]:
        """The ``k`` best visible chunks by reciprocal rank fusion of BM25 (exact, over the
        visible chunks, of the query's words each with its other forms among the visible
        chunks' words: see :mod:`ctxasm.store.forms`) and vector similarity (the access
        condition in the same query). The work and the memory are bounded by ``k`` and the
        tail of vectors outside the index."""
        query, k, principal = checked_retrieval(query, principal, k, allow_public)
        terms = query_words(query)
        if not terms:
            return []
        params: dict[str, Any] = {
            "tenant": None if principal is None else principal.tenant,
            "names": [] if principal is None else [principal.id, *principal.groups],
            "public": allow_public,
            **form_parameters(terms),
        }
        pool = max(2 * k, 20)
        near_params = {
            "vector": _vector(self._embedder.embed([query])[0]),
            "distance": MAX_DISTANCE,
            "k": pool,
        }
        with self._connection() as db:
            classes, terms, stats, reference, generation = _statistics(db, params)
            if not stats.total:
                return []
            lexical = _Lexical(classes, stats, terms, reference, pool)
            near_query = nearest_query(stats.total, generation, postgres_schema.FIRST_INDEX)
            near_params["classes"] = classes
            with self._spare_connection() as other:
                # the neighbours on a second connection, searched while this one finds the
                # first candidates (a pipeline sends a query without waiting for its rows);
                # without one, both in one round trip on this connection
                neighbours = db if other is None else other
                with neighbours.pipeline():
                    near = neighbours.cursor().execute(near_query, near_params)
                    first = lexical.candidates(db)
                found = near.fetchall()
            best = lexical.best(db, first)
            nearest = [(key, PostgresRow(*row)) for key, *row in found]
        # nearest first, ties by chunk id
        nearest.sort(key=lambda found: (found[0], found[1].chunk_id))
        ranked = fused(best, [row for _, row in nearest[:pool]])[:k]
        return [row.passage(score, row.readers or (), SCORE_DIGITS) for score, row in ranked]

    def hidden_matches(
        self, query: str, principal: Principal | None, *, allow_public: bool = False
    ) -> bool:
        """Whether chunks this principal may not read (with these arguments) hold a term of
        ``query`` or a form of one while none it may read does (see
        :func:`ctxasm.store.ranking.only_hidden`; the forms as in :meth:`SQLiteStore.hidden_matches
        <ctxasm.store.sqlite.SQLiteStore.hidden_matches>`)."""
        query, _, principal = checked_retrieval(query, principal, 1, allow_public)
        terms = query_words(query)
        if not terms:
            return False
        params: dict[str, Any] = {
            "tenant": None if principal is None else principal.tenant,
            "names": [] if principal is None else [principal.id, *principal.groups],
            "public": allow_public,
            **form_parameters(terms),
        }
        with self._connection() as db:
            params["terms"] = form_words(db, params)
            visible, holding = db.execute(_HOLDING, params).fetchone()
        return only_hidden(holding, visible)

    def for_principal(
        self, principal: Principal | None, *, allow_public: bool = False
    ) -> PrincipalRetriever:
        """This store as a :class:`ctxasm.Retriever` (``retrieve(query, k)``) for
        ``principal``."""
        return PrincipalRetriever(self, principal, allow_public)


def _pool(url: str, size: int, statement_timeout_ms: int) -> Any:
    """A closed pool of at most ``size`` connections, each checked before it is lent (one a
    database restart broke is replaced) and set up with the statement timeout and iterative
    HNSW scans."""
    from psycopg_pool import ConnectionPool

    def configure(connection: Any) -> None:
        connection.execute(f"SET statement_timeout = {statement_timeout_ms}")
        connection.execute("SET hnsw.iterative_scan = relaxed_order")

    return ConnectionPool(
        url,
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True, "connect_timeout": 5},
        configure=configure,
        check=ConnectionPool.check_connection,
        timeout=3.0,  # how long a request waits for a connection
        reconnect_timeout=60.0,
        open=False,
    )


# How many times a delete tries to lock a document that a concurrent writer keeps replacing.
_LOCK_TRIES = 3
_WRITE_TRIES = 5  # writes of a batch that met another writer's new documents


def _classes_hold(db: Any, batch: list[Pending], classes: list[int], fresh: dict[str, int]) -> bool:
    """Whether the class ids remembered from earlier transactions (those not in ``fresh``)
    still name the batch's classes, read in this transaction: one query a batch. A class
    row, once made, is never changed or removed by a store; a database reset or restored
    beneath a running process can reuse its id for another tenant's class."""
    # by key: two keys remembered with one id (one of them from before a reset) are both
    # checked, and one of them fails
    remembered = {
        key: cid
        for key, cid in zip((class_key(item.document) for item in batch), classes, strict=True)
        if key not in fresh
    }
    if not remembered:
        return True
    found = dict(
        db.execute(
            "SELECT id, key FROM access_classes WHERE id = ANY(%s)",
            (sorted(set(remembered.values())),),
        ).fetchall()
    )
    return all(found.get(cid) == key for key, cid in remembered.items())


def _lock_documents(db: Any, doc_ids: list[str]) -> dict[str, str | None]:
    """Lock the rows of the documents of ``doc_ids`` the store holds, in id order (two writers
    never wait on each other crosswise); the tenant of each id locked. Every write that removes
    a document's chunks holds its row's lock first, so the chunks read after this are exactly
    those this transaction removes: two deletes of one document, or a delete beside a re-index,
    used to subtract its chunks from the statistics twice (the statistics went negative)."""
    if not doc_ids:
        return {}
    rows = db.execute(
        "SELECT doc_id, tenant FROM documents WHERE doc_id = ANY(%s) ORDER BY doc_id FOR UPDATE",
        (doc_ids,),
    )
    return dict(rows)


def _absent(db: Any, doc_id: str) -> bool:
    return db.execute("SELECT 1 FROM documents WHERE doc_id = %s", (doc_id,)).fetchone() is None
