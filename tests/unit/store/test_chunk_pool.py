"""Chunking beside the writer (:mod:`ctxasm.store.chunk_pool`): with a real worker process, the
store and the report are those of chunking in process, failures stay in reading order, a worker
that dies (or never starts) costs nothing but time, and one left behind by a killed indexing
process ends."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from ctxasm import RequestError
from ctxasm.store import chunk_pool, index_paths, open_store

WORDS = (
    "river bridge city north south empire treaty museum island church war king century "
    "population mountain western eastern university government Vienna Danube Budapest"
).split()
TABLES = ("documents", "readers", "chunks", "access_classes", "class_readers", "class_terms")


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
    return " ".join(words).capitalize() + "."


def _corpus(folder: Path, documents: int = 120) -> Path:
    """JSONL files of seeded random prose, with bad lines and a file that is not UTF-8 among
    them, so failures of reading sit between documents."""
    rng = random.Random(7)
    folder.mkdir()
    for number in range(3):
        lines = []
        for index in range(documents // 3):
            doc = f"f{number}-d{index}"
            text = " ".join(_sentence(rng) for _ in range(rng.randint(1, 40)))
            tenant = f'"t{index % 2}"'
            lines.append(f'{{"doc_id": "{doc}", "text": "{text}", "tenant": {tenant}}}')
            if index % 17 == 5:
                lines.append(f'{{"doc_id": "{doc}-bad", "text": 3}}')
        (folder / f"part{number}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "part1.txt").write_bytes("Café".encode("latin-1"))
    return folder


def _snapshot(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as db:
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def _index(tmp_path: Path, corpus: Path, name: str, **options: Any) -> tuple[Any, dict[str, Any]]:
    path = tmp_path / f"{name}.db"
    store = open_store(f"sqlite:///{path}")
    try:
        options = {"readers": ["g1"], "chunk_tokens": 48, "overlap": 8, **options}
        report = index_paths(store, [corpus], **options)
    finally:
        store.close()
    return report, _snapshot(path)


class Workers:
    """The worker processes a run started, and the groups sent to them."""

    def __init__(self) -> None:
        self.started: list[Any] = []
        self.sent: list[Future[Any]] = []

    def failures(self) -> list[BaseException | None]:
        return [future.exception(timeout=30) for future in self.sent]


@pytest.fixture()
def workers(monkeypatch: pytest.MonkeyPatch) -> Workers:
    """Groups of about 2,000 characters, at most 6,000 sent ahead: a small corpus then makes
    many groups, some chunked by the worker (at least the first ones, which this process
    waits for) and the rest here, while the worker starts or is busy."""
    monkeypatch.setattr(chunk_pool, "GROUP_CHARS", 2000)
    monkeypatch.setattr(chunk_pool, "AHEAD_CHARS", 6000)
    seen = Workers()

    class Recorded(chunk_pool._Worker):
        def __init__(self) -> None:
            super().__init__()
            seen.started.append(self)

        def submit(self, texts: list[str], job: Any, future: Future[Any]) -> None:
            seen.sent.append(future)
            super().submit(texts, job, future)

    monkeypatch.setattr(chunk_pool, "_Worker", Recorded)
    return seen


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    return _corpus(tmp_path / "docs")


@pytest.fixture()
def in_process(tmp_path: Path, corpus: Path) -> tuple[Any, dict[str, Any]]:
    return _index(tmp_path, corpus, "alone", workers=0)


def test_a_worker_writes_the_store_and_report_of_chunking_in_process(
    tmp_path: Path, corpus: Path, in_process: tuple[Any, dict[str, Any]], workers: Workers
) -> None:
    report, tables = _index(tmp_path, corpus, "worker", workers=1)
    assert len(workers.started) == 1
    assert workers.sent and workers.failures() == [None] * len(workers.sent)
    assert (report, tables) == in_process
    assert report.added == 120 and report.chunks > 200
    # reading failures in file order, each where it was met
    assert [where.rsplit("/", 1)[-1] for where, _ in report.failed] == [
        *(f"part0.jsonl:{n}" for n in (7, 25, 43)),
        *(f"part1.jsonl:{n}" for n in (7, 25, 43)),
        "part1.txt",
        *(f"part2.jsonl:{n}" for n in (7, 25, 43)),
    ]


def test_failures_of_chunking_come_back_in_order(
    tmp_path: Path, corpus: Path, workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    # index_paths refuses these sizes before any file: let them through to chunking here,
    # where every document then fails (in the worker too), to see the failures' order.
    monkeypatch.setattr("ctxasm.store.check_chunking", lambda size, overlap: (size, overlap))
    alone = _index(tmp_path, corpus, "alone", workers=0, chunk_tokens=4)
    worker = _index(tmp_path, corpus, "worker", workers=1, chunk_tokens=4)
    assert len(workers.started) == 1 and workers.failures() == [None] * len(workers.sent)
    assert worker == alone
    report = worker[0]
    assert report.added == 0 and len(report.failed) == 130
    assert report.failed[0][1] == "chunk_tokens must be an integer >= 8; got int 4"


def test_a_worker_that_dies_leaves_its_groups_to_this_process(
    tmp_path: Path,
    corpus: Path,
    in_process: tuple[Any, dict[str, Any]],
    workers: Workers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = chunk_pool._Worker.submit

    def then_dies(self: Any, texts: list[str], job: Any, future: Future[Any]) -> None:
        real(self, texts, job, future)
        if len(workers.sent) == 1:
            os.kill(self._process.pid, signal.SIGKILL)  # no answer, no goodbye
            self._process.wait()
            future.exception(timeout=10)  # the worker's end is noticed

    monkeypatch.setattr(chunk_pool._Worker, "submit", then_dies)
    assert _index(tmp_path, corpus, "worker", workers=1) == in_process
    assert len(workers.started) == 1
    assert any(isinstance(error, chunk_pool.WorkerGoneError) for error in workers.failures())


def test_a_worker_that_cannot_start_leaves_everything_to_this_process(
    tmp_path: Path,
    corpus: Path,
    in_process: tuple[Any, dict[str, Any]],
    workers: Workers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    assert _index(tmp_path, corpus, "worker", workers=1) == in_process
    assert len(workers.started) == 1
    assert workers.failures() and all(
        isinstance(error, chunk_pool.WorkerGoneError) for error in workers.failures()
    )


def test_a_worker_that_finds_another_ctxasm_ends_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As when another interpreter's ctxasm would answer: the worker is told which module
    started it, and ends without answering when it runs another (its groups are then chunked
    in process, as for any worker that ends)."""
    monkeypatch.setattr(chunk_pool, "_SELF", str(tmp_path / "elsewhere" / "chunk_pool.py"))
    worker = chunk_pool._Worker()
    answer: Future[Any] = Future()
    worker.submit(["The Danube flows east."], (48, 8, "o200k_base"), answer)
    assert isinstance(answer.exception(timeout=30), chunk_pool.WorkerGoneError)
    assert worker._process is not None and worker._process.wait(timeout=30) == 2
    worker.close()


