"""The production store: PostgreSQL with pgvector (``pip install 'ctxasm[postgres]'``).

Same tables, access rules and access classes as the SQLite store (see
:mod:`ctxasm.store.sqlite` and :mod:`ctxasm.store.ranking`), with two differences in how chunks
are found:

- lexical search uses each chunk's distinct words and their counts (``terms`` with a GIN index,
  ``counts`` beside it); BM25 over the visible chunks, with statistics summed from the visible
  access classes, is computed in SQL with the ``LIMIT``, and only those candidates are scored
  again in Python;
- every chunk also has an embedding (``vector(256)``, from the offline hashing embedder) under
  an HNSW index; the nearest visible chunks are found with the access condition in the same
  ``WHERE`` as the ``ORDER BY`` distance, with pgvector's iterative index scans, so a principal
  who sees a small share of the corpus still gets ``k`` neighbours.

The two rankings are fused by reciprocal rank fusion (:func:`ctxasm.store.ranking.fused`),
whose score the passages carry. Documents are written in batches (``COPY``), one transaction per
batch.

As a service dependency: connections come from a pool (``pool_size``), every statement runs
under ``statement_timeout_ms``, a connection broken by a database restart is replaced on the
next request, and while the database is unreachable requests fail fast with
:class:`~ctxasm.errors.StoreUnavailableError` (an HTTP service answers 503). The schema version
is kept in ``ctxasm_schema``: an older store is upgraded when opened, a newer one refused.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ctxasm.data import Passage, Principal
from ctxasm.errors import ConfigError, StoreUnavailableError
from ctxasm.lexical import query_terms
from ctxasm.store.arguments import check_no_nul, checked_doc_id, checked_retrieval
from ctxasm.store.chunking import Chunk
from ctxasm.store.documents import Document
from ctxasm.store.ranking import (
    ClassDelta,
    VisibleStats,
    chunk_words,
    count_into,
    fused,
    only_hidden,
    rescored,
)
from ctxasm.store.records import (
    CHUNK_COLUMNS,
    ChunkRow,
    Pending,
    StoreStats,
    batches,
    class_key,
    content_hash,
    document_row,
    outcomes,
    reader_names,
)
from ctxasm.store.scoped import PrincipalRetriever

__all__ = ["SCHEMA_VERSION", "PostgresRow", "PostgresStore"]

DIMENSION = 256
SCHEMA_VERSION = 2
# Vector neighbours further than this (cosine distance) share nothing with the query.
MAX_DISTANCE = 0.95

_SCHEMA = f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS ctxasm_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS access_classes (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    tenant TEXT,
    readers TEXT[],
    chunks BIGINT NOT NULL DEFAULT 0,
    words BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS class_terms (
    term TEXT NOT NULL,
    class_id BIGINT NOT NULL REFERENCES access_classes(id),
    df BIGINT NOT NULL,
    PRIMARY KEY (term, class_id)
);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    title TEXT,
    url TEXT,
    tenant TEXT,
    has_readers BOOLEAN NOT NULL,
    timestamp TEXT,
    authority DOUBLE PRECISION,
    metadata JSONB NOT NULL DEFAULT '{{}}',
    content_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS readers (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    reader TEXT NOT NULL,
    PRIMARY KEY (doc_id, reader)
);
CREATE INDEX IF NOT EXISTS readers_by_name ON readers(reader, doc_id);
CREATE TABLE IF NOT EXISTS chunks (
    id BIGSERIAL PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    words INTEGER NOT NULL,
    text TEXT NOT NULL,
    terms TEXT[] NOT NULL,
    counts INTEGER[] NOT NULL,
    class_id BIGINT NOT NULL REFERENCES access_classes(id),
    embedding vector({DIMENSION}) NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, seq);
CREATE INDEX IF NOT EXISTS chunks_terms ON chunks USING GIN (terms);
CREATE INDEX IF NOT EXISTS chunks_embedding ON chunks
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 48);
"""

