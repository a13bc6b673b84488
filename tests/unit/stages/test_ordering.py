"""The ordering slot: score, retrieval, chronological, by source, primacy-recency."""

from __future__ import annotations

from typing import Any

import pytest

import ctxasm
from ctxasm.data import Candidate, Passage
from ctxasm.registry import names
from ctxasm.stages.ordering import BySourceOrdering, PrimacyRecencyOrdering


def _passage(pid: str, score: float, **fields: Any) -> dict[str, Any]:
    return {"id": pid, "text": f"Distinct fact {pid} about topic {pid}.", "score": score, **fields}


def _order(passages: list[dict[str, Any]], ordering: Any) -> list[str]:
    result = ctxasm.assemble("q", passages, strategy={"ordering": ordering, "dedup": "none"})
    report = result.report
    assert [item.position for item in report.included] == list(range(1, len(report.included) + 1))
    assert [item.label for item in report.included] == [
        f"Source {n}" for n in range(1, len(report.included) + 1)
    ]
    return [item.id for item in report.included]


SCORED = [
    _passage("p1", 0.2),
    _passage("p2", 0.9),
    _passage("p3", 0.5),
    _passage("p4", 0.7),
    _passage("p5", 0.1),
    _passage("p6", 0.5),
]


def test_registered_orderings() -> None:
    assert names("ordering") == [
        "cache_stable",
        "chronological",
        "primacy_recency",
        "retrieval",
        "score",
        "source",
    ]


def test_by_score_with_ties_in_request_order() -> None:
    assert _order(SCORED, "score") == ["p2", "p4", "p3", "p6", "p1", "p5"]


def test_by_retrieval_order() -> None:
    assert _order(SCORED, "retrieval") == ["p1", "p2", "p3", "p4", "p5", "p6"]


def test_primacy_recency_six() -> None:
    # ranks: p2=1, p4=2, p3=3, p6=4, p1=5, p5=6 -> placed 1, 3, 5, 6, 4, 2
    assert _order(SCORED, "primacy_recency") == ["p2", "p3", "p1", "p5", "p6", "p4"]


def test_primacy_recency_is_the_default() -> None:
    result = ctxasm.assemble("q", SCORED, strategy={"dedup": "none"})
    assert [item.id for item in result.report.included] == ["p2", "p3", "p1", "p5", "p6", "p4"]


@pytest.mark.parametrize(
    ("count", "ranks"),
    [
        (1, [1]),
        (2, [1, 2]),
        (3, [1, 3, 2]),
        (5, [1, 3, 5, 4, 2]),
        (7, [1, 3, 5, 7, 6, 4, 2]),
    ],
)
def test_primacy_recency_places_ranks(count: int, ranks: list[int]) -> None:
    passages = [_passage(f"r{rank}", 1.0 - rank / 10) for rank in range(count, 0, -1)]
    assert _order(passages, "primacy_recency") == [f"r{rank}" for rank in ranks]


def test_chronological_with_undated_last() -> None:
    passages = [
        _passage("undated-a", 0.9),
        _passage("y2023", 0.1, timestamp="2023-05-01T12:00:00Z"),
        _passage("y2021", 0.5, timestamp="2021-01-01"),
        _passage("undated-b", 0.8),
        _passage("y2022-tz", 0.3, timestamp="2022-06-01T01:00:00+02:00"),
        _passage("y2022-utc", 0.4, timestamp="2022-05-31T23:30:00"),  # naive: UTC, 30 min later
    ]
    assert _order(passages, "chronological") == [
        "y2021",
        "y2022-tz",
        "y2022-utc",
        "y2023",
        "undated-a",
        "undated-b",
    ]


def test_chronological_ties_keep_request_order() -> None:
    passages = [
        _passage("b", 0.1, timestamp="2024-01-01"),
        _passage("a", 0.9, timestamp="2024-01-01T00:00:00+00:00"),
    ]
    assert _order(passages, "chronological") == ["b", "a"]


def test_grouped_by_source_in_document_order() -> None:
    passages = [
        _passage("x-late", 0.4, doc_id="x", start=500, end=530),
        _passage("y-only", 0.95, doc_id="y"),
        _passage("x-early", 0.2, doc_id="x", start=10, end=40),
        _passage("z-b", 0.3, source="z.pdf"),
        _passage("x-best", 0.9, doc_id="x", start=200, end=229),
        _passage("z-a", 0.6, source="z.pdf"),
        _passage("loose", 0.5),
    ]
    # Documents by their best passage: y (.95), x (.9), z (.6), loose (.5); x in start order;
    # z without offsets in request order.
    assert _order(passages, "source") == [
        "y-only",
        "x-early",
        "x-best",
        "x-late",
        "z-b",
        "z-a",
        "loose",
    ]


def test_a_shortened_passage_keeps_its_place_in_its_document() -> None:
    # compression drops a candidate's offsets with its text; its passage keeps those given
    kept = [
        Candidate.of(
            Passage(f"w{start}", "x" * 10, doc_id="d", start=start, end=start + 10), i, 0.5
        )
        for i, start in enumerate([300, 100, 200])
    ]
    shortened = [kept[0]._replace(text="x", start=None, end=None), kept[1], kept[2]]
    assert [c.id for c in BySourceOrdering().order(shortened)] == ["w100", "w200", "w300"]


def test_source_falls_back_to_url_then_title() -> None:
    passages = [
        _passage("t1", 0.9, title="Manual"),
        _passage("u1", 0.8, url="https://a.example/doc"),
        _passage("t2", 0.1, title="Manual"),
        _passage("u2", 0.7, url="https://a.example/doc"),
    ]
    assert _order(passages, "source") == ["t1", "t2", "u1", "u2"]


def test_ordering_is_a_permutation_directly() -> None:
    kept = [
        Candidate.of(Passage(f"c{i}", "x"), request_index=i, score=score)
        for i, score in enumerate([0.3, 0.9, 0.1, 0.9, 0.5])
    ]
    ordered = PrimacyRecencyOrdering().order(kept)
    assert [c.id for c in ordered] == ["c1", "c4", "c2", "c0", "c3"]
    assert [c.id for c in kept] == ["c0", "c1", "c2", "c3", "c4"]  # input untouched
