"""Assembly speed against tokenizing every candidate once with tiktoken, and against LangChain.

Run from the repository root::

    TIKTOKEN_CACHE_DIR=../shared/tiktoken-cache python benchmarks/assembly_speed.py
    python benchmarks/assembly_speed.py --quick          # 5 repeats instead of 15
    python benchmarks/assembly_speed.py --json           # the rows as JSON on stdout
    python benchmarks/assembly_speed.py --profile 2000,4k,given,cold   # cProfile one case

Workload (see benchmarks/README.md): the ten articles of
``../shared/eval/wikipedia_10_articles.jsonl`` cut two ways, as a retriever with two indexes
would return them:

* whole passages: the articles' paragraphs (split on blank lines; paragraphs under
  ``MIN_PARAGRAPH`` characters, mostly section headings, are merged into the next one), with
  ``doc_id``, ``title`` and ``url`` but no offsets;
* overlapping windows: ``WINDOW``-character windows every ``STRIDE`` characters (50% overlap),
  both ends snapped to whitespace, with ``doc_id``, ``title``, ``url`` and character offsets
  ``start``/``end`` (``end - start == len(text)``).

Within one document the spans overlap (each window overlaps its neighbours and the paragraphs
it spans), so a share of the candidates (printed per N) has a near-duplicate among the others.
The pool holds 1,114 candidates (423 paragraphs, 691 windows). When N exceeds it, the whole pool
is taken and the rest is drawn from *variant rounds*: the articles with a marker word ``(vR)``
inserted at the start of every paragraph, cut the same two ways, with ``doc_id``
``<doc_id>~vR`` (ids ``<doc_id>~vR/p3``, ``.../w7``). Variant texts differ from the originals,
so their token counts are not served from the cache of the originals and every candidate is a
distinct text; each is a near-duplicate (not an exact one) of an original. N candidates are
drawn with a seeded ``random.Random``, so every run measures the same requests.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = ROOT.parent / "shared" / "eval"
ARTICLES = EVAL_DIR / "wikipedia_10_articles.jsonl"
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken-cache"

SEED = 20240601
SIZES = (20, 200, 2000)
BUDGETS = {"4k": 4096, "16k": 16384}
MODES = ("given", "bm25")
CACHES = ("cold", "warm")
MODEL = "gpt-4o"
ENCODING = "o200k_base"
TOKENIZER_SPEC = f"tiktoken:{ENCODING}"
QUERY = (
    "What did Aristotle and Albert Einstein contribute to physics, astronomy and the "
    "natural sciences?"
)

MIN_PARAGRAPH = 200
WINDOW = 800
STRIDE = 400
# OpenAI chat counting (gpt-4o): 3 tokens per message, 3 to prime the reply.
TOKENS_PER_MESSAGE = 3
REPLY_PRIMING = 3

# Ratio targets, (mode, N, budget, cache) -> maximum ratio to the floor. Scores given: the
# default strategy, cold and warm; BM25 scoring (no scores given): at most the floor.
TARGETS: dict[tuple[str, int, str, str], float] = {
    ("given", 20, "4k", "cold"): 1.5,
    ("given", 200, "4k", "cold"): 0.5,
    ("given", 200, "16k", "cold"): 1.0,
    ("given", 2000, "4k", "cold"): 0.15,
    ("given", 200, "4k", "warm"): 0.3,
    ("given", 2000, "4k", "warm"): 0.1,
    **{("bm25", n, b, c): 1.0 for n in SIZES for b in BUDGETS for c in CACHES},
}


# ---------------------------------------------------------------------------------------------
# Workload


@dataclass(frozen=True)
class Chunk:
    """A candidate passage plus where it came from (``lo``/``hi``: its span in the article)."""

    id: str
    text: str
    doc_id: str
    title: str
    url: str
    kind: str  # "paragraph" or "window"
    lo: int
    hi: int

    def passage(self, score: float | None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "text": self.text,
            "doc_id": self.doc_id,
            "title": self.title,
            "url": self.url,
        }
        if self.kind == "window":
            data["start"], data["end"] = self.lo, self.hi
        if score is not None:
            data["score"] = score
        return data


def load_articles() -> list[dict[str, str]]:
    if not ARTICLES.is_file():
        sys.exit(
            f"error: {ARTICLES} not found. The benchmark reads the shared evaluation data at "
            "<repo>/../shared/eval/wikipedia_10_articles.jsonl; check out ../shared next to the "
            "repository."
        )
    with ARTICLES.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Spans of blank-line separated paragraphs, tiny ones merged into the next."""
    spans: list[tuple[int, int]] = []
    position = 0
    for piece in text.split("\n\n"):
        lo, hi = position, position + len(piece)
        position = hi + 2
        stripped = piece.strip()
        if not stripped:
            continue
        lo += len(piece) - len(piece.lstrip())
        hi -= len(piece) - len(piece.rstrip())
        spans.append((lo, hi))
    merged: list[tuple[int, int]] = []
    pending: int | None = None  # start of tiny paragraphs waiting for the next one
    for lo, hi in spans:
        start = lo if pending is None else pending
        if hi - start < MIN_PARAGRAPH:
            pending = start
            continue
        merged.append((start, hi))
        pending = None
    if pending is not None:
        if merged:
            merged[-1] = (merged[-1][0], spans[-1][1])
        else:
            merged.append((pending, spans[-1][1]))
    return merged


