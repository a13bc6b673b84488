"""The production store: PostgreSQL with pgvector (``pip install 'ctxasm[postgres]'``).

Same tables, access rules and access classes as the SQLite store (see
:mod:`ctxasm.store.sqlite` and :mod:`ctxasm.store.ranking`), with two differences in how chunks
are found:

- lexical search: a GIN index over each chunk's distinct words and its class marker finds the
  visible chunks holding a query term. Each chunk also keeps a *bound vector* (a pgvector
  ``sparsevec``: its words' BM25 shares at a fixed reference length, rounded up, in hashed
  buckets), so one inner product per match, in C, ranks the matches by a score that BM25 over
  the visible chunks can exceed by a known factor at most. The first of that ranking are read
  and scored exactly in Python, and more are read until no chunk left out could rank among
  the ``k`` best (:func:`ctxasm.store.ranking.exact_best`): the result is the exact BM25
  ranking over the visible chunks, whatever the approximation;
- vectors: every chunk's embedding (``vector(256)``, from the offline hashing embedder) is in
  ``chunk_vectors``, under an HNSW index with the access condition in the same ``WHERE`` as
  the ``ORDER BY`` distance (pgvector's iterative index scans, so a principal who sees a small
  share of the corpus still gets ``k`` neighbours). The index is built in one pass rather than
  row by row (five times cheaper): rows of a write join a *tail* outside it (each row has a
  ``generation``, the index covers those up to the store's), searched exactly beside the
  index, and the index is rebuilt over everything when the tail grows as large as what it
  covers, so a store loaded in batches builds it a few times in all. Past ``TAIL_MAX`` rows
  of tail, writes go into the index row by row, so the exact search stays bounded.

The two rankings are fused by reciprocal rank fusion (:func:`ctxasm.store.ranking.fused`),
whose score the passages carry. Documents are written in batches (``COPY``), one transaction per
batch, an index rebuild included.

As a service dependency: connections come from a pool (``pool_size``), every statement runs
under ``statement_timeout_ms``, a connection broken by a database restart is replaced on the
next request, and while the database is unreachable requests fail fast with
:class:`~ctxasm.errors.StoreUnavailableError` (an HTTP service answers 503). The schema version
is kept in ``ctxasm_schema``: an older store is upgraded when opened, a newer one refused.
"""

from __future__ import annotations

import math
import struct
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import xxhash

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
    exact_best,
    fused,
    only_hidden,
    saturation,
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
SCHEMA_VERSION = 3
# Vector neighbours further than this (cosine distance) share nothing with the query.
MAX_DISTANCE = 0.95
# Bound vectors: a word's bucket is its xxh3 hash modulo pgvector's largest sparsevec dimension
# (words sharing a bucket add up: the bound only grows); a share is rounded up to 1/1024. A
# chunk with more distinct words than a sparsevec holds has none, and is always scored exactly.
BOUND_DIMENSION = 1_000_000_000
BOUND_SCALE = 1024
BOUND_MAX_WORDS = 16_000
# The HNSW index is first built once a store has TAIL_MIN vectors (an exact search over fewer
# takes about as long as the index's), and the tail outside it never passes TAIL_MAX rows.
TAIL_MIN = 20_000
TAIL_MAX = 50_000
HNSW = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 48)"

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
-- class_id names an access class; no foreign key: a write changes about 24 rows here per
-- chunk, and checking each would cost a third of their upkeep
CREATE TABLE IF NOT EXISTS class_terms (
    term TEXT COLLATE "C" NOT NULL,
    class_id BIGINT NOT NULL,
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
    terms TEXT[] COLLATE "C" NOT NULL,
    class_id BIGINT NOT NULL REFERENCES access_classes(id),
    bound sparsevec({BOUND_DIMENSION})
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, seq);
CREATE INDEX IF NOT EXISTS chunks_terms ON chunks USING GIN (terms);
CREATE TABLE IF NOT EXISTS chunk_vectors (
    id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    class_id BIGINT NOT NULL,
    generation INTEGER NOT NULL,
    embedding vector({DIMENSION}) NOT NULL
);
CREATE INDEX IF NOT EXISTS chunk_vectors_by_class ON chunk_vectors(class_id, generation);
CREATE INDEX IF NOT EXISTS chunk_vectors_by_generation ON chunk_vectors(generation);
CREATE TABLE IF NOT EXISTS store_state (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    reference_words DOUBLE PRECISION,
    generation INTEGER NOT NULL DEFAULT 0
);
INSERT INTO store_state DEFAULT VALUES ON CONFLICT DO NOTHING;
"""
# Stored inline and uncompressed where they fit: scanning the matches reads them for every
# row (the text is compressed or moved out first), and the vectors' table stays narrow.
_STORAGE = """
ALTER TABLE chunks ALTER COLUMN terms SET STORAGE MAIN, ALTER COLUMN bound SET STORAGE MAIN;
ALTER TABLE chunk_vectors ALTER COLUMN embedding SET STORAGE PLAIN;
"""

_VISIBLE_CLASSES = """
    SELECT id, chunks, words FROM access_classes
    WHERE (tenant IS NULL OR tenant = %(tenant)s)
    AND (readers IS NULL OR readers && %(names)s::text[])
    AND (tenant IS NOT NULL OR readers IS NOT NULL OR %(public)s)
