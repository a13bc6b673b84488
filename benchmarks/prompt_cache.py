"""Prompt-cache reuse over multi-turn sessions: the default ordering against ``cache_stable``.

The workload comes from HotpotQA (distractor setting) in ``../shared/eval/``. ``follow_up``
(the default): one session per question, follow-up questions over the same articles (the
question; "... Tell me more about <gold title 1>"; "What is <gold title 2> known for?"; the
question asked again; with ``--turns 5``, "How are <1> and <2> related?"). ``switch``: one
session per pair of questions that alternates between them (A, B, A again, B again, A), so a
previous turn's passages are often not what the new question needs. Every turn sees the
paragraphs of its session's questions and of the ``pool - 1`` questions after each (3 by
default: about 3,600 tokens, above the 2,500-token budget, so selection must choose), named by
article title. (Grouping different questions by a shared gold article gives 3 pairs in the dev
set: too few.)

Each turn is assembled for gpt-4o, gpt-4.1, gpt-5 (format openai: 50%, 75% and 90% off cached
input) and claude-sonnet-4-5 (format anthropic: breakpoints, 90% off reads, writes at 1.25x),
once with the default ordering and once planning for the cache (``previous`` = the last turn's
result, so ``cache_stable``, whose selection favours the previous passages in proportion to the
model's cache discount). Per model and ordering it prints: the share of context tokens reused
from the previous turn (the longest common prefix of the two prompts, up to the end of the
sources, as a share of the sources block; counted with o200k_base), gold recall (the share of
the asked question's gold paragraphs in the prompt), and the expected input cost (OpenAI: the
measured identical prefix under automatic caching; Anthropic: the report's cache section; the
default places no breakpoints). ``bound`` is the most any plan could save against the default
with prompts as long as the default's: the first turn of a session at the full price (on
Anthropic, written at the write price, so that later turns can read it), every later turn read
whole from the cache at the cached price (question included, which no plan can do). With
``--per-turn``, the same figures by turn of the session.

    .venv/bin/python benchmarks/prompt_cache.py                 # 60 sessions of 4, budget 2500
    .venv/bin/python benchmarks/prompt_cache.py --turns 5 --stickiness 0
    .venv/bin/python benchmarks/prompt_cache.py --workload switch --budget 1500
    .venv/bin/python benchmarks/prompt_cache.py --per-turn
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
# (model, format): OpenAI's cached input at 50%, 75% and 90% off; Anthropic's at 90% off.
MODELS = (
    ("gpt-4o", "openai"),
    ("gpt-4.1", "openai"),
    ("gpt-5", "openai"),
    ("claude-sonnet-4-5", "anthropic"),
)


def _questions(path: Path, count: int, pool: int) -> list[dict[str, Any]]:
    """The first ``count`` questions, each with the paragraphs of the ``pool - 1`` questions
    after it added (more candidates, as a retriever over a corpus returns)."""
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines[: count + pool]]
    found = []
    for index, record in enumerate(records[:count]):
        extra = [p for other in records[index + 1 : index + pool] for p in other["passages"]]
        found.append({**record, "passages": record["passages"] + extra, "asked": record})
    return found


def follow_ups(path: Path, count: int, turns: int, pool: int) -> list[list[dict[str, Any]]]:
    """One session per question: the question, then follow-ups about its gold articles."""
    found = []
    for question in _questions(path, count, pool):
        first, second = (question["meta"].get("gold_titles") or ["it", "it"])[:2]
        asked = question["question"]
        texts = [
            asked,
            f"{asked} Tell me more about {first}.",
            f"What is {second} known for?",
            f"{asked} Answer briefly, with the evidence.",
            f"How are {first} and {second} related?",
        ]
        found.append([{**question, "question": text} for text in texts[:turns]])
    return found


def switches(path: Path, count: int, turns: int, pool: int) -> list[list[dict[str, Any]]]:
    """One session per pair of questions, alternating between them, over both one's paragraphs;
    each turn's gold is the asked question's."""
    questions = _questions(path, 2 * count, pool)
    found = []
    for a, b in zip(questions[0::2], questions[1::2], strict=True):
        both = a["passages"] + b["passages"]
        texts = [
            (a, a["question"]),
            (b, b["question"]),
            (a, f"{a['question']} Answer briefly, with the evidence."),
            (b, f"{b['question']} Answer briefly, with the evidence."),
            (a, f"{a['question']} Which sources say so?"),
        ]
        found.append([{**q, "question": t, "passages": both} for q, t in texts[:turns]])
    return found


def candidates(question: dict[str, Any]) -> list[dict[str, Any]]:
    """The turn's paragraphs, by title (the first text of a title wins)."""
    pool: dict[str, dict[str, Any]] = {}
    for p in question["passages"]:
        pool.setdefault(p["title"], {"id": p["title"], "title": p["title"], "text": p["text"]})
    return list(pool.values())


