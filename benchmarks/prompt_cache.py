"""Prompt-cache reuse over multi-turn sessions: the default ordering against ``cache_stable``.

The workload comes from HotpotQA (distractor setting) in ``../shared/eval/``: one session of
four turns per question, follow-up questions over the same articles (the question; "... Tell
me more about <gold title 1>"; "What is <gold title 2> known for?"; the question asked again),
each turn over the question's ten paragraphs, named by article title. (Grouping different
questions by a shared gold article gives 3 pairs in the dev set: too few.) The budget is below
what the ten paragraphs need, so each turn's selection differs. Each turn is assembled for
gpt-4o (format openai) and claude-sonnet-4-5 (format anthropic) at a context budget, once
with the default ordering and once planning for the cache (``previous`` = the last turn's
result, so ``cache_stable``).

It prints, per ordering: the share of context tokens reused from the previous turn (the
longest common prefix of the two prompts, up to the end of the sources, as a share of the
sources block; counted with o200k_base), the expected input cost under OpenAI's automatic
caching (gpt-4o) and Anthropic's breakpoints (claude-sonnet-4-5; the default places none), and
gold recall (the share of the question's gold paragraphs in the prompt).

    .venv/bin/python benchmarks/prompt_cache.py                 # 60 sessions of 4, budget 2500
    .venv/bin/python benchmarks/prompt_cache.py --turns 5 --budget 1500 --attention 0.5
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import ctxasm
from ctxasm.models import default_registry
from ctxasm.tokens import get_counter

DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "hotpotqa_distractor.unified.jsonl"
COUNT = get_counter("tiktoken:o200k_base").count
# OpenAI models counted alike (o200k_base, 3 tokens a message): 50%, 75% and 90% off cached input.
OPENAI_MODELS = ("gpt-4o", "gpt-4.1", "gpt-5")


def sessions(path: Path, count: int, turns: int, pool: int) -> list[list[dict[str, Any]]]:
    """One session per question: the question, then follow-ups about its gold articles
    (``turns`` in all, 3 to 5), all over the question's ten paragraphs and those of the
    ``pool - 1`` questions after it (more candidates, as a retriever over a corpus returns)."""
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines[: count + pool]]
    found = []
    for index, record in enumerate(records[:count]):
        neighbours = records[index + 1 : index + pool]
        extra = [p for other in neighbours for p in other["passages"]]
        question = {**record, "passages": record["passages"] + extra}
        first, second = (question["meta"].get("gold_titles") or ["it", "it"])[:2]
        asked = question["question"]
        follow_ups = [
            asked,
            f"{asked} Tell me more about {first}.",
            f"What is {second} known for?",
            f"{asked} Answer briefly, with the evidence.",
            f"How are {first} and {second} related?",
        ]
        found.append([{**question, "question": text} for text in follow_ups[:turns]])
    return found


def candidates(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's paragraphs so far, by title (the first text of a title wins)."""
    pool: dict[str, dict[str, Any]] = {}
    for question in turns:
        for p in question["passages"]:
            pool.setdefault(p["title"], {"id": p["title"], "title": p["title"], "text": p["text"]})
    return list(pool.values())


def gold_titles(question: dict[str, Any]) -> set[str]:
    gold = set(question["gold_pids"])
    return {p["title"] for p in question["passages"] if p["pid"] in gold}


def prompt_text(result: ctxasm.Assembly) -> str:
    """The prompt up to the end of its sources block (system, then the sources message)."""
    if result.system is not None:  # anthropic
        first = result.messages[0]["content"]
        body = first if isinstance(first, str) else "".join(b["text"] for b in first)
        return result.system + "\x00" + body
    system, *rest = result.messages
    sources = next(m["content"] for m in rest if "Sources:" in m["content"])
    return system["content"] + "\x00" + sources.split("\n\nQuestion: ")[0]


def common_tokens(before: str, now: str) -> int:
    size = 0
    for a, b in zip(before, now, strict=False):
        if a != b:
            break
        size += 1
    return COUNT(now[:size])


def automatic_cost(model: str, total: int, prefix: int) -> float:
    """``model``'s expected input cost with automatic caching of ``prefix`` identical tokens."""
    spec = default_registry().get(model)
    assert spec.input_price is not None and spec.cached_input_price is not None
    least, step = spec.cache_min_tokens, spec.cache_increment
    cached = least + (prefix - least) // step * step if prefix >= least else 0
    return (cached * spec.cached_input_price + (total - cached) * spec.input_price) / 1e6


