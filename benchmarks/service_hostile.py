"""Hostile load on the HTTP service (issue 10): do pathological requests slow everyone else down?

Run from the repository root::

    TIKTOKEN_CACHE_DIR=../shared/tiktoken-cache python benchmarks/service_hostile.py
    python benchmarks/service_hostile.py --seconds 30 --slow-sockets 500

The script starts ``ctxasm serve`` (one worker, default limits, header and body timeouts of
5 and 10 s) on a free loopback port, as
``service_load.py`` does, and runs two phases of ``--seconds`` each at concurrency 32:

- **clean:** 24 threads send normal requests (50 passages, ``service_load.py``'s requests);
- **hostile:** the same 24 threads, plus 8 threads cycling through pathological requests, plus
  ``--slow-sockets`` connections that send half a request line and stop, and a quarter as
  many that send their headers and one byte of the body and stop (the server should close them
  all: headers after ``header_timeout_s``, bodies with 408 after ``body_timeout_s``).

Pathological kinds: a ``Content-Length`` over the body limit; a chunked body streamed past it;
JSON nested 100,000 deep; a nested-loop template; a passage of 200,000 CJK characters with no
space; 16,000 newlines with ``system:`` elsewhere; ``"![" * 16000``; 2,000 near-identical
passages. Each request has a client timeout (``--timeout``), so the run stays bounded even
where a shape is still slow.

It prints one JSON line per phase (normal requests: count, p50, p99, errors; the server's peak
RSS sampled every 0.5 s), one line per pathological kind (count, statuses, median seconds),
the ratio of the hostile p99 to the clean p99 (the target is at most 2), and how many slow
sockets the server had closed by the end.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_load import TIKTOKEN_CACHE, _requests, start_server  # same normal requests

NORMAL_THREADS = 24
HOSTILE_THREADS = 8
QUERY = "Where did Aristotle teach?"
# default limits; timeouts shorter than the defaults (10 s, 30 s) so that a phase sees them act
SERVICE_CONFIG = "[service]\nheader_timeout_s = 5\nbody_timeout_s = 10\n"


def _post(base: str, body: bytes, timeout: float) -> tuple[int, float]:
    request = urllib.request.Request(f"{base}/v1/assemble", data=body, method="POST")
    request.add_header("content-type", "application/json")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        error.read()
        status = error.code
    except OSError:  # timed out or reset: counted as status 0
        status = 0
    return status, time.perf_counter() - started


def _raw(base: str, head: bytes, body_chunks: int, timeout: float) -> tuple[int, float]:
    """Send ``head`` then up to ``body_chunks`` 64 KiB chunks (chunked encoding); the status."""
    host, port = base.removeprefix("http://").split(":")
    started = time.perf_counter()
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            sock.sendall(head)
            chunk = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
            try:
                for _ in range(body_chunks):
                    sock.sendall(chunk)
            except OSError:
                pass  # the server answered and closed: read its answer
            line = sock.recv(4096).split(b"\r\n", 1)[0]
            status = int(line.split()[1]) if line.startswith(b"HTTP/") else 0
    except (OSError, ValueError, IndexError):
        status = 0
    return status, time.perf_counter() - started


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def _hostile_kinds(base: str, timeout: float) -> dict[str, Callable[[], tuple[int, float]]]:
    words = " ".join(f"word{i}" for i in range(40))
    near = [{"id": f"n{i}", "text": f"{words} variant {i}"} for i in range(2000)]
    bodies = {
        "deep_nesting": b'{"query": "q", "passages": ' + b"[" * 100_000,
        "nested_loop_template": _json(
            {
                "query": QUERY,
                "passages": [],
                "format": "template",
                "template": "{% for i in range(100000) %}{% for j in range(100000) %}x"
                "{% endfor %}{% endfor %}",
            }
        ),
        "cjk_run": _json({"query": QUERY, "passages": [{"id": "c", "text": "漢字" * 100_000}]}),
        "guard_newlines": _json(
            {"query": QUERY, "passages": [{"id": "g", "text": "system" + "\n" * 16_000 + ":"}]}
        ),
        "guard_images": _json({"query": QUERY, "passages": [{"id": "i", "text": "![" * 16_000}]}),
        "near_duplicates": _json({"query": QUERY, "passages": near}),
    }
    kinds: dict[str, Callable[[], tuple[int, float]]] = {
        name: (lambda body=body: _post(base, body, timeout)) for name, body in bodies.items()
    }
    kinds["content_length_over_limit"] = lambda: _raw(
        base,
        b"POST /v1/assemble HTTP/1.1\r\nHost: x\r\nContent-Length: 9437184\r\n\r\n",
        0,
        timeout,
    )
    kinds["chunked_over_limit"] = lambda: _raw(
        base,
        b"POST /v1/assemble HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        512,  # 32 MiB if nobody stops it
        timeout,
    )
    return kinds


class _Sampler(threading.Thread):
    """Peak RSS of the server, every 0.5 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0.0, True

    def run(self) -> None:
        while self.running:
            try:
                text = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            for line in text.splitlines():
                if line.startswith("VmRSS:"):
                    self.peak = max(self.peak, int(line.split()[1]) / 1024)
            time.sleep(0.5)


