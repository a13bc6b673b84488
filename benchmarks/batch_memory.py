"""Peak memory of `ctxasm batch` against input size: streaming keeps it flat.

Writes JSONL files of 500, 5,000 and 20,000 requests (each with 12 passages drawn from the
Wikipedia articles in ../shared/eval), runs the real console script on each in a fresh process,
and prints the peak resident memory and the wall time per file.

    python benchmarks/batch_memory.py
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTICLES = ROOT.parent / "shared" / "eval" / "wikipedia_10_articles.jsonl"
SIZES = (500, 5_000, 20_000)


def paragraphs() -> list[dict[str, str]]:
    if not ARTICLES.exists():
        sys.exit(f"benchmark data not found: {ARTICLES}")
    found = []
    for line in ARTICLES.read_text().splitlines():
        article = json.loads(line)
        for block in article["text"].split("\n\n"):
            if len(block) > 200:
                found.append(
                    {"title": article["title"], "url": article["url"], "text": block[:900]}
                )
    return found


def write_requests(path: Path, count: int, pool: list[dict[str, str]]) -> None:
    rng = random.Random(count)
    with path.open("w") as out:
        for number in range(count):
            picked = rng.sample(pool, 12)
            passages = [
                {"id": f"r{number}-{i}", "score": round(rng.random(), 4), **p}
                for i, p in enumerate(picked)
            ]
            request = {
                "query": f"What is said about {picked[0]['title']}?",
                "passages": passages,
                "max_context_tokens": 1500,
            }
            out.write(json.dumps(request) + "\n")


def peak_rss_mb(command: list[str]) -> tuple[float, float]:
    """Run ``command`` in a child whose own peak RSS we read from wait4."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"batch failed: {process.stderr.read().decode() if process.stderr else ''}")
    return usage.ru_maxrss / 1024, elapsed


def main() -> None:
    ctxasm = str(Path(sys.executable).parent / "ctxasm")
    pool = paragraphs()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for count in SIZES:
            source = Path(folder) / f"in-{count}.jsonl"
            write_requests(source, count, pool)
            size_mb = source.stat().st_size / 1e6
            rss, seconds = peak_rss_mb(
                [ctxasm, "batch", str(source), str(Path(folder) / "out.jsonl"), "--no-progress"]
            )
            rows.append((count, size_mb, rss, seconds))
    print(f"{'requests':>9} {'input MB':>9} {'peak RSS MB':>12} {'seconds':>8} {'req/s':>7}")
    for count, size_mb, rss, seconds in rows:
        print(f"{count:>9,} {size_mb:>9.1f} {rss:>12.1f} {seconds:>8.1f} {count / seconds:>7.0f}")
    growth = rows[-1][2] / rows[0][2]
    print(
        f"peak RSS ratio, largest / smallest input: {growth:.2f}x "
        f"for {rows[-1][1] / rows[0][1]:.0f}x the input (flat means close to 1.0x)"
    )


if __name__ == "__main__":
    main()