def run(
    groups: list[list[dict[str, Any]]], budget: int, ordering: dict[str, Any] | None
) -> dict[str, float]:
    """Totals over every turn: reuse, costs per model, gold recall. ``ordering``: None for the
    default ordering, else the cache_stable spec (with ``previous`` given)."""
    totals: dict[str, float] = defaultdict(float)
    for group in groups:
        last: dict[str, ctxasm.Assembly | None] = {"openai": None, "anthropic": None}
        for question in group:
            pool = candidates([question])
            for fmt, model in (("openai", "gpt-4o"), ("anthropic", "claude-sonnet-4-5")):
                options: dict[str, Any] = {"model": model, "format": fmt}
                options["max_context_tokens"] = budget
                before = last[fmt]
                if ordering is not None:
                    options["previous"] = None if before is None else before.to_dict()
                    options["strategy"] = {"ordering": ordering}
                result = ctxasm.assemble(question["question"], pool, **options)
                last[fmt] = result
                if fmt == "anthropic":
                    _anthropic(totals, result)
                else:
                    _openai(totals, question, before, result)
    return totals


def _anthropic(totals: dict[str, float], result: ctxasm.Assembly) -> None:
    report, plan = result.report, result.report.cache
    uncached = report.cost_usd or 0.0
    totals["claude-sonnet-4-5 uncached"] += uncached
    totals["claude-sonnet-4-5"] += plan.cost_usd or 0.0 if plan is not None else uncached


def _openai(
    totals: dict[str, float],
    question: dict[str, Any],
    before: ctxasm.Assembly | None,
    result: ctxasm.Assembly,
) -> None:
    report = result.report
    gold = gold_titles(question)
    kept = {item.id for item in report.included}
    totals["gold_recall"] += len(gold & kept) / max(1, len(gold))
    totals["turns"] += 1
    prefix = common_tokens(prompt_text(before), prompt_text(result)) if before else 0
    if before is not None:
        system_tokens = COUNT(result.messages[0]["content"] + "\x00")
        totals["reused"] += max(0, prefix - system_tokens)
        totals["context"] += report.context_tokens
    # the OpenAI models share gpt-4o's tokenizer and chat overhead: the same counts, their prices
    for model in OPENAI_MODELS:
        totals[model] += automatic_cost(model, report.total_tokens, prefix)
        totals[f"{model} uncached"] += automatic_cost(model, report.total_tokens, 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--turns", type=int, default=4, choices=(3, 4, 5))
    parser.add_argument("--budget", type=int, default=2500)
    parser.add_argument("--attention", type=float, default=0.0, help="cache_stable's parameter")
    parser.add_argument(
        "--pool", type=int, default=1, help="questions whose paragraphs a turn sees"
    )
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (the shared evaluation data)", file=sys.stderr)
        return 0
    groups = sessions(args.data, args.sessions, args.turns, args.pool)
    turns = sum(len(g) for g in groups)
    size = 10 * args.pool
    print(f"{len(groups)} sessions, {turns} turns, {size} candidates, budget {args.budget} tokens")
    stable = {"name": "cache_stable", "attention": args.attention}
    rows = {
        "default": run(groups, args.budget, None),
        "cache_stable": run(groups, args.budget, stable),
    }
    models = [*OPENAI_MODELS, "claude-sonnet-4-5"]
    print(f"{'ordering':<14}{'reuse':>7}{'gold recall':>13}" + "".join(f"{m:>20}" for m in models))
    for name, t in rows.items():
        reuse = t["reused"] / t["context"] if t["context"] else 0.0
        costs = "".join(f"{'$' + format(t[m], '.4f'):>20}" for m in models)
        print(f"{name:<14}{reuse:>7.1%}{t['gold_recall'] / t['turns']:>13.1%}{costs}")
    base, ours = rows["default"], rows["cache_stable"]
    uncached = "".join(f"{'$' + format(base[m + ' uncached'], '.4f'):>20}" for m in models)
    print(f"{'no caching':<34}{uncached}")
    saved = "".join(f"{1 - ours[m] / base[m]:>20.1%}" for m in models)
    print(f"{'cost saved':<34}{saved}")
    reuse = ours["reused"] / ours["context"] if ours["context"] else 0.0
    recall_gap = abs(ours["gold_recall"] - base["gold_recall"]) / ours["turns"]
    checks = [("context tokens reused >= 60%", reuse >= 0.60)]
    checks += [(f"{m} cost >= 40% lower", ours[m] <= 0.6 * base[m]) for m in models]
    checks.append(("gold recall within 1 point", recall_gap <= 0.01))
    for label, met in checks:
        print(f"{'PASS' if met else 'MISS'} {label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
