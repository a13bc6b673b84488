"""Request parsing speed: JSON bytes to a checked ``Request``, and a decoded dict to one.

Run from the repository root::

    python benchmarks/parse_speed.py                 # N = 20, 200, 2000; 15 repeats
    python benchmarks/parse_speed.py --quick         # 5 repeats
    python benchmarks/parse_speed.py --sizes 2000 --repeats 31 --clock cpu
    python benchmarks/parse_speed.py --json          # the rows as JSON

Two paths are timed per N, each as the median of ``--repeats`` runs (a run parses the request
enough times to take a few milliseconds), in microseconds per passage:

* **bytes**: ``parse_request(decode_object(raw))``, what the CLI, batch lines and the HTTP
  service do with a request body;
* **dict**: ``parse_request(data)`` on the decoded dict, what the Python API does;

next to ``json.loads(raw)`` of the same bytes, the floor of any reader in the standard library,
as a ratio. Each path is PASS when at most ``--target`` microseconds per passage (3 by default).

Workload: passages synthesized from seeded random words, so no data files are needed. Each has
``id``, ``text`` (about 700 characters), ``score``, ``doc_id``, ``title`` and ``url``; half carry
``start``/``end`` offsets and a third a small ``metadata`` object. Text is mostly ASCII, as in
English encyclopedia prose: by default 70% of the texts are pure ASCII, 10% hold a Latin-1
letter and 20% a character beyond it (a dash or curly quote), which decides how the text is
stored and checked (``--non-ascii`` sets the share). The bytes are ``json.dumps`` output with
its defaults (non-ASCII escaped), as most Python clients send. ``--clock cpu`` times with this
thread's CPU time, steadier than wall time on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ctxasm import parse_request
from ctxasm.jsonio import decode_object

SEED = 20240601
SIZES = (20, 200, 2000)
TARGET_US = 3.0
TEXT_CHARS = 700
WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if so "
    "what no more out up into do can other some time could than them these two may first then "
    "only its over also new about after know river city empire treaty century population "
    "government university museum north south western eastern island mountain war king church"
).split()
LATIN_1 = ("café", "Zürich", "naïve", "façade", "São")
WIDER = ("1990–1995", "“quoted”", "Łódź", "—", "€20")


def make_passages(n: int, non_ascii: float, seed: int = SEED) -> list[dict[str, Any]]:
    """``n`` passages as a retriever returns them, the same for the same arguments."""
    rng = random.Random(seed)
    passages = []
    for i in range(n):
        words: list[str] = []
        length = 0
        while length < TEXT_CHARS:
            word = rng.choice(WORDS)
            words.append(word)
            length += len(word) + 1
        draw = rng.random()
        if draw < non_ascii / 3:
            words[rng.randrange(len(words))] = rng.choice(LATIN_1)
        elif draw < non_ascii:
            words[rng.randrange(len(words))] = rng.choice(WIDER)
        doc = i // 5
        passage: dict[str, Any] = {
            "id": f"doc-{doc}#{i}",
            "text": " ".join(words),
            "score": round(rng.random(), 6),
            "doc_id": f"doc-{doc}",
            "title": f"Document {doc}",
            "url": f"https://example.org/doc/{doc}",
        }
        if rng.random() < 0.5:
            start = rng.randrange(0, 20_000)
            passage["start"], passage["end"] = start, start + len(passage["text"])
        if rng.random() < 0.3:
            passage["metadata"] = {"source": "wiki", "rank": i, "tags": ["a", "b"]}
        passages.append(passage)
    return passages


def make_request(n: int, non_ascii: float) -> dict[str, Any]:
    return {
        "query": "What did the committee decide about the budget?",
        "passages": make_passages(n, non_ascii),
        "model": "gpt-4o",
        "max_context_tokens": 4096,
    }


def median_seconds(work: Callable[[], object], repeats: int, clock: Callable[[], float]) -> float:
    """The median time of one call of ``work``: each of ``repeats`` runs calls it enough times
    to take about 5 ms, after one call to warm caches."""
    work()
    start = clock()
    work()
    once = max(clock() - start, 1e-6)
    calls = max(1, round(0.005 / once))
    times = []
    for _ in range(repeats):
        start = clock()
        for _ in range(calls):
            work()
        times.append((clock() - start) / calls)
    return statistics.median(times)


def measure(n: int, repeats: int, non_ascii: float, clock: Callable[[], float]) -> dict[str, Any]:
    data = make_request(n, non_ascii)
    raw = json.dumps(data).encode()
    if parse_request(decode_object(raw)).passages != parse_request(data).passages:
        raise SystemExit(f"N={n}: the two paths built different passages")
    seconds = {
        "json_loads": median_seconds(lambda: json.loads(raw), repeats, clock),
        "bytes": median_seconds(lambda: parse_request(decode_object(raw)), repeats, clock),
        "dict": median_seconds(lambda: parse_request(data), repeats, clock),
    }
    per_passage = {name: value / n * 1e6 for name, value in seconds.items()}
    return {
        "n": n,
        "bytes_per_passage": len(raw) // n,
        "us_per_passage": {name: round(value, 3) for name, value in per_passage.items()},
        "ratio_to_json_loads": {
            name: round(per_passage[name] / per_passage["json_loads"], 2)
            for name in ("bytes", "dict")
        },
    }


def _reader() -> str:
    """Which reader ctxasm.jsonio uses first: jiter where installed, else the standard one."""
    try:
        return f"jiter {version('jiter')}, then the standard library where it declines"
    except PackageNotFoundError:
        return "the standard library (jiter is not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="passage counts")
    parser.add_argument("--repeats", type=int, default=15, help="runs per median (default 15)")
    parser.add_argument("--quick", action="store_true", help="5 repeats")
    parser.add_argument("--target", type=float, default=TARGET_US, help="µs per passage")
    parser.add_argument(
        "--non-ascii", type=float, default=0.3, help="share of texts with non-ASCII (0.3)"
    )
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="wall time or thread CPU time"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else args.repeats
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = [measure(n, repeats, args.non_ascii, clock) for n in sizes]
    for row in rows:
        row["verdict"] = {
            name: "PASS" if row["us_per_passage"][name] <= args.target else "MISS"
            for name in ("bytes", "dict")
        }
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"median of {repeats} runs, {args.clock} clock, µs per passage; "
        f"target <= {args.target:g} µs per passage; JSON read by {_reader()}"
    )
    header = (
        f"{'N':>6} {'bytes/p':>8} {'json.loads':>11} {'bytes->Request':>22} {'dict->Request':>22}"
    )
    print(header)
    for row in rows:
        us, ratio, verdict = row["us_per_passage"], row["ratio_to_json_loads"], row["verdict"]
        print(
            f"{row['n']:>6} {row['bytes_per_passage']:>8} {us['json_loads']:>11.2f} "
            f"{us['bytes']:>8.2f} ({ratio['bytes']:.2f}x) {verdict['bytes']:>4}  "
            f"{us['dict']:>8.2f} ({ratio['dict']:.2f}x) {verdict['dict']:>4}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