"""
# The visible classes, their summed statistics and the store's state, in one round trip.
_STATISTICS = f"""
WITH visible AS ({_VISIBLE_CLASSES})
SELECT
    (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM visible),
    (SELECT coalesce(sum(chunks), 0) FROM visible),
    (SELECT coalesce(sum(words), 0) FROM visible),
    (SELECT coalesce(json_object_agg(term, df), '{{}}') FROM (
        SELECT term, sum(df) AS df FROM class_terms
        WHERE term = ANY(%(terms)s) AND class_id IN (SELECT id FROM visible) GROUP BY term
    ) AS found),
    (SELECT reference_words FROM store_state),
    (SELECT generation FROM store_state)
"""
# The visible classes and the classes holding a query term, for hidden_matches.
_HOLDING = f"""
SELECT
    (SELECT coalesce(array_agg(id), '{{}}') FROM ({_VISIBLE_CLASSES}) AS visible),
    (SELECT coalesce(array_agg(DISTINCT class_id), '{{}}') FROM class_terms
     WHERE term = ANY(%(terms)s) AND df > 0)
"""
# A chunk read back: its columns and its document's readers (``found``: the ids found first).
_ROWS = f"""
SELECT found.key, {CHUNK_COLUMNS}, (SELECT array_agg(r.reader ORDER BY r.reader)
    FROM readers r WHERE r.doc_id = c.doc_id)
FROM found JOIN chunks c ON c.id = found.id JOIN documents d ON d.doc_id = c.doc_id
"""
# The visible chunks holding a query term, best bound first (bound vectors give ``-bound``).
_CANDIDATES = f"""
WITH found AS (
    SELECT c.id, c.bound <#> %(weights)s::sparsevec AS key FROM chunks c
    WHERE c.terms && %(terms)s::text[] AND c.terms && %(markers)s::text[]
    AND c.class_id = ANY(%(classes)s)
    ORDER BY key NULLS FIRST LIMIT %(fetch)s
){_ROWS}"""
# The nearest visible vectors: through the HNSW index up to the store's generation, exactly in
# the tail after it (``{{generation}}`` is written in, so the partial index applies).
_NEAREST = f"""
WITH found AS (
    (SELECT v.id, v.embedding <=> %(vector)s::vector AS key FROM chunk_vectors v
     WHERE v.generation <= {{generation}} AND v.class_id = ANY(%(classes)s)
     AND (v.embedding <=> %(vector)s::vector) < %(distance)s
     ORDER BY v.embedding <=> %(vector)s::vector LIMIT %(k)s)
    UNION ALL
    (SELECT v.id, v.embedding <=> %(vector)s::vector AS key FROM chunk_vectors v
     WHERE v.generation > {{generation}} AND v.class_id = ANY(%(classes)s)
     AND (v.embedding <=> %(vector)s::vector) < %(distance)s
     ORDER BY key LIMIT %(k)s)
){_ROWS}"""

_VECTOR = struct.pack(">hh", DIMENSION, 0)  # pgvector's binary form: this, then big-endian floats
_QUERY_VECTOR = "[" + ",".join(["%.9g"] * DIMENSION) + "]"  # float32 to the last bit


def _vector(values: Any) -> str:
    return _QUERY_VECTOR % tuple(values.tolist())


SCORE_DIGITS = 8  # a passage's score is rounded to this many decimals


@dataclass(frozen=True, slots=True)
class PostgresRow(ChunkRow):
    """A chunk read back, with its document's readers (sorted; ``None`` for none)."""

    readers: list[str] | None


