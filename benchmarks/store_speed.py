"""The SQLite store: indexing throughput, and retrieval + assembly over 10,000 chunks (issue 5).

Run from the repository root::

    TIKTOKEN_CACHE_DIR=../shared/tiktoken-cache python benchmarks/store_speed.py
    python benchmarks/store_speed.py --chunks 10000 --repeats 9

Workload: the ten articles of ``../shared/eval/wikipedia_10_articles.jsonl``, indexed as they
are (throughput: documents/s and tokens/s of the real ``index_paths``), then copied with a marker
word per copy into ``--chunks`` chunks spread over three tenants and four reader groups. Each
repeat asks one of a fixed list of questions as a principal of one tenant and group: retrieval
(access in SQL, BM25 over the visible chunks) and ``ctxasm.assemble`` of the top 50, timed
together; the script prints the median and the 95th percentile and PASS/MISS against the target
("well under a second": 1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTICLES = ROOT.parent / "shared" / "eval" / "wikipedia_10_articles.jsonl"
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken-cache"
QUESTIONS = [
    "Where did Aristotle teach philosophy?",
    "What did the Roman Empire build?",
    "When was the printing press invented?",
    "Which rivers flow through the city?",
    "What is photosynthesis in plants?",
]
TARGET_S = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    if TIKTOKEN_CACHE.is_dir():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    if not ARTICLES.is_file():
        print(f"missing {ARTICLES}", file=sys.stderr)
        return 2
    import ctxasm
    from ctxasm.data import Principal
    from ctxasm.store import SQLiteStore, chunk_text, index_paths
    from ctxasm.store.documents import read_documents

    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "throughput.db")
        started = time.perf_counter()
        report = index_paths(store, [ARTICLES], tenant="t0", readers=["g0"])
        seconds = time.perf_counter() - started
        print(
            f"indexing: {report.added} documents, {report.chunks} chunks, {report.tokens:,} tokens "
            f"in {seconds:.2f} s = {report.added / seconds:.1f} documents/s, "
            f"{report.tokens / seconds:,.0f} tokens/s"
        )
        store.close()

        big = SQLiteStore(Path(folder) / "big.db")
        documents = list(read_documents(ARTICLES))
        chunked = [(d, chunk_text(d.text, 256, 32)) for d in documents]
        per_round = sum(len(chunks) for _, chunks in chunked)
        rounds = max(1, -(-args.chunks // per_round))
        for copy in range(rounds):
            for index, (document, chunks) in enumerate(chunked):
                marked = [type(c)(c.start, c.end, f"{c.text} v{copy}") for c in chunks]
                big.upsert(
                    type(document)(
                        doc_id=f"{document.doc_id}~{copy}",
                        text=document.text,
                        title=document.title,
                        url=document.url,
                        tenant=f"t{(copy + index) % 3}",
                        readers=(f"g{(copy * 7 + index) % 4}",),
                    ),
                    marked,
                )
        stats = big.stats()
        print(f"retrieval store: {stats.documents} documents, {stats.chunks} chunks")
        assembler = ctxasm.Assembler()
        times = []
        for repeat in range(args.repeats):
            question = QUESTIONS[repeat % len(QUESTIONS)]
            principal = Principal("u", f"t{repeat % 3}", (f"g{repeat % 4}",))
            started = time.perf_counter()
            passages = big.retrieve(question, principal, 50)
            result = assembler.assemble(
                query=question,
                passages=passages,
                principal={"id": "u", "tenant": principal.tenant, "groups": list(principal.groups)},
            )
            times.append(time.perf_counter() - started)
            assert all(e.reason.value != "access_denied" for e in result.report.excluded)
        times.sort()
        median = statistics.median(times)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        verdict = "PASS" if median <= TARGET_S else "MISS"
        print(
            f"retrieve + assemble over {stats.chunks:,} chunks: median {median * 1000:.0f} ms, "
            f"p95 {p95 * 1000:.0f} ms  {verdict} (target < {TARGET_S:.0f} s)"
        )
        print(json.dumps({"median_ms": round(median * 1000, 1), "p95_ms": round(p95 * 1000, 1)}))
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