def test_a_ctxasm_package_in_the_working_folder_is_never_imported_by_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexing a folder from inside it: the worker's module path must not put the working
    folder first, where a ``ctxasm`` package of the corpus would run (and answer)."""
    planted = tmp_path / "corpus" / "ctxasm"
    planted.mkdir(parents=True)
    marker = tmp_path / "ran"
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.chdir(planted.parent)
    worker = chunk_pool._Worker()
    answer: Future[Any] = Future()
    worker.submit(
        ["The Danube flows east. It rises in the Black Forest."], (48, 8, "o200k_base"), answer
    )
    assert answer.result(timeout=60)  # the real worker answered
    worker.close()
    assert not marker.exists()


def test_other_threads_make_no_difference(
    tmp_path: Path, corpus: Path, in_process: tuple[Any, dict[str, Any]], workers: Workers
) -> None:
    """The worker is a fresh interpreter, not a fork: threads of this process do not matter."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert _index(tmp_path, corpus, "worker", workers=1) == in_process
    finally:
        stop.set()
        other.join()
    assert len(workers.started) == 1
    assert workers.sent and workers.failures() == [None] * len(workers.sent)


def test_a_small_input_is_chunked_in_process(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under one group of text (the default group size), no process is started."""
    started: list[object] = []
    monkeypatch.setattr(chunk_pool, "_Worker", lambda: started.append(1))
    report, _ = _index(tmp_path, corpus, "small", workers=1)
    assert report.added == 120 and started == []


def test_the_default_is_one_worker_with_two_cpus() -> None:
    expected = 1 if len(os.sched_getaffinity(0)) >= 2 else 0
    assert chunk_pool.auto_workers() == expected


@pytest.mark.parametrize("workers", [-1, True, 1.5, "2"])
def test_workers_must_be_a_count_of_processes(
    tmp_path: Path, corpus: Path, workers: object
) -> None:
    with pytest.raises(RequestError) as caught:
        _index(tmp_path, corpus, "bad", workers=workers)
    assert caught.value.field == "workers"
    assert "workers must be an integer >= 0" in caught.value.message


def test_chunker_gives_entries_back_in_order_whatever_finishes_first() -> None:
    """Entries added after a group was sent wait for it: ``ready`` never skips ahead."""
    from ctxasm.store.documents import Document

    with chunk_pool.Chunker(48, 8, "o200k_base", 0) as chunker:
        chunker.add("a", Document("a", "The Danube flows east. " * 12000))
        chunker.fail("b", "unreadable")
        chunker.add("c", Document("c", "The Rhine flows north."))
        taken: Iterator[chunk_pool.Chunked] = chunker.ready()
        first = [entry.where for entry in taken]
        rest = [entry.where for entry in chunker.finish()]
    assert first == ["a"] and rest == ["b", "c"]


WORKER_SCRIPT = """
import time
from ctxasm.store import chunk_pool
from ctxasm.store.documents import Document

chunk_pool.GROUP_CHARS = 100
chunker = chunk_pool.Chunker(48, 8, "o200k_base", 1)
for n in range(3):
    chunker.add(f"d{n}", Document(f"d{n}", "The Danube flows east through Vienna. " * 5))
list(chunker.finish())
print(chunker._started[0]._process.pid, flush=True)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited and not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the worker's state in /proc")
def test_the_worker_ends_when_the_indexing_process_is_killed(tmp_path: Path) -> None:
    script = subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT], stdout=subprocess.PIPE, text=True
    )
    try:
        assert script.stdout is not None
        [worker] = map(int, script.stdout.readline().split())
        assert _running(worker)
    finally:
        script.kill()  # SIGKILL: no clean-up runs in the script
        script.wait()
        if script.stdout is not None:
            script.stdout.close()
    deadline = time.monotonic() + 10
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(worker)