@dataclass(frozen=True, slots=True)
class _Plan:
    """Where a write puts its vectors: the generation it gives them, and whether the HNSW
    index is rebuilt over everything (as ``rebuild``, the new generation) before it commits."""

    generation: int
    rebuild: int | None = None


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
        chunks, or an index rebuild) after ``write_timeout_ms`` (0: never). Fails with a
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
        from ctxasm.embeddings import HashingEmbedder

        self._embedder = HashingEmbedder(DIMENSION)
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
        _apply(db, deltas)
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
        last = 0
        while found := db.execute(
            "SELECT id, text FROM chunks WHERE id > %s ORDER BY id LIMIT 10000", (last,)
        ).fetchall():
            bounds = []
            for _, text in found:
                words = chunk_words(text)
                bounds.append(_bound(Counter(words), len(words), reference))
            db.execute(
                "UPDATE chunks SET bound = new.bound FROM unnest(%s::bigint[], %s::sparsevec[]) "
                "AS new(id, bound) WHERE chunks.id = new.id",
                ([chunk_id for chunk_id, _ in found], bounds),
            )
            last = found[-1][0]
        if rows >= TAIL_MIN:
            _rebuild(db, 1, rows)

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
                    plan = _plan(db, sum(len(p.chunks) for p in changed))
                    replaced = [p.document.doc_id for p in changed if p.document.doc_id in known]
                    self._replace(db, changed, replaced, plan, fresh)
                    if plan.rebuild is not None:
                        _rebuild(db, plan.rebuild)
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
    ) -> None:
        """Write ``batch`` (inside a transaction), removing the ``replaced`` versions first.
        Python's work overlaps the database's: chunk rows are made while ``COPY`` sends the
        previous ones, and the vectors while the statistics are updated."""
        deltas: dict[int, ClassDelta] = {}
        if replaced:
            for class_id, text in db.execute(
                "SELECT class_id, text FROM chunks WHERE doc_id = ANY(%s)", (replaced,)
            ):
                count_into(deltas, class_id, [text], sign=-1)
            db.execute("DELETE FROM documents WHERE doc_id = ANY(%s)", (replaced,))
        reference = _reference(db, batch)
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
            words: list[list[str]] = []  # each chunk's, split once for its row and its vector
            with cursor.copy(
                'COPY chunks (id, chunk_id, doc_id, seq, start, "end", words, text, terms, '
                "class_id, bound) FROM STDIN"
            ) as copy:
                rows = _chunk_rows(batch, classes, reference, deltas, words)
                for chunk_id, row in zip(ids, rows, strict=True):
                    copy.write_row((chunk_id, *row))
            with db.pipeline():
                _apply(db, deltas)  # sent, not awaited
                vectors = self._embedder.embed_words(words).astype(">f4")
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
        """The ``k`` best visible chunks by reciprocal rank fusion of BM25 (exact, over the
        visible chunks) and vector similarity (the access condition in the same query). The
        work and the memory are bounded by ``k`` and the tail of vectors outside the index."""
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
        pool = max(2 * k, 20)
        near_params = {
            "vector": _vector(self._embedder.embed([query])[0]),
            "distance": MAX_DISTANCE,
            "k": pool,
        }
        with self._connection() as db:
            classes, stats, reference, generation = _statistics(db, params)
            if not stats.total:
                return []
            lexical = _Lexical(classes, stats, terms, reference, pool)
            # the first candidates and the neighbours in one round trip
            with db.pipeline():
                first = lexical.candidates(db)
                near = db.cursor().execute(
                    _NEAREST.format(generation=generation), {**near_params, "classes": classes}
                )
            best = lexical.best(db, first)
            nearest = [(key, PostgresRow(*row)) for key, *row in near.fetchall()]
        # nearest first, ties by chunk id
        nearest.sort(key=lambda found: (found[0], found[1].chunk_id))
        ranked = fused(best, [row for _, row in nearest[:pool]])[:k]
        return [row.passage(score, row.readers or (), SCORE_DIGITS) for score, row in ranked]

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