def gold_titles(question: dict[str, Any]) -> set[str]:
    asked = question["asked"]
    gold = set(asked["gold_pids"])
    return {p["title"] for p in asked["passages"] if p["pid"] in gold}


def prompt_text(result: ctxasm.Assembly) -> str:
    """The prompt up to the end of its sources block (system, then the sources message)."""
    if result.system is not None:  # anthropic
        first = result.messages[0]["content"]
        body = first if isinstance(first, str) else "".join(b["text"] for b in first)
        return result.system + "\x00" + body
    system, *rest = result.messages
    sources = next(m["content"] for m in rest if "Sources:" in m["content"])
    return system["content"] + "\x00" + sources.split("\n\nQuestion: ")[0]


def head_text(result: ctxasm.Assembly) -> str:
    """The system prompt, as :func:`prompt_text` starts."""
    system = result.system if result.system is not None else result.messages[0]["content"]
    return system + "\x00"


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
    groups: list[list[dict[str, Any]]],
    budget: int,
    model: str,
    fmt: str,
    ordering: dict[str, Any] | None,
) -> dict[str, float]:
    """Totals over every turn for one model: reuse, cost, gold recall. ``ordering``: None for
    the default ordering, else the cache_stable spec (with ``previous`` given)."""
    totals: dict[str, float] = defaultdict(float)
    for group in groups:
        before: ctxasm.Assembly | None = None
        for turn, question in enumerate(group):
            options: dict[str, Any] = {"model": model, "format": fmt}
            options["max_context_tokens"] = budget
            if ordering is not None:
                options["previous"] = None if before is None else before.to_dict()
                options["strategy"] = {"ordering": ordering}
            result = ctxasm.assemble(question["question"], candidates(question), **options)
            report = result.report
            gold = gold_titles(question)
            kept = {item.id for item in report.included}
            totals["gold_recall"] += len(gold & kept) / max(1, len(gold))
            totals["turns"] += 1
            prefix = common_tokens(prompt_text(before), prompt_text(result)) if before else 0
            figures: dict[str, float] = {}
            if before is not None:
                figures["reused"] = max(0, prefix - COUNT(head_text(result)))
                figures["context"] = report.context_tokens
            if fmt == "anthropic":
                uncached = report.cost_usd or 0.0
                plan = report.cache
                figures["cost"] = uncached if plan is None else plan.cost_usd or 0.0
                figures["uncached"] = uncached
            else:
                figures["cost"] = automatic_cost(model, report.total_tokens, prefix)
                figures["uncached"] = automatic_cost(model, report.total_tokens, 0)
            figures["best"] = figures["uncached"] * best_share(model, first=before is None)
            for name, value in figures.items():
                totals[name] += value
                totals[f"{name}@{turn}"] += value
            before = result
    return totals


def best_share(model: str, *, first: bool) -> float:
    """The least share of a prompt's uncached price any plan could pay: the first turn in
    full (written, where writes cost more, so that later turns can read it), a later one
    read whole from the cache."""
    spec = default_registry().get(model)
    assert spec.input_price is not None and spec.cached_input_price is not None
    if first:
        return (spec.cache_write_price or spec.input_price) / spec.input_price
    return spec.cached_input_price / spec.input_price


