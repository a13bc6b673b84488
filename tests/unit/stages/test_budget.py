"""The budget slot: every section counted, the formula, caps, margins and the refusal."""

from __future__ import annotations

import math
from typing import Any

import pytest
import tiktoken

import ctxasm
from ctxasm import BudgetError, RequestError

O200K = tiktoken.get_encoding("o200k_base")

HISTORY = [
    {"role": "user", "content": "Tell me about the Amazon river."},
    {"role": "assistant", "content": "It is the largest river by discharge volume."},
]
PASSAGES = [
    {"id": "a", "text": "The Amazon flows through Brazil.", "score": 0.9},
    {"id": "b", "text": "The Nile flows through Egypt.", "score": 0.5},
]


def _count(text: str) -> int:
    return len(O200K.encode(text, disallowed_special=()))


def _run(**fields: Any) -> ctxasm.Assembly:
    return ctxasm.assemble(query="Which countries does it cross?", passages=PASSAGES, **fields)


def test_sections_with_openai_format() -> None:
    result = _run(system_prompt="You answer briefly.", history=HISTORY, format="openai")
    budget = result.report.budget
    system_text = result.messages[0]["content"]
    assert system_text.startswith("You answer briefly.\n\n")
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "user"]
    expected_overhead = sum(3 + _count(role) for role in roles) + 3
    assert budget.to_dict() == {
        "context_window": 128_000,
        "reserve_output": 1024,
        "system": _count(system_text),
        "query": _count("Question: Which countries does it cross?"),
        "history": sum(_count(turn["content"]) for turn in HISTORY),
        "overhead": expected_overhead,
        "margin": 0,
        "context": budget.context,
    }
    assert budget.context == (
        budget.context_window
        - budget.reserve_output
        - budget.margin
        - budget.system
        - budget.query
        - budget.history
        - budget.overhead
    )
    assert result.report.to_dict()["budget"] == budget.to_dict()


def test_sections_with_text_format() -> None:
    result = _run(history=HISTORY, format="text")
    budget = result.report.budget
    bare = ctxasm.assemble(
        query="Which countries does it cross?", passages=[], history=HISTORY, format="text"
    )
    # With no passages the prompt is the bare request plus the no-context note.
    assert budget.system + budget.query + budget.history + budget.overhead < _count(bare.text or "")
    assert budget.context == (
        budget.context_window
        - budget.reserve_output
        - budget.margin
        - budget.system
        - budget.query
        - budget.history
        - budget.overhead
    )


def test_max_context_tokens_caps_the_context() -> None:
    uncapped = _run().report.budget
    capped = _run(max_context_tokens=500).report.budget
    assert capped.context == 500
    assert {**capped.to_dict(), "context": uncapped.context} == uncapped.to_dict()
    larger = _run(max_context_tokens=10_000_000).report.budget
    assert larger.context == uncapped.context


def test_max_context_tokens_is_respected_by_the_sources_block() -> None:
    passages = [
        {"id": f"p{i}", "text": f"Fact {i}: " + "word " * 40, "score": 1 - i / 100}
        for i in range(20)
    ]
    result = ctxasm.assemble("q", passages, max_context_tokens=300, strategy={"dedup": "none"})
    report = result.report
    assert 0 < report.selected < 20
    assert report.context_tokens <= 300
    content = result.messages[-1]["content"]
    block = content[: content.index("\n\nQuestion: q")]
    assert report.context_tokens == _count(block)