_VISIBLE_CLASSES = """
    SELECT id, chunks, words FROM access_classes
    WHERE (tenant IS NULL OR tenant = %(tenant)s)
    AND (readers IS NULL OR readers && %(names)s::text[])
    AND (tenant IS NOT NULL OR readers IS NOT NULL OR %(public)s)
"""
# The visible classes and their summed statistics, in one round trip.
_STATISTICS = f"""
WITH visible AS ({_VISIBLE_CLASSES})
SELECT
    (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM visible),
    (SELECT coalesce(sum(chunks), 0) FROM visible),
    (SELECT coalesce(sum(words), 0) FROM visible),
    (SELECT coalesce(json_object_agg(term, df), '{{}}') FROM (
        SELECT term, sum(df) AS df FROM class_terms
        WHERE term = ANY(%(terms)s) AND class_id IN (SELECT id FROM visible) GROUP BY term
    ) AS found)
"""
# The visible classes and the classes holding a query term, for hidden_matches.
_HOLDING = f"""
SELECT
    (SELECT coalesce(array_agg(id), '{{}}') FROM ({_VISIBLE_CLASSES}) AS visible),
    (SELECT coalesce(array_agg(DISTINCT class_id), '{{}}') FROM class_terms
     WHERE term = ANY(%(terms)s) AND df > 0)
"""
# The best candidates by BM25 over the visible classes, in SQL (idf weights from Python).
_TOP = """
SELECT c.id FROM chunks c
WHERE c.terms && %(terms)s::text[] AND c.terms && %(markers)s::text[]
AND c.class_id = ANY(%(classes)s)
ORDER BY (
    SELECT sum(w.idf * x.tf * %(k1p1)s / (x.tf + %(norm0)s + %(norm1)s * c.words))
    FROM unnest(%(terms)s::text[], %(idfs)s::float8[]) AS w(term, idf)
    CROSS JOIN LATERAL (SELECT c.counts[array_position(c.terms, w.term)] AS tf) AS x
    WHERE x.tf IS NOT NULL
) DESC, c.chunk_id
LIMIT %(pool)s
"""
_NEAREST = """
SELECT c.id, c.embedding <=> %(vector)s::vector AS distance FROM chunks c
WHERE c.class_id = ANY(%(classes)s) AND (c.embedding <=> %(vector)s::vector) < %(distance)s
ORDER BY c.embedding <=> %(vector)s::vector
LIMIT %(k)s
"""


def _vector(values: Any) -> str:
    return "[" + ",".join(f"{float(v):.6f}" for v in values) + "]"


SCORE_DIGITS = 8  # a passage's score is rounded to this many decimals


@dataclass(frozen=True, slots=True)
class PostgresRow(ChunkRow):
    """A chunk read back, with its document's readers (sorted; ``None`` for none)."""

    readers: list[str] | None


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