def _percentile(values: list[float], share: float) -> float | None:
    ordered = sorted(values)
    return round(1000 * ordered[int(share * (len(ordered) - 1))], 1) if ordered else None


def _phase(
    base: str, pid: int, bodies: list[bytes], args: argparse.Namespace, hostile: bool
) -> dict[str, Any]:
    deadline = time.perf_counter() + args.seconds
    normal: list[tuple[int, float]] = []
    bad: dict[str, list[tuple[int, float]]] = defaultdict(list)
    kinds = _hostile_kinds(base, args.timeout)
    names = sorted(kinds)
    sampler = _Sampler(pid)
    sampler.start()

    def normal_worker(offset: int) -> None:
        index = offset
        while time.perf_counter() < deadline:
            normal.append(_post(base, bodies[index % len(bodies)], args.timeout))
            index += NORMAL_THREADS

    def hostile_worker(offset: int) -> None:
        index = offset
        while time.perf_counter() < deadline:
            name = names[index % len(names)]
            bad[name].append(kinds[name]())
            index += HOSTILE_THREADS

    slow = _slow_sockets(base, args.slow_sockets) if hostile else []
    threads = NORMAL_THREADS + (HOSTILE_THREADS if hostile else 0)
    with ThreadPoolExecutor(threads) as pool:
        jobs = [pool.submit(normal_worker, i) for i in range(NORMAL_THREADS)]
        if hostile:
            jobs += [pool.submit(hostile_worker, i) for i in range(HOSTILE_THREADS)]
        for job in jobs:
            job.result()
    sampler.running = False
    latencies = [seconds for status, seconds in normal if status == 200]
    summary = {
        "phase": "hostile" if hostile else "clean",
        "normal_requests": len(normal),
        "normal_p50_ms": _percentile(latencies, 0.5),
        "normal_p99_ms": _percentile(latencies, 0.99),
        "normal_errors": sum(1 for status, _ in normal if status != 200),
        "server_peak_rss_mib": round(sampler.peak, 1),
    }
    if hostile:
        summary["slow_sockets_closed_by_server"] = f"{_closed(slow)} of {len(slow)}"
        summary["hostile"] = {
            name: {
                "count": len(results),
                "statuses": dict(Counter(str(status) for status, _ in results)),
                "median_s": round(statistics.median(s for _, s in results), 2),
            }
            for name, results in sorted(bad.items())
        }
    return summary


def _slow_sockets(base: str, count: int) -> list[socket.socket]:
    """``count`` clients that stall in their headers, and ``count // 4`` in their bodies."""
    host, port = base.removeprefix("http://").split(":")
    stalls = [b"GET /healthz HTTP/1.1\r\nHo"] * count
    stalls += [b"POST /v1/assemble HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"] * (
        count // 4
    )
    opened = []
    for stall in stalls:
        try:
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(stall)
            opened.append(sock)
        except OSError:
            break
    return opened


def _closed(sockets: list[socket.socket]) -> int:
    closed = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            while sock.recv(65536):  # a 408 answer, then the end of the stream
                pass
            closed += 1
        except BlockingIOError:  # still open
            pass
        except OSError:
            closed += 1
        sock.close()
    return closed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--timeout", type=float, default=60.0, help="client timeout per request")
    parser.add_argument("--slow-sockets", type=int, default=200)
    args = parser.parse_args()
    if TIKTOKEN_CACHE.is_dir():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    config = Path(tempfile.mkdtemp()) / "ctxasm.toml"
    config.write_text(SERVICE_CONFIG, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CTXASM_API_KEY"}
    server, base = start_server("--config", str(config), env=env)
    try:
        bodies = _requests(64)
        _post(base, bodies[0], args.timeout)  # warm up: tokenizer and strategies loaded
        print(f"service on {base}; {NORMAL_THREADS} normal + {HOSTILE_THREADS} hostile threads")
        clean = _phase(base, server.pid, bodies, args, hostile=False)
        print(json.dumps(clean))
        hostile = _phase(base, server.pid, bodies, args, hostile=True)
        kinds = hostile.pop("hostile")
        print(json.dumps(hostile))
        for name, outcome in kinds.items():
            print(json.dumps({"kind": name, **outcome}))
        ratio = None
        if clean["normal_p99_ms"] and hostile["normal_p99_ms"]:
            ratio = round(hostile["normal_p99_ms"] / clean["normal_p99_ms"], 2)
        print(json.dumps({"p99_ratio_hostile_to_clean": ratio, "target": 2.0}))
        return 0 if ratio is not None and ratio <= 2.0 and not hostile["normal_errors"] else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    raise SystemExit(main())
