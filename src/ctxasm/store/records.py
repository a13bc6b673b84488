"""What both stores write and read back, apart from their SQL: a document's content hash and
row, its access-class key, the split of a write into batches and the outcome of each document,
and a chunk read back (:class:`ChunkRow`) turned into a :class:`~ctxasm.Passage`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import xxhash

from ctxasm.data import Passage
from ctxasm.errors import RequestError
from ctxasm.store.chunking import Chunk
from ctxasm.store.documents import Document
from ctxasm.validation import invalid, shown

__all__ = [
    "CHUNK_COLUMNS",
    "VERSION_1_DOCUMENTS",
    "VERSION_1_READERS",
    "ChunkRow",
    "Pending",
    "StoreStats",
    "batches",
    "check_owners",
    "chunk_row",
    "class_key",
    "content_hash",
    "document_row",
    "open_class_key",
    "outcomes",
    "reader_names",
]


# The columns, in order, of ctxasm 0.1's documents and readers tables, the same in both stores:
# part of how a store written before schema versions is told from another application's tables.
VERSION_1_DOCUMENTS = (
    "doc_id",
    "title",
    "url",
    "tenant",
    "has_readers",
    "timestamp",
    "authority",
    "metadata",
    "content_hash",
)
VERSION_1_READERS = ("doc_id", "reader")


@dataclass(frozen=True, slots=True)
class StoreStats:
    documents: int
    chunks: int


def checked_items(items: object) -> list[tuple[Document, Sequence[Chunk]]]:
    """The ``(document, chunks)`` pairs of ``upsert_many`` as a list, or a
    :class:`RequestError` naming what is not a :class:`Document` or a list of :class:`Chunk`."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise invalid("items", "a list of (document, chunks) pairs", items)
    found: list[tuple[Document, Sequence[Chunk]]] = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise invalid("items", "a list of (document, chunks) pairs", item)
        document, chunks = item
        if not isinstance(document, Document):
            raise invalid("document", "a ctxasm.store.Document", document)
        if not isinstance(chunks, (tuple, list)) or not all(isinstance(c, Chunk) for c in chunks):
            raise invalid("chunks", "a list of ctxasm.store.Chunk (see chunk_text)", chunks)
        checked = [_check_chunk(document, chunk, number) for number, chunk in enumerate(chunks)]
        found.append((document, checked))
    return found


def _check_chunk(document: Document, chunk: Chunk, number: int) -> Chunk:
    """The chunk, refused (naming it) when it is not ``document.text[start:end]``: its text is
    then checked as the document's was (a NUL or a lone surrogate reached the database's
    driver), and its offsets are what the content hash keeps. Made anew from what was checked:
    a str subclass as its text (or a subclass of Chunk) would go on with methods of its own
    (its ``len``, ``lower``) that the checks did not read."""
    start, end, text = chunk.start, chunk.end, chunk.text
    if not (
        type(start) is int
        and type(end) is int
        and 0 <= start <= end <= len(document.text)
        and isinstance(text, str)
        and str.__len__(text) == end - start
        and document.text.startswith(str.__str__(text), start)
    ):
        raise RequestError(
            f"chunks[{number}] of document {shown(document.doc_id)} is not the document's "
            f"text from its start to its end (start {str(start)[:20]}, end {str(end)[:20]}); "
            "make chunks with ctxasm.store.chunk_text",
            field=f"chunks[{number}]",
        )
    return Chunk(start, end, document.text[start:end])


def content_hash(document: Document, chunks: Sequence[Chunk], embedder: str = "") -> str:
    """What decides whether a re-indexed document is written again: its text, metadata, access
    data, chunk offsets and the embedder that made its vectors."""
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


def reader_names(document: Document) -> list[str]:
    """The document's readers, each once, sorted (none when it has no reader restriction)."""
    return sorted(set(document.readers or ()))


def class_key(document: Document) -> str:
    """The key of the document's access class (tenant and reader set)."""
    if document.readers is None:
        return open_class_key(document.tenant)
    return json.dumps([document.tenant, reader_names(document)], ensure_ascii=False)


