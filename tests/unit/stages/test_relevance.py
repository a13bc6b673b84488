"""The relevance slot: given scores, BM25 where scores are missing, min_score and top_k."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm.data import Passage
from ctxasm.stages.relevance import AutoRelevance, BM25Relevance, GivenScoreRelevance, rank

NO_DEDUP = {"dedup": "none", "ordering": "score"}

CORPUS = [
    {"id": "wind", "text": "Wind turbines convert moving air into electricity."},
    {"id": "all3", "text": "Solar panel efficiency depends on the solar cell material."},
    {"id": "two", "text": "A solar panel on the roof of the old barn house."},
    {"id": "one", "text": "Engine efficiency is measured on a test bench today."},
    {"id": "pasta", "text": "Cook the pasta in salted boiling water for ten minutes."},
]
QUERY = "How does solar panel efficiency work?"


def _run(passages: list[dict[str, Any]], query: str = QUERY, **fields: Any) -> ctxasm.Assembly:
    strategy = {**NO_DEDUP, **fields.pop("strategy", {})}
    return ctxasm.assemble(query, passages, strategy=strategy, **fields)


def _reference_bm25(query_terms: list[str], texts: list[str]) -> list[float]:
    """Okapi BM25 (k1 1.2, b 0.75, length in characters), scaled so the best is 1."""
    docs = [re.findall(r"\w+", t.lower()) for t in texts]
    lengths = [len(t) for t in texts]
    average = sum(lengths) / len(lengths)
    raw = []
    for words, length in zip(docs, lengths, strict=True):
        total = 0.0
        for term in query_terms:
            df = sum(1 for d in docs if term in d)
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            tf = words.count(term)
            total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        raw.append(total)
    best = max(raw)
    return [r / best for r in raw]


def test_bm25_ranks_by_query_terms() -> None:
    result = _run(CORPUS)
    report = result.report
    assert [item.id for item in report.included] == ["all3", "two", "one"]
    expected = dict(
        zip(
            [p["id"] for p in CORPUS],
            _reference_bm25(["solar", "panel", "efficiency", "work"], [p["text"] for p in CORPUS]),
            strict=True,
        )
    )
    assert [item.score for item in report.included] == pytest.approx(
        [expected["all3"], expected["two"], expected["one"]]
    )
    assert report.included[0].score == 1.0
    assert [e.to_dict() for e in report.excluded] == [
        {
            "id": "wind",
            "stage": "relevance",
            "reason": "below_threshold",
            "detail": "utility score 0: no query term in the title or text",
        },
        {
            "id": "pasta",
            "stage": "relevance",
            "reason": "below_threshold",
            "detail": "utility score 0: no query term in the title or text",
        },
    ]


def test_bm25_prefers_the_shorter_of_two_equal_matches() -> None:
    passages = [
        {"id": "long", "text": "Tides are caused by the moon and by many other long factors."},
        {"id": "short", "text": "Tides follow the moon."},
        {"id": "other", "text": "Unrelated words entirely."},
    ]
    result = _run(passages, query="tides moon")
    assert [item.id for item in result.report.included] == ["short", "long"]


def test_missing_scores_anywhere_switch_auto_relevance_to_bm25() -> None:
    passages = [dict(p) for p in CORPUS]
    passages[4]["score"] = 99.0  # the pasta passage claims a high score; BM25 ignores it
    result = _run(passages)
    assert [item.id for item in result.report.included] == ["all3", "two", "one"]


def test_stopword_only_query_finds_no_relevant_context() -> None:
    result = _run(CORPUS, query="What is the of and to?")
    report = result.report
    assert report.no_relevant_context is True
    assert report.selected == 0
    assert report.included == ()
    assert [(e.candidate_id, e.reason.value) for e in report.excluded] == [
        (p["id"], "below_threshold") for p in CORPUS
    ]
    assert result.messages[-1]["content"] == (
        "No relevant sources were found for this question. Say that you could not find the "
        "information; do not guess.\n\nQuestion: What is the of and to?"
    )


def test_given_scores_are_used_as_they_are() -> None:
    passages = [
        {"id": "a", "text": "Cook the pasta.", "score": 0.2},
        {"id": "b", "text": "Solar panel efficiency.", "score": 0.1},
        {"id": "c", "text": "Wind turbines.", "score": 0.9},
    ]
    result = _run(passages)
    assert [(i.id, i.score) for i in result.report.included] == [
        ("c", 0.9),
        ("a", 0.2),
        ("b", 0.1),
    ]
    assert result.report.no_relevant_context is False


def test_given_strategy_uses_default_for_missing_scores() -> None:
    passages = [
        {"id": "a", "text": "Cook the pasta.", "score": 0.2},
        {"id": "b", "text": "Solar panel efficiency."},
        {"id": "c", "text": "Wind turbines.", "score": -1.0},
    ]
    result = _run(passages, strategy={"relevance": {"name": "given", "default": 0.5}})
    assert [(i.id, i.score) for i in result.report.included] == [
        ("b", 0.5),
        ("a", 0.2),
        ("c", -1.0),
    ]


def test_ties_keep_request_order() -> None:
    passages = [{"id": f"p{i}", "text": f"Fact number {i}.", "score": 1.0} for i in range(5)]
    result = _run(passages)
    assert [i.id for i in result.report.included] == ["p0", "p1", "p2", "p3", "p4"]


def test_min_score() -> None:
    passages = [
        {"id": "a", "text": "First fact.", "score": 0.9},
        {"id": "b", "text": "Second fact.", "score": 0.5},
        {"id": "c", "text": "Third fact.", "score": 0.2},
        {"id": "d", "text": "Fourth fact.", "score": 0.4},
    ]
    result = _run(passages, min_score=0.4)
    assert [i.id for i in result.report.included] == ["a", "b", "d"]
    assert [e.to_dict() for e in result.report.excluded] == [
        {
            "id": "c",
            "stage": "relevance",
            "reason": "below_threshold",
            "detail": "given score 0.2 < min_score 0.4",
        }
    ]


def test_min_score_that_removes_everything() -> None:
    passages = [{"id": "a", "text": "First fact.", "score": 0.1}]
    result = _run(passages, min_score=0.5)
    assert result.report.no_relevant_context is True
    assert "No relevant sources were found" in result.messages[-1]["content"]


def test_top_k() -> None:
    passages = [
        {"id": "a", "text": "First fact.", "score": 0.3},
        {"id": "b", "text": "Second fact.", "score": 0.9},
        {"id": "c", "text": "Third fact.", "score": 0.5},
        {"id": "d", "text": "Fourth fact.", "score": 0.1},
    ]
    result = _run(passages, top_k=2, min_score=0.2)
    assert [i.id for i in result.report.included] == ["b", "c"]
    assert [e.to_dict() for e in result.report.excluded] == [
        {"id": "a", "stage": "relevance", "reason": "top_k", "detail": "rank 3 > top_k 2"},
        {
            "id": "d",
            "stage": "relevance",
            "reason": "below_threshold",
            "detail": "given score 0.1 < min_score 0.2",
        },
    ]


def test_empty_text_is_excluded_as_empty() -> None:
    passages = [
        {"id": "blank", "text": "  \n ", "score": 1.0},
        {"id": "none", "text": "", "score": 1.0},
        {"id": "a", "text": "A fact.", "score": 0.5},
    ]
    result = _run(passages)
    assert [i.id for i in result.report.included] == ["a"]
    assert [
        (e.candidate_id, e.stage, e.reason.value, e.detail) for e in result.report.excluded
    ] == [
        ("blank", "relevance", "empty", "text is empty"),
        ("none", "relevance", "empty", "text is empty"),
    ]


def test_rank_directly() -> None:
    readable = [
        (0, Passage("a", "alpha", score=0.1)),
        (3, Passage("b", "beta", score=0.7)),
        (5, Passage("c", "gamma", score=0.7)),
    ]
    kept, excluded, _ = rank("q", readable, GivenScoreRelevance(), min_score=None, top_k=2)
    assert [(c.id, c.request_index, c.score) for c in kept] == [("b", 3, 0.7), ("c", 5, 0.7)]
    assert [(e.candidate_id, e.reason.value) for e in excluded] == [("a", "top_k")]


def test_bm25_scores_directly() -> None:
    passages = [Passage(p["id"], p["text"]) for p in CORPUS]
    scores = BM25Relevance().score(QUERY, passages)
    assert scores.method == "bm25"
    assert scores.floor == 0.0
    assert scores.values == pytest.approx(
        _reference_bm25(["solar", "panel", "efficiency", "work"], [p.text for p in passages])
    )


def test_bm25_matches_whole_words_only() -> None:
    # Not inside a longer word that is no form of it ("solarium", "panther").
    passages = [Passage("a", "solarium panther"), Passage("b", "solar")]
    assert BM25Relevance().score("solar pan", passages).values == [0.0, 1.0]


def test_top_k_detail_names_each_passage_rank() -> None:
    passages = [
        {"id": "a", "text": "First fact.", "score": 0.9},
        {"id": "b", "text": "Second fact.", "score": 0.8},
        {"id": "c", "text": "Third fact.", "score": 0.7},
    ]
    result = _run(passages, top_k=1)
    assert [(e.candidate_id, e.detail) for e in result.report.excluded] == [
        ("b", "rank 2 > top_k 1"),
        ("c", "rank 3 > top_k 1"),
    ]


@pytest.mark.parametrize("name", ["bm25", "utility"])
def test_k1_zero_scores_presence_and_counts_no_division_by_zero(name: str) -> None:
    # k1 = 0 (allowed) makes a term's weight its IDF wherever it occurs at all; a text without
    # the term once divided 0 by 0 and the request failed with a traceback.
    result = _run(CORPUS, strategy={"relevance": {"name": name, "k1": 0}})
    assert [item.id for item in result.report.included] == ["all3", "two", "one"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["sun", "moon", "star", "sky", "Sun.", "x"]), max_size=12),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.sampled_from(["sun", "moon", "star", "void"]), max_size=4, unique=True),
    st.sampled_from([0.0, 0.5, 1.2, 3.0]),
    st.sampled_from([0.0, 0.75, 1.0]),
)
def test_bm25_summed_with_numpy_gives_the_same_floats(
    words: list[list[str]], terms: list[str], k1: float, b: float
) -> None:
    import numpy  # noqa: F401  (loaded: the numpy sum is taken)

    from ctxasm.stages import relevance

    texts = [" ".join(w) for w in words]
    by_text = relevance.bm25(terms, texts, k1, b)
    original = relevance._VECTOR_TEXTS
    try:
        relevance._VECTOR_TEXTS = 1
        assert relevance.bm25(terms, texts, k1, b) == by_text  # exactly, not approximately
    finally:
        relevance._VECTOR_TEXTS = original


def test_bm25_over_many_texts_does_not_import_numpy() -> None:
    # A one-request process would pay more for the import than the sum saves.
    code = (
        "import sys\n"
        "from ctxasm.stages.relevance import bm25\n"
        "scores = bm25(['sun'], ['sun and moon', 'moon'] * 200, 1.2, 0.75)\n"
        "assert len(scores) == 400 and scores[0] > 0 == scores[1]\n"
        "print('numpy' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


def test_the_report_says_when_given_scores_are_ignored_and_why() -> None:
    # Dense scores that rank paraphrases first disagree with the query's words; the default
    # ranks by the words, and the report says so (it had said nothing).
    query = "How much does a used car cost?"
    passages = [
        {"id": "a", "text": "A second-hand automobile sells for 15,000.", "score": 0.9},
        {"id": "b", "text": "Car rentals cost 40 per day.", "score": 0.6},
        {"id": "c", "text": "Used books cost 2.", "score": 0.3},
        {"id": "d", "text": "The car park opens at 7.", "score": 0.5},
        {"id": "e", "text": "A car wash costs 10.", "score": 0.4},
        {"id": "f", "text": "Used car prices rose, and a used car costs more.", "score": 0.2},
        {"id": "g", "text": "Buses cost less than a car.", "score": 0.35},
        {"id": "h", "text": "The price of a used car depends on its age.", "score": 0.1},
    ]
    report = ctxasm.assemble(query, passages).report
    assert report.relevance == {
        "method": "utility",
        "note": "given scores ignored: they do not agree with the query's words (0.00)",
    }
    # Passages the query's words tell nothing apart (no word of it) keep the retriever's order
    paraphrase = {"id": "i", "text": "An automobile bought second-hand is cheap.", "score": 0.95}
    readable = [(k, Passage(**p)) for k, p in enumerate([*passages, paraphrase])]
    kept, _, scores = rank(query, readable, AutoRelevance(), min_score=None, top_k=None)
    assert scores.method == "utility" and scores.values[0] == scores.values[-1] == 0.0
    assert [c.id for c in kept][-2:] == ["i", "a"]
    unscored = [{k: v for k, v in p.items() if k != "score"} for p in passages]
    assert ctxasm.assemble(query, unscored).report.relevance == {"method": "utility", "note": None}
    given = ctxasm.assemble(query, passages, strategy={"relevance": "given"}).report
    assert given.relevance == {"method": "given", "note": None}
    assert given.included[0].id == "a"


def test_a_few_scored_passages_rank_as_given_even_where_they_share_no_word_with_the_query() -> None:
    """Under ``MIN_AGREEMENT`` passages, agreement with the query's words is mostly chance: a
    reranker's best, scored for meaning ("penned" for "wrote"), leads the selection, and
    ``min_score`` compares the given scores (first-hour review: the answer was dropped as
    over budget, and adding a sixth passage changed what ``min_score`` meant)."""
    from ctxasm.stages.relevance import MIN_AGREEMENT

    passages = [
        {"id": "ans", "text": "The tragedy of the Prince of Denmark was penned around 1600."},
        {"id": "x1", "text": "Hamlet is a small village in the county of Kent."},
        {"id": "x2", "text": "A hamlet is a small settlement, smaller than a village."},
        {"id": "x3", "text": "Who wrote the songs? The band wrote all songs themselves."},
        {"id": "x4", "text": "Hamlet cigars were advertised on British television."},
        {"id": "x5", "text": "The Globe theatre was rebuilt in 1997."},
        {"id": "x6", "text": "Denmark is a country in northern Europe."},
    ]
    scores = [0.93, 0.71, 0.69, 0.55, 0.52, 0.5, 0.1]
    scored = [{**p, "score": s} for p, s in zip(passages, scores, strict=True)]
    for count in range(5, MIN_AGREEMENT):
        result = ctxasm.assemble("Who wrote Hamlet?", scored[:count], max_context_tokens=60)
        assert result.report.included[0].id == "ans", count
        assert result.report.relevance == {
            "method": "given",
            "note": "given scores used: nothing to check them by",
        }
        kept = ctxasm.assemble("Who wrote Hamlet?", scored[:count], min_score=0.6).report
        assert {i.id for i in kept.included} == {"ans", "x1", "x2"}


_RIVERS = [
    "The Danube flows through Vienna, the capital of Austria.",
    "Paris lies on the Seine.",
    "Berlin has the Spree.",
    "London is on the Thames.",
    "Rome sits by the Tiber.",
    "Prague is on the Vltava.",
    "Bonn is on the Rhine.",
    "Madrid has the Manzanares.",
]


@pytest.mark.parametrize("count", [5, 6, 7])
def test_a_few_scores_that_run_against_the_query_are_ignored(count: int) -> None:
    """Distances given as scores (lower the better) on a few passages: the retriever's order
    would put the answer last (review of dc58c6d)."""
    scored = [{"id": f"p{i}", "text": t, "score": 0.2 + 0.1 * i} for i, t in enumerate(_RIVERS)]
    result = ctxasm.assemble("Which river flows through Vienna?", scored[:count], top_k=1)
    assert [i.id for i in result.report.included] == ["p0"]
    assert result.report.relevance is not None
    assert result.report.relevance["note"].startswith("given scores ignored")


@pytest.mark.parametrize("count", [2, 5, 7, 8])
def test_scores_all_equal_are_ignored_whatever_the_number_of_passages(count: int) -> None:
    scored = [{"id": f"p{i}", "text": t, "score": 1.0} for i, t in enumerate(_RIVERS)]
    result = ctxasm.assemble("Which river flows through Vienna?", scored[:count], top_k=1)
    assert [i.id for i in result.report.included] == ["p0"]
    assert result.report.relevance == {
        "method": "utility",
        "note": "given scores ignored: they are all equal",
    }


def test_min_score_compares_the_given_scores_whatever_relevance_ranks_by() -> None:
    """An eighth passage switches relevance from the given order to the utility; the passages
    min_score keeps stay the ones whose own scores pass it (review of dc58c6d)."""
    scores = [0.82, 0.75, 0.6, 0.55, 0.5, 0.45, 0.41, 0.3]
    scored = [
        {"id": f"p{i}", "text": t, "score": s}
        for i, (t, s) in enumerate(zip(_RIVERS, scores, strict=True))
    ]
    for count in (7, 8):
        result = ctxasm.assemble("Which river flows through Vienna?", scored[:count], min_score=0.5)
        assert {i.id for i in result.report.included} == {"p0", "p1", "p2", "p3", "p4"}, count
        details = {e.candidate_id: e.detail for e in result.report.excluded}
        assert details["p5"] == "given score 0.45 < min_score 0.5"


def test_one_scored_passage_keeps_its_score() -> None:
    result = ctxasm.assemble("Which river?", [{"id": "a", "text": _RIVERS[0], "score": 0.9}])
    assert [(i.id, i.score) for i in result.report.included] == [("a", 0.9)]
