"""How much of the retriever's top 10 the default keeps, against greedy selection by score.

Run from the repository root::

    python benchmarks/score_trust.py                  # N = 20, 200, 2000 at 4k; 5 seeds x 4 queries
    python benchmarks/score_trust.py --seeds 10 --noise 0,0.1,0.3 --sizes 200,2000

Workload: the candidates of ``benchmarks/assembly_speed.py`` (paragraphs and overlapping windows
of ``../shared/eval/wikipedia_10_articles.jsonl``, near-duplicate variant rounds beyond the
pool's 1,114), drawn with its seeded sampler, one draw per seed. Every candidate gets a score,
as a retriever would give it:

* ``bm25+noise S``: informative: Okapi BM25 of the query over title and text (statistics over
  the candidates), scaled so the best is 1, plus Gaussian noise of standard deviation S;
* ``random``: uniform in 0..1, as the ``given`` mode of ``assembly_speed.py`` draws them:
  no signal.

The retriever's top 10 are the ten highest-scored candidates that are not near-duplicates of a
higher-scored one (judged like the ``near`` dedup strategy: shingle Jaccard >= 0.7 or
containment >= 0.9), since keeping a copy of a kept passage is no virtue. One counts as kept
when its whole text is in the prompt (alone, or stitched into a neighbour). ``raw by id`` is the
simpler count: the ten highest scores, near-duplicates included, kept when their id is among
the included passages. Each row is the mean over seeds and queries; ``default`` is the default
configuration, ``greedy`` takes the given scores as they are (``relevance = given``,
``selection = greedy_by_score``, no compression).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import assembly_speed as workload  # noqa: E402 - the workload of the speed benchmark

QUERIES = (
    workload.QUERY,
    "Which films won the Academy Award for Best Production Design?",
    "How did the study of human anatomy and dissection develop?",
    "How are androids built to look and move like humans?",
)
STRATEGIES: dict[str, dict[str, Any] | None] = {
    "default": None,
    "greedy": {"relevance": "given", "selection": "greedy_by_score", "compression": None},
}
TOP = 10


@dataclass(frozen=True)
class Row:
    n: int
    scores: str
    strategy: str
    kept: float  # of the distinct top 10, whole in the prompt
    raw: float  # of the raw top 10, included by id
    selected: float


def scored(
    chunks: Sequence[workload.Chunk], query: str, noise: float | None, seed: int
) -> list[float]:
    """A score per chunk: BM25 plus noise of deviation ``noise``, or uniform when None."""
    from ctxasm.data import Passage
    from ctxasm.registry import build

    rng = random.Random(f"{seed}:{query}:{noise}")
    if noise is None:
        return [round(rng.random(), 6) for _ in chunks]
    relevance = build("relevance", "bm25", field="scores")
    texts = [Passage(id=c.id, text=f"{c.title}\n{c.text}") for c in chunks]
    values = relevance.score(query, texts).values
    return [round(v + rng.gauss(0.0, noise), 6) for v in values]


def distinct_top(passages: Sequence[dict[str, Any]], k: int = TOP) -> list[dict[str, Any]]:
    """The ``k`` best-scored passages that are not near-duplicates of a better-scored one."""
    from ctxasm.stages.dedup_near import NearDuplicateDedup, shingles

    near = NearDuplicateDedup()
    chosen: list[dict[str, Any]] = []
    seen: list[frozenset[int]] = []
    for passage in sorted(passages, key=lambda p: -p["score"]):
        own = shingles(passage["text"], near.shingle_size)
        duplicate = any(
            len(own & other) / (len(own | other) or 1) >= near.threshold
            or len(own & other) / (len(own) or 1) >= near.containment
            for other in seen
        )
        seen.append(own)
        if not duplicate:
            chosen.append(passage)
            if len(chosen) == k:
                break
    return chosen


def measure(sizes: Sequence[int], noises: Sequence[float | None], seeds: int) -> list[Row]:
    import ctxasm
    from ctxasm.lexical import phrase_key

    articles = workload.load_articles()
    assembler = ctxasm.Assembler()
    rows = []
    for n in sizes:
        for noise in noises:
            label = "random" if noise is None else f"bm25+noise {noise:g}"
            counts: dict[str, list[tuple[int, int, int]]] = {name: [] for name in STRATEGIES}
            for seed in range(seeds):
                chunks = workload.sample(articles, n, seed=workload.SEED + seed)
                for query in QUERIES:
                    scores = scored(chunks, query, noise, seed)
                    passages = [c.passage(s) for c, s in zip(chunks, scores, strict=True)]
                    top = distinct_top(passages)
                    raw = sorted(passages, key=lambda p: -p["score"])[:TOP]
                    for name, strategy in STRATEGIES.items():
                        request: dict[str, Any] = {
                            "query": query,
                            "passages": passages,
                            "model": workload.MODEL,
                            "max_context_tokens": 4096,
                        }
                        if strategy is not None:
                            request["strategy"] = strategy
                        result = assembler.assemble(request)
                        prompt = [f" {phrase_key(c.text)} " for c in result.passages]
                        included = {item.id for item in result.report.included}
                        kept = sum(
                            any(f" {phrase_key(p['text'])} " in text for text in prompt)
                            for p in top
                        )
                        by_id = sum(p["id"] in included for p in raw)
                        counts[name].append((kept, by_id, result.report.selected))
            for name, values in counts.items():
                rows.append(
                    Row(
                        n=n,
                        scores=label,
                        strategy=name,
                        kept=round(statistics.fmean(v[0] for v in values), 2),
                        raw=round(statistics.fmean(v[1] for v in values), 2),
                        selected=round(statistics.fmean(v[2] for v in values), 1),
                    )
                )
    return rows


def table(rows: Sequence[Row], seeds: int) -> str:
    lines = [
        f"retriever's top {TOP} kept at 4k tokens, mean of {seeds} seeds x {len(QUERIES)} queries",
        f"{'N':>5} {'scores':<16} {'strategy':<8} {'top 10 kept':>11} {'raw by id':>9} "
        f"{'selected':>8}",
    ]
    lines += [
        f"{r.n:>5} {r.scores:<16} {r.strategy:<8} {r.kept:>11.2f} {r.raw:>9.2f} {r.selected:>8.1f}"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20,200,2000", help="N values, e.g. 200,2000")
    parser.add_argument("--seeds", type=int, default=5, help="draws of the candidates (5)")
    parser.add_argument(
        "--noise",
        default="0,0.2",
        help="deviations of the noise added to BM25, comma-separated; a row of random scores "
        "always follows (default 0,0.2)",
    )
    args = parser.parse_args(argv)
    if "TIKTOKEN_CACHE_DIR" not in os.environ and workload.TIKTOKEN_CACHE.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(workload.TIKTOKEN_CACHE)  # offline rank files
    sizes = [int(s) for s in args.sizes.split(",")]
    noises: list[float | None] = [float(s) for s in args.noise.split(",") if s.strip()]
    rows = measure(sizes, [*noises, None], args.seeds)
    print(table(rows, args.seeds))


if __name__ == "__main__":
    main()
