"""Document stores with access control: ingestion, chunking and retrieval.

``open_store("sqlite:///path/to/store.db")`` opens (or creates) the embedded SQLite store;
:func:`index_paths` ingests files into it and :meth:`SQLiteStore.retrieve` returns the chunks a
principal may read, ranked, as :class:`~ctxasm.Passage` objects ready for ``ctxasm.assemble``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ctxasm.errors import ConfigError, RequestError
from ctxasm.model import Passage, Principal
from ctxasm.store.chunking import Chunk, chunk_text
from ctxasm.store.documents import SUFFIXES, Document, read_documents
from ctxasm.store.sqlite import SQLiteStore, StoreStats

__all__ = [
    "Chunk",
    "Document",
    "IndexReport",
    "Retriever",
    "SQLiteStore",
    "Store",
    "StoreStats",
    "chunk_text",
    "index_paths",
    "open_store",
]


class Retriever(Protocol):
    """What ``ctxasm ask`` needs of a store."""

    def retrieve(
        self, query: str, principal: Principal | None, k: int = 50, *, allow_public: bool = False
    ) -> list[Passage]: ...


class Store(Retriever, Protocol):
    """A store ingestion can write to."""

    def upsert(self, document: Document, chunks: Sequence[Chunk]) -> str: ...

    def delete(self, doc_id: str) -> bool: ...

    def stats(self) -> StoreStats: ...

    def close(self) -> None: ...


def open_store(url: str, *, create: bool = True) -> Store:
    """The store at ``url``: ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``
    (add ``?embedder=hashing`` or another embedder spec for vectors), or
    ``postgresql://user:password@host/database`` (needs ``pip install 'ctxasm[postgres]'``;
    add ``?pool_size=4&statement_timeout_ms=30000`` to change the pool and the timeout)."""
    if url.startswith("sqlite:///"):
        path, _, options = url.removeprefix("sqlite:///").partition("?")
        if not path or path.endswith("/"):
            raise ConfigError(f"store URL {url!r} names no database file", field="store")
        embedder = None
        for option in filter(None, options.split("&")):
            key, _, value = option.partition("=")
            if key != "embedder" or not value:
                raise ConfigError(
                    f"store URL option {option!r} is not known; use ?embedder=hashing",
                    field="store",
                )
            embedder = value
        if not create and not Path(path).is_file():
            raise ConfigError(
                f"no store at {path}; index documents into it first (ctxasm index)",
                field="store",
            )
        return SQLiteStore(path, embedder)
    if url.startswith(("postgresql://", "postgres://")):
        from ctxasm.store.postgres import PostgresStore

        url, settings = _store_options(url, {"pool_size": 4, "statement_timeout_ms": 30_000})
        return PostgresStore(url, **settings)
    raise ConfigError(
        f"unknown store URL {url!r}; use sqlite:///path.db or postgresql://...", field="store"
    )


def _store_options(url: str, defaults: dict[str, int]) -> tuple[str, dict[str, int]]:
    """``url`` without ctxasm's own query options (whole numbers, such as ``pool_size=8``),
    and those options over ``defaults``; the other options stay for the database driver."""
    base, _, query = url.partition("?")
    options, kept = dict(defaults), []
    for option in filter(None, query.split("&")):
        key, _, value = option.partition("=")
        if key not in defaults:
            kept.append(option)
        elif not value.isdigit():
            raise ConfigError(
                f"store URL option {key}={value!r} must be a whole number, as in {key}="
                f"{defaults[key]}",
                field="store",
            )
        else:
            options[key] = int(value)
    return (f"{base}?{'&'.join(kept)}" if kept else base), options


@dataclass
class IndexReport:
    """What one indexing run did."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks: int = 0
    tokens: int = 0
    public: int = 0  # documents with neither tenant nor readers
    failed: list[tuple[str, str]] = field(default_factory=list)


def _files(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            )
        else:
            found.append(path)
    return found


def index_paths(
    store: Store,
    paths: Sequence[str | Path],
    *,
    tenant: str | None = None,
    readers: Sequence[str] | None = None,
    chunk_tokens: int = 256,
    overlap: int = 32,
    encoding: str = "o200k_base",
    progress: Callable[[int, int], None] | None = None,
) -> IndexReport:
    """Ingest files and folders (see :mod:`ctxasm.store.documents`). A file that cannot be read
    or parsed is recorded in ``failed`` with the reason, and the run goes on; each document is
    written in its own transaction."""
    from ctxasm.tokens import get_counter

    counter = get_counter(f"tiktoken:{encoding}")
    report = IndexReport()
    files = _files(Path(p) for p in paths)
    for number, path in enumerate(files, start=1):
        try:
            for document in read_documents(
                path, tenant=tenant, readers=readers, errors=report.failed
            ):
                try:
                    chunks = chunk_text(document.text, chunk_tokens, overlap, encoding)
                    outcome = store.upsert(document, chunks)
                except RequestError as exc:
                    report.failed.append((f"{path} ({document.doc_id})", exc.message))
                    continue
                except Exception as exc:
                    detail = " ".join(str(exc).split())
                    report.failed.append(
                        (f"{path} ({document.doc_id})", f"{type(exc).__name__}: {detail}")
                    )
                    continue
                setattr(report, outcome, getattr(report, outcome) + 1)
                if document.tenant is None and document.readers is None:
                    report.public += 1
                if outcome != "unchanged":
                    report.chunks += len(chunks)
                    report.tokens += counter.count(document.text)
        except RequestError as exc:
            report.failed.append((str(path), exc.message))
        if progress is not None:
            progress(number, len(files))
    return report