class _Lexical:
    """One question's exact BM25 top ``pool`` over the visible chunks, read by bound: the
    first ``5 pool / 4`` candidates, then four times as many each time until the last kept
    beats every bound left out."""

    def __init__(
        self,
        classes: list[int],
        stats: VisibleStats,
        terms: list[str],
        reference: float | None,
        pool: int,
    ) -> None:
        self._stats = stats
        self._terms = terms
        self._pool = pool
        self._weights = stats.weights(terms)
        # one float32 product and sum per term in pgvector: this much relative error at most
        self._margin = 1e-3 + 2.4e-7 * len(self._weights)
        self._factor = None if reference is None else stats.ceiling(reference) / BOUND_SCALE
        self._params: dict[str, Any] = {
            "weights": _query_bound(self._weights),
            "terms": [t for t, _ in self._weights],
            "classes": classes,
            "markers": [_marker(c) for c in classes],
            "fetch": pool + pool // 4 if reference is not None else None,
        }

    def candidates(self, db: Any) -> Any:
        """A cursor over the next candidates (None when no visible chunk holds a term)."""
        if not self._weights:
            return None
        return db.cursor().execute(_CANDIDATES, self._params)

    def best(self, db: Any, cursor: Any) -> list[tuple[float, PostgresRow]]:
        """The exact top, from the candidates of ``cursor`` and more where needed."""
        while cursor is not None:
            found = cursor.fetchall()
            fetch = self._params["fetch"]
            ceiling = None
            if fetch is not None and len(found) >= fetch:
                bounds = [key for key, *_ in found if key is not None]
                ceiling = math.inf
                if self._factor is not None and bounds:
                    ceiling = -max(bounds) * self._factor * (1.0 + self._margin)
            rows = [PostgresRow(*row) for _, *row in found]
            best = exact_best(rows, self._terms, self._stats, self._pool, ceiling)
            if best is not None:
                return best
            self._params["fetch"] = 4 * fetch
            cursor = self.candidates(db)
        return []


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


def _terms(counts: Counter[str], class_id: int) -> list[str]:
    """A chunk's distinct words (in the order they first occur), then its class marker."""
    return [*counts, _marker(class_id)]


def _text_array(items: list[str]) -> str:
    """``items`` as a PostgreSQL array literal, every element quoted (``COPY`` takes it as
    text, which psycopg would otherwise scan element by element)."""
    plain = "".join(items)
    if "\\" in plain or '"' in plain:
        items = [t.replace("\\", "\\\\").replace('"', '\\"') for t in items]
    return '{"' + '","'.join(items) + '"}' if items else "{}"


def _int_array(items: list[int]) -> str:
    return "{" + ",".join(map(str, items)) + "}"


@lru_cache(maxsize=65536)
def _bucket(term: str) -> int:
    """A word's bound-vector index (pgvector's text form counts from 1)."""
    return xxhash.xxh3_64_intdigest(term.encode("utf-8", "surrogatepass")) % BOUND_DIMENSION + 1


