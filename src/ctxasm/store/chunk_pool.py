"""Chunking beside the writer: documents are chunked in a worker process while the indexing
process parses files and writes batches to the store.

Chunking is CPU-bound Python (sentence splitting, token counting), and so is much of a store's
write; in one process they take turns on the interpreter lock, so on a machine with two or more
CPUs the chunking goes to a worker process. The results are the same as in process, in the
same order: documents are sent in groups of about :data:`GROUP_CHARS` characters, and their
results are taken back in the order the documents were read, with the read errors of each file
where they were met.

The worker is a fresh interpreter running :mod:`ctxasm.store.chunk_worker`, fed through its
standard input and output: nothing of the indexing process is copied or imported again (no
fork of a process with threads, no second run of the calling script), and it ends when its
input ends, so with the indexing process however that ends (Ctrl-C, ``kill -9``). It starts
only when there is enough to chunk (a first group full), and while it starts, or whenever the
indexing process would wait for it, the indexing process chunks groups itself. A worker that
fails, or finds another ctxasm than its parent's, is not fatal: its groups, and all later
ones, are chunked in process.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, InvalidStateError
from pathlib import Path
from typing import NamedTuple

from ctxasm.errors import RequestError
from ctxasm.store.chunking import Chunk, chunk_and_count
from ctxasm.store.documents import Document

__all__ = [
    "GROUP_CHARS",
    "Chunked",
    "Chunker",
    "WorkerGoneError",
    "auto_workers",
    "chunk_group",
    "failure_reason",
]

GROUP_CHARS = 256 * 1024  # document text sent to the worker at a time
# Text sent to the workers and not given back yet: more than a write batch of prose (5,000
# chunks take about 4 MB), so a worker keeps busy while a batch is written, but not all of a
# large input, so that this process has groups left to chunk while it would wait (on the
# HotpotQA corpus of benchmarks/store_speed.py, 4-8 MB did best; 2 and 16 did 5-10% worse).
AHEAD_CHARS = 6 * 1024 * 1024
# Text read and not given back yet (sent, chunked or waiting for either), past which reading
# waits: it holds the documents in memory.
READ_AHEAD_CHARS = 64 * 1024 * 1024

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


def failure_reason(exc: Exception) -> str:
    """Why a document could not be chunked or written, for the report: the message of a
    :class:`RequestError`, else the exception's type and its text on one line."""
    if isinstance(exc, RequestError):
        return exc.message
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def chunk_group(
    texts: Sequence[str], chunk_tokens: int, overlap: int, encoding: str
) -> list[Outcome]:
    """:func:`~ctxasm.store.chunking.chunk_and_count` of each text, with a failure as its
    reason (in process or in the worker: the same function, so the same answers)."""
    found: list[Outcome] = []
    for text in texts:
        try:
            chunks, tokens = chunk_and_count(text, chunk_tokens, overlap, encoding)
        except Exception as exc:
            found.append(failure_reason(exc))
            continue
        found.append(([(c.start, c.end) for c in chunks], tokens))
    return found


def auto_workers() -> int:
    """Worker processes for chunking by default: one where this process may use two or more
    CPUs, else none."""
    usable = getattr(os, "sched_getaffinity", None)  # Linux: the CPUs this process may use
    cpus = len(usable(0)) if usable is not None else os.cpu_count() or 1
    return 1 if cpus >= 2 else 0


class _Group:
    """Documents chunked together: their entries in reading order, and the outcomes of their
    texts (resolved by a worker, or in process)."""

    def __init__(self, entries: list[tuple[str, Document | None, str | None]], texts: list[str]):
        self.entries = entries  # (where, document, failure)
        self.texts = texts
        self.chars = sum(map(len, texts))
        self.outcomes: Future[list[Outcome]] = Future()
        self.sent = False  # to a worker