def _snap(text: str, at: int) -> int:
    """The first whitespace boundary at or after ``at`` (the end of text if none)."""
    if at <= 0:
        return 0
    while at < len(text) and not text[at - 1].isspace():
        at += 1
    return min(at, len(text))


def _windows(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for raw in range(0, max(1, len(text) - STRIDE), STRIDE):
        lo = _snap(text, raw)
        hi = _snap(text, raw + WINDOW)
        # trim whitespace at the edges so the text starts and ends with a word
        while lo < hi and text[lo].isspace():
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        if hi - lo >= 50 and (lo, hi) not in seen:
            seen.add((lo, hi))
            spans.append((lo, hi))
    return spans


def _variant(text: str, round_: int) -> str:
    """The article with a marker word at the start of every paragraph (variant round R)."""
    marker = f"(v{round_}) "
    return "\n\n".join(marker + p if p.strip() else p for p in text.split("\n\n"))


def cut(articles: Sequence[dict[str, str]], round_: int = 0) -> list[Chunk]:
    """Paragraphs and overlapping windows of every article (round > 0: the variant text)."""
    chunks: list[Chunk] = []
    suffix = f"~v{round_}" if round_ else ""
    for article in articles:
        text = _variant(article["text"], round_) if round_ else article["text"]
        doc_id = article["doc_id"] + suffix
        meta = {"doc_id": doc_id, "title": article["title"], "url": article["url"]}
        for number, (lo, hi) in enumerate(_paragraphs(text)):
            chunk_id = f"{doc_id}/p{number}"
            chunks.append(Chunk(chunk_id, text[lo:hi], kind="paragraph", lo=lo, hi=hi, **meta))
        for number, (lo, hi) in enumerate(_windows(text)):
            chunk_id = f"{doc_id}/w{number}"
            chunks.append(Chunk(chunk_id, text[lo:hi], kind="window", lo=lo, hi=hi, **meta))
    return chunks


def sample(articles: Sequence[dict[str, str]], n: int, seed: int = SEED) -> list[Chunk]:
    """``n`` candidates in a seeded random order; beyond the pool, from variant rounds."""
    rng = random.Random(f"{seed}:{n}")
    pool = cut(articles)
    if n <= len(pool):
        return rng.sample(pool, n)
    chosen = list(pool)
    round_ = 0
    while len(chosen) < n:
        round_ += 1
        extra = cut(articles, round_)
        chosen += rng.sample(extra, min(len(extra), n - len(chosen)))
    rng.shuffle(chosen)
    return chosen


def overlap_share(chunks: Sequence[Chunk]) -> float:
    """Share of candidates with a near-duplicate among the others.

    Within one document: spans that overlap. A variant-round candidate always counts: variants
    are only drawn once the whole original pool is in the sample, so its original is there.
    """
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    flagged: set[str] = {c.id for c in chunks if "~" in c.doc_id}
    for group in by_doc.values():
        group.sort(key=lambda c: c.lo)
        reach, owner = -1, ""
        for chunk in group:
            if chunk.lo < reach:
                flagged.update((chunk.id, owner))
            if chunk.hi > reach:
                reach, owner = chunk.hi, chunk.id
    return len(flagged) / len(chunks) if chunks else 0.0


# `--strategy`: the request's strategy object (None: the configuration's default). "fast" is
# the lean path: greedy selection by score, no compression, no planning.
STRATEGIES: dict[str, dict[str, Any] | None] = {
    "default": None,
    "fast": {"selection": "greedy_by_score", "compression": None},
}
STRATEGY: dict[str, Any] | None = None


def request(chunks: Sequence[Chunk], budget: int, mode: str, seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(f"{seed}:scores:{len(chunks)}")
    passages = [c.passage(round(rng.random(), 6) if mode == "given" else None) for c in chunks]
    built: dict[str, Any] = {
        "query": QUERY,
        "passages": passages,
        "model": MODEL,
        "format": "openai",
        "max_context_tokens": budget,
    }
    if STRATEGY is not None:
        built["strategy"] = STRATEGY
    return built


# ---------------------------------------------------------------------------------------------
# Measuring


def _median_ms(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _side_by_side(
    baseline: Callable[[], Any],
    run: Callable[[], Any],
    repeats: int,
    before: Callable[[], None] | None = None,
    peer: Callable[[], Any] | None = None,
) -> tuple[list[float], list[float], list[float]]:
    """Alternate one baseline run, one assembly run and one peer run, ``repeats`` times each.

    Interleaving puts all three under the same machine load, so their ratios stay meaningful
    when other processes compete for the CPU.
    """
    base_ms: list[float] = []
    run_ms: list[float] = []
    peer_ms: list[float] = []
    for _ in range(repeats):
        base_ms.append(_timed(baseline))
        if before is not None:
            before()
        run_ms.append(_timed(run))
        if peer is not None:
            peer_ms.append(_timed(peer))
    return base_ms, run_ms, peer_ms


def _timed(call: Callable[[], Any]) -> float:
    gc.collect()
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


class LangChainPeer:
    """LangChain's trim and reorder, the practical exact peer, as its users write it.

    The retriever's ranked ``Document`` list (built before timing, as a retriever returns it) is
    filtered for exact duplicates of ``page_content``, every ``page_content`` is counted with the
    same tiktoken encoding, documents are dropped from the end until the rest fits the context
    budget ctxasm computed for the same request, ``LongContextReorder`` (langchain-community)
    puts the best at both ends, and the texts are joined into the context block.
    """

    def __init__(self, encoding: Any) -> None:
        from langchain_community.document_transformers import LongContextReorder

        self.encoding = encoding
        self.reorder = LongContextReorder()

    @staticmethod
    def documents(data: dict[str, Any]) -> list[Any]:
        from langchain_core.documents import Document

        passages = data["passages"]
        if all("score" in p for p in passages):
            passages = sorted(passages, key=lambda p: -p["score"])
        return [
            Document(
                page_content=p["text"],
                metadata={k: v for k, v in p.items() if k != "text"},
            )
            for p in passages
        ]

    def run(self, documents: Sequence[Any], budget: int) -> str:
        seen: set[str] = set()
        kept = []
        for document in documents:
            if document.page_content not in seen:
                seen.add(document.page_content)
                kept.append(document)
        counts = [len(self.encoding.encode_ordinary(d.page_content)) for d in kept]
        total = sum(counts)
        while kept and total > budget:
            total -= counts.pop()
            kept.pop()
        ordered = self.reorder.transform_documents(kept)
        return "\n\n".join(d.page_content for d in ordered)


def recount(result: Any, encoding: Any) -> tuple[int, int | None]:
    """Independent tiktoken counts: the whole chat request, and the sources block alone."""
    total = REPLY_PRIMING
    for message in result.messages:
        total += TOKENS_PER_MESSAGE
        total += len(encoding.encode(message["role"], disallowed_special=()))
        total += len(encoding.encode(message["content"], disallowed_special=()))
    block = None
    user = result.messages[-1]["content"]
    question = f"\n\nQuestion: {QUERY}"
    if result.report.selected and user.endswith(question):
        block = len(encoding.encode(user[: -len(question)], disallowed_special=()))
    return total, block


@dataclass
class Row:
    n: int
    budget: str
    mode: str
    cache: str
    median_ms: float
    baseline_ms: float
    ratio: float
    peer_ms: float
    peer_ratio: float
    target: float | None
    selected: int
    over: int
    context_over: int
    recount_ok: bool
    parse_ms: float
    total_tokens: int
    context_tokens: int
    stage_ms: dict[str, float] = field(default_factory=dict)
    times_ms: list[float] = field(default_factory=list)
    baseline_times_ms: list[float] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "PASS" if self.ratio <= self.target else "MISS"

    @property
    def peer_verdict(self) -> str:
        """Cold assembly at or below the peer's ratio (warm rows are not compared)."""
        if self.cache != "cold":
            return ""
        return "PASS" if self.ratio <= self.peer_ratio else "MISS"


def measure(
    repeats: int, sizes: Sequence[int], log: Callable[[str], None]
) -> tuple[list[Row], dict[str, Any]]:
    import tiktoken

    import ctxasm
    from ctxasm.lexical import clear_caches as clear_lexical_caches
    from ctxasm.stages.dedup_near import clear_caches
    from ctxasm.stages.guard import clear_caches as clear_guard_caches
    from ctxasm.tokens import get_counter

    articles = load_articles()
    encoding = tiktoken.get_encoding(ENCODING)
    counter = get_counter(TOKENIZER_SPEC)
    assembler = ctxasm.Assembler()
    peer = LangChainPeer(encoding)
    # Load the encoding, build the strategies and import what dedup loads lazily (the MinHash
    # LSH index needs more than 64 kept passages) before anything is timed.
    assembler.assemble(ctxasm.parse_request(request(sample(articles, 400), 65536, "given")))
    encoding.encode_ordinary("warm up")
    counter.clear()

    def forget() -> None:
        # cold: no token counts, words, keys, entities, scans or shingles known from earlier runs
        counter.clear()
        clear_caches()
        clear_lexical_caches()
        clear_guard_caches()

    rows: list[Row] = []
    info: dict[str, Any] = {
        "repeats": repeats,
        "pool": len(cut(articles)),
        "load_average_before": round(os.getloadavg()[0], 2),
        "source": source_state(),
        "samples": {},
    }
    for n in sizes:
        chunks = sample(articles, n)
        texts = [c.text for c in chunks]
        info["samples"][n] = {
            "candidates": n,
            "windows": sum(c.kind == "window" for c in chunks),
            "paragraphs": sum(c.kind == "paragraph" for c in chunks),
            "variants": sum("~" in c.doc_id for c in chunks),
            "chars": sum(len(t) for t in texts),
            "overlap_share": round(overlap_share(chunks), 3),
        }

        def baseline(t: list[str] = texts) -> None:
            for text in t:
                encoding.encode_ordinary(text)

        info["samples"][n]["tokens"] = sum(len(encoding.encode_ordinary(t)) for t in texts)
        log(f"N={n}: {info['samples'][n]}")
        for budget_name, budget in BUDGETS.items():
            for mode in MODES:
                data = request(chunks, budget, mode)
                parse_ms = _median_ms(partial(ctxasm.parse_request, data), max(3, repeats // 3))
                parsed = ctxasm.parse_request(data)
                # the peer fills the same context budget ctxasm computes for this request
                context_budget = assembler.assemble(parsed).report.budget.context
                documents = peer.documents(data)
                peer_run = partial(peer.run, documents, context_budget)
                for cache in CACHES:
                    results: list[Any] = []

                    def run(p: Any = parsed, out: list[Any] = results) -> None:
                        out.append(assembler.assemble(p))

                    if cache == "cold":
                        base_ms, times, peer_ms = _side_by_side(
                            baseline, run, repeats, forget, peer_run
                        )
                    else:
                        assembler.assemble(parsed)  # fill the count cache
                        base_ms, times, peer_ms = _side_by_side(
                            baseline, run, repeats, peer=peer_run
                        )
                    median = statistics.median(times)
                    base = statistics.median(base_ms)
                    result = results[-1]
                    report = result.report
                    total, block = recount(result, encoding)
                    b = report.budget
                    over = max(0, total - (b.context_window - b.reserve_output - b.margin))
                    context_over = 0 if block is None else max(0, block - b.context)
                    ok = total == report.total_tokens and (
                        block is None or block == report.context_tokens
                    )
                    stages = {
                        name: round(
                            statistics.median(r.report.timings_ms.get(name, 0.0) for r in results),
                            3,
                        )
                        for name in report.timings_ms
                    }
                    row = Row(
                        n=n,
                        budget=budget_name,
                        mode=mode,
                        cache=cache,
                        median_ms=round(median, 3),
                        baseline_ms=round(base, 3),
                        ratio=round(median / base, 4),
                        peer_ms=round(statistics.median(peer_ms), 3),
                        peer_ratio=round(statistics.median(peer_ms) / base, 4),
                        target=TARGETS.get((mode, n, budget_name, cache)),
                        selected=report.selected,
                        over=over,
                        context_over=context_over,
                        recount_ok=ok,
                        parse_ms=round(parse_ms, 3),
                        total_tokens=report.total_tokens,
                        context_tokens=report.context_tokens,
                        stage_ms=stages,
                        times_ms=[round(t, 3) for t in times],
                        baseline_times_ms=[round(t, 3) for t in base_ms],
                    )
                    rows.append(row)
                    log(
                        f"  {n:>5} {budget_name:>3} {mode:>5} {cache:>4}: {median:8.2f} ms "
                        f"ratio {row.ratio:.3f} (langchain {row.peer_ratio:.3f}) "
                        f"selected {row.selected} over {over}"
                    )
    info["load_average_after"] = round(os.getloadavg()[0], 2)
    return rows, info


# ---------------------------------------------------------------------------------------------
# Output


def source_state() -> str:
    """The commit measured, and whether ``src/`` differs from it (best effort)."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    changed = [line[3:] for line in dirty if line.strip()]
    return commit + (f" + uncommitted changes in {', '.join(changed)}" if changed else "")


def table(rows: Sequence[Row], info: dict[str, Any]) -> str:
    lines = [
        f"ctxasm assembly speed: median of {info['repeats']} runs, model {MODEL}, "
        f"tokenizer {TOKENIZER_SPEC}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs",
        f"source: {info['source']}",
        f"strategy: {json.dumps(STRATEGY) if STRATEGY is not None else 'the default'}",
        "baseline = tiktoken encode_ordinary of every candidate once; ratio = assembly / baseline",
        "langchain = exact-duplicate filter, count every page_content, drop from the end until "
        "it fits, LongContextReorder; same encoding, same rounds, same context budget",
        "cold = token-count, word, term-count, scan and shingle caches cleared before each run; "
        "warm = all cached by an earlier run",
        "baseline, assembly and langchain runs alternate, so all see the same machine load "
        f"(1-min load average {info['load_average_before']} before, "
        f"{info['load_average_after']} after)",
        "",
        "workload:",
    ]
    for n, s in info["samples"].items():
        lines.append(
            f"  N={n:<5} {s['paragraphs']} paragraphs + {s['windows']} windows "
            f"({s['variants']} from variant rounds), {s['chars']:,} chars, {s['tokens']:,} tokens, "
            f"{s['overlap_share']:.0%} overlap another candidate"
        )
    lines.append("")
    header = (
        f"{'N':>5} {'budget':>6} {'mode':>5} {'cache':>5} {'median ms':>10} {'baseline ms':>11} "
        f"{'ratio':>7} {'target':>7} {'':4} {'langchain':>9} {'':4} {'selected':>8} {'over':>4} "
        f"{'ctx_over':>8} {'recount':>7} {'parse ms':>8}"
    )
    lines += [header, "-" * len(header)]
    for r in rows:
        target = f"<={r.target:g}" if r.target is not None else ""
        lines.append(
            f"{r.n:>5} {r.budget:>6} {r.mode:>5} {r.cache:>5} {r.median_ms:>10.2f} "
            f"{r.baseline_ms:>11.2f} {r.ratio:>7.3f} {target:>7} {r.verdict:4} "
            f"{r.peer_ratio:>9.3f} {r.peer_verdict:4} {r.selected:>8} {r.over:>4} "
            f"{r.context_over:>8} {'ok' if r.recount_ok else 'DIFF':>7} {r.parse_ms:>8.2f}"
        )
    lines += ["", "median stage times (ms, from report.timings_ms):"]
    names = sorted({name for r in rows for name in r.stage_ms}, key=_stage_order)
    lines.append(
        f"{'N':>5} {'budget':>6} {'mode':>5} {'cache':>5} " + " ".join(f"{n:>9}" for n in names)
    )
    for r in rows:
        lines.append(
            f"{r.n:>5} {r.budget:>6} {r.mode:>5} {r.cache:>5} "
            + " ".join(f"{r.stage_ms.get(n, 0.0):>9.2f}" for n in names)
        )
    lines += ["", "targets (ratio to the floor):"]
    for (mode, n, budget, cache), limit in TARGETS.items():
        match = [r for r in rows if (r.mode, r.n, r.budget, r.cache) == (mode, n, budget, cache)]
        if not match:
            continue
        r = match[0]
        what = "scores given" if mode == "given" else "bm25"
        lines.append(
            f"  {what:<12} N={n:<5} {budget:>3} {cache:<4}: ratio {r.ratio:.3f} <= {limit:g}  "
            f"{r.verdict}"
        )
    cold = [r for r in rows if r.cache == "cold"]
    behind = [r for r in cold if r.peer_verdict == "MISS"]
    lines.append(
        f"  cold at or below langchain: {len(cold) - len(behind)} of {len(cold)} rows"
        + (
            "  PASS"
            if not behind
            else "  MISS in "
            + ", ".join(
                f"N={r.n} {r.budget} {r.mode} ({r.ratio:.3f} vs {r.peer_ratio:.3f})" for r in behind
            )
        )
    )
    over = [r for r in rows if r.over or r.context_over or not r.recount_ok]
    lines.append(
        "  tokens over budget: "
        + (
            "0 in every run, recount == report.total_tokens: PASS"
            if not over
            else f"FAIL in {len(over)} rows"
        )
    )
    return "\n".join(lines)


def _stage_order(name: str) -> tuple[int, str]:
    order = ["access", "budget", "relevance", "selection", "dedup", "ordering", "verify", "total"]
    return (order.index(name) if name in order else len(order), name)


def profile(case: str, repeats: int) -> None:
    """cProfile ``repeats`` assemblies of one case: ``N,budget,mode,cache``."""
    import ctxasm
    from ctxasm.lexical import clear_caches as clear_lexical_caches
    from ctxasm.stages.dedup_near import clear_caches
    from ctxasm.stages.guard import clear_caches as clear_guard_caches
    from ctxasm.tokens import get_counter

    n_text, budget_name, mode, cache = case.split(",")
    articles = load_articles()
    parsed = ctxasm.parse_request(
        request(sample(articles, int(n_text)), BUDGETS[budget_name], mode)
    )
    counter = get_counter(TOKENIZER_SPEC)
    assembler = ctxasm.Assembler()
    assembler.assemble(parsed)
    profiler = cProfile.Profile()
    for _ in range(repeats):
        if cache == "cold":
            counter.clear()
            clear_caches()
            clear_lexical_caches()
            clear_guard_caches()
        profiler.enable()
        assembler.assemble(parsed)
        profiler.disable()
    for sort in ("tottime", "cumulative"):
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats(sort).print_stats(25)
        print(f"=== {case}, {repeats} runs, sorted by {sort} ===")
        print(stream.getvalue())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (15)")
    parser.add_argument("--quick", action="store_true", help="5 repeats per case")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="N values, e.g. 200,2000"
    )
    parser.add_argument(
        "--profile", metavar="N,BUDGET,MODE,CACHE", help="cProfile one case instead"
    )
    parser.add_argument(
        "--strategy",
        choices=sorted(STRATEGIES),
        default="default",
        help="default: the default configuration (planning, compression); fast: greedy by "
        "score without compression",
    )
    args = parser.parse_args(argv)
    global STRATEGY  # noqa: PLW0603 - read by request()
    STRATEGY = STRATEGIES[args.strategy]
    repeats = args.repeats or (5 if args.quick else 15)
    if "TIKTOKEN_CACHE_DIR" not in os.environ and TIKTOKEN_CACHE.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE)  # offline rank files
    if args.profile:
        profile(args.profile, repeats)
        return

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    sizes = [int(s) for s in args.sizes.split(",")]
    rows, info = measure(repeats, sizes, log)
    if args.json:
        payload = {
            "info": info,
            "rows": [
                {**asdict(r), "verdict": r.verdict, "peer_verdict": r.peer_verdict} for r in rows
            ],
        }
        print(json.dumps(payload, indent=2))
    else:
        print(table(rows, info))
    if any(r.over or r.context_over or not r.recount_ok for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
