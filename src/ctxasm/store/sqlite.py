"""The embedded store: SQLite (standard library) with FTS5 for lexical search.

Tables: ``documents`` (one row per document, with its tenant and a content hash), ``readers``
(who may read it), ``chunks`` (overlapping windows with their offsets) and ``chunks_fts`` (an
FTS5 index over chunk text, kept in step by triggers). Every document is written in one
transaction, so a crash mid-document leaves the store as it was.

Access is enforced in SQL before anything is scored, with the same rules as the assembler's
access stage: a chunk is visible when its document's tenant is the principal's (or it has no
tenant) and, when the document lists readers, the principal or one of its groups is among them;
a document with neither is public and visible only with ``allow_public``. Ranking is BM25 whose
statistics (document frequencies, average length) are computed over the visible chunks only, so
a chunk the principal may not read never shapes another's score.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash

from ctxasm.data import Passage, Principal
from ctxasm.errors import ConfigError
from ctxasm.lexical import phrase_key, query_terms
from ctxasm.store.arguments import checked_doc_id, checked_retrieval
from ctxasm.store.chunking import Chunk
from ctxasm.store.documents import Document

__all__ = ["SQLiteStore", "StoreStats", "bm25_score", "content_hash"]

_SCHEMA = """
PRAGMA foreign_keys = ON;
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
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
"""

# The visibility rule, in SQL (parameters :tenant, :public and the reader names).
_VISIBLE = """
    (d.tenant IS NULL OR d.tenant = :tenant)
    AND (d.has_readers = 0 OR EXISTS (
        SELECT 1 FROM readers r WHERE r.doc_id = d.doc_id AND r.reader IN ({names})))
    AND (d.tenant IS NOT NULL OR d.has_readers = 1 OR :public)
