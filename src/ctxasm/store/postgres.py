"""The production store: PostgreSQL with pgvector (``pip install 'ctxasm[postgres]'``).

Same tables and the same access rules as the SQLite store (see :mod:`ctxasm.store.sqlite`),
with two differences in how chunks are found:

- lexical search uses each chunk's distinct words (an array column with a GIN index), and BM25
  is computed exactly as in SQLite, over the chunks the principal may see;
- every chunk also has an embedding (``vector(256)``, from the offline hashing embedder), and
  the nearest visible chunks by cosine distance are found with the access condition in the same
  ``WHERE`` as the ``ORDER BY`` distance.

The two rankings are fused by reciprocal rank fusion (``1 / (60 + rank)`` summed), which is the
score the passages carry. Each document is written in one transaction.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from ctxasm.data import Passage, Principal
from ctxasm.errors import ConfigError
from ctxasm.lexical import phrase_key, query_terms
from ctxasm.store.arguments import check_no_nul, checked_doc_id, checked_retrieval
from ctxasm.store.chunking import Chunk
from ctxasm.store.documents import Document
from ctxasm.store.sqlite import StoreStats, bm25_score, content_hash

__all__ = ["RRF_K", "PostgresStore"]

DIMENSION = 256
RRF_K = 60
# Vector neighbours further than this (cosine distance) share nothing with the query.
MAX_DISTANCE = 0.95

_SCHEMA = f"""
CREATE EXTENSION IF NOT EXISTS vector;
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
    embedding vector({DIMENSION}) NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, seq);
CREATE INDEX IF NOT EXISTS chunks_terms ON chunks USING GIN (terms);
"""

_VISIBLE = """
    (d.tenant IS NULL OR d.tenant = %(tenant)s)
    AND (NOT d.has_readers OR EXISTS (
        SELECT 1 FROM readers r WHERE r.doc_id = d.doc_id AND r.reader = ANY(%(names)s)))
    AND (d.tenant IS NOT NULL OR d.has_readers OR %(public)s)
