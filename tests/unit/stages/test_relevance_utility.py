"""The utility relevance strategy: one score from every signal a passage carries."""

from __future__ import annotations

from typing import Any

import pytest

import ctxasm
from ctxasm.data import Passage
from ctxasm.lexical import phrase_key
from ctxasm.stages.relevance_utility import UtilityRelevance, title_match

TEXT = "Mercury is the smallest planet and the closest to the Sun."
QUERY = "smallest planet"


def _scores(passages: list[Passage], query: str = QUERY, **params: Any) -> dict[str, float]:
    values = UtilityRelevance(**params).score(query, passages).values
    return {p.id: value for p, value in zip(passages, values, strict=True)}


def _excluded(result: ctxasm.Assembly) -> list[tuple[str, str, str]]:
    return [(e.candidate_id, e.stage, e.reason.value) for e in result.report.excluded]


# --- title -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "title", "expected"),
    [
        ("How hot does Mercury get?", "Mercury (planet)", 1.0),
        ("How hot does Mercury get?", "Mercury", 1.0),
        ("what did the Bank of England do", "Bank of England", 1.0),
        ("How hot does Mercury get?", "Mercury Records", 0.0),  # the whole title, or nothing
        ("Mercuryx orbit", "Mercury", 0.0),  # a whole word, not a prefix
        ("How hot does Mercury get?", None, 0.0),
        ("How hot does Mercury get?", "(planet)", 0.0),
    ],
)
def test_title_match(query: str, title: str | None, expected: float) -> None:
    assert title_match(phrase_key(query), title) == expected


def test_a_title_named_in_the_query_adds_w_title() -> None:
    passages = [Passage("named", TEXT, title="Mercury (planet)"), Passage("plain", TEXT)]
    query = "How hot does Mercury get?"
    scores = _scores(passages, query)
    assert scores["named"] == pytest.approx(2.0)  # the best BM25 (1) plus the title (1)
    assert scores["named"] > scores["plain"] > 0
    assert _scores(passages, query, w_title=0.0)["named"] == pytest.approx(1.0)


# --- freshness ---------------------------------------------------------------------------------


def test_freshness_halves_every_half_life() -> None:
    passages = [
        Passage("new", TEXT, timestamp="2024-03-11T00:00:00Z"),
        Passage("old", TEXT, timestamp="2024-03-01T00:00:00+00:00"),  # ten days older
        Passage("same", TEXT, timestamp="2024-03-11"),  # naive: UTC
        Passage("none", TEXT),
    ]
    ten = _scores(passages, half_life_days=10)
    assert ten["new"] == pytest.approx(1.0 + 0.2)
    assert ten["old"] == pytest.approx(1.0 + 0.2 * 0.5)
    assert ten["same"] == ten["new"]
    assert ten["none"] == pytest.approx(1.0)
    twenty = _scores(passages, half_life_days=20)
    assert twenty["old"] == pytest.approx(1.0 + 0.2 * 0.5**0.5)
    assert twenty["new"] == ten["new"]


def test_freshness_is_relative_to_the_newest_candidate() -> None:
    # Ages count from the newest timestamp, not from the clock: a lone old passage is fresh.
    lone = _scores([Passage("a", TEXT, timestamp="1990-01-01")], half_life_days=1)
    assert lone["a"] == pytest.approx(1.2)


def test_equal_timestamps_give_equal_scores() -> None:
    stamp = "2020-05-05T10:00:00+02:00"
    scores = _scores([Passage("a", TEXT, timestamp=stamp), Passage("b", TEXT, timestamp=stamp)])
    assert scores["a"] == scores["b"]


# --- authority and graph distance --------------------------------------------------------------


def test_authority_and_graph_distance_add_their_weighted_signal() -> None:
    passages = [
        Passage("high", TEXT, authority=0.9),
        Passage("low", TEXT, authority=0.1),
        Passage("near", TEXT, graph_distance=0),
        Passage("far", TEXT, graph_distance=3),
        Passage("plain", TEXT),
    ]
    scores = _scores(passages)
    assert scores == pytest.approx(
        {"high": 1.18, "low": 1.02, "near": 1.2, "far": 1.0 + 0.2 / 4, "plain": 1.0}
    )
    doubled = _scores(passages, w_authority=0.4, w_graph=0.0)
    assert doubled == pytest.approx(
        {"high": 1.36, "low": 1.04, "near": 1.0, "far": 1.0, "plain": 1.0}
    )


