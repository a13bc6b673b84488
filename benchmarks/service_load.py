"""Load on the HTTP service (issue 6): throughput and latency at concurrency 1, 8 and 32, memory
over many requests, and an overload run with bad requests mixed in.

Run from the repository root::

    TIKTOKEN_CACHE_DIR=../shared/tiktoken-cache python benchmarks/service_load.py
    python benchmarks/service_load.py --seconds 10 --memory-requests 10000 --workers 2

The script starts ``ctxasm serve`` as a separate process on a free loopback port and sends it
requests of 50 passages (cut from ``../shared/eval/wikipedia_10_articles.jsonl``, fixed seed)
from a thread pool in this process, each phase bounded in time. For each concurrency it prints
requests/s, p50 and p99 latency, the error count, and the share of the latency that is not
the assembly itself (``report.timings_ms.total``): framework, JSON, HTTP and the client's own
work, and at higher concurrency mostly queueing behind the busy worker. Then it
sends ``--memory-requests`` requests and samples the server's resident memory (psutil) at the
start and end; then an overload phase mixes oversized and malformed bodies with valid requests
and checks that only the bad ones fail, with 4xx.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARTICLES = ROOT.parent / "shared" / "eval" / "wikipedia_10_articles.jsonl"
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken-cache"
QUESTIONS = [
    "Where did Aristotle teach?",
    "What did the Roman Empire build?",
    "When was printing invented?",
    "Which rivers flow through the city?",
]


def _requests(count: int) -> list[bytes]:
    texts = [json.loads(line)["text"] for line in ARTICLES.read_text().splitlines()]
    paragraphs = [p for text in texts for p in text.split("\n") if len(p) > 200]
    rng = random.Random(20260101)
    bodies = []
    for index in range(count):
        passages = [
            {"id": f"p{i}", "text": rng.choice(paragraphs)[:1200], "score": round(rng.random(), 4)}
            for i in range(50)
        ]
        request = {
            "query": QUESTIONS[index % len(QUESTIONS)],
            "passages": passages,
            "max_context_tokens": 2000,
        }
        bodies.append(json.dumps(request).encode())
    return bodies


def _post(base: str, body: bytes) -> tuple[int, float, float]:
    """(status, seconds, assembly ms) of one request."""
    request = urllib.request.Request(f"{base}/v1/assemble", data=body, method="POST")
    request.add_header("content-type", "application/json")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            data = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        error.read()
        return error.code, time.perf_counter() - started, 0.0
    elapsed = time.perf_counter() - started
    total = json.loads(data)["report"]["timings_ms"].get("total", 0.0)
    return status, elapsed, total


def _phase(base: str, bodies: list[bytes], concurrency: int, seconds: float) -> dict[str, Any]:
    results: list[tuple[int, float, float]] = []
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()

    def worker(offset: int) -> None:
        index = offset
        while time.perf_counter() < deadline:
            results.append(_post(base, bodies[index % len(bodies)]))
            index += concurrency

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    wall = time.perf_counter() - started
    latencies = sorted(r[1] for r in results)
    ok = [r for r in results if r[0] == 200]
    overhead = [1 - (r[2] / 1000) / r[1] for r in ok if r[1] > 0]
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "rps": round(len(results) / wall, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 1)
        if latencies
        else None,
        "errors": len(results) - len(ok),
        "overhead_share": round(statistics.median(overhead), 3) if overhead else None,
    }


def start_server(
    *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``ctxasm serve`` on a free loopback port with ``args``, once ``/healthz`` answers (or
    after 30 s): the process and its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    return server, base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--memory-requests", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    if TIKTOKEN_CACHE.is_dir():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    import psutil

    server, base = start_server("--workers", str(args.workers))
    try:
        bodies = _requests(64)
        _post(base, bodies[0])  # warm up: tokenizer and strategies loaded
        print(f"service on {base}, {args.workers} worker(s); requests of 50 passages")
        for concurrency in (1, 8, 32):
            print(json.dumps(_phase(base, bodies, concurrency, args.seconds)))
        process = psutil.Process(server.pid)

        def rss() -> float:
            members = [process, *process.children(recursive=True)]
            return sum(p.memory_info().rss for p in members) / 2**20

        before = rss()
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            statuses = list(
                pool.map(
                    lambda i: _post(base, bodies[i % len(bodies)])[0], range(args.memory_requests)
                )
            )
        after = rss()
        print(
            json.dumps(
                {
                    "memory_requests": args.memory_requests,
                    "seconds": round(time.perf_counter() - started, 1),
                    "errors": sum(1 for s in statuses if s != 200),
                    "rss_mib_before": round(before, 1),
                    "rss_mib_after": round(after, 1),
                }
            )
        )
        bad = [
            b"{not json",
            b"[1,2]",
            json.dumps({"query": "q", "passages": [{"text": 5}]}).encode(),
            json.dumps({"query": "q", "passages": [{"text": "x"}] * 3000}).encode(),
        ]
        mixed = [bodies[i % len(bodies)] if i % 3 else bad[i % len(bad)] for i in range(600)]
        with ThreadPoolExecutor(16) as pool:
            outcomes = list(pool.map(lambda b: (b in bad, _post(base, b)[0]), mixed))
        valid_failed = sum(1 for is_bad, status in outcomes if not is_bad and status != 200)
        bad_statuses = sorted({status for is_bad, status in outcomes if is_bad})
        print(
            json.dumps(
                {
                    "overload_requests": len(mixed),
                    "valid_failed": valid_failed,
                    "bad_statuses": bad_statuses,
                }
            )
        )
        ok = valid_failed == 0 and all(400 <= s < 500 for s in bad_statuses)
        return 0 if ok else 1
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    raise SystemExit(main())