@pytest.mark.parametrize("model", ["o1", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-nano"])
def test_a_reasoning_model_reserves_room_to_reason_by_default(model: str) -> None:
    # Its hidden reasoning counts against the same limit: 1,024 would often leave no answer.
    assert _run(model=model).report.budget.reserve_output == 25_000
    budget = _run(model=model, context_window=40_000).report.budget
    assert budget.reserve_output == 10_000  # a quarter of the window, at most
    assert _run(model=model, reserve_output_tokens=2000).report.budget.reserve_output == 2000
    assert _run(model="gpt-4.1").report.budget.reserve_output == 1024  # no reasoning model


def test_a_model_marked_reasoning_in_a_config_reserves_alike() -> None:
    assembler = ctxasm.Assembler(
        {
            "models": {
                "house-thinker": {
                    "context_window": 32000,
                    "max_output": 16000,
                    "tokenizer": "tiktoken:o200k_base",
                    "reasoning": True,
                },
                "o3": {"reasoning": False},  # a deployment the config says does not reason
            }
        }
    )
    request = {"query": "q", "passages": PASSAGES}
    thinker = assembler.assemble({**request, "model": "house-thinker"}).report.budget
    assert thinker.reserve_output == 8000  # a quarter of 32,000, under 25,000
    assert assembler.assemble({**request, "model": "o3"}).report.budget.reserve_output == 1024


def test_context_window_override_and_default_reserve() -> None:
    budget = _run(context_window=4000).report.budget
    assert (budget.context_window, budget.reserve_output) == (4000, 1000)  # a quarter, < 1024
    budget = _run(context_window=8000).report.budget
    assert (budget.context_window, budget.reserve_output) == (8000, 1024)
    budget = _run(context_window=8000, reserve_output_tokens=300).report.budget
    assert budget.reserve_output == 300
    assert budget.context == 8000 - 300 - (
        budget.system + budget.query + budget.history + budget.overhead
    )


def test_a_window_too_small_for_the_default_reserve_names_the_window() -> None:
    # it said "reserve_output_tokens (1) must be smaller than the context window (1)", naming a
    # field the caller never set
    with pytest.raises(RequestError) as caught:
        _run(context_window=1)
    assert caught.value.to_dict() == {
        "code": "invalid_request",
        "message": (
            "context_window (1) is too small for any reply: the default reserve_output_tokens "
            "(a quarter of the window, at least 1) is 1, the whole window, and leaves nothing "
            "for the prompt; give a larger context_window"
        ),
        "field": "context_window",
    }
    tiny = {"context_window": 1, "max_output": 1, "tokenizer": "tiktoken:o200k_base"}
    assembler = ctxasm.Assembler({"models": {"tiny": tiny}})
    with pytest.raises(RequestError) as caught:
        assembler.assemble("q", PASSAGES, model="tiny")
    assert caught.value.message.startswith("context_window (1, tiny's window) is too small")
    assert caught.value.field == "context_window"


def test_default_reserve_is_capped_by_the_model_maximum_output() -> None:
    assembler = ctxasm.Assembler({"models": {"gpt-4o": {"max_output": 256}}})
    result = assembler.assemble(query="q", passages=PASSAGES)
    assert result.report.budget.reserve_output == 256


def test_safety_margin_share() -> None:
    budget = _run(
        context_window=10_000, reserve_output_tokens=1000, safety_margin=0.1
    ).report.budget
    assert budget.margin == 900
    assert budget.context == 10_000 - 1000 - 900 - (
        budget.system + budget.query + budget.history + budget.overhead
    )


def test_estimate_tokenizer_keeps_a_margin() -> None:
    result = _run(model="claude-sonnet-4-5", context_window=20_000, reserve_output_tokens=2000)
    budget = result.report.budget
    assert result.report.exact_count is False
    assert budget.margin == math.ceil(0.05 * 18_000)
    explicit = _run(model="claude-sonnet-4-5", context_window=20_000, safety_margin=0.0)
    assert explicit.report.budget.margin == 0


def test_total_fits_the_prompt_limit() -> None:
    passages = [
        {"id": f"p{i}", "text": f"Fact {i}: " + "word " * 60, "score": 1.0} for i in range(30)
    ]
    result = ctxasm.assemble("q", passages, context_window=2000, strategy={"dedup": "none"})
    report = result.report
    limit = report.budget.context_window - report.budget.reserve_output - report.budget.margin
    assert 0 < report.selected < 30
    assert report.total_tokens <= limit
    recount = sum(3 + _count(m["role"]) + _count(m["content"]) for m in result.messages) + 3
    assert report.total_tokens == recount


def test_history_that_cannot_fit_is_trimmed_not_fatal() -> None:
    history = [{"role": "user", "content": "long question " * 600}]
    result = _run(history=history, context_window=1000)
    assert result.report.history is not None
    assert result.report.history["dropped"] == [0]
    (trimmed,) = [e for e in result.report.excluded if e.stage == "history"]
    assert (trimmed.candidate_id, trimmed.reason.value) == ("history[0]", "history_trimmed")
    assert result.report.budget.history == 0


def test_mandatory_parts_that_cannot_fit_raise_budget_error_with_the_numbers() -> None:
    with pytest.raises(BudgetError) as caught:
        _run(system_prompt="long rules " * 600, context_window=1000)
    error = caught.value
    assert error.code == "over_budget"
    assert error.sections["system"] > _count("long rules " * 600)
    assert error.sections["context_window"] == 1000
    assert "more than the context window 1000" in error.message
    assert error.to_dict()["sections"] == error.sections


def test_the_budget_errors_advice_names_the_largest_part_first() -> None:
    # A query of 15,003 tokens was met with "Shorten the history or system prompt".
    with pytest.raises(BudgetError) as caught:
        ctxasm.assemble("Where did Aristotle teach? " * 3000, PASSAGES, model="gpt-4")
    assert caught.value.message.endswith(
        "Shorten the query (15003 tokens, the largest part), or lower reserve_output_tokens (1024)."
    )
    with pytest.raises(BudgetError) as caught:
        _run(system_prompt="long rules " * 600, context_window=1000)
    system = caught.value.sections["system"]
    assert caught.value.message.endswith(
        f"Shorten the system prompt ({system} tokens, the largest part), or lower "
        "reserve_output_tokens (250)."
    )
    with pytest.raises(BudgetError) as caught:
        ctxasm.assemble("q?", PASSAGES, model="gpt-4", reserve_output_tokens=8150)
    assert caught.value.message.endswith(
        "Lower reserve_output_tokens (8150 tokens, the largest part), or shorten the system "
        "prompt (64)."
    )


def test_budget_error_when_only_the_no_context_note_does_not_fit() -> None:
    # The bare request fits, the request with the no-context note does not: still refused.
    probe = ctxasm.assemble(query="q", passages=[], context_window=100_000)
    needed = probe.report.total_tokens  # the request with the note, as small as it gets
    window = needed + 10  # reserve is window // 4, so the prompt limit is below needed
    with pytest.raises(BudgetError):
        ctxasm.assemble(query="q", passages=[], context_window=window)
    fits = ctxasm.assemble(
        query="q", passages=[], context_window=needed + 1, reserve_output_tokens=1
    )
    assert fits.report.total_tokens == needed


def test_budget_error_with_text_format() -> None:
    with pytest.raises(BudgetError) as caught:
        _run(system_prompt="rules " * 500, context_window=600, format="text")
    assert caught.value.sections["system"] == 554


def test_a_window_above_the_models_is_refused() -> None:
    with pytest.raises(RequestError) as error:
        ctxasm.assemble("q", [], model="gpt-4", context_window=10_000_000)
    assert error.value.field == "context_window"
    assert "8192" in error.value.message
