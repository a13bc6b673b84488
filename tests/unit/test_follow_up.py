"""A question that points back is read with the earlier user turn that names what it points
to: "When did she die?" after "Who was Marie Curie?" was told no source was relevant, though
one said "She died in 1934", and "Where does it end?" after "Tell me about the Danube." kept
the Rhine, since its own word "end" was in every passage."""

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


def test_a_question_that_does_not_point_back_is_read_alone() -> None:
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


RIVERS = [
    {"id": "rhine", "text": "The Rhine ends in the North Sea near Rotterdam."},
    {
        "id": "volga",
        "text": "The Volga is the longest river in Europe and ends in the Caspian Sea.",
    },
    {
        "id": "danube",
        "text": "The Danube ends in the Black Sea and flows through Vienna, Budapest and Belgrade.",
    },
]
DANUBE = [
    {"role": "user", "content": "Tell me about the Danube."},
    {"role": "assistant", "content": "The Danube is a long river in central Europe."},
]


def _read(
    query: str, passages: list[dict[str, str]], history: list[dict[str, str]]
) -> tuple[list[str], int | None]:
    """The ids kept with room for one passage, and the turn the question was read with."""
    result = ctxasm.assemble(query, passages, model="gpt-4o", history=history, top_k=1)
    assert result.report.history is not None
    return [item.id for item in result.report.included], result.report.history["relevance_turn"]


@pytest.mark.parametrize(
    "query", ["Where does it end?", "And where does this river end?", "Where does this river flow?"]
)
def test_a_follow_up_is_read_with_the_turn_though_its_own_words_find_passages(query: str) -> None:
    # "end" is in every passage, "river" in the Volga's alone: read alone, they kept the Rhine
    # and the Volga. "this river" is the Danube, not any river.
    assert _read(query, RIVERS, DANUBE) == (["danube"], 0)


def test_a_follow_up_within_a_budget_for_one_passage_keeps_the_one_it_points_to() -> None:
    result = ctxasm.assemble(
        "Where does it end?", RIVERS, model="gpt-4o", history=DANUBE, max_context_tokens=40
    )
    assert [item.id for item in result.report.included] == ["danube"]
    assert [(e.candidate_id, e.reason.value) for e in result.report.excluded] == [
        ("rhine", "over_budget"),
        ("volga", "over_budget"),
    ]


def test_there_points_back_where_it_is_not_existential() -> None:
    cities = [
        {"id": "paris", "text": "About two million people live in Paris."},
        {"id": "vienna", "text": "Vienna lies on the Danube; about two million people live in it."},
    ]
    history = [{"role": "user", "content": "Tell me about Vienna."}]
    assert _read("How many people live there?", cities, history) == (["vienna"], 0)
    assert _read("Are there two million people?", cities, history) == (["paris"], None)


@pytest.mark.parametrize(
    ("query", "turn"),
    [
        ("What about the Volga?", None),  # no pointer: a new subject
        ("Where does the Volga end?", None),
        # A pointer, and a subject of its own: read with the turn, the Volga's passage has
        # more of the question's words than the Danube's.
        ("Is it true that the Volga ends in the Caspian Sea?", 0),
    ],
)
def test_a_follow_up_that_names_a_new_subject_keeps_its_passages(
    query: str, turn: int | None
) -> None:
    assert _read(query, RIVERS, DANUBE) == (["volga"], turn)


def test_a_pronoun_that_means_what_the_question_names_is_read_alone() -> None:
    # "it" is the Rhine: read with the turn, the question was said to follow the Danube's
    assert _read("Where does the Rhine end, and how long is it?", RIVERS, DANUBE) == (
        ["rhine"],
        None,
    )


def test_a_pointer_whose_words_the_turn_never_meets_is_read_alone() -> None:
    # Read with the turn, the weather's passage (two of its words) would come first.
    things = [
        {"id": "weather", "text": "Today the weather is sunny and mild."},
        {"id": "eiffel", "text": "The Eiffel Tower is made of wrought iron."},
    ]
    history = [{"role": "user", "content": "What is the weather like today?"}]
    assert _read("What is it made of?", things, history) == (["eiffel"], None)
    assert _read("What is it made of?\nWhat is the weather like today?", things, []) == (
        ["weather"],
        None,
    )


def test_a_chain_of_follow_ups_is_read_with_the_turn_that_named_the_subject() -> None:
    history = [
        *DANUBE,
        {"role": "user", "content": "Where does it start?"},
        {"role": "assistant", "content": "In the Black Forest."},
    ]
    assert _read("And where does it end?", RIVERS, history) == (["danube"], 0)


def test_a_pronoun_finds_the_person_the_turn_named_among_passages_on_others() -> None:
    passages = [
        {"id": "franklin", "text": "Rosalind Franklin died in 1958."},
        {"id": "curie", "text": "Marie Curie died in 1934 in Passy, France."},
    ]
    assert _read("When did she die?", passages, HISTORY) == (["curie"], 0)


def test_a_pronoun_whose_passages_never_name_the_person_is_read_alone() -> None:
    # The passages give no sign that Franklin is not whom "she" means: the only evidence
    # that a turn is what a question asks about is a passage with words of both.
    passages = [
        {"id": "curie", "text": "Marie Curie was born in Warsaw in 1867."},
        {"id": "franklin", "text": "Rosalind Franklin died in 1958."},
    ]
    assert _read("When did she die?", passages, HISTORY) == (["franklin"], None)


def test_the_query_class_is_the_questions_own() -> None:
    # Read with the turn, the question reads "... the history of the Danube": a summary.
    history = [{"role": "user", "content": "What is the history of the Danube?"}]
    result = ctxasm.assemble("Where does it end?", RIVERS, history=history)
    assert result.report.history is not None
    assert result.report.history["relevance_turn"] == 0
    assert result.report.query_class == "factoid"
