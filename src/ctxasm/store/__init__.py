"""Document stores with access control: ingestion, chunking and retrieval.

``open_store("sqlite:///path/to/store.db")`` opens (or creates) the embedded SQLite store;
:func:`index_paths` ingests files into it and :meth:`SQLiteStore.retrieve` returns the chunks a
principal may read, ranked, as :class:`~ctxasm.Passage` objects ready for ``ctxasm.assemble``;
``store.for_principal(principal)`` is the store as a :class:`ctxasm.Retriever` for
:func:`ctxasm.context_for_chat`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ctxasm.data import Passage, Principal
from ctxasm.errors import ConfigError, RequestError, StoreUnavailableError
from ctxasm.store.arguments import without_secrets
from ctxasm.store.chunk_pool import Chunked, Chunker, auto_workers, failure_reason
from ctxasm.store.chunking import Chunk, check_chunking, chunk_text, count_tokens_batch
from ctxasm.store.documents import (
    SUFFIXES,
    Document,
    file_doc_id,
    id_root,
    not_regular,
    read_documents,
)
from ctxasm.store.duplicates import stored_twice
from ctxasm.store.records import StoreStats
from ctxasm.store.scoped import PrincipalRetriever
from ctxasm.store.sqlite import SQLiteStore
from ctxasm.validation import integer, invalid, name, names, shortened

__all__ = [
    "Chunk",
    "Document",
    "IndexReport",
    "PrincipalRetriever",
    "SQLiteStore",
    "Store",
    "StoreStats",
    "chunk_text",
    "file_doc_id",
    "index_paths",
    "open_store",
    "store_files",
]


class Store(Protocol):
    """A document store with access control, which ingestion can write to (an
    ``upsert_many(items)`` method, where a store has one, writes a batch in one transaction; a
    ``stored_ids(doc_ids)`` method, which of the ids it holds, lets :func:`index_paths` find
    files stored twice under ids from two working folders).

    ``retrieve`` takes the principal on every call; ``for_principal(principal)`` is the store
    as a :class:`ctxasm.Retriever` (``retrieve(query, k)``) for one principal."""

    def retrieve(
        self, query: str, principal: Principal | None, k: int = 50, *, allow_public: bool = False
    ) -> list[Passage]: ...

    def hidden_matches(
        self, query: str, principal: Principal | None, *, allow_public: bool = False
    ) -> bool:
        """Whether no chunk the principal may read (with these arguments) holds a term of
        ``query`` but some chunk it may not read does: one bit from the per-access-class term
        statistics, never which documents, how many or how well they match."""
        ...

    def for_principal(
        self, principal: Principal | None, *, allow_public: bool = False
    ) -> PrincipalRetriever: ...

    def upsert(self, document: Document, chunks: Sequence[Chunk]) -> str: ...

    def delete(self, doc_id: str) -> bool: ...

    def stats(self) -> StoreStats: ...

    def close(self) -> None: ...


_SQLITE = "sqlite:///"
# What SQLite keeps beside a database file while it writes: part of the store too.
_SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def store_files(url: str) -> list[str]:
    """The files on this machine that the store at ``url`` keeps, as :func:`open_store` reads
    the URL: a SQLite database and the journals beside it (which may not exist yet; SQLite
    keeps them beside the file the name resolves to, a link's target, named after the link's
    journals); none for a PostgreSQL store, or a URL :func:`open_store` refuses. Nothing is
    opened."""
    if not url.startswith(_SQLITE):
        return []
    path = url.removeprefix(_SQLITE).partition("?")[0]
    if not path or path.endswith("/"):
        return []
    real = os.path.realpath(path)
    linked = (
        [real + suffix for suffix in _SQLITE_COMPANIONS] if real != os.path.abspath(path) else []
    )
    return [path, *(path + suffix for suffix in _SQLITE_COMPANIONS), *linked]


def open_store(url: str, *, create: bool = True) -> Store:
    """The store at ``url``: ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``
    (add ``?embedder=hashing`` or another embedder spec for vectors), or
    ``postgresql://user:password@host/database`` (needs the ``postgres`` extra;
    add ``?pool_size=4&statement_timeout_ms=30000`` to change the pool and the timeout, and
    ``index_memory_mb=1024`` the memory of an HNSW index build)."""
    if url.startswith(_SQLITE):
        path, _, options = url.removeprefix(_SQLITE).partition("?")
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
        if Path(path).is_dir():
            raise ConfigError(
                f"the store {path} is a folder; name a database file in it "
                f"(sqlite:///{path.rstrip('/')}/store.db)",
                field="store",
            )
        if not create and not Path(path).is_file():
            raise ConfigError(
                f"no store at {path}; index documents into it first (ctxasm index)",
                field="store",
            )
        return SQLiteStore(path, embedder, create=create)
    if url.startswith(("postgresql://", "postgres://")):
        from ctxasm.store.postgres import PostgresStore
        from ctxasm.store.postgres_schema import INDEX_MEMORY_MB

        defaults = {
            "pool_size": 4,
            "statement_timeout_ms": 30_000,
            "write_timeout_ms": 600_000,
            "index_memory_mb": INDEX_MEMORY_MB,
        }
        url, settings = _store_options(url, defaults)
        return PostgresStore(url, **settings, create=create)
    raise ConfigError(
        f"unknown store URL {without_secrets(url, url)!r}; use sqlite:///path.db or "
        "postgresql://...",
        field="store",
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
        elif not (value.isascii() and value.isdigit()) or len(value) > 18:  # "²" is a digit
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
    # files a folder walk found and did not read, their type not one it reads (see SUFFIXES);
    # those under a name starting with a dot (.git, .DS_Store) are left out of this list
    passed_over: list[str] = field(default_factory=list)
    # (id written, id stored already): a file the store also holds under its id from another
    # working folder (found only when ids are relative to the working folder: no root given)
    duplicates: list[tuple[str, str]] = field(default_factory=list)


def _files(
    paths: Iterable[Path], skipped: list[tuple[str, str]], passed: list[str]
) -> list[tuple[Path, tuple[int, int] | None]]:
    """The files to read, each once (a file named and in a folder named too was read twice,
    and reported unchanged the second time), in the order first met. A file named is read
    wherever it is. In a folder, a link to a file outside it is not followed but recorded in
    ``skipped`` (whoever may add a link to a shared folder would otherwise have the run read any
    file it can, with the run's readers), and folders it links to are not walked
    (``Path.rglob``); each file found comes with its device and inode, which the file opened
    later must have (so a link or a folder swapped in after the walk cannot bring in another).
    A file in a folder, of a type the run does not read, is recorded in ``passed`` unless its
    path in the folder has a part starting with a dot (a repository's .git holds hundreds)."""
    found: dict[Path, tuple[Path, tuple[int, int] | None]] = {}
    for path in paths:
        if path.is_dir():
            root = _same_file(path)
            walked: list[tuple[Path, tuple[int, int] | None]] = []
            for file in sorted(path.rglob("*")):
                if file.suffix.lower() not in SUFFIXES:
                    if not _hidden(file, path) and not file.is_dir():
                        passed.append(str(file))
                    continue
                if file.is_dir():
                    continue
                if not file.is_file():  # a pipe or a device was passed over without a word
                    skipped.append((str(file), _not_regular(file)))
                    continue
                if file.is_symlink() and root not in _same_file(file).parents:
                    skipped.append((str(file), _OUTSIDE))
                    continue
                try:
                    status = file.stat()
                except OSError:  # gone since: reading it says why
                    walked.append((file, None))
                    continue
                walked.append((file, (status.st_dev, status.st_ino)))
        else:
            walked = [(path, None)]
        for file, identity in walked:
            found.setdefault(_same_file(file), (file, identity))
    passed[:] = dict.fromkeys(passed)  # a folder named twice, or inside another one named
    return list(found.values())


def _hidden(file: Path, folder: Path) -> bool:
    """Whether ``file``'s path in ``folder`` has a part starting with a dot."""
    return any(part.startswith(".") for part in file.relative_to(folder).parts)


def _not_regular(path: Path) -> str:
    """Why a name a folder walk found with a suffix it reads is not read."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a link that leads back to itself"
        return "a link to nothing (its target is missing)"
    return not_regular(mode)


_OUTSIDE = (
    "a link to a file outside the folder being indexed: not followed (name the file itself to "
    "index it)"
)


def _same_file(path: Path) -> Path:
    """What names ``path``'s file (its resolved path), or the path where it cannot be told."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


BATCH_CHUNKS = 5000  # chunks written per transaction by index_paths


class _Batch:
    """Documents waiting to be written together, and what the report needs of each."""

    def __init__(
        self, store: Store, report: IndexReport, encoding: str, *, find_duplicates: bool
    ) -> None:
        self.store, self.report, self.encoding = store, report, encoding
        # the ids of the files read since the last flush, to look up (None: not looked up)
        self.file_ids: list[str] | None = [] if find_duplicates else None
        # (where, document, chunks, tokens): tokens when chunking counted them on the way
        self.items: list[tuple[str, Document, list[Chunk], int | None]] = []
        self.ids: set[str] = set()
        self.chunks = 0

    def add(
        self, where: str, document: Document, chunks: list[Chunk], tokens: int | None = None
    ) -> None:
        if document.doc_id in self.ids:
            # A store writes a batch up to a repeated id in one transaction and the rest in
            # another: a failure in the second, retried one by one, would report documents the
            # first wrote as unchanged. Each batch holds an id once.
            self.flush()
        self.items.append((where, document, chunks, tokens))
        self.ids.add(document.doc_id)
        self.chunks += len(chunks)
        if self.chunks >= BATCH_CHUNKS:
            self.flush()

    def flush(self) -> None:
        """Write the waiting documents in one transaction; if that fails, one by one, so the
        failure is recorded against the document that caused it."""
        items, self.items, self.chunks = self.items, [], 0
        self.ids.clear()
        if self.file_ids:
            self.report.duplicates += stored_twice(self.store, self.file_ids)
            self.file_ids.clear()
        if not items:
            return
        try:
            outcomes: list[str | None] = list(_upsert_many(self.store, items))
        except StoreUnavailableError:
            raise  # the store is down: no document would fare better alone (each waited 3 s)
        except Exception:
            outcomes = [
                self._alone(where, document, chunks) for where, document, chunks, _ in items
            ]
        written = []
        for (_, document, chunks, tokens), outcome in zip(items, outcomes, strict=True):
            if outcome is None:
                continue
            setattr(self.report, outcome, getattr(self.report, outcome) + 1)
            if document.tenant is None and document.readers is None:
                self.report.public += 1
            if outcome != "unchanged":
                self.report.chunks += len(chunks)
                if tokens is None:
                    written.append(document.text)
                else:
                    self.report.tokens += tokens
        self.report.tokens += count_tokens_batch(written, self.encoding)

    def _alone(self, where: str, document: Document, chunks: list[Chunk]) -> str | None:
        try:
            return self.store.upsert(document, chunks)
        except StoreUnavailableError:
            raise
        except Exception as exc:
            self.report.failed.append((where, failure_reason(exc)))
        return None


def _upsert_many(
    store: Store, items: list[tuple[str, Document, list[Chunk], int | None]]
) -> list[str]:
    pairs = [(document, chunks) for _, document, chunks, _ in items]
    upsert_many = getattr(store, "upsert_many", None)
    if upsert_many is None:
        return [store.upsert(document, chunks) for document, chunks in pairs]
    return list(upsert_many(pairs))


def index_paths(
    store: Store,
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    tenant: str | None = None,
    readers: Sequence[str] | None = None,
    chunk_tokens: int = 256,
    overlap: int = 32,
    encoding: str = "o200k_base",
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    root: str | os.PathLike[str] | None = None,
) -> IndexReport:
    """Ingest files and folders (see :mod:`ctxasm.store.documents`): ``paths`` is one path or
    a list of them. A file that cannot be read
    or parsed is recorded in ``failed`` with the reason, and the run goes on; a file a folder
    holds that is not of a type the run reads is listed in ``passed_over``. Documents are
    written in batches of about ``BATCH_CHUNKS`` (5,000) chunks, one transaction each: a crash loses
    at most the batch being written, and never leaves part of a document.

    A file's document id is its path relative to ``root`` when it lies inside it, else its
    absolute path (:func:`file_doc_id`). ``root`` defaults to the working folder; give it to
    have the same ids wherever the run starts. Without it, files the store also holds under
    their ids from another working folder are listed in the report's ``duplicates`` (where the
    store has ``stored_ids``).

    Large inputs are chunked in ``workers`` processes beside the writes (see
    :mod:`ctxasm.store.chunk_pool`; by default one where the machine has two or more CPUs, 0 for
    none), with the same results in the same order."""
    from ctxasm.tokens.tiktoken_source import load_encoding

    # The run's access data and chunk sizes, checked once before any file (a bad value would
    # fail every one).
    if isinstance(paths, (str, os.PathLike)):  # one path, not a sequence of characters
        paths = [paths]
    elif isinstance(paths, bytes) or not isinstance(paths, Iterable):
        raise invalid("paths", "a path or a list of files and folders", paths)
    chunk_tokens, overlap = check_chunking(chunk_tokens, overlap)
    tenant = name(tenant, "tenant", optional=True)
    readers = names(readers, "readers", optional=True)
    workers = auto_workers() if workers is None else integer(workers, "workers", minimum=0)
    folder = None if root is None else id_root(root)
    # A tokenizer that cannot load would fail every file: raise its TokenizerError once, first.
    load_encoding(encoding)
    report = IndexReport()
    batch = _Batch(store, report, encoding, find_duplicates=folder is None)
    files = _files((Path(p) for p in paths), report.failed, report.passed_over)
    seen: dict[str, str] = {}  # each id the run reads, and where: a later one is refused
    # The PostgreSQL store builds its vector index once, at the end of the bulk block.
    with _bulk(store), Chunker(chunk_tokens, overlap, encoding, workers or 0) as chunker:
        for number, (path, identity) in enumerate(files, start=1):
            _read_file(path, chunker, batch, tenant, readers, identity, root=folder, seen=seen)
            if number == len(files):
                _add(chunker.finish(), batch)
                batch.flush()
            if progress is not None:
                progress(number, len(files))
        _add(chunker.finish(), batch)
        batch.flush()
    return report


def _bulk(store: Store) -> AbstractContextManager[object]:
    """The store's bulk-load block where it has one, else nothing."""
    bulk = getattr(store, "bulk", None)
    return bulk() if callable(bulk) else nullcontext()


def _read_file(
    path: Path,
    chunker: Chunker,
    batch: _Batch,
    tenant: str | None,
    readers: Sequence[str] | None,
    identity: tuple[int, int] | None = None,
    *,
    root: Path | None = None,
    seen: dict[str, str] | None = None,
) -> None:
    """Hand the documents of one file to ``chunker``, and what cannot be read, in file order;
    what it has chunked goes on to ``batch`` meanwhile (``identity``: see :func:`_files`;
    ``root``: the folder of files' ids, see :func:`file_doc_id`)."""
    errors: list[tuple[str, str]] = []

    def pass_on_errors() -> None:
        for where, reason in errors:
            chunker.fail(where, reason)
        errors.clear()

    try:
        documents = read_documents(
            path,
            tenant=tenant,
            readers=readers,
            errors=errors,
            expected=identity,
            root=root,
            seen=seen,
        )
        whole = path.suffix.lower() != ".jsonl"  # the file is one document, its id its path
        for document in documents:
            pass_on_errors()
            if whole and batch.file_ids is not None:
                batch.file_ids.append(document.doc_id)
            # named in a failure: a long id shortened
            chunker.add(f"{path} ({shortened(document.doc_id, 80)})", document)
            _add(chunker.ready(), batch)
    except RequestError as exc:
        pass_on_errors()
        chunker.fail(str(path), exc.message)
    pass_on_errors()


def _add(entries: Iterable[Chunked], batch: _Batch) -> None:
    """Chunked documents into ``batch``; what failed into the report."""
    for entry in entries:
        if entry.document is None:
            batch.report.failed.append((entry.where, entry.failure or ""))
        else:
            batch.add(entry.where, entry.document, entry.chunks, entry.tokens)