class PostgresStore:
    """A document store in PostgreSQL with pgvector (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 4,
        statement_timeout_ms: int = 30_000,
        write_timeout_ms: int = 600_000,
    ) -> None:
        """``pool_size`` connections at most; a query is cancelled after
        ``statement_timeout_ms``, a statement of a batch write (a ``COPY`` of thousands of
        chunks into the indexes) after ``write_timeout_ms`` (0: never). Fails with a
        :class:`ConfigError` when the database cannot be reached or its schema is newer than
        this ctxasm."""
        try:
            import psycopg
            import psycopg_pool  # noqa: F401 - checked here, used by _pool
        except ImportError:
            raise ConfigError(
                "the PostgreSQL store needs psycopg and psycopg_pool: "
                "pip install 'ctxasm[postgres]'",
                field="store",
            ) from None
        if pool_size < 1 or min(statement_timeout_ms, write_timeout_ms) < 0:
            raise ConfigError(
                f"pool_size must be at least 1 and the timeouts at least 0 (got pool_size="
                f"{pool_size}, statement_timeout_ms={statement_timeout_ms}, write_timeout_ms="
                f"{write_timeout_ms})",
                field="store",
            )
        self._write_timeout = int(write_timeout_ms)
        timeout = int(statement_timeout_ms)
        self._classes: dict[str, int] = {}
        self._classes_lock = threading.Lock()

        self._pool = _pool(url, pool_size, timeout)
        try:
            # one direct connection first: an unreachable database fails at once, saying why
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as connection:
                self._prepare(connection)
            self._pool.open(wait=False)
        except (psycopg.Error, OSError) as exc:
            self._pool.close()
            detail = " ".join(str(exc).split())  # one line
            raise ConfigError(
                f"cannot open the PostgreSQL store: {detail or type(exc).__name__}", field="store"
            ) from None
        except ConfigError:
            self._pool.close()
            raise
        from ctxasm.embeddings import get_embedder

        self._embedder = get_embedder(f"hashing:{DIMENSION}")

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection; database and pool failures become StoreUnavailableError."""
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with self._pool.connection() as connection:
                yield connection
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise _unavailable(exc) from None

    def _prepare(self, db: Any) -> None:
        """Create the tables, or upgrade a store an older ctxasm wrote (refusing a newer one);
        one process at a time (an advisory lock)."""
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(7106817)")
            version = _schema_version(db)
            if version is not None and version > SCHEMA_VERSION:
                raise ConfigError(
                    f"the PostgreSQL store has schema version {version}, written by a newer "
                    f"ctxasm; this one reads versions up to {SCHEMA_VERSION}: upgrade ctxasm",
                    field="store",
                )
            if version == SCHEMA_VERSION:
                return
            if version == 1:
                self._upgrade_to_2(db)
            db.execute(_SCHEMA)
            db.execute("DELETE FROM ctxasm_schema")
            db.execute("INSERT INTO ctxasm_schema VALUES (%s)", (SCHEMA_VERSION,))

    def _upgrade_to_2(self, db: Any) -> None:
        """Version 1 had no access classes and no term counts: add both, chunk by chunk."""
        db.execute(_SCHEMA.split("CREATE TABLE IF NOT EXISTS documents", maxsplit=1)[0])
        db.execute("ALTER TABLE chunks ADD COLUMN counts INTEGER[], ADD COLUMN class_id BIGINT")
        deltas: dict[int, ClassDelta] = {}
        documents = db.execute("SELECT doc_id, tenant, has_readers FROM documents").fetchall()
        for doc_id, tenant, has_readers in documents:
            names = db.execute("SELECT reader FROM readers WHERE doc_id = %s", (doc_id,)).fetchall()
            readers = tuple(n for (n,) in names) if has_readers else None
            document = Document(doc_id, "", tenant=tenant, readers=readers)
            class_id = self._class_id(db, document, {})
            rows = db.execute("SELECT id, text FROM chunks WHERE doc_id = %s", (doc_id,)).fetchall()
            for chunk_id, text in rows:
                terms, counts = _term_counts(text, class_id)
                db.execute(
                    "UPDATE chunks SET terms = %s, counts = %s, class_id = %s WHERE id = %s",
                    (terms, counts, class_id, chunk_id),
                )
            count_into(deltas, class_id, (text for _, text in rows))
        _apply(db, deltas)
        db.execute("ALTER TABLE chunks ALTER COLUMN counts SET NOT NULL")
        db.execute("ALTER TABLE chunks ALTER COLUMN class_id SET NOT NULL")

    def close(self) -> None:
        self._pool.close()

    def upsert(self, document: Document, chunks: Sequence[Chunk]) -> str:
        """Store ``document`` and its chunks: ``"added"``, ``"updated"`` or ``"unchanged"``."""
        return self.upsert_many([(document, chunks)])[0]

    def upsert_many(self, items: Sequence[tuple[Document, Sequence[Chunk]]]) -> list[str]:
        """:meth:`upsert` for many documents, in one transaction (per run of distinct document
        ids): the outcome of each, in order. If any fails, none of the batch is written."""
        for document, _ in items:  # PostgreSQL cannot store a NUL: refused before any SQL
            check_no_nul(document)
        texts = [c.text for _, chunks in items for c in chunks]
        vectors = iter([_vector(v) for v in self._embedder.embed(texts)] if texts else [])
        pending = []
        for document, chunks in items:
            digest = content_hash(document, chunks, self._embedder.name)
            pending.append(Pending(document, chunks, digest, [next(vectors) for _ in chunks]))
        written: list[str] = []
        for batch in batches(pending):
            written.extend(self._write(batch))
        return written

    def _write(self, batch: list[Pending]) -> list[str]:
        with self._connection() as db:
            known = dict(
                db.execute(
                    "SELECT doc_id, content_hash FROM documents WHERE doc_id = ANY(%s)",
                    ([p.document.doc_id for p in batch],),
                ).fetchall()
            )
            changed = [p for p in batch if known.get(p.document.doc_id) != p.digest]
            if changed:
                fresh: dict[str, int] = {}
                with db.transaction():
                    db.execute(f"SET LOCAL statement_timeout = {self._write_timeout}")
                    replaced = [p.document.doc_id for p in changed if p.document.doc_id in known]
                    self._replace(db, changed, replaced, fresh)
                with self._classes_lock:
                    self._classes.update(fresh)
        return outcomes(batch, known)

    def _replace(
        self, db: Any, batch: list[Pending], replaced: list[str], fresh: dict[str, int]
    ) -> None:
        """Write ``batch`` (inside a transaction), removing the ``replaced`` versions first."""
        deltas: dict[int, ClassDelta] = {}
        if replaced:
            for class_id, text in db.execute(
                "SELECT class_id, text FROM chunks WHERE doc_id = ANY(%s)", (replaced,)
            ):
                count_into(deltas, class_id, [text], sign=-1)
            db.execute("DELETE FROM documents WHERE doc_id = ANY(%s)", (replaced,))
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
            rows = []
            for item in batch:
                class_id = self._class_id(db, item.document, fresh)
                count_into(deltas, class_id, (c.text for c in item.chunks))
                rows.extend(_chunk_rows(item, class_id))
            with cursor.copy(
                'COPY chunks (chunk_id, doc_id, seq, start, "end", words, text, terms, counts, '
                "class_id, embedding) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
        _apply(db, deltas)

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
            deltas: dict[int, ClassDelta] = {}
            for class_id, text in db.execute(
                "SELECT class_id, text FROM chunks WHERE doc_id = %s", (doc_id,)
            ):
                count_into(deltas, class_id, [text], sign=-1)
            gone = db.execute("DELETE FROM documents WHERE doc_id = %s", (doc_id,))
            _apply(db, deltas)
        return bool(gone.rowcount > 0)

    def stats(self) -> StoreStats:
        with self._connection() as db:
            documents = db.execute("SELECT count(*) FROM documents").fetchone()
            chunks = db.execute("SELECT count(*) FROM chunks").fetchone()
        return StoreStats(int(documents[0]), int(chunks[0]))

    def retrieve(
        self, query: str, principal: Principal | None, k: int = 50, *, allow_public: bool = False
    ) -> list[Passage]:
        """The ``k`` best visible chunks by reciprocal rank fusion of BM25 (over the visible
        chunks) and vector similarity (the access condition in the same query). The work and
        the memory are bounded by ``k``."""
        principal = checked_retrieval(query, principal, k, allow_public)
        terms = query_terms(query)
        if not terms:
            return []
        params: dict[str, Any] = {
            "tenant": None if principal is None else principal.tenant,
            "names": [] if principal is None else [principal.id, *principal.groups],
            "public": allow_public,
            "terms": terms,
        }
        vector = _vector(self._embedder.embed([query])[0])
        near_params = {"vector": vector, "distance": MAX_DISTANCE, "k": max(2 * k, 20)}
        with self._connection() as db:
            classes, stats = _statistics(db, params)
            if not stats.total:
                return []
            # both rankings in one round trip
            with db.pipeline():
                top = _top(db, classes, stats, terms, max(2 * k, 20))
                near = db.cursor().execute(_NEAREST, {**near_params, "classes": classes})
            lexical_ids = [row[0] for row in top.fetchall()] if top is not None else []
            nearest = near.fetchall()
            rows = _rows(db, [*lexical_ids, *(row[0] for row in nearest)])
        lexical = rescored((rows[i] for i in lexical_ids), terms, stats)
        # nearest first, ties by chunk id
        nearest.sort(key=lambda found: (found[1], rows[found[0]].chunk_id))
        best = fused(lexical, [rows[found[0]] for found in nearest])[:k]
        return [row.passage(score, row.readers or (), SCORE_DIGITS) for score, row in best]

    def hidden_matches(
        self, query: str, principal: Principal | None, *, allow_public: bool = False
    ) -> bool:
        """Whether chunks this principal may not read (with these arguments) hold a term of
        ``query`` while none it may read does (see :func:`ctxasm.store.ranking.only_hidden`)."""
        principal = checked_retrieval(query, principal, 1, allow_public)
        terms = query_terms(query)
        if not terms:
            return False
        params: dict[str, Any] = {
            "tenant": None if principal is None else principal.tenant,
            "names": [] if principal is None else [principal.id, *principal.groups],
            "public": allow_public,
            "terms": terms,
        }
        with self._connection() as db:
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


def _schema_version(db: Any) -> int | None:
    """The store's schema version: None for an empty database, 1 for ctxasm 0.1's tables."""
    tables = {
        name
        for (name,) in db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename IN ('documents', 'ctxasm_schema')"
        )
    }
    if "ctxasm_schema" in tables:
        row = db.execute("SELECT max(version) FROM ctxasm_schema").fetchone()
        if row[0] is not None:
            return int(row[0])
    return 1 if "documents" in tables else None


