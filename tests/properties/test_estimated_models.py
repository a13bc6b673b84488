"""Models without a public tokenizer: the estimate is applied consistently and never overruns.

The recount is independent of ctxasm: the registry's proxy encoding counted with tiktoken, times
the registry's factor, rounded up per message, plus the registry's chat overhead.
"""

from __future__ import annotations

import math
import os
from typing import Any

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxasm

# model: (proxy encoding, factor, tokens per message, reply priming)
ESTIMATED = {
    "claude-sonnet-4-5": ("o200k_base", 1.2, 5, 5),
    "llama-3.1-8b-instruct": ("cl100k_base", 1.1, 5, 4),
}
EXAMPLES = int(os.environ.get("CTXASM_PROPERTY_EXAMPLES", "60"))
WORDS = st.sampled_from(
    ["alpha", "beta", "river", "Lyceum", "東京", "```", "[Source 3]", "\n", " "]
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    passages = [
        {
            "id": f"p{i}",
            "text": " ".join(draw(st.lists(WORDS, min_size=1, max_size=60))),
            "score": draw(st.floats(0, 1)),
        }
        for i in range(draw(st.integers(0, 12)))
    ]
    return {
        "query": "alpha river?",
        "passages": passages,
        "model": draw(st.sampled_from(sorted(ESTIMATED))),
        "format": draw(st.sampled_from(["openai", "text", "anthropic", "markdown"])),
        "max_context_tokens": draw(st.integers(1, 600)),
        "strategy": {"selection": draw(st.sampled_from(["greedy_by_score", "knapsack", "mmr"]))},
    }


def _recount(result: ctxasm.Assembly, model: str) -> int:
    encoding, factor, per_message, priming = ESTIMATED[model]
    enc = tiktoken.get_encoding(encoding)

    def estimate(text: str) -> int:
        return math.ceil(len(enc.encode_ordinary(text)) * factor) if text else 0

    if result.text is not None:
        return estimate(result.text)
    system = estimate(result.system) if result.system is not None else 0  # anthropic
    return (
        system
        + sum(per_message + estimate(m["role"]) + estimate(m["content"]) for m in result.messages)
        + priming
    )


@settings(max_examples=EXAMPLES, deadline=None)
@given(requests())
def test_estimated_counts_are_consistent_and_within_budget(request: dict[str, Any]) -> None:
    result = ctxasm.assemble(**request)
    report = result.report
    assert report.exact_count is False
    budget = report.budget
    assert budget.margin == math.ceil(0.05 * (budget.context_window - budget.reserve_output))
    total = _recount(result, request["model"])
    assert total == report.total_tokens
    assert total <= budget.context_window - budget.reserve_output - budget.margin
    seen = [i.id for i in report.included] + [e.candidate_id for e in report.excluded]
    assert sorted(seen) == sorted(p["id"] for p in request["passages"])
