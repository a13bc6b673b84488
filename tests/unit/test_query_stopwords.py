"""A query written in German, French, Spanish, Italian, Portuguese or Dutch has that language's
function words removed as well as English ones (first-hour review: "Wo endet die Donau?" kept
a passage about the Rhine for its "die"); an English query, names and all, keeps its terms."""

from __future__ import annotations

import pytest

import ctxasm
from ctxasm.lexical import query_terms, query_words


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Wo endet die Donau?", ["endet", "donau"]),
        ("Où se termine le Danube ?", ["termine", "danube"]),
        ("¿Dónde termina el Danubio?", ["termina", "danubio"]),
        ("Dove finisce il Danubio?", ["finisce", "danubio"]),
        ("Onde termina o Danúbio?", ["termina", "danúbio"]),
        ("Waar eindigt de Donau?", ["eindigt", "donau"]),
        ("Wer hat die Relativitätstheorie entwickelt?", ["relativitätstheorie", "entwickelt"]),
    ],
)
def test_the_function_words_of_the_querys_language_are_no_terms(
    query: str, terms: list[str]
) -> None:
    assert query_terms(query) == terms
    assert query_words(query) == terms


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Did the singer die in 1990?", ["singer", "die", "1990"]),
        ("Who directed Die Hard?", ["directed", "die", "hard"]),
        ("Who founded De La Soul?", ["founded", "de", "la", "soul"]),
        ("Der Spiegel editor in chief", ["der", "spiegel", "editor", "chief"]),
        ("La La Land director", ["la", "land", "director"]),
    ],
)
def test_an_english_query_keeps_the_words_other_languages_would_drop(
    query: str, terms: list[str]
) -> None:
    assert query_terms(query) == terms


def test_a_german_question_drops_the_passage_that_shares_only_a_function_word() -> None:
    passages = [
        {"id": "donau", "text": "Die Donau endet im Schwarzen Meer, in einem großen Delta."},
        {"id": "rhein", "text": "Der Rhein ist einer der längsten Flüsse, die Europa kennt."},
    ]
    result = ctxasm.assemble("Wo endet die Donau?", passages, model="gpt-4o")
    assert [p.id for p in result.report.included] == ["donau"]
    [rhein] = result.report.excluded
    assert (rhein.candidate_id, rhein.reason.value) == ("rhein", "below_threshold")
    assert rhein.detail == "utility score 0: no query term in the title or text"