def test_metadata_alone_does_not_make_a_passage_relevant() -> None:
    passages = [
        Passage("on", TEXT),
        Passage(
            "off", "Bananas are yellow.", authority=1.0, graph_distance=0, timestamp="2024-01-01"
        ),
    ]
    assert _scores(passages) == {"on": pytest.approx(1.0), "off": 0.0}


def test_a_relevant_passage_stays_above_the_floor_whatever_the_weights() -> None:
    passages = [Passage("on", TEXT), Passage("off", "Bananas are yellow.")]
    scores = _scores(passages, w_lexical=0.0)
    assert scores["on"] > 0.0
    assert scores["off"] == 0.0


# --- the link signal ---------------------------------------------------------------------------

LINK_QUERY = "Which studio produced Starfall Voyage?"
LINK_PASSAGES = [
    {
        "id": "film",
        "title": "Starfall Voyage",
        "text": "Starfall Voyage is a 1998 film made by Helio Pictures in Lisbon.",
    },
    {  # no query word, but the film's passage names it
        "id": "studio",
        "title": "Helio Pictures",
        "text": "Helio Pictures is a Portuguese company founded in 1971 by two brothers.",
    },
    {  # no query word, and nothing names it
        "id": "other",
        "title": "Lena Ostrow",
        "text": "Lena Ostrow is a Polish sculptor who works in bronze.",
    },
]


@pytest.mark.parametrize("relevance", ["utility", "auto"])
def test_a_passage_a_relevant_one_names_is_kept(relevance: str) -> None:
    result = ctxasm.assemble(LINK_QUERY, LINK_PASSAGES, strategy={"relevance": relevance})
    assert {item.id: item.score for item in result.report.included} == {
        "film": pytest.approx(2.0),
        "studio": pytest.approx(0.1),
    }
    assert _excluded(result) == [("other", "relevance", "below_threshold")]


def test_without_the_link_weight_the_second_hop_is_irrelevant() -> None:
    strategy = {"relevance": {"name": "utility", "w_link": 0}}
    result = ctxasm.assemble(LINK_QUERY, LINK_PASSAGES, strategy=strategy)
    assert [item.id for item in result.report.included] == ["film"]
    assert _excluded(result) == [
        ("studio", "relevance", "below_threshold"),
        ("other", "relevance", "below_threshold"),
    ]


def test_only_the_first_max_link_sources_relevant_passages_link() -> None:
    passages = [Passage(p["id"], p["text"], title=p["title"]) for p in LINK_PASSAGES]
    assert _scores(passages, LINK_QUERY)["studio"] == pytest.approx(0.1)
    assert _scores(passages, LINK_QUERY, max_link_sources=0)["studio"] == 0.0


# --- auto relevance and the irrelevance floor --------------------------------------------------


def test_auto_relevance_uses_given_scores_as_they_are() -> None:
    passages = [
        {"id": "x", "text": "Apples grow on trees.", "score": 0.3},
        {"id": "y", "text": "Rivers flow to the sea.", "score": 7.5},
        {"id": "z", "text": "Owls hunt at night.", "score": -1.0},
        {"id": "w", "text": "Snow melts in spring.", "score": 0},
    ]
    result = ctxasm.assemble(LINK_QUERY, passages, strategy={"ordering": "score"})
    assert [(item.id, item.score) for item in result.report.included] == [
        ("y", 7.5),
        ("x", 0.3),
        ("w", 0.0),
        ("z", -1.0),
    ]
    assert result.report.excluded == ()


def test_auto_relevance_with_one_missing_score_uses_utility() -> None:
    passages = [{**LINK_PASSAGES[0], "score": 0.9}, LINK_PASSAGES[1], LINK_PASSAGES[2]]
    result = ctxasm.assemble(LINK_QUERY, passages)
    # Utility ignores given scores in auto mode (w_score=0): the same as without any.
    assert {item.id: item.score for item in result.report.included} == {
        "film": pytest.approx(2.0),
        "studio": pytest.approx(0.1),
    }


