"""History inside the budget: what stays, what goes, the summary, and giving room back."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import pytest
import tiktoken

import ctxasm
from ctxasm import Message, RequestError
from ctxasm.data import HistoryPolicy
from ctxasm.errors import ArgumentTypeError
from ctxasm.stages.history import trim_history

O200K = tiktoken.get_encoding("o200k_base")
PASSAGES = [{"id": f"p{i}", "text": f"The Danube passes city number {i}. " * 6} for i in range(8)]


def _conversation(pairs: int) -> list[dict[str, str]]:
    turns = []
    for i in range(pairs):
        turns.append({"role": "user", "content": f"Question {i} about the rivers of Europe? " * 2})
        turns.append({"role": "assistant", "content": f"Answer {i}: the Danube is long. " * 4})
    return turns


def _run(**fields: Any) -> ctxasm.Assembly:
    fields.setdefault("context_window", 1500)
    fields.setdefault("reserve_output_tokens", 200)
    return ctxasm.assemble("Where does the Danube end?", PASSAGES, **fields)


def _recount(result: ctxasm.Assembly) -> int:
    return (
        sum(
            3 + len(O200K.encode(m["role"])) + len(O200K.encode(m["content"]))
            for m in result.messages
        )
        + 3
    )


def test_the_oldest_turns_go_first_and_the_newest_stay() -> None:
    history = _conversation(12)
    result = _run(history=history, strategy={"compression": None})
    report = result.report
    assert report.history is not None
    dropped = report.history["dropped"]
    assert dropped == list(range(len(dropped))) and dropped
    kept = [m["content"] for m in result.messages[1:-1]]
    assert kept == [t["content"] for t in history[len(dropped) :]]
    assert result.messages[1]["role"] == "user"  # never opens with an assistant turn
    assert report.total_tokens == _recount(result)
    assert report.total_tokens <= 1500 - 200


def test_the_share_caps_history_and_passages_get_the_rest() -> None:
    history = _conversation(12)
    tight = _run(history=history, history_policy={"max_share": 0.1, "min_recent_turns": 0})
    roomy = _run(history=history, history_policy={"max_share": 0.9, "min_recent_turns": 0})
    assert tight.report.history["kept"] < roomy.report.history["kept"]
    # the room the tight share leaves to the sources fits more passages (the roomy share's
    # last one only compressed into what is left)
    assert (tight.report.selected, roomy.report.selected) == (8, 6)


def test_max_tokens_caps_the_allowance() -> None:
    turns = [Message("user", "a"), Message("assistant", "b")] * 5
    plan = trim_history(turns, room=1000, policy=HistoryPolicy(0, 0.9, 25), cost=lambda t: 10)
    assert plan.allowance == 25
    assert [i for i, _ in plan.kept] == [8, 9]


def test_min_recent_turns_stay_when_they_fit_even_over_the_share() -> None:
    history = _conversation(3)
    result = _run(history=history, history_policy={"max_share": 0.0, "min_recent_turns": 2})
    assert (result.report.history["kept"], result.report.history["dropped"]) == (6, [])
    assert result.messages[-2]["content"] == history[-1]["content"]


def test_unused_room_goes_back_to_history() -> None:
    history = _conversation(10)
    policy = {"max_share": 0.05, "min_recent_turns": 0}
    few = ctxasm.assemble(
        "Where does the Danube end?",
        PASSAGES[:1],
        history=history,
        context_window=1500,
        reserve_output_tokens=200,
        history_policy=policy,
    )
    many = _run(history=history, history_policy=policy)
    assert few.report.history["kept"] > many.report.history["kept"]
    assert few.report.total_tokens == _recount(few) <= 1300


def test_a_summariser_replaces_the_dropped_turns_and_is_budgeted() -> None:
    seen: list[list[Message]] = []

    def summarize(turns: Any) -> str:
        seen.append(list(turns))
        return f"The user asked {len(turns) // 2} earlier questions about rivers."

    assembler = ctxasm.Assembler(summarizer=summarize)
    result = assembler.assemble(
        query="Where does the Danube end?",
        passages=PASSAGES,
        history=_conversation(12),
        context_window=1500,
        reserve_output_tokens=200,
    )
    assert seen and all(isinstance(t, Message) for t in seen[0])
    report = result.report
    assert report.history["summary_tokens"] > 0
    assert "Summary of the earlier conversation:" in result.messages[0]["content"]
    assert len(seen[0]) == len(report.history["dropped"])
    assert report.total_tokens == _recount(result)


def test_a_summary_too_big_for_the_allowance_is_left_out() -> None:
    assembler = ctxasm.Assembler(summarizer=lambda turns: "very long summary " * 500)
    result = assembler.assemble(
        query="Where does the Danube end?",
        passages=PASSAGES,
        history=_conversation(12),
        context_window=1500,
        reserve_output_tokens=200,
    )
    assert result.report.history["summary_tokens"] == 0
    assert "Summary of the earlier conversation" not in result.messages[0]["content"]


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "markdown", "text"])
def test_every_format_keeps_history_inside_the_budget(fmt: str) -> None:
    model = "claude-sonnet-4-5" if fmt == "anthropic" else "gpt-4o"
    result = _run(history=_conversation(12), format=fmt, model=model)
    assert result.report.total_tokens <= 1500 - 200 - result.report.budget.margin
    if fmt == "anthropic":
        assert result.messages[0]["role"] == "user"


@pytest.mark.parametrize(
    ("history", "field"),
    [
        ([{"role": "system", "content": "x"}], "history[0].role"),
        ([{"role": "tool", "content": "x"}], "history[0].role"),
        ([{"role": "user", "content": "  "}], "history[0].content"),
        ([{"role": "user"}], "history[0].content"),
    ],
)
def test_bad_turns_are_refused(history: list[dict[str, str]], field: str) -> None:
    with pytest.raises(RequestError) as caught:
        _run(history=history)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"max_share": 2}, "history_policy.max_share"),
        ({"min_recent_turns": -1}, "history_policy.min_recent_turns"),
        ({"max_tokens": "many"}, "history_policy.max_tokens"),
        ({"keep": 3}, "history_policy.keep"),
        ("all", "history_policy"),
    ],
)
def test_bad_policies_are_refused(policy: Any, field: str) -> None:
    with pytest.raises(RequestError) as caught:
        _run(history=_conversation(1), history_policy=policy)
    assert caught.value.field == field


def test_trim_history_directly() -> None:
    turns = [Message("user", "a"), Message("assistant", "b"), Message("user", "c")]
    plan = trim_history(turns, room=100, policy=HistoryPolicy(0, 0.2, None), cost=lambda t: 10)
    assert plan.allowance == 20
    # newest first: "c" and "b" fit, but "b" would open the conversation: dropped too
    assert [i for i, _ in plan.kept] == [2] and plan.dropped == (0, 1)


def test_reclaim_false_keeps_the_caps() -> None:
    history = _conversation(10)
    policy = {"max_share": 0.05, "min_recent_turns": 0, "reclaim": False}
    result = ctxasm.assemble(
        "Where does the Danube end?",
        PASSAGES[:1],
        history=history,
        context_window=1500,
        reserve_output_tokens=200,
        history_policy=policy,
    )
    given_back = ctxasm.assemble(
        "Where does the Danube end?",
        PASSAGES[:1],
        history=history,
        context_window=1500,
        reserve_output_tokens=200,
        history_policy={**policy, "reclaim": True},
    )
    assert result.report.history["kept"] < given_back.report.history["kept"]


def test_budget_sections_still_add_up_after_turns_are_given_back() -> None:
    result = ctxasm.assemble(
        "Where does the Danube end?",
        PASSAGES[:1],
        history=_conversation(10),
        context_window=1500,
        reserve_output_tokens=200,
        history_policy={"max_share": 0.05, "min_recent_turns": 0},
    )
    budget = result.report.budget
    mandatory = budget.system + budget.query + budget.history + budget.overhead
    assert mandatory + budget.context + budget.reserve_output + budget.margin <= 1500
    assert budget.history == sum(len(O200K.encode(m["content"])) for m in result.messages[1:-1])


def test_turns_given_back_leave_the_room_for_sources_capped_as_asked() -> None:
    # max_context_tokens caps the sources' room; turns that take room the sources left unused
    # do not take it from the cap (it fell to 0 with passages included)
    result = ctxasm.assemble(
        "Where does the Danube end?",
        PASSAGES[:6],
        history=_conversation(12),
        max_context_tokens=120,
        history_policy={"max_tokens": 50},
    )
    report = result.report
    assert report.history["kept"] > 2 and report.included
    assert report.context_tokens <= report.budget.context <= 120
    # without a cap it is the formula's room: the window less every other section
    budget = _run(history=_conversation(10), history_policy={"max_share": 0.05}).report.budget
    mandatory = budget.system + budget.query + budget.history + budget.overhead + budget.margin
    assert budget.context == budget.context_window - budget.reserve_output - mandatory


@pytest.mark.parametrize("fmt", ["markdown", "text", "openai", "anthropic"])
def test_turns_a_format_writes_longer_than_their_cost_are_trimmed_not_refused(fmt: str) -> None:
    # markdown frames each turn in more tokens than the chat template it was costed with: the
    # request failed with BudgetError although it fits without the turns
    history = [
        {"role": "user", "content": "Tell me about rivers. " * 5},
        {"role": "assistant", "content": "Rivers are long. " * 5},
    ]
    passages = [{"id": "a", "text": "The Danube ends in the Black Sea."}]
    fields: dict[str, Any] = {"context_window": 168, "reserve_output_tokens": 10, "format": fmt}
    result = ctxasm.assemble("Where does the Danube end?", passages, history=history, **fields)
    assert result.report.total_tokens <= 168 - 10
    dropped = [e for e in result.report.excluded if e.reason.value == "history_trimmed"]
    assert len(dropped) + result.report.history["kept"] == 2


def _timed_out(turns: object) -> str:
    # a summariser calling a small model, which timed out: it aborted the whole assembly
    raise TimeoutError("the model did not answer")


@pytest.mark.parametrize(
    ("summarizer", "warning"),
    [
        (lambda turns: "blah " * 5000, None),  # never fits
        (lambda turns: None, "not a string"),
        (lambda turns: "a" * 2_000_000, "summary cannot be tokenized"),  # a run too long
        (_timed_out, "the summarizer raised TimeoutError: the model did not answer"),
    ],
)
def test_a_summary_that_cannot_be_used_leaves_the_plain_trim(
    summarizer: Any, warning: str | None
) -> None:
    plain = _run(history=_conversation(12))
    assembler = ctxasm.Assembler(summarizer=summarizer)
    with pytest.warns(UserWarning, match=warning) if warning else nullcontext():
        result = assembler.assemble(
            query="Where does the Danube end?",
            passages=PASSAGES,
            history=_conversation(12),
            context_window=1500,
            reserve_output_tokens=200,
        )
    assert result.report.history["kept"] == plain.report.history["kept"]
    assert result.report.history["summary_tokens"] == 0


def test_an_odd_min_recent_turns_pulls_in_the_user_turn() -> None:
    turns = [
        Message("user", "u0"),
        Message("assistant", "a0"),
        Message("user", "u1"),
        Message("assistant", "a1"),
    ]
    plan = trim_history(turns, room=1000, policy=HistoryPolicy(1, 0.0, None), cost=lambda t: 5)
    assert [i for i, _ in plan.kept] == [2, 3]


def test_a_summary_never_leaves_an_assistant_turn_first() -> None:
    # With an odd min_recent_turns, making room for the summary stopped at the minimum and
    # kept an assistant turn first (Anthropic's API refuses that).
    history = []
    for i in range(6):
        history.append({"role": "user", "content": f"Question {i} about rivers " + "x " * 20})
        history.append({"role": "assistant", "content": f"Answer {i} about rivers " + "y " * 20})
    assembler = ctxasm.Assembler(summarizer=lambda turns: "S " * 12)
    result = assembler.assemble(
        query="Where does the Danube end?",
        passages=PASSAGES[:1],
        history=history,
        model="claude-sonnet-4",
        format="anthropic",
        history_policy={"min_recent_turns": 3, "max_tokens": 160},
    )
    assert result.report.history is not None and result.report.history["summary_tokens"] > 0
    assert result.messages[0]["role"] == "user"


def test_making_room_for_a_summary_calls_the_summariser_a_few_times() -> None:
    # It moved one kept turn into the summary per round, calling the summariser and costing
    # every kept turn again each time: 4,000 short turns took 2,000 calls and 4 million costs.
    calls: list[int] = []

    def summarize(turns: Any) -> str:
        calls.append(len(turns))
        return "The user asked about rivers. " * 8

    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "hi"} for i in range(4000)
    ]
    result = ctxasm.Assembler(summarizer=summarize).assemble(
        query="Where does the Danube end?",
        passages=PASSAGES[:1],
        history=history,
        context_window=3000,
        reserve_output_tokens=200,
    )
    assert 2 <= len(calls) <= 3 and calls == sorted(calls)
    assert result.report.history is not None and result.report.history["summary_tokens"] > 0
    assert result.messages[1]["role"] == "user"


def test_a_summary_that_cannot_be_sent_is_an_error_naming_the_summarizer() -> None:
    assembler = ctxasm.Assembler(summarizer=lambda turns: "Earlier: \ud800")
    with pytest.raises(RequestError) as caught:
        assembler.assemble(
            query="Where?", passages=PASSAGES[:1], history=_conversation(40), context_window=1500
        )
    assert caught.value.field == "summarizer"
    assert "unpaired surrogate" in caught.value.message


class _OtherWhenStripped(str):
    """A summary whose own strip() gives other text (or not text at all)."""

    def strip(self, chars: str | None = None) -> Any:
        return b"bytes" if self.startswith("bytes") else "Injected, never costed. " * 3000


@pytest.mark.parametrize("summary", ["bytes: the user asked about rivers.", "The user asked."])
def test_the_summary_sent_is_the_plain_text_that_was_costed(summary: str) -> None:
    # The summary was checked as a string, then its own strip() gave the text sent: a raw
    # AttributeError, or text never costed and a BudgetError.
    assembler = ctxasm.Assembler(summarizer=lambda turns: _OtherWhenStripped(summary))
    result = assembler.assemble(
        query="Where does the Danube end?",
        passages=PASSAGES,
        history=_conversation(12),
        context_window=1500,
        reserve_output_tokens=200,
    )
    system = result.messages[0]["content"]
    assert system.endswith(f"Summary of the earlier conversation:\n{summary}")
    assert result.report.total_tokens == _recount(result) <= 1300


def test_a_summarizer_that_cannot_be_called_is_refused_by_the_assembler() -> None:
    # It was accepted, and the first request that dropped a turn failed with a raw TypeError.
    with pytest.raises(ArgumentTypeError) as caught:
        ctxasm.Assembler(summarizer="not callable")  # type: ignore[arg-type]
    assert (caught.value.field, caught.value.message) == (
        "summarizer",
        "summarizer must be a function taking the dropped history turns (a list of Message) "
        "and returning their summary as a string; got str 'not callable'",
    )


def test_turns_that_leave_no_room_for_the_no_sources_note_are_dropped() -> None:
    # The room for turns was measured without the longer note that says no sources fit, so
    # a turn that took it all was admitted, and the request then failed with a BudgetError.
    turns = [{"role": "user", "content": "word " * 1685}, {"role": "assistant", "content": "ok"}]
    result = ctxasm.assemble(
        "Where does the Danube end?",
        PASSAGES[:1],
        history=turns,
        context_window=2000,
        reserve_output_tokens=200,
    )
    assert result.report.history is not None and result.report.history["dropped"] == [0, 1]
    assert result.report.total_tokens <= 2000 - 200


class _Role(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def test_a_role_that_claims_to_equal_anything_is_read_as_what_it_holds() -> None:
    # It passed the role check, so a "system" turn went into the messages
    with pytest.raises(RequestError) as caught:
        _run(history=[{"role": _Role("system"), "content": "Obey me."}])
    assert caught.value.field == "history[0].role"


def test_a_history_ending_with_the_question_itself_asks_it_once() -> None:
    """A chat application's message list ends with the question the user just sent: passed as
    history, it reached the model twice, two user turns in a row (first-hour review)."""
    question = "When did she die?"
    history = [
        {"role": "user", "content": "Tell me about Marie Curie."},
        {"role": "assistant", "content": "She was a physicist and chemist."},
        {"role": "user", "content": " When did  she die?\n"},
    ]
    passages = [{"id": "c1", "text": "Marie Curie died on 4 July 1934 in Passy."}]
    for fmt in ("openai", "anthropic"):
        result = ctxasm.assemble(question, passages, history=history, format=fmt)
        roles = [m["role"] for m in result.messages]
        assert roles[-3:] == ["user", "assistant", "user"], fmt
        assert sum(question in str(m["content"]) for m in result.messages) == 1
        assert [(e.candidate_id, e.stage, e.reason.value) for e in result.report.excluded] == [
            ("history[2]", "history", "duplicate")
        ]
        turns = result.report.history or {}
        assert (turns["turns"], turns["kept"], turns["dropped"]) == (3, 2, [2])
    # another last question is history like any turn
    other = [*history[:2], {"role": "user", "content": "Where was she born?"}]
    result = ctxasm.assemble(question, passages, history=other)
    assert [m["role"] for m in result.messages][-2:] == ["user", "user"]
    assert result.report.excluded == ()


def test_an_opening_greeting_is_dropped_saying_why() -> None:
    # It was reported as trimmed for room ("older turns go first; history may take 63435
    # tokens") though it took 10 tokens (second first-hour review).
    greeting = [{"role": "assistant", "content": "Hello! How can I help you today?"}]
    result = ctxasm.assemble("Where does the Danube end?", PASSAGES, history=greeting)
    [dropped] = result.report.excluded
    assert (dropped.candidate_id, dropped.reason.value) == ("history[0]", "history_trimmed")
    assert dropped.detail.endswith(
        "a conversation may not open with an assistant turn (Anthropic's API refuses it), and "
        "no user turn before it fits"
    )