class Chunker:
    """Chunks documents in reading order, in ``workers`` processes (0: in this one).

    :meth:`add` and :meth:`fail` take the run's entries in order; :meth:`ready` gives back those
    done, in the same order, and :meth:`finish` all the rest. Groups go to the workers while
    they have less than ``AHEAD_CHARS`` to do; whenever this process would wait for one, it
    chunks the last group not sent yet itself. Use it as a context manager, which ends the
    workers on the way out.
    """

    def __init__(self, chunk_tokens: int, overlap: int, encoding: str, workers: int) -> None:
        self._job = (chunk_tokens, overlap, encoding)
        self._workers = workers
        self._started: list[_Worker] = []
        self._entries: list[tuple[str, Document | None, str | None]] = []
        self._texts: list[str] = []
        self._chars = 0  # in the group being filled
        self._groups: deque[_Group] = deque()  # formed, not given back yet
        self._unsent: deque[_Group] = deque()  # formed, neither sent nor chunked yet
        self._formed = 0  # characters formed into groups and not given back
        self._ahead = 0  # characters sent to the workers and not given back
        self._turn = 0  # the worker that gets the next group

    def __enter__(self) -> Chunker:
        return self

    def __exit__(self, *exc: object) -> None:
        for worker in self._started:
            worker.close()
        self._started = []

    def add(self, where: str, document: Document) -> None:
        """A document to chunk."""
        self._entries.append((where, document, None))
        self._texts.append(document.text)
        self._chars += len(document.text)
        if self._chars >= GROUP_CHARS:
            self._form(full=True)

    def fail(self, where: str, reason: str) -> None:
        """Something that could not be read, in its place among the documents."""
        self._entries.append((where, None, reason))

    def ready(self) -> Iterator[Chunked]:
        """The entries whose chunks are done, in order; waits (or chunks) only while more
        than ``READ_AHEAD_CHARS`` wait to be given back."""
        while self._groups and (self._groups[0].outcomes.done() or self._formed > READ_AHEAD_CHARS):
            yield from self._take()

    def finish(self) -> Iterator[Chunked]:
        """Every entry not given back yet, in order."""
        self._form(full=False)
        while self._groups:
            yield from self._take()

    def _form(self, *, full: bool) -> None:
        if full and self._workers > 0 and not self._started:  # worth a process
            self._started = [_Worker() for _ in range(self._workers)]
        if not self._entries:
            return
        group = _Group(self._entries, self._texts)
        self._entries, self._texts, self._chars = [], [], 0
        self._groups.append(group)
        self._unsent.append(group)
        self._formed += group.chars
        self._send()

    def _send(self) -> None:
        """Send the groups not sent yet to the workers while they have little to do; without
        workers, chunk them (an input under one group is not worth a process: it is chunked
        here when taken)."""
        if self._workers <= 0:
            while self._unsent:
                self._chunk_here(self._unsent.popleft())
            return
        if not self._started:
            return
        while self._unsent and self._ahead < AHEAD_CHARS:
            group = self._unsent.popleft()
            group.sent = True
            self._ahead += group.chars
            self._started[self._turn].submit(group.texts, self._job, group.outcomes)
            self._turn = (self._turn + 1) % len(self._started)

    def _chunk_here(self, group: _Group) -> None:
        outcomes = chunk_group(group.texts, *self._job)
        with contextlib.suppress(InvalidStateError):  # a worker was quicker: the same answer
            group.outcomes.set_result(outcomes)

    def _take(self) -> Iterator[Chunked]:
        group = self._groups[0]
        while not group.outcomes.done() and self._unsent:
            self._chunk_here(self._unsent.pop())  # the last: the workers reach it last
        if not group.outcomes.done() and not any(w.answered for w in self._started):
            self._chunk_here(group)  # the workers are still starting: sooner here
        try:
            outcomes = group.outcomes.result()
        except WorkerGoneError:  # this group and the rest, in process
            self._workers = 0
            outcomes = chunk_group(group.texts, *self._job)
        self._groups.popleft()
        self._formed -= group.chars
        if group.sent:
            self._ahead -= group.chars
        self._send()
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


class WorkerGoneError(RuntimeError):
    """A worker process ended, or never started, before it answered."""


# The worker checks that it runs this very module (and so this ctxasm), or ends at once.
_SELF = str(Path(__file__).resolve())


class _Worker:
    """One worker process (:mod:`ctxasm.store.chunk_worker`) and the two threads that feed it
    groups and read back their outcomes, which it answers in the order they were sent."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # ctxasm is imported from where this process found it: an installed one from the
        # interpreter's own site-packages, any other (a checkout) from its folder
        root = Path(__file__).resolve().parents[2]
        if root.name not in ("site-packages", "dist-packages"):
            env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(root), env.get("PYTHONPATH"))))
        self._waiting: deque[Future[list[Outcome]]] = deque()
        self._todo: queue.SimpleQueue[tuple[list[str], tuple[int, int, str]] | None]
        self._todo = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._gone = False
        self.answered = 0  # groups it has sent back
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-P", "-m", "ctxasm.store.chunk_worker", _SELF],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                # out of the terminal's process group: Ctrl-C is the indexing process's
                start_new_session=True,
            )
        except OSError:
            self._process, self._gone = None, True
            return
        for loop in (self._send_loop, self._receive_loop):
            threading.Thread(target=loop, name="ctxasm-chunk-worker", daemon=True).start()

    def submit(
        self, texts: list[str], job: tuple[int, int, str], future: Future[list[Outcome]]
    ) -> None:
        """Chunk ``texts``: ``future`` gets the outcomes when the worker has sent them."""
        with self._lock:
            if self._gone:
                future.set_exception(WorkerGoneError("the chunking worker is gone"))
                return
            self._waiting.append(future)
        self._todo.put((texts, job))

    def close(self) -> None:
        """End the worker now: what it was sent has been given back, or is not wanted (it
        writes nothing, so nothing is lost)."""
        self._todo.put(None)
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def _send_loop(self) -> None:
        assert self._process is not None and self._process.stdin is not None
        sink = self._process.stdin
        try:
            while (item := self._todo.get()) is not None:
                pickle.dump(item, sink, protocol=pickle.HIGHEST_PROTOCOL)
                sink.flush()
        except OSError:  # the worker is gone: the reader fails what waits
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.close()

    def _receive_loop(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        source = self._process.stdout
        try:
            while True:
                outcomes = pickle.load(source)
                with self._lock:
                    future = self._waiting.popleft()
                with contextlib.suppress(InvalidStateError):  # chunked in process meanwhile
                    future.set_result(outcomes)
                self.answered += 1
        except Exception:  # the end of its output (it ended), or an answer that makes no sense
            pass
        with contextlib.suppress(OSError):
            source.close()
        with self._lock:
            self._gone = True
            waiting, self._waiting = self._waiting, deque()
        for future in waiting:
            with contextlib.suppress(InvalidStateError):
                future.set_exception(WorkerGoneError("the chunking worker ended early"))