def _bound(counts: Counter[str], length: int, reference: float) -> str | None:
    """A chunk's bound vector: each word's :func:`~ctxasm.store.ranking.saturation` at the
    ``reference`` average length, rounded up to ``1 / BOUND_SCALE``, in its bucket (pgvector
    sorts the entries; words that share a bucket are added up)."""
    if len(counts) > BOUND_MAX_WORDS:
        return None
    keys = list(map(_bucket_key, counts))
    shares = _shares(counts.values(), length, reference)
    if len(set(keys)) < len(keys):
        merged: dict[str, int] = {}
        for key, share in zip(keys, shares, strict=True):
            merged[key] = merged.get(key, 0) + int(share)
        keys, shares = list(merged), [str(share) for share in merged.values()]
    return "{" + ",".join(map(str.__add__, keys, shares)) + f"}}/{BOUND_DIMENSION}"


def _shares(tfs: Iterable[int], length: int, reference: float) -> list[str]:
    """Each term's bound share, as text (most words occur once: computed once for them)."""
    once = str(math.ceil(saturation(1, length, reference) * BOUND_SCALE))
    return [
        once if tf == 1 else str(math.ceil(saturation(tf, length, reference) * BOUND_SCALE))
        for tf in tfs
    ]


@lru_cache(maxsize=65536)
def _bucket_key(term: str) -> str:
    """``"bucket:"``, the start of a word's entry in a bound vector."""
    return f"{_bucket(term)}:"


def _query_bound(weights: list[tuple[str, float]]) -> str:
    """The query's bound vector: each term's idf in its bucket (summed where they share one)."""
    buckets: dict[int, float] = {}
    for term, idf in weights:
        bucket = _bucket(term)
        buckets[bucket] = buckets.get(bucket, 0.0) + idf
    entries = ",".join(f"{b}:{buckets[b]!r}" for b in sorted(buckets))
    return f"{{{entries}}}/{BOUND_DIMENSION}"


def _reference(db: Any, batch: list[Pending]) -> float:
    """The store's reference chunk length for bound vectors: set by its first write (the
    average of that batch), never changed."""
    row = db.execute("SELECT reference_words FROM store_state").fetchone()
    if row[0] is not None:
        return float(row[0])
    lengths = [len(chunk_words(c.text)) for item in batch for c in item.chunks]
    average = sum(lengths) / len(lengths) if lengths else 1.0
    db.execute(
        "UPDATE store_state SET reference_words = %s WHERE reference_words IS NULL",
        (max(average, 1.0),),
    )
    return float(db.execute("SELECT reference_words FROM store_state").fetchone()[0])


def _plan(db: Any, rows: int) -> _Plan:
    """Where a write of ``rows`` vectors goes (inside its transaction): the index, rebuilt
    over everything, once the tail would be as large as what the index holds (and at least
    ``TAIL_MIN``); else the tail while it stays under ``TAIL_MAX`` rows; else the index, row
    by row. A rebuild first locks out other writers (who would deadlock later) and decides
    again once it holds the lock (another may have rebuilt meanwhile)."""
    locked = False
    while True:
        generation = int(db.execute("SELECT generation FROM store_state").fetchone()[0])
        tail = _count(db, f"generation > {generation}") + rows
        if tail >= TAIL_MIN and tail >= _count(db, f"generation <= {generation}"):
            if locked:
                return _Plan(generation + 1, rebuild=generation + 1)
            db.execute("LOCK TABLE chunk_vectors IN SHARE ROW EXCLUSIVE MODE")
            locked = True
            continue
        return _Plan(generation + 1 if tail <= TAIL_MAX else generation)


def _count(db: Any, condition: str) -> int:
    return int(db.execute(f"SELECT count(*) FROM chunk_vectors WHERE {condition}").fetchone()[0])