"""
_FTS_TERM = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class StoreStats:
    documents: int
    chunks: int


def _fused(lexical: list[tuple[float, Any]], near: list[Any]) -> list[tuple[float, Any]]:
    """Reciprocal rank fusion (``1 / (60 + rank)``, summed) of a BM25 and a vector ranking."""
    fused: dict[str, float] = {}
    rows: dict[str, Any] = {}
    for rank, (score, row) in enumerate(lexical, start=1):
        if score > 0:
            fused[row[0]] = fused.get(row[0], 0.0) + 1.0 / (60 + rank)
            rows[row[0]] = row
    for rank, row in enumerate(near, start=1):
        fused[row[0]] = fused.get(row[0], 0.0) + 1.0 / (60 + rank)
        rows[row[0]] = row
    ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return [(round(score, 8), rows[chunk_id]) for chunk_id, score in ranked]


def bm25_score(
    text: str,
    words: int,
    terms: Sequence[str],
    frequencies: dict[str, int],
    total: int,
    average: float,
    k1: float = 1.2,
    b: float = 0.75,
) -> float:
    """Okapi BM25 of ``terms`` in one chunk (``words`` long), with the document frequencies,
    chunk count and average length of the chunks the principal may see."""
    found = phrase_key(text).split()
    score = 0.0
    for term in terms:
        tf = found.count(term)
        if not tf:
            continue
        df = frequencies[term]
        idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * words / average)
        score += idf * tf * (k1 + 1.0) / (tf + norm)
    return score


def content_hash(document: Document, chunks: Sequence[Chunk], embedder: str = "") -> str:
    payload = json.dumps(
        [
            document.text,
            document.title,
            document.url,
            document.tenant,
            document.readers,
            document.timestamp,
            document.authority,
            dict(document.metadata),
            [(c.start, c.end) for c in chunks],
            embedder,
        ],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return xxhash.xxh3_128_hexdigest(payload.encode("utf-8"))


class SQLiteStore:
    """A document store in one SQLite file (see the module docstring)."""

    def __init__(self, path: str | Path, embedder: str | None = None) -> None:
        """``embedder`` (a spec such as ``"hashing"``, see :mod:`ctxasm.embeddings`) adds a
        vector to every chunk written, and vector similarity to retrieval: the visible chunks'
        vectors are compared by brute force with numpy, and fused with BM25 by reciprocal rank
        fusion, as in the PostgreSQL store."""
        self.path = Path(path)
        self.embedder = None
        if embedder is not None:
            from ctxasm.embeddings import get_embedder

            self.embedder = get_embedder(embedder)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.executescript(_SCHEMA)
            self._db.execute("PRAGMA journal_mode = WAL")
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the store {self.path}: {exc}") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def upsert(self, document: Document, chunks: Sequence[Chunk]) -> str:
        """Store ``document`` and its chunks: ``"added"``, ``"updated"`` (old chunks replaced
        atomically) or ``"unchanged"`` (same content: nothing written)."""
        digest = content_hash(document, chunks, self.embedder.name if self.embedder else "")
        vectors: list[bytes | None] = [None] * len(chunks)
        if self.embedder is not None and chunks:
            embedded = self.embedder.embed([c.text for c in chunks])
            vectors = [row.astype("float32").tobytes() for row in embedded]
        with self._lock:
            row = self._db.execute(
                "SELECT content_hash FROM documents WHERE doc_id = ?", (document.doc_id,)
            ).fetchone()
            if row is not None and row[0] == digest:
                return "unchanged"
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM documents WHERE doc_id = ?", (document.doc_id,))
                db.execute(
                    "INSERT INTO documents (doc_id, title, url, tenant, has_readers, timestamp, "
                    "authority, metadata, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        document.doc_id,
                        document.title,
                        document.url,
                        document.tenant,
                        int(document.readers is not None),
                        document.timestamp,
                        document.authority,
                        json.dumps(dict(document.metadata), ensure_ascii=False, default=str),
                        digest,
                    ),
                )
                db.executemany(
                    "INSERT INTO readers (doc_id, reader) VALUES (?, ?)",
                    [(document.doc_id, r) for r in sorted(set(document.readers or ()))],
                )
                db.executemany(
                    'INSERT INTO chunks (chunk_id, doc_id, seq, start, "end", words, text, '
                    "embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            f"{document.doc_id}#{seq}",
                            document.doc_id,
                            seq,
                            chunk.start,
                            chunk.end,
                            len(phrase_key(chunk.text).split()),
                            chunk.text,
                            vectors[seq],
                        )
                        for seq, chunk in enumerate(chunks)
                    ],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return "added" if row is None else "updated"

    def delete(self, doc_id: str) -> bool:
        """Remove a document, its readers, chunks and index rows; whether it existed."""
        doc_id = checked_doc_id(doc_id)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                gone = self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return gone.rowcount > 0

    def stats(self) -> StoreStats:
        with self._lock:
            documents = self._db.execute("SELECT count(*) FROM documents").fetchone()[0]
            chunks = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return StoreStats(documents, chunks)

    def retrieve(
        self,
        query: str,
        principal: Principal | None,
        k: int = 50,
        *,
        allow_public: bool = False,
        max_matches: int | None = None,
    ) -> list[Passage]:
        """The ``k`` best visible chunks for ``query`` by BM25 over the visible chunks, as
        passages carrying their offsets, scores and access data. Every visible chunk that
        matches is scored (``max_matches`` bounds that work, taking the matches in storage
        order, when you need a bound more than the best chunks)."""
        principal = checked_retrieval(query, principal, k, allow_public, max_matches)
        terms = [t for t in query_terms(query) if _FTS_TERM.fullmatch(t)]
        if not terms:
            return []
        ids = [] if principal is None else [principal.id, *principal.groups]
        names = ", ".join(f":n{i}" for i in range(len(ids)))
        # no principal: no reader list admits anyone (SQLite accepts an empty IN list)
        visible = _VISIBLE.format(names=names)
        params: dict[str, object] = {f"n{i}": name for i, name in enumerate(ids)}
        params["tenant"] = None if principal is None else principal.tenant
        params["public"] = int(allow_public)
        match = " OR ".join(f'"{t}"' for t in terms)
        with self._lock:
            total, average = self._db.execute(
                f"SELECT count(*), avg(c.words) FROM chunks c JOIN documents d "
                f"ON d.doc_id = c.doc_id WHERE {visible}",
                params,
            ).fetchone()
            if not total:
                return []
            frequencies = {}
            for term in terms:
                frequencies[term] = self._db.execute(
                    f"SELECT count(*) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                    f"JOIN documents d ON d.doc_id = c.doc_id "
                    f"WHERE chunks_fts MATCH :match AND {visible}",
                    {**params, "match": f'"{term}"'},
                ).fetchone()[0]
            rows = self._db.execute(
                f'SELECT c.chunk_id, c.doc_id, c.start, c."end", c.words, c.text, d.title, '
                f"d.url, d.tenant, d.has_readers, d.timestamp, d.authority "
                f"FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                f"JOIN documents d ON d.doc_id = c.doc_id "
                f"WHERE chunks_fts MATCH :match AND {visible} ORDER BY c.id LIMIT :limit",
                {**params, "match": match, "limit": -1 if max_matches is None else max_matches},
            ).fetchall()
            near = self._nearest(query, visible, params, max(2 * k, 20))
            readers = self._readers({row[1] for row in [*rows, *near] if row[9]})
        scored = [
            (bm25_score(row[5], row[4], terms, frequencies, total, average or 1.0), row)
            for row in rows
        ]
        scored.sort(key=lambda item: (-item[0], item[1][0]))
        if near:
            scored = _fused(scored, near)
        return [
            Passage(
                id=row[0],
                text=row[5],
                score=round(score, 6),
                title=row[6],
                url=row[7],
                doc_id=row[1],
                start=row[2],
                end=row[3],
                timestamp=row[10],
                authority=row[11],
                tenant=row[8],
                readers=readers.get(row[1], ()) if row[9] else None,
            )
            for score, row in scored[:k]
            if score > 0
        ]

    def _nearest(
        self, query: str, visible: str, params: dict[str, object], count: int
    ) -> list[Any]:
        """The visible chunks closest to the query's vector (brute force over the visible
        chunks' vectors with numpy), nearest first; none without an embedder."""
        if self.embedder is None:
            return []
        import numpy as np

        rows = self._db.execute(
            f'SELECT c.chunk_id, c.doc_id, c.start, c."end", c.words, c.text, d.title, '
            f"d.url, d.tenant, d.has_readers, d.timestamp, d.authority, c.embedding "
            f"FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
            f"WHERE c.embedding IS NOT NULL AND {visible}",
            params,
        ).fetchall()
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(row[12] for row in rows), dtype=np.float32)
        matrix = matrix.reshape(len(rows), -1)
        target = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        if matrix.shape[1] != target.shape[0]:
            return []  # vectors from another embedder: not comparable
        similarity = matrix @ target
        order = np.argsort(-similarity, kind="stable")[:count]
        return [rows[i][:12] for i in order if similarity[i] > 0.05]

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
