"""A follow-up question is read with the last question of the history when it finds nothing
relevant alone: "When did she die?" after "Who was Marie Curie?" was told no source was
relevant, though one said "She died in 1934"."""

from __future__ import annotations

import pytest

import ctxasm

HISTORY = [
    {"role": "user", "content": "Who was Marie Curie?"},
    {"role": "assistant", "content": "A physicist and chemist."},
]
PASSAGES = [
    {"id": "curie", "text": "Marie Curie was born in Warsaw in 1867. She won two Nobel Prizes."},
    {"id": "rome", "text": "Rome is the capital of Italy."},
]


def test_a_follow_up_that_finds_nothing_alone_is_read_with_the_last_question() -> None:
    result = ctxasm.assemble("What was she famous for?", PASSAGES, history=HISTORY)
    assert not result.report.no_relevant_context
    assert [item.id for item in result.report.included] == ["curie"]
    assert result.report.history is not None
    assert result.report.history["relevance_turn"] == 0
    assert [(e.candidate_id, e.reason.value) for e in result.report.excluded] == [
        ("rome", "below_threshold")
    ]


def test_a_query_that_finds_a_passage_alone_is_read_alone() -> None:
    result = ctxasm.assemble("What is the capital of Italy?", PASSAGES, history=HISTORY)
    assert [item.id for item in result.report.included] == ["rome"]
    assert result.report.history is not None
    assert result.report.history["relevance_turn"] is None


def test_when_the_last_question_finds_nothing_either_the_query_is_read_alone() -> None:
    history = [{"role": "user", "content": "Any news on the weather?"}, *HISTORY[1:]]
    result = ctxasm.assemble("What was she famous for?", PASSAGES, history=history)
    assert result.report.no_relevant_context
    assert result.report.history is not None
    assert result.report.history["relevance_turn"] is None
    assert all("no query term" in e.detail for e in result.report.excluded)


def test_without_history_nothing_changes() -> None:
    result = ctxasm.assemble("What was she famous for?", PASSAGES)
    assert result.report.no_relevant_context
    assert result.report.history is not None
    assert result.report.history["relevance_turn"] is None


def test_a_new_question_that_names_its_subject_is_not_read_as_a_follow_up() -> None:
    # "What is the boiling point of tungsten?" after a question on Marie Curie had borrowed
    # her passages as relevant; it points back at nothing, so nothing relevant is nothing.
    result = ctxasm.assemble("What is the boiling point of tungsten?", PASSAGES, history=HISTORY)
    assert result.report.no_relevant_context
    assert result.report.history is not None
    assert result.report.history["relevance_turn"] is None


def test_a_question_with_no_word_of_its_own_is_a_follow_up() -> None:
    result = ctxasm.assemble("And why?", PASSAGES, history=HISTORY)
    assert [item.id for item in result.report.included] == ["curie"]


@pytest.mark.parametrize(
    "query",
    ["Which company makes the phone that John bought?", "Is there a limit on uploads?"],
)
def test_a_relative_that_or_an_existential_there_is_no_pointer(query: str) -> None:
    result = ctxasm.assemble(query, PASSAGES, history=HISTORY)
    assert result.report.no_relevant_context
    assert result.report.history is not None
    assert result.report.history["relevance_turn"] is None