"""
_COLUMNS = (
    'c.chunk_id, c.doc_id, c.start, c."end", c.words, c.text, d.title, d.url, d.tenant, '
    "d.has_readers, d.timestamp, d.authority"
)


def _vector(values: Any) -> str:
    return "[" + ",".join(f"{float(v):.6f}" for v in values) + "]"


class PostgresStore:
    """A document store in PostgreSQL with pgvector (see the module docstring)."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "the PostgreSQL store needs psycopg: pip install 'ctxasm[postgres]'",
                field="store",
            ) from None
        try:
            self._db = psycopg.connect(url, autocommit=True)
            self._db.execute(_SCHEMA)
        except psycopg.Error as exc:
            detail = " ".join(str(exc).split())  # one line
            raise ConfigError(
                f"cannot open the PostgreSQL store: {detail}", field="store"
            ) from None
        self._lock = threading.Lock()
        from ctxasm.embeddings import get_embedder

        self._embedder = get_embedder(f"hashing:{DIMENSION}")

    def close(self) -> None:
        self._db.close()

    def _one(self, sql: str, params: Any = None) -> Any:
        row = self._db.execute(sql, params).fetchone()
        assert row is not None
        return row

    def upsert(self, document: Document, chunks: Sequence[Chunk]) -> str:
        """Store ``document`` and its chunks: ``"added"``, ``"updated"`` or ``"unchanged"``.
        A NUL character, which PostgreSQL cannot store, is refused before any SQL."""
        check_no_nul(document)
        digest = content_hash(document, chunks, self._embedder.name)
        vectors: Any = self._embedder.embed([c.text for c in chunks]) if chunks else []
        with self._lock:
            row = self._db.execute(
                "SELECT content_hash FROM documents WHERE doc_id = %s", (document.doc_id,)
            ).fetchone()
            if row is not None and row[0] == digest:
                return "unchanged"
            with self._db.transaction():
                self._db.execute("DELETE FROM documents WHERE doc_id = %s", (document.doc_id,))
                self._db.execute(
                    "INSERT INTO documents (doc_id, title, url, tenant, has_readers, timestamp, "
                    "authority, metadata, content_hash) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                    "%s::jsonb, %s)",
                    (
                        document.doc_id,
                        document.title,
                        document.url,
                        document.tenant,
                        document.readers is not None,
                        document.timestamp,
                        document.authority,
                        json.dumps(dict(document.metadata), ensure_ascii=False, default=str),
                        digest,
                    ),
                )
                with self._db.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO readers (doc_id, reader) VALUES (%s, %s)",
                        [(document.doc_id, r) for r in sorted(set(document.readers or ()))],
                    )
                    cursor.executemany(
                        'INSERT INTO chunks (chunk_id, doc_id, seq, start, "end", words, text, '
                        "terms, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::vector)",
                        [
                            (
                                f"{document.doc_id}#{seq}",
                                document.doc_id,
                                seq,
                                chunk.start,
                                chunk.end,
                                len(phrase_key(chunk.text).split()),
                                chunk.text,
                                sorted(set(phrase_key(chunk.text).split())),
                                _vector(vector),
                            )
                            for seq, (chunk, vector) in enumerate(zip(chunks, vectors, strict=True))
                        ],
                    )
        return "added" if row is None else "updated"

    def delete(self, doc_id: str) -> bool:
        doc_id = checked_doc_id(doc_id)
        with self._lock, self._db.transaction():
            gone = self._db.execute("DELETE FROM documents WHERE doc_id = %s", (doc_id,))
        return gone.rowcount > 0

    def stats(self) -> StoreStats:
        with self._lock:
            documents = self._one("SELECT count(*) FROM documents")
            chunks = self._one("SELECT count(*) FROM chunks")
        return StoreStats(int(documents[0]), int(chunks[0]))

    def retrieve(
        self,
        query: str,
        principal: Principal | None,
        k: int = 50,
        *,
        allow_public: bool = False,
        max_matches: int | None = None,
    ) -> list[Passage]:
        """The ``k`` best visible chunks by reciprocal rank fusion of BM25 (over the visible
        chunks) and vector similarity (the access condition in the same query)."""
        principal = checked_retrieval(query, principal, k, allow_public, max_matches)
        terms = query_terms(query)
        if not terms:
            return []
        params: dict[str, Any] = {
            "tenant": None if principal is None else principal.tenant,
            "names": [] if principal is None else [principal.id, *principal.groups],
            "public": allow_public,
            "terms": terms,
            "limit": max_matches,
        }
        vector = _vector(self._embedder.embed([query])[0])
        with self._lock:
            total, average = self._one(
                f"SELECT count(*), avg(c.words) FROM chunks c JOIN documents d "
                f"ON d.doc_id = c.doc_id WHERE {_VISIBLE}",
                params,
            )
            if not total:
                return []
            frequencies = {}
            for term in terms:
                frequencies[term] = self._one(
                    f"SELECT count(*) FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                    f"WHERE c.terms @> ARRAY[%(term)s]::text[] AND {_VISIBLE}",
                    {**params, "term": term},
                )[0]
            lexical_rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                f"WHERE c.terms && %(terms)s AND {_VISIBLE} ORDER BY c.id LIMIT %(limit)s",
                params,
            ).fetchall()
            vector_rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                f"WHERE {_VISIBLE} AND (c.embedding <=> %(vector)s::vector) < %(distance)s "
                f"ORDER BY c.embedding <=> %(vector)s::vector, c.id LIMIT %(k)s",
                {**params, "vector": vector, "k": max(k * 2, 20), "distance": MAX_DISTANCE},
            ).fetchall()
            doc_ids = sorted({row[1] for row in [*lexical_rows, *vector_rows] if row[9]})
            readers: dict[str, list[str]] = {}
            if doc_ids:
                for doc_id, reader in self._db.execute(
                    "SELECT doc_id, reader FROM readers WHERE doc_id = ANY(%s) ORDER BY reader",
                    (doc_ids,),
                ):
                    readers.setdefault(doc_id, []).append(reader)
        lexical = sorted(
            (
                (bm25_score(row[5], row[4], terms, frequencies, total, float(average or 1.0)), row)
                for row in lexical_rows
            ),
            key=lambda item: (-item[0], item[1][0]),
        )
        fused: dict[str, float] = {}
        rows: dict[str, Any] = {}
        for rank, (score, row) in enumerate(lexical, start=1):
            if score > 0:
                fused[row[0]] = fused.get(row[0], 0.0) + 1.0 / (RRF_K + rank)
                rows[row[0]] = row
        for rank, row in enumerate(vector_rows, start=1):
            fused[row[0]] = fused.get(row[0], 0.0) + 1.0 / (RRF_K + rank)
            rows[row[0]] = row
        best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [
            Passage(
                id=chunk_id,
                text=rows[chunk_id][5],
                score=round(score, 8),
                title=rows[chunk_id][6],
                url=rows[chunk_id][7],
                doc_id=rows[chunk_id][1],
                start=rows[chunk_id][2],
                end=rows[chunk_id][3],
                timestamp=rows[chunk_id][10],
                authority=rows[chunk_id][11],
                tenant=rows[chunk_id][8],
                readers=tuple(readers.get(rows[chunk_id][1], ())) if rows[chunk_id][9] else None,
            )
            for chunk_id, score in best
        ]
