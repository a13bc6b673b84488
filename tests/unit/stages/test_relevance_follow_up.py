"""Follow-up questions: which questions point back, and the earlier user turn they are read
with (one that is about what they ask among the passages)."""

from __future__ import annotations

import pytest

from ctxasm.data import Message
from ctxasm.stages.relevance_follow_up import NEAREST_TURNS, FollowUp, follow_up, points_back

DANUBE = (
    Message("user", "Tell me about the Danube."),
    Message("assistant", "The Danube is a long river in central Europe."),
)
RIVERS = (
    "The Rhine ends in the North Sea near Rotterdam.",
    "The Volga is the longest river in Europe and ends in the Caspian Sea.",
    "The Danube ends in the Black Sea and flows through Vienna, Budapest and Belgrade.",
)


@pytest.mark.parametrize(
    "query",
    [
        "Where does it end?",
        "When did she die?",
        "What do they eat?",
        "And where does this river end?",
        "Which of these cities is older?",
        "Tell me more.",
        "How many people live there?",
        "Has she been there?",
        "And why?",
        # a pointer in the first clause, or one a later clause cannot bind
        "Where does it end, and how long is the Rhine?",
        "Is it true that the Volga ends in the Caspian Sea?",
        "Where does the Rhine end, and what else flows into the sea?",
        "When did she die, and where?",
        # a noun after "the" is what an earlier turn named, not a subject of the question's
        "Who directed the film, and when was he born?",
        "What did Einstein say about it?",
        # a name in a clause that sets the scene is no subject (review rv43-2)
        "According to Wikipedia, where does it end?",
        "In Europe, where does it end?",
        "On Monday, where did you say it ends?",
        "In the US, how much does it cost?",
        "Compared to Google, how big is it?",
        "For Python, does it work?",
        "Apart from Berlin, where does it flow?",
        "If Trump wins, what happens to it?",
    ],
)
def test_a_question_with_a_pointer_or_no_word_of_its_own_points_back(query: str) -> None:
    assert points_back(query)


@pytest.mark.parametrize(
    "query",
    [
        "Where does the Danube end?",
        "Which company makes the phone that John bought?",
        "Is there a limit on uploads?",
        "Are there rivers in Malta?",
        "There's a fee, but isn't there a refund?",
        "Will there be rain in Vienna?",
        "What is the boiling point of tungsten?",
        # the pointer means what an earlier clause of the question names
        "Where does the Rhine end, and how long is it?",
        "Who founded Apple and when did he die?",
        "What is the tallest tower in Paris? Who built it?",
        "Where does the Danube end; how many people live there?",
        # a topic brought up, or a clause that asks, names the subject (review rv43-2)
        "What about the Rhine, where does it end?",
        "As for the Rhine, how long is it?",
        "In which country does the Danube end, and how long is it?",
        "In Paris, where does the Seine end, and how long is it?",
    ],
)
def test_a_question_that_names_its_subject_does_not_point_back(query: str) -> None:
    assert not points_back(query)


def test_a_pronoun_is_read_with_the_last_user_turn_question_first() -> None:
    assert follow_up("Where does it end?", DANUBE, RIVERS) == FollowUp(
        "Where does it end?\nTell me about the Danube.", 0
    )


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("And where does this river end?", "And where does this end?"),
        ("Where do these two rivers end?", "Where do these end?"),
        ("Is this the end of it?", "Is this the end of it?"),  # no noun after "this"
        # a name after it is the question's own subject, kept (review rv36-2)
        ("What is this Rhine river's end point?", "What is this Rhine river's end point?"),
    ],
)
def test_a_demonstratives_noun_is_left_out_of_the_reading(query: str, asked: str) -> None:
    assert follow_up(query, DANUBE, RIVERS) == FollowUp(f"{asked}\nTell me about the Danube.", 0)


def test_a_turn_that_points_back_itself_gives_way_to_the_one_it_points_to() -> None:
    history = [
        *DANUBE,
        Message("user", "Where does it start?"),
        Message("assistant", "In the Black Forest."),
        Message("user", "Thanks!"),  # no passage has its word
        Message("assistant", "You are welcome."),
    ]
    texts = [*RIVERS, "The Danube starts in the Black Forest and ends in the Black Sea."]
    found = follow_up("And where does it end?", history, texts)
    assert found is not None
    assert found.turn == 0


def test_only_the_nearest_user_turns_that_add_a_word_are_compared() -> None:
    chatter = [Message("user", f"Thanks, noted {n}!") for n in range(NEAREST_TURNS - 1)]
    history = [*DANUBE, *chatter]  # the Danube's turn is the NEAREST_TURNS-th
    assert follow_up("Which cities does it flow through?", history, RIVERS) == FollowUp(
        "Which cities does it flow through?\nTell me about the Danube.", 0
    )
    assert follow_up("Which cities does it flow through?", [*history, *chatter[:1]], RIVERS) is None


def test_where_every_related_turn_points_back_the_nearest_is_read() -> None:
    history = [Message("user", "What did she discover?"), Message("assistant", "Radium.")]
    texts = ["Marie Curie discovered radium and died in 1934."]
    assert follow_up("When did she die?", history, texts) == FollowUp(
        "When did she die?\nWhat did she discover?", 0
    )


def test_a_turn_none_of_whose_passages_has_the_questions_words_is_not_read() -> None:
    # The question's own word finds passages ("made"), none with a word of the turn's: the
    # turn is about something else.
    history = [Message("user", "What is the weather like today?")]
    texts = ["The Eiffel Tower is made of wrought iron.", "Today the weather is sunny."]
    assert follow_up("What is it made of?", history, texts) is None
    earlier = [Message("user", "Tell me about the Eiffel Tower."), *history]
    assert follow_up("What is it made of?", earlier, texts) == FollowUp(
        "What is it made of?\nTell me about the Eiffel Tower.", 0
    )


def test_where_no_passage_has_the_questions_words_a_turn_some_passage_knows_is_read() -> None:
    history = [Message("user", "Who was Marie Curie?")]
    texts = ["Marie Curie won two Nobel Prizes.", "Rome is the capital of Italy."]
    assert follow_up("What was she famous for?", history, texts) == FollowUp(
        "What was she famous for?\nWho was Marie Curie?", 0
    )
    assert follow_up("What was she famous for?", history, texts[1:]) is None


@pytest.mark.parametrize(
    ("query", "history"),
    [
        ("Where does the Volga end?", DANUBE),  # no pointer
        ("Where does it end?", ()),
        ("Where does it end?", (Message("user", "Why?"), Message("assistant", "Because."))),
        ("Where does it end?", (Message("assistant", "The Danube is a river."),)),
        # the turn adds no word to the question's
        ("Where does it end, the Danube?", (Message("user", "Where does the Danube end?"),)),
    ],
)
def test_no_reading_without_a_pointer_or_a_turn_that_adds_a_word(
    query: str, history: tuple[Message, ...]
) -> None:
    assert follow_up(query, history, RIVERS) is None


def test_no_reading_without_passages() -> None:
    assert follow_up("Where does it end?", DANUBE, []) is None
