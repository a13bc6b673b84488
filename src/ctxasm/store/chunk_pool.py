"""Chunking beside the writer: documents are chunked in a worker process while the indexing
process parses files and writes batches to the store.

Chunking is CPU-bound Python (sentence splitting, token counting), and so is much of a store's
write; in one process they take turns on the interpreter lock, so on a machine with two or more
CPUs the chunking goes to one worker process. The results are the same as in process, in the
same order: documents are sent in groups of about :data:`GROUP_CHARS` characters, and their
results are taken back in the order the documents were read, with the read errors of each file
where they were met.

The pool starts only when there is enough to chunk (past the first group) and only on Linux:
by ``fork`` when this process runs no other thread (nothing to set up again in the worker),
else by ``forkserver``. A worker that dies is not fatal: its groups, and all later ones, are
chunked in process. Interrupting the run (Ctrl-C) stops the worker with it, and so does killing
it (``kill -9``).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, NamedTuple

from ctxasm.errors import RequestError
from ctxasm.store.chunking import Chunk, chunk_and_count
from ctxasm.store.documents import Document

__all__ = ["GROUP_CHARS", "Chunked", "Chunker", "auto_workers", "chunk_group"]

GROUP_CHARS = 256 * 1024  # document text sent to the worker at a time
# Text sent to the worker and not yet taken back: about four write batches of prose (5,000
# chunks take about 4 MB), so the worker keeps busy while a batch is written, and the reader
# can run ahead while the first batch is chunked (with 8 MB it waited three times as long).
AHEAD_CHARS = 16 * 1024 * 1024

# What chunking one text gives: the chunks' (start, end) and the text's token count (see
# chunk_and_count), or why it could not be chunked.
Outcome = tuple[list[tuple[int, int]], int | None] | str


class Chunked(NamedTuple):
    """One entry of the indexing run, in reading order: a document with its chunks and token
    count, or (``document`` None) something that could not be read or chunked, and why."""

    where: str
    document: Document | None
    chunks: list[Chunk]
    tokens: int | None
    failure: str | None


def chunk_group(
    texts: Sequence[str], chunk_tokens: int, overlap: int, encoding: str
) -> list[Outcome]:
    """:func:`~ctxasm.store.chunking.chunk_and_count` of each text, with a failure as its
    message (in process or in the worker: the same function, so the same answers)."""
    found: list[Outcome] = []
    for text in texts:
        try:
            chunks, tokens = chunk_and_count(text, chunk_tokens, overlap, encoding)
        except RequestError as exc:
            found.append(exc.message)
            continue
        except Exception as exc:
            detail = " ".join(str(exc).split())
            found.append(f"{type(exc).__name__}: {detail}")
            continue
        found.append(([(c.start, c.end) for c in chunks], tokens))
    return found


def auto_workers() -> int:
    """Worker processes for chunking by default: one where the pool can start (Linux) and
    this process may use two or more CPUs, else none."""
    if sys.platform != "linux":
        return 0
    return 1 if len(os.sched_getaffinity(0)) >= 2 else 0


class _Group(NamedTuple):
    entries: list[tuple[str, Document | None, str | None]]  # (where, document, failure)
    texts: list[str]
    outcomes: Future[list[Outcome]]
    ahead: int  # characters it adds to what the worker has to do (0 when done in process)


class Chunker:
    """Chunks documents in reading order, in ``workers`` processes (0: in this one).

    :meth:`add` and :meth:`fail` take the run's entries in order; :meth:`ready` gives back those
    done, in the same order, and :meth:`finish` all the rest. Use it as a context manager,
    which stops the worker on the way out.
    """

    def __init__(self, chunk_tokens: int, overlap: int, encoding: str, workers: int) -> None:
        self._job = (chunk_tokens, overlap, encoding)
        self._workers = workers
        self._pool: Executor | None = None
        self._entries: list[tuple[str, Document | None, str | None]] = []
        self._texts: list[str] = []
        self._chars = 0  # in the group being filled
        self._groups: deque[_Group] = deque()
        self._ahead = 0  # characters sent and not yet taken back
        self._sent = 0  # groups formed so far

    def __enter__(self) -> Chunker:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def add(self, where: str, document: Document) -> None:
        """A document to chunk."""
        self._entries.append((where, document, None))
        self._texts.append(document.text)
        self._chars += len(document.text)
        if self._chars >= GROUP_CHARS:
            self._send()

    def fail(self, where: str, reason: str) -> None:
        """Something that could not be read, in its place among the documents."""
        self._entries.append((where, None, reason))

    def ready(self) -> Iterator[Chunked]:
        """The entries whose chunks are done, in order; waits only while too much is ahead."""
        while self._groups and (self._ahead > AHEAD_CHARS or self._groups[0].outcomes.done()):
            yield from self._take()

    def finish(self) -> Iterator[Chunked]:
        """Every entry not given back yet, in order."""
        self._send()
        while self._groups:
            yield from self._take()

    def _send(self) -> None:
        if not self._entries:
            return
        entries, texts, self._entries, self._texts = self._entries, self._texts, [], []
        self._sent += 1
        pool = self._start() if self._sent > 1 else None  # one group: not worth a process
        ahead, self._chars = self._chars, 0
        outcomes: Future[list[Outcome]]
        if pool is None:
            outcomes, ahead = Future(), 0
            outcomes.set_result(chunk_group(texts, *self._job))
        else:
            outcomes = pool.submit(chunk_group, texts, *self._job)
        self._ahead += ahead
        self._groups.append(_Group(entries, texts, outcomes, ahead))

    def _take(self) -> Iterator[Chunked]:
        group = self._groups.popleft()
        try:
            outcomes = group.outcomes.result()
        except Exception:  # the worker died (BrokenProcessPool) or could not take the group
            self._workers = 0  # this group and the rest, in process
            outcomes = chunk_group(group.texts, *self._job)
        self._ahead -= group.ahead
        found = iter(outcomes)
        for where, document, failure in group.entries:
            if document is None:
                yield Chunked(where, None, [], None, failure)
                continue
            outcome = next(found)
            if isinstance(outcome, str):
                yield Chunked(where, None, [], None, outcome)
                continue
            spans, tokens = outcome
            text = document.text
            chunks = [Chunk(start, end, text[start:end]) for start, end in spans]
            yield Chunked(where, document, chunks, tokens, None)

    def _start(self) -> Executor | None:
        if self._pool is None and self._workers > 0:
            context = _context()
            if context is None:
                self._workers = 0
                return None
            self._pool = ProcessPoolExecutor(
                self._workers, mp_context=context, initializer=_in_worker
            )
        return self._pool if self._workers > 0 else None


def _context() -> Any:
    """``fork`` where no other thread runs (forking a threaded process can deadlock the
    child), else ``forkserver``; ``None`` where neither is available."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        return multiprocessing.get_context("forkserver")
    return None


def _in_worker() -> None:
    """The worker's setup. Ctrl-C is the indexing process's to handle (it stops the worker).
    And the worker ends when its parent does (the indexing process, or the fork server, which
    ends with it), even by ``kill -9``, which would otherwise leave it waiting for work."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_WATCH_S)
        os._exit(1)

    threading.Thread(target=watch, name="ctxasm-parent-watch", daemon=True).start()


_WATCH_S = 0.25