def _marker(class_id: int) -> str:
    """The element of ``terms`` that names a chunk's access class (no word has a space), so
    one GIN index scan finds the chunks that hold a query term *and* are visible."""
    return f" class {class_id}"


def _term_counts(text: str, class_id: int) -> tuple[list[str], list[int]]:
    """A chunk's distinct words, sorted, and how often each occurs, then its class marker
    (counted 0 times: it is not a word)."""
    found = Counter(chunk_words(text))
    terms = sorted(found)
    return [*terms, _marker(class_id)], [*(found[t] for t in terms), 0]


def _chunk_rows(item: Pending, class_id: int) -> list[tuple[Any, ...]]:
    rows = []
    for seq, (chunk, vector) in enumerate(zip(item.chunks, item.vectors, strict=True)):
        terms, counts = _term_counts(chunk.text, class_id)
        rows.append(
            (
                f"{item.document.doc_id}#{seq}",
                item.document.doc_id,
                seq,
                chunk.start,
                chunk.end,
                sum(counts),
                chunk.text,
                terms,
                counts,
                class_id,
                vector,
            )
        )
    return rows


def _apply(db: Any, deltas: dict[int, ClassDelta]) -> None:
    """Add the changes to the classes' statistics (rows in one order: no deadlocks)."""
    for class_id, delta in sorted(deltas.items()):
        db.execute(
            "UPDATE access_classes SET chunks = chunks + %s, words = words + %s WHERE id = %s",
            (delta.chunks, delta.words, class_id),
        )
        rows = delta.term_rows(class_id)
        if not rows:
            continue
        columns = ([r[1] for r in rows], [class_id] * len(rows), [r[2] for r in rows])
        db.execute(
            "INSERT INTO class_terms (term, class_id, df) "
            "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) "
            "ON CONFLICT (term, class_id) DO UPDATE SET df = class_terms.df + excluded.df",
            columns,
        )
        gone = [r[1] for r in rows if r[2] < 0]
        if gone:
            db.execute(
                "DELETE FROM class_terms WHERE class_id = %s AND term = ANY(%s) AND df <= 0",
                (class_id, gone),
            )


