"""Time per question of the default strategy on HotpotQA, against the BM25-greedy baseline
(issue 3: "mean time per question for the default strategy <= 5 ms, tokenization included").

Run from the repository root::

    TIKTOKEN_CACHE_DIR=../shared/tiktoken-cache python benchmarks/eval_speed.py
    python benchmarks/eval_speed.py --repeats 3 --budgets 512,1024

Each repeat runs every question of ``../shared/eval/hotpotqa_distractor.unified.jsonl``
through ``ctxasm.evaluation.evaluate`` (the real assembler, token caches cleared before each
strategy and budget) for both strategies, interleaved, and records the mean milliseconds per
question; the script prints the median over repeats, the ratio default / baseline, and PASS or
MISS against the 5 ms target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared" / "eval" / "hotpotqa_distractor.unified.jsonl"
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken-cache"
TARGET_MS = 5.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budgets", default="256,512,1024,2048")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    args = parser.parse_args()
    if TIKTOKEN_CACHE.is_dir():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))
    if not args.dataset.is_file():
        print(f"missing {args.dataset}: this benchmark needs the shared eval data", file=sys.stderr)
        return 2
    from ctxasm.evaluation import evaluate, load_dataset, resolve_strategy

    questions = load_dataset(args.dataset)
    budgets = [int(b) for b in args.budgets.split(",")]
    names = ("default", "bm25_greedy")
    times: dict[tuple[str, int], list[float]] = {(n, b): [] for n in names for b in budgets}
    for _ in range(args.repeats):
        for name in names:
            for row in evaluate(questions, [resolve_strategy(name)], budgets):
                times[(name, row.budget)].append(row.ms_per_question)
    print(f"{len(questions)} questions, {args.repeats} repeats, median ms per question")
    print(f"{'budget':>7} {'default':>9} {'bm25_greedy':>12} {'ratio':>6}  target")
    missed = False
    for budget in budgets:
        ours = statistics.median(times[("default", budget)])
        base = statistics.median(times[("bm25_greedy", budget)])
        verdict = "PASS" if ours <= TARGET_MS else "MISS"
        missed = missed or verdict == "MISS"
        ratio = ours / base
        print(
            f"{budget:>7} {ours:>9.2f} {base:>12.2f} {ratio:>6.2f}  {verdict} (<= {TARGET_MS} ms)"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
