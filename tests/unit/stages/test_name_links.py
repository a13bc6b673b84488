"""Names two passages share as links of a chain: the next hop is often a page about the answer
that names the bridge in its text ("... toured for ten years beside Dana Roux"), not the
bridge's own page, so no title links them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm.data import Passage
from ctxasm.lexical import bridge_names, phrase_key
from ctxasm.stages import relevance_utility
from ctxasm.stages.relevance_utility import shared_names

QUESTION = "Who is the spouse of the Harbor Lights performer?"
PASSAGES = [
    {
        "id": "album",
        "title": "Harbor Lights (Dana Roux album)",
        "text": "Harbor Lights is the second album performed by the French singer Dana Roux, "
        "recorded in Marseille in 1984.",
    },
    {  # no word of the question: only the name ties it to the album
        "id": "pianist",
        "title": "Teo Marchal",
        "text": "Teo Marchal is a pianist who toured for ten years beside Dana Roux. He later "
        "taught at a conservatory in Lyon.",
    },
    {  # the question's words, and nothing the album does not say already
        "id": "port",
        "title": "Old Port of Marseille",
        "text": "The Old Port of Marseille is a harbor in France, lit at night by its quay lights.",
    },
    {
        "id": "other",
        "title": "Lena Ostrow",
        "text": "Lena Ostrow is a Polish sculptor who works in bronze in Gdansk.",
    },
]


def _assemble(budget: int = 90, **selection: object) -> ctxasm.Assembly:
    strategy: dict[str, object] = {"compression": None}
    if selection:
        strategy["selection"] = {"name": "bridge", **selection}
    return ctxasm.assemble(
        QUESTION, PASSAGES, model="gpt-4o", max_context_tokens=budget, strategy=strategy
    )


def test_bridge_names_are_capitalised_phrases_of_two_words_or_more() -> None:
    text = (
        "During World War II, Jules Verne's heirs met Steve Hillage and the University of "
        "Rochester in Persia. However, Thomas left on 9 February 1953 for Apollo 11 and Nice. "
        "It was written by David Byrne for the 1985 Talking Heads album."
    )
    assert bridge_names(text) == {
        "world war ii",  # the function word opening it dropped
        "jules verne",  # and the possessive
        "steve hillage",  # two names "and" joins
        "university of rochester",
        "david byrne",  # two names "for" and a number join
        "talking heads",
    }  # one word ("Persia", "Thomas") and a number or date are no bridge


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["Steve", "Hillage", "the", "of", "The", "Verne's", "1953", "x.", "And", ",", "Ufa"]
        ),
        max_size=40,
    ).map(" ".join)
)
def test_every_bridge_name_is_a_phrase_of_two_words_of_its_text(text: str) -> None:
    padded = f" {phrase_key(text)} "
    for name in bridge_names(text):
        words = name.split()
        assert len(words) >= 2 and not any(c.isdigit() for c in name)
        assert f" {name} " in padded


def test_a_name_is_shared_by_at_least_two_and_at_most_a_quarter_of_the_passages() -> None:
    def passage(text: str) -> Passage:
        return Passage(str(len(text)), text)

    rare = [passage("Dana Roux sang."), passage("It was Dana Roux."), passage("No one.")]
    assert shared_names(rare) == [{"dana roux"}, {"dana roux"}, frozenset()]
    alone = [passage("Dana Roux sang."), passage("Nobody else.")]
    assert shared_names(alone) == [frozenset(), frozenset()]
    # Held by 4 of 12 (more than a quarter, and than 3): a name nearly all of them have.
    common = [passage(f"The United States, {'x' * i}.") for i in range(4)]
    common += [passage(f"Other text {i}.") for i in range(8)]
    assert all(not found for found in shared_names(common) or [])


def test_names_are_compared_among_at_most_max_name_passages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(relevance_utility, "MAX_NAME_PASSAGES", 3)
    passages = [Passage(p["id"], p["text"], title=p["title"]) for p in PASSAGES]
    assert shared_names(passages) is None
    assert shared_names(passages[:3]) is not None


def test_a_passage_sharing_a_name_with_a_relevant_one_is_not_irrelevant() -> None:
    result = _assemble(budget=400)
    excluded = {item.id: item.reason.value for item in result.report.excluded}
    assert excluded == {"other": "below_threshold"}
    # Without the name, nothing ties it to the question.
    alone = [
        p if p["id"] != "pianist" else {**p, "text": "Teo Marchal is a pianist."} for p in PASSAGES
    ]
    result = ctxasm.assemble(QUESTION, alone, model="gpt-4o", max_context_tokens=400)
    excluded = {item.id: item.reason.value for item in result.report.excluded}
    assert excluded == {"pianist": "below_threshold", "other": "below_threshold"}


def test_the_planner_follows_a_shared_name_and_the_report_names_it() -> None:
    chosen = {item.id: item.chosen for item in _assemble().report.included}
    assert set(chosen) == {"album", "pianist"}
    hop = chosen["pianist"]
    assert hop is not None
    assert (hop.by, hop.linked_from, hop.via) == ("link", "album", "dana roux")


def test_without_name_links_the_planner_takes_the_question_words() -> None:
    kept = {item.id for item in _assemble(names=0).report.included}
    assert kept == {"album", "port"}


def test_a_name_the_question_says_links_nothing() -> None:
    asked = "Who is the spouse of the Dana Roux performer?"
    result = ctxasm.assemble(
        asked, PASSAGES, model="gpt-4o", max_context_tokens=400, strategy={"compression": None}
    )
    vias = {item.chosen.via for item in result.report.included if item.chosen is not None}
    assert "dana roux" not in vias


def test_a_comparison_follows_no_shared_name() -> None:
    compared = "Which was recorded first, Harbor Lights or the album by Teo Marchal?"
    result = ctxasm.assemble(
        compared,
        PASSAGES,
        model="gpt-4o",
        max_context_tokens=400,
        strategy={"compression": None},
        query_class="comparison",
    )
    vias = {item.chosen.via for item in result.report.included if item.chosen is not None}
    assert "dana roux" not in vias
    result = ctxasm.assemble(
        compared,
        PASSAGES,
        model="gpt-4o",
        max_context_tokens=400,
        strategy={"compression": None},
        query_class="multihop",
    )
    vias = {item.chosen.via for item in result.report.included if item.chosen is not None}
    assert "dana roux" in vias
