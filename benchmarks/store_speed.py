"""The SQLite store: indexing throughput (issues 5 and 17), and retrieval + assembly over 10,000
chunks (issue 5).

Run from the repository root::

    TIKTOKEN_CACHE_DIR=../shared/tiktoken-cache python benchmarks/store_speed.py
    python benchmarks/store_speed.py --chunks 10000 --repeats 9
    python benchmarks/store_speed.py --index-repeats 5 --skip-retrieval
    git archive HEAD src | tar -x -C /tmp/before    # then, before/after in the same run:
    python benchmarks/store_speed.py --skip-retrieval --baseline /tmp/before/src

End to end (issue 17, target 5,000 chunks/s): ``ctxasm index`` in a fresh interpreter, as a
user runs it, on a HotpotQA corpus written to a temporary folder from ``../shared/eval``: one
document per distinct passage title (its first text) and one per question joining its
passages, titles included (14,102 documents, 22,534 chunks at the default 256/32 with the
current chunker), into a new SQLite store each repeat, with a tenant and a reader. It prints
the median wall time and chunks/s, the median CPU time (user + system) and the ratio to the
target; with ``--baseline`` (the ``src`` folder of another checkout) the two run alternately,
so both see the same machine load, and the ratio of their medians is printed.

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
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTICLES = ROOT.parent / "shared" / "eval" / "wikipedia_10_articles.jsonl"
HOTPOT = [
    ROOT.parent / "shared" / "eval" / f"hotpotqa_{setting}.unified.jsonl"
    for setting in ("distractor", "fullwiki")
]
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken-cache"
QUESTIONS = [
    "Where did Aristotle teach philosophy?",
    "What did the Roman Empire build?",
    "When was the printing press invented?",
    "Which rivers flow through the city?",
    "What is photosynthesis in plants?",
]
TARGET_S = 1.0
TARGET_CHUNKS_PER_S = 5000


def _hotpot_corpus(path: Path) -> int:
    """Write the end-to-end corpus (see the module docstring) to ``path``; its documents."""
    titles: dict[str, str] = {}
    questions: list[tuple[str, str, str]] = []
    for source in HOTPOT:
        with source.open(encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line)
                for passage in row["passages"]:
                    titles.setdefault(passage["title"], passage["text"])
                joined = "\n\n".join(f"{p['title']}\n{p['text']}" for p in row["passages"])
                questions.append((f"{source.stem}:{row['id']}", row["question"], joined))
    rows = [(f"title:{title}", title, text) for title, text in titles.items()] + questions
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for doc_id, title, text in rows:
            if text.strip():
                line = {"doc_id": doc_id, "title": title, "text": text}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                written += 1
    return written


def _index_once(corpus: Path, store: Path, source: Path | None) -> tuple[float, float, int]:
    """``ctxasm index`` in a fresh interpreter (``source``: a ``src`` folder to import ctxasm
    from instead): wall seconds, CPU seconds (user + system) and chunks written."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    command = [sys.executable, "-m", "ctxasm", "index", str(corpus), "--store"]
    command += [f"sqlite:///{store}", "--tenant", "t", "--readers", "r", "--no-progress"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ctxasm index failed ({done.returncode}): {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    chunks = int(done.stderr.split("(")[-1].split(" chunks")[0])  # "(22534 chunks written)"
    return wall, cpu, chunks


def index_end_to_end(repeats: int, baseline: Path | None) -> dict[str, dict[str, float]]:
    """The end-to-end rows (see the module docstring), printed and returned."""
    runs: dict[str, list[tuple[float, float, int]]] = {"current": []}
    if baseline is not None:
        runs = {"baseline": [], "current": []}
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "hotpot.jsonl"
        documents = _hotpot_corpus(corpus)
        for _ in range(repeats):
            for name in runs:  # alternate, so that both see the same load
                source = baseline if name == "baseline" else None
                runs[name].append(_index_once(corpus, Path(folder) / f"{name}.db", source))
    print(f"ctxasm index end to end: {documents:,} HotpotQA documents, {repeats} repeats")
    rows: dict[str, dict[str, float]] = {}
    for name, found in runs.items():
        wall = statistics.median(w for w, _, _ in found)
        cpu = statistics.median(c for _, c, _ in found)
        chunks = found[0][2]
        rate = chunks / wall
        rows[name] = {"chunks": chunks, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
        rows[name]["chunks_per_s"] = round(rate)
        verdict = "PASS" if rate >= TARGET_CHUNKS_PER_S else "MISS"
        print(
            f"  {name}: {chunks:,} chunks, median {wall:.2f} s wall ({rate:,.0f} chunks/s, "
            f"{rate / TARGET_CHUNKS_PER_S:.2f}x the {TARGET_CHUNKS_PER_S:,}/s target, {verdict}), "
            f"median CPU {cpu:.2f} s; walls {', '.join(f'{w:.2f}' for w, _, _ in found)}"
        )
    if baseline is not None:
        speedup = rows["baseline"]["wall_s"] / rows["current"]["wall_s"]
        cpu_ratio = rows["baseline"]["cpu_s"] / rows["current"]["cpu_s"]
        print(f"  current vs baseline: {speedup:.2f}x wall, {cpu_ratio:.2f}x CPU")
    load = (
        " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc").is_dir() else "?"
    )
    print(f"  load average after the runs: {load} ({os.cpu_count()} CPUs)")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--index-repeats", type=int, default=3, help="end-to-end index runs")
    parser.add_argument(
        "--baseline", type=Path, help="a src folder to run alternately (before/after)"
    )
    parser.add_argument("--skip-retrieval", action="store_true", help="only index throughput")
    args = parser.parse_args()
    if TIKTOKEN_CACHE.is_dir():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    missing = [p for p in (ARTICLES, *HOTPOT) if not p.is_file()]
    if missing:
        print(f"missing {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    if args.index_repeats > 0:
        index_end_to_end(args.index_repeats, args.baseline)
    if args.skip_retrieval:
        return 0
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