@pytest.mark.parametrize("relevance", ["utility", "auto"])
def test_a_query_of_stop_words_finds_no_relevant_context(relevance: str) -> None:
    result = ctxasm.assemble(
        "What is it, and why was it there?", LINK_PASSAGES, strategy={"relevance": relevance}
    )
    assert result.report.no_relevant_context is True
    assert result.report.included == ()
    assert _excluded(result) == [
        ("film", "relevance", "below_threshold"),
        ("studio", "relevance", "below_threshold"),
        ("other", "relevance", "below_threshold"),
    ]
    assert all("no content words" in e.detail for e in result.report.excluded)


@pytest.mark.parametrize(
    ("params", "field", "allowed"),
    [
        ({"half_life_days": 0}, "strategy.relevance.half_life_days", "must be at least 1e-06"),
        ({"w_title": -1}, "strategy.relevance.w_title", "must be between 0.0 and 100.0"),
        ({"max_link_sources": -1}, "strategy.relevance.max_link_sources", "must be an integer"),
        ({"b": 2}, "strategy.relevance.b", "must be between 0.0 and 1.0"),
    ],
)
def test_bad_parameters_name_the_field(params: dict[str, Any], field: str, allowed: str) -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        ctxasm.assemble(
            LINK_QUERY, LINK_PASSAGES, strategy={"relevance": {"name": "utility", **params}}
        )
    assert caught.value.field == field
    assert f"{field}: {allowed}" in caught.value.message


def test_a_stopword_only_query_says_why_nothing_is_relevant() -> None:
    result = ctxasm.assemble("what is it?", [{"id": "a", "text": "Bananas are yellow."}])
    assert result.report.no_relevant_context
    assert result.report.excluded[0].detail == "utility score 0: the query has no content words"


PARIS = "Paris is mild."
BANANA = "香蕉是钾的良好来源。"


@pytest.mark.parametrize(
    ("query", "answer", "other"),
    [
        # a query word in another form
        ("What do teachers earn?", "A teacher earns about 40,000 a year.", PARIS),
        ("Where did Kant teach?", "Kant taught at the University of Königsberg.", PARIS),
        ("How many children does she have?", "She has one child.", PARIS),
        ("How long do mice live?", "A house mouse lives about two years.", PARIS),
        ("How do I configure logging?", "Logging is configured in settings.toml.", PARIS),
        ("How to optimise tokenisation?", "Tokenization is optimized by caching.", PARIS),
        # a script written without spaces
        ("东京的人口是多少？", "东京的人口约为1400万人。", BANANA),
        ("如何安装PyTorch", "使用pip安装PyTorch：pip install torch", BANANA),
        ("富士山の高さは何メートルですか", "富士山の標高は3776メートルです。", BANANA),
        ("서울의 인구는?", "서울은 인구가 약 940만 명이다.", BANANA),
    ],
)
def test_a_passage_that_answers_in_other_words_or_scripts_is_relevant(
    query: str, answer: str, other: str
) -> None:
    passages = [{"id": "answer", "text": answer}, {"id": "other", "text": other}]
    result = ctxasm.assemble(query, passages)
    assert not result.report.no_relevant_context
    assert [item.id for item in result.report.included] == ["answer"]


@pytest.mark.parametrize(
    ("query", "other"),
    [
        ("富士山の高さは何メートルですか?", "猫はかわいい動物です。"),
        ("서울의 인구는 몇 명입니까?", "김치는 한국의 전통 음식입니다."),
        ("长城是什么时候建造的?", "熊猫是什么动物的时候吃竹子。"),
    ],
)
def test_function_words_alone_do_not_make_a_passage_relevant(query: str, other: str) -> None:
    # The pairs of a question's grammar (です, 입니, 什么, 时候) are in passages on anything.
    result = ctxasm.assemble(query, [{"id": "other", "text": other}])
    assert result.report.no_relevant_context


def test_the_report_lists_the_query_words_a_passage_states_in_another_form() -> None:
    # Relevance counted "taught" for "teach", but the report's covered terms (and the
    # planners' coverage) still matched suffixes only and listed none of them.
    passages = [{"id": "kant", "text": "Kant taught logic in Königsberg."}]
    result = ctxasm.assemble("Where did Kant teach logic?", passages)
    chosen = result.report.included[0].chosen
    assert chosen is not None
    assert chosen.terms == ("kant", "teach", "logic")
