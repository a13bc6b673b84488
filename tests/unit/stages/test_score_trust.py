"""The default relevance weighs a retriever's scores by how far they agree with the query's
words: agreeing scores move the ranking, disagreeing ones are ignored, and too few passages to
tell leave the retriever's order as it is."""

from __future__ import annotations

from ctxasm.data import Passage
from ctxasm.stages.relevance import AutoRelevance, rank_agreement

QUERY = "Which river flows through Vienna and Budapest?"
TEXTS = [
    "The Danube flows through Vienna and Budapest before reaching the Black Sea.",
    "Budapest is the capital of Hungary; the river divides Buda from Pest.",
    "Vienna is the capital of Austria and lies on a river.",
    "The Rhine rises in the Alps and flows to the North Sea.",
    "Bread is baked from flour, water and yeast.",
    "Chess is a board game for two players.",
    "The violin has four strings tuned in fifths.",
    "Basalt is a volcanic rock.",
]


def _passages(scores: list[float]) -> list[Passage]:
    pairs = enumerate(zip(TEXTS, scores, strict=False))
    return [Passage(id=f"p{i}", text=t, score=s) for i, (t, s) in pairs]


def _order(scores: list[float] | None) -> list[int]:
    passages = (
        _passages(scores) if scores else [Passage(id=f"p{i}", text=t) for i, t in enumerate(TEXTS)]
    )
    values = AutoRelevance().score(QUERY, passages).values
    return sorted(range(len(values)), key=lambda i: -values[i])


def test_rank_agreement_is_spearmans_correlation_with_tied_ranks() -> None:
    assert rank_agreement([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert rank_agreement([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert rank_agreement([1, 1, 1], [1, 2, 3]) == 0.0
    assert rank_agreement([1, 2], [1, 2]) == 0.0
    assert 0 < rank_agreement([1, 2, 3, 4, 5], [1, 1, 2, 3, 3]) < 1


def test_scores_that_disagree_with_the_query_are_ignored() -> None:
    reversed_scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]  # the irrelevant ones first
    scores = AutoRelevance().score(QUERY, _passages(reversed_scores))
    assert scores.method == "utility"
    assert "ignored" in scores.note
    assert scores.floor is None  # the retriever judged them: none is dropped
    assert _order(reversed_scores)[:3] == _order(None)[:3]


def test_scores_that_agree_move_the_ranking() -> None:
    # A retriever that agrees with the words overall but ranks p3 over p1.
    agreeing = [0.95, 0.3, 0.9, 0.85, 0.1, 0.05, 0.02, 0.01]
    scores = AutoRelevance().score(QUERY, _passages(agreeing))
    assert scores.method == "utility+given"
    assert "trusted" in scores.note
    assert _order(agreeing)[0] == 0
    with_scores, without = _order(agreeing), _order(None)
    assert without.index(1) < without.index(3)
    assert with_scores.index(3) < with_scores.index(1)


def test_too_few_passages_keep_the_retrievers_order() -> None:
    passages = _passages([0.1, 0.9, 0.5])
    scores = AutoRelevance().score(QUERY, passages)
    assert scores.method == "given"
    assert scores.values == [0.1, 0.9, 0.5]


def test_beyond_the_sample_trusted_scores_rank_alone() -> None:
    many = [Passage(id=f"q{i}", text=TEXTS[i % 4], score=1.0 - i / 400) for i in range(200)]
    scores = AutoRelevance(sample=16).score(QUERY, many)
    assert scores.method in {"given", "utility"}
    if scores.method == "given":
        assert scores.values == [p.score for p in many]