def open_class_key(tenant: str | None) -> str:
    """The key of the access class of ``tenant``'s documents without a reader list: a store
    finds the one such class a principal's tenant can see by this key, without a scan."""
    return json.dumps([tenant, None], ensure_ascii=False)


def document_row(document: Document, digest: str) -> tuple[Any, ...]:
    """The ``documents`` row: doc_id, title, url, tenant, has_readers, timestamp, authority,
    metadata (JSON) and content_hash."""
    return (
        document.doc_id,
        document.title,
        document.url,
        document.tenant,
        document.readers is not None,
        document.timestamp,
        document.authority,
        json.dumps(dict(document.metadata), ensure_ascii=False, default=str),
        digest,
    )


def chunk_row(doc_id: str, seq: int, chunk: Chunk, words: int) -> tuple[Any, ...]:
    """The columns every store's ``chunks`` row starts with: chunk_id, doc_id, seq, start,
    end, words (the chunk's length in words) and text."""
    return (f"{doc_id}#{seq}", doc_id, seq, chunk.start, chunk.end, words, chunk.text)


@dataclass(frozen=True, slots=True)
class Pending:
    """One document about to be written, with what was computed before any SQL: its content
    hash and a vector per chunk (in the store's own form; ``None`` without an embedder, or
    where the store makes them later)."""

    document: Document
    chunks: Sequence[Chunk]
    digest: str
    vectors: Sequence[Any]


def batches(pending: Sequence[Pending]) -> list[list[Pending]]:
    """``pending`` cut where a document id repeats, so each batch writes a document once and
    a later version of it replaces an earlier one, as separate upserts would."""
    cut: list[list[Pending]] = [[]]
    seen: set[str] = set()
    for item in pending:
        if item.document.doc_id in seen:
            cut.append([])
            seen = set()
        cut[-1].append(item)
        seen.add(item.document.doc_id)
    return [batch for batch in cut if batch]


def check_owners(batch: Sequence[Pending], owners: Mapping[str, str | None]) -> None:
    """Refuse a document whose id the store holds under another tenant (``owners``: the
    tenant of each id already stored). A document id names one document in the whole store,
    so writing it would replace, and so delete, the other tenant's document."""
    for item in batch:
        document = item.document
        if document.doc_id in owners and owners[document.doc_id] != document.tenant:
            raise RequestError(
                f"document.doc_id {shown(document.doc_id)} is already in this store under another "
                "tenant, and a document id names one document in the whole store: writing this "
                "one would replace that one. Delete that document first (ctxasm delete), or "
                "give this one another id",
                field="document.doc_id",
            )


def outcomes(batch: Sequence[Pending], known: Mapping[str, str]) -> list[str]:
    """``"added"``, ``"updated"`` or ``"unchanged"`` for each document of ``batch``, given the
    content hashes the store held before (``known``, by doc_id)."""
    found = []
    for item in batch:
        before = known.get(item.document.doc_id)
        found.append(
            "added" if before is None else "unchanged" if before == item.digest else "updated"
        )
    return found


# The columns of a ChunkRow, in order (``c``: chunks, ``d``: documents).
CHUNK_COLUMNS = (
    'c.chunk_id, c.doc_id, c.start, c."end", c.words, c.text, d.title, d.url, d.tenant, '
    "d.has_readers, d.timestamp, d.authority"
)


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk read back with its document's fields (:data:`CHUNK_COLUMNS`); ``words`` is
    its length in words."""

    chunk_id: str
    doc_id: str
    start: int
    end: int
    words: int
    text: str
    title: str | None
    url: str | None
    tenant: str | None
    has_readers: bool
    timestamp: str | None
    authority: float | None

    def passage(self, score: float, readers: Sequence[str], digits: int) -> Passage:
        """The chunk as a passage scored ``score`` (rounded to ``digits``), read by
        ``readers`` where its document restricts readers."""
        return Passage(
            id=self.chunk_id,
            text=self.text,
            score=round(score, digits),
            title=self.title,
            url=self.url,
            doc_id=self.doc_id,
            start=self.start,
            end=self.end,
            timestamp=self.timestamp,
            authority=self.authority,
            tenant=self.tenant,
            readers=tuple(readers) if self.has_readers else None,
        )
