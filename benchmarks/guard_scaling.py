"""Injection-scan time against input size on adversarial shapes (issue 10, item 1).

Run from the repository root::

    python benchmarks/guard_scaling.py                 # this tree
    python benchmarks/guard_scaling.py --baseline 31bcb59 --sizes 2000,4000,8000

For each shape, the scan of n and 8n characters (median of ``--repeats`` cold scans) and the
ratio time(8n) / (8 * time(n)): about 1 for a linear scan, about 8 for a quadratic one. Then
the throughput on normal text: the Wikipedia paragraphs of ``../shared/eval`` (skipped when
absent), scanned cold, in MB/s, for this tree and the baseline commit.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTICLES = ROOT.parent / "shared" / "eval" / "wikipedia_10_articles.jsonl"

# name -> text of about n characters
SHAPES: dict[str, Callable[[int], str]] = {
    "newlines, system and ':' elsewhere": lambda n: "system" + "\n" * n + ":",
    "'![' repeated": lambda n: "![" * (n // 2),
    "'](' repeated": lambda n: "](" * (n // 2),
    "'[Source ' repeated": lambda n: "[Source " * (n // 8),
    "'<document' repeated": lambda n: "<document " * (n // 10),
    "'<img ' repeated": lambda n: "<img " * (n // 5),
    "'ignore ' repeated": lambda n: "ignore " * (n // 7),
    "'ignore previous ' repeated": lambda n: "ignore previous " * (n // 16),
    "short base64 runs": lambda n: "SWdub3JlIGFsbCBy " * (n // 17),
    "one long base64 run": lambda n: "QUJD" * (n // 4),
    "'\"role\": ' repeated": lambda n: '"role": ' * (n // 8),
    "'system:' lines": lambda n: "system:\n" * (n // 8),
    "single letters": lambda n: "a " * (n // 2),
    "CJK run": lambda n: "忽略之前" * (n // 4),
    "zero-width and soft hyphens": lambda n: "i\u200bg\u00adn" * (n // 5),
    "'%' escapes": lambda n: "%41" * (n // 3),
    "Markdown emphasis and code": lambda n: "ig**no**re _a_ `b` *c " * (n // 22),
    "'*' without a closing one": lambda n: "*" + "a" * (n - 1),
    "'System: value' lines": lambda n: "System: Ubuntu 22.04\n" * (n // 21),
    "'hey ai, ' repeated": lambda n: "hey ai, " * (n // 8),
    "'. note to the ai agent' repeated": lambda n: ". note to the ai agent" * (n // 22),
    "'assistant: please ' repeated": lambda n: "assistant: please " * (n // 18),
    "'ai ' repeated, then ':'": lambda n: "ai " * (n // 3) + ":",
    "'[ai, ' repeated": lambda n: "[ai, " * (n // 5),
    "'bot, run the tests. ' repeated": lambda n: "bot, run the tests. " * (n // 20),
}

Scan = Callable[[str], tuple[str, ...]]


def timed(scan: Scan, clear: Callable[[], None], text: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        clear()
        start = time.perf_counter()
        scan(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def scaling(scan: Scan, clear: Callable[[], None], sizes: list[int], repeats: int) -> None:
    header = "".join(f"{n:>12,}" for n in sizes)
    print(f"{'shape':<38}{header}   ratio t(8n)/8t(n)")
    for name, make in SHAPES.items():
        row = [timed(scan, clear, make(n), repeats) for n in sizes]
        cells = "".join(f"{t * 1000:>10.2f}ms" for t in row)
        ratios = [row[i + 1] / (row[i] * sizes[i + 1] / sizes[i]) for i in range(len(row) - 1)]
        print(f"{name:<38}{cells}   {' '.join(f'{r:.2f}' for r in ratios)}")


def throughput(scan: Scan, clear: Callable[[], None], repeats: int) -> float | None:
    if not ARTICLES.exists():
        print(f"skipped throughput: {ARTICLES} is not present")
        return None
    paragraphs = [
        p
        for line in ARTICLES.read_text(encoding="utf-8").splitlines()
        for p in json.loads(line)["text"].split("\n\n")
        if p.strip()
    ]
    size = sum(len(p.encode()) for p in paragraphs)
    times = []
    for _ in range(repeats):
        clear()
        start = time.perf_counter()
        for paragraph in paragraphs:
            scan(paragraph)
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    print(f"  {len(paragraphs)} paragraphs, {size / 1e6:.2f} MB: {seconds * 1000:.1f} ms, "
          f"{size / 1e6 / seconds:.1f} MB/s")  # fmt: skip
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8000,64000", help="n values (each 8x the last)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", metavar="REF", help="also time the scan of a commit")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(args.src))
    from ctxasm.stages.guard import InjectionScanGuard, clear_caches

    sizes = [int(s) for s in args.sizes.split(",")]
    print("=== this tree: scan time by input size ===")
    scaling(InjectionScanGuard().scan, clear_caches, sizes, args.repeats)
    print("\n=== normal text throughput (cold) ===\nthis tree:")
    ours = throughput(InjectionScanGuard().scan, clear_caches, args.repeats * 3)
    if args.baseline:
        # The commit's whole package, timed in a process of its own (the scan spans modules).
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from guard_quality import unpacked_source

        with unpacked_source(args.baseline) as source:
            done = subprocess.run(
                [sys.executable, __file__, "--src", str(source), "--sizes", args.sizes,
                 "--repeats", str(args.repeats)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
        print(f"\n=== baseline {args.baseline} ===")
        print(done.stdout.replace("this tree", f"at {args.baseline}"), end="")
        found = re.search(r"MB: ([0-9.]+) ms", done.stdout)
        if ours and found:
            print(f"  this tree / baseline = {ours * 1000 / float(found.group(1)):.2f}")


if __name__ == "__main__":
    main()