def _statistics(db: Any, params: dict[str, Any]) -> tuple[list[int], VisibleStats]:
    """The visible classes, and chunk count, word count and term frequencies summed over them."""
    classes, total, words, frequencies = db.execute(_STATISTICS, params).fetchone()
    found = {term: int(df) for term, df in frequencies.items()}
    return list(classes), VisibleStats(int(total), int(words), found)


def _top(db: Any, classes: list[int], stats: VisibleStats, terms: list[str], pool: int) -> Any:
    """A cursor over the ids of the ``pool`` best visible chunks by BM25, ranked in SQL (None
    when no visible chunk holds a query term)."""
    weights = stats.weights(terms)
    if not weights:
        return None
    params = {
        "terms": [t for t, _ in weights],
        "idfs": [w for _, w in weights],
        "classes": classes,
        "markers": [_marker(c) for c in classes],
        "pool": pool,
        **stats.sql_parameters(),
    }
    return db.cursor().execute(_TOP, params)


def _rows(db: Any, ids: list[int]) -> dict[int, PostgresRow]:
    """The chunks with these ids, by id, each with its document's readers."""
    if not ids:
        return {}
    found = db.execute(
        f"SELECT c.id, {CHUNK_COLUMNS}, (SELECT array_agg(r.reader ORDER BY r.reader) "
        f"FROM readers r WHERE r.doc_id = c.doc_id) FROM chunks c "
        f"JOIN documents d ON d.doc_id = c.doc_id WHERE c.id = ANY(%s)",
        (sorted(set(ids)),),
    ).fetchall()
    return {row[0]: PostgresRow(*row[1:]) for row in found}