def _reuse(t: dict[str, float], at: str = "") -> float:
    return t[f"reused{at}"] / t[f"context{at}"] if t[f"context{at}"] else 0.0


def per_turn(model: str, base: dict[str, float], ours: dict[str, float], turns: int) -> None:
    """The costs and the reuse of both orderings by turn of the session."""
    for turn in range(turns):
        at = f"@{turn}"
        saved = 1 - ours[f"cost{at}"] / base[f"cost{at}"] if base[f"cost{at}"] else 0.0
        print(
            f"  {model} turn {turn + 1}: reuse {_reuse(base, at):.1%} -> {_reuse(ours, at):.1%}, "
            f"cost ${base[f'cost{at}']:.4f} -> ${ours[f'cost{at}']:.4f} ({saved:.1%} saved), "
            f"no caching ${base[f'uncached{at}']:.4f} -> ${ours[f'uncached{at}']:.4f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--turns", type=int, default=4, choices=(3, 4, 5))
    parser.add_argument("--budget", type=int, default=2500)
    parser.add_argument("--workload", choices=("follow_up", "switch"), default="follow_up")
    parser.add_argument("--attention", type=float, default=0.0, help="cache_stable's parameter")
    parser.add_argument(
        "--stickiness", type=float, default=None, help="cache_stable's parameter (its default)"
    )
    parser.add_argument(
        "--pool", type=int, default=3, help="questions whose paragraphs a turn sees"
    )
    parser.add_argument("--per-turn", action="store_true", help="costs by turn of the session")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (the shared evaluation data)", file=sys.stderr)
        return 0
    build = follow_ups if args.workload == "follow_up" else switches
    groups = build(args.data, args.sessions, args.turns, args.pool)
    turns = sum(len(g) for g in groups)
    size = sum(len(candidates(q)) for g in groups for q in g) / max(1, turns)
    print(
        f"{args.workload}: {len(groups)} sessions, {turns} turns, {size:.0f} candidates a turn, "
        f"budget {args.budget} tokens"
    )
    stable: dict[str, Any] = {"name": "cache_stable", "attention": args.attention}
    if args.stickiness is not None:
        stable["stickiness"] = args.stickiness
    print(
        f"{'model':<19}{'ordering':<14}{'reuse':>7}{'gold recall':>13}{'cost':>11}"
        f"{'no caching':>12}{'saved':>8}{'bound':>8}"
    )
    checks = []
    for model, fmt in MODELS:
        base = run(groups, args.budget, model, fmt, None)
        ours = run(groups, args.budget, model, fmt, stable)
        bound = 1 - base["best"] / base["cost"]
        for name, t in (("default", base), ("cache_stable", ours)):
            saved = f"{1 - t['cost'] / base['cost']:.1%}" if t is ours else ""
            print(
                f"{model:<19}{name:<14}{_reuse(t):>7.1%}{t['gold_recall'] / t['turns']:>13.1%}"
                f"{'$' + format(t['cost'], '.4f'):>11}{'$' + format(t['uncached'], '.4f'):>12}"
                f"{saved:>8}{format(bound, '.1%') if t is ours else '':>8}"
            )
        if args.per_turn:
            per_turn(model, base, ours, args.turns)
        lost = (base["gold_recall"] - ours["gold_recall"]) / ours["turns"]
        cheaper = f"{model}: cost >= 40% lower"
        if bound < 0.40:
            cheaper += f" (out of reach: at most {bound:.1%} with the default's prompt lengths)"
        checks += [
            (f"{model}: context tokens reused >= 60%", _reuse(ours) >= 0.60),
            (cheaper, ours["cost"] <= 0.6 * base["cost"]),
            (f"{model}: gold recall at most 1 point below the default", lost <= 0.01),
        ]
    for label, met in checks:
        print(f"{'PASS' if met else 'MISS'} {label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