def _rebuild(db: Any, generation: int, rows: int | None = None) -> None:
    """Build the HNSW index over every vector up to ``generation`` (inside the write's
    transaction: readers go on with the previous index until it commits), with the memory
    its graph needs, up to 1 GB, so that it is built in one pass."""
    if rows is None:
        rows = _count(db, f"generation <= {generation}")
    needed = min(max(rows * 2, 64 * 1024), 1024 * 1024)  # kB: about 2 kB a vector
    current = db.execute(
        "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone()[0]
    if needed > current:
        db.execute(f"SET LOCAL maintenance_work_mem = '{needed}kB'")
    db.execute(
        f"CREATE INDEX chunk_vectors_hnsw_{generation} ON chunk_vectors {HNSW} "
        f"WHERE generation <= {generation}"
    )
    db.execute("UPDATE store_state SET generation = %s", (generation,))


def _drop_stale_indexes(db: Any, generation: int) -> None:
    """Drop the HNSW indexes of earlier generations (after the rebuild committed, without
    blocking readers). Nothing reads them any more: one left by a failure here, or by a
    killed process, is dropped after the next rebuild, and the write still succeeds."""
    import psycopg

    try:
        for (name,) in db.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = 'chunk_vectors' AND indexname LIKE 'chunk_vectors_hnsw_%%' "
            "AND indexname <> %s",
            (f"chunk_vectors_hnsw_{generation}",),
        ).fetchall():
            db.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
    except psycopg.Error:
        pass


def _chunk_rows(
    batch: list[Pending],
    classes: list[int],
    reference: float,
    deltas: dict[int, ClassDelta],
    words: list[list[str]],
) -> Iterator[tuple[Any, ...]]:
    """The ``chunks`` rows of ``batch`` (all but their ids), counted into ``deltas`` as they
    are made, each chunk's words added to ``words``."""
    for item, class_id in zip(batch, classes, strict=True):
        delta = deltas.setdefault(class_id, ClassDelta())
        for seq, chunk in enumerate(item.chunks):
            found = chunk_words(chunk.text)
            words.append(found)
            counts = Counter(found)
            delta.add_words(counts.keys(), len(found))
            yield (
                f"{item.document.doc_id}#{seq}",
                item.document.doc_id,
                seq,
                chunk.start,
                chunk.end,
                len(found),
                chunk.text,
                _text_array(_terms(counts, class_id)),
                class_id,
                _bound(counts, len(found), reference),
            )


def _apply(db: Any, deltas: dict[int, ClassDelta]) -> None:
    """Add the changes to the classes' statistics: rows in one order (class, then term, sorted
    by the database), so concurrent writers never deadlock; the term changes in one statement,
    which the server reads at once (a pipeline then goes on while it runs)."""
    terms: list[str] = []
    owners: list[int] = []
    changes: list[int] = []
    for class_id, delta in sorted(deltas.items()):
        db.execute(
            "UPDATE access_classes SET chunks = chunks + %s, words = words + %s WHERE id = %s",
            (delta.chunks, delta.words, class_id),
        )
        for term, change in delta.terms.items():
            if change:
                terms.append(term)
                owners.append(class_id)
                changes.append(change)
    if not terms:
        return
    columns = (_text_array(terms), _int_array(owners), _int_array(changes))
    db.execute(
        "INSERT INTO class_terms (term, class_id, df) "
        "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) "
        "AS change(term, class_id, df) ORDER BY class_id, term "
        "ON CONFLICT (term, class_id) DO UPDATE SET df = class_terms.df + excluded.df",
        columns,
    )
    if min(changes) < 0:
        db.execute(
            "DELETE FROM class_terms WHERE (term, class_id) IN (SELECT term, class_id FROM "
            "unnest(%s::text[], %s::bigint[], %s::bigint[]) AS change(term, class_id, df) "
            "WHERE df < 0) AND df <= 0",
            columns,
        )


def _statistics(
    db: Any, params: dict[str, Any]
) -> tuple[list[int], VisibleStats, float | None, int]:
    """The visible classes; chunk count, word count and term frequencies summed over them;
    the store's reference length for bound vectors and its index generation."""
    row = db.execute(_STATISTICS, params).fetchone()
    classes, total, words, frequencies, reference, generation = row
    found = {term: int(df) for term, df in frequencies.items()}
    stats = VisibleStats(int(total), int(words), found)
    return list(classes), stats, None if reference is None else float(reference), int(generation)
