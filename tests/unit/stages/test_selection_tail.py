"""Greedy selection stops offering once nothing left could fit, with the same result."""

from __future__ import annotations

import random
from typing import Any

import pytest

import ctxasm
from ctxasm.stages import selection
from ctxasm.stages.dedup import DedupChain


def _words(count: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(count))


def _passages(count: int, *, doc_ids: bool = False, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    passages = []
    for i in range(count):
        passage = {"id": f"p{i}", "text": _words(rng.randrange(30, 90), i), "score": rng.random()}
        if doc_ids:
            passage["doc_id"] = f"d{i % 5}"
        passages.append(passage)
    return passages


def _assemble(passages: list[dict[str, Any]], dedup: Any, budget: int) -> ctxasm.Assembly:
    strategy = {"selection": "greedy_by_score", "compression": None, "dedup": dedup}
    return ctxasm.assemble("q", passages, strategy=strategy, max_context_tokens=budget)


def _outcome(result: ctxasm.Assembly) -> tuple[Any, ...]:
    report = result.report
    return (
        result.messages,
        [item.id for item in report.included],
        [(e.candidate_id, e.stage, e.reason.value, e.detail) for e in report.excluded],
    )


@pytest.fixture
def placements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Ids of the candidates dedup was asked to place (each offer asks first)."""
    asked: list[str] = []
    original = DedupChain.placement

    def counting(self: DedupChain, candidate: Any) -> Any:
        asked.append(candidate.id)
        return original(self, candidate)

    monkeypatch.setattr(DedupChain, "placement", counting)
    return asked


@pytest.mark.parametrize(
    ("dedup", "doc_ids"), [(["exact", "near"], False), (["stitch", "exact", "near"], True)]
)
@pytest.mark.parametrize("budget", [300, 700, 2000])
def test_the_result_is_the_one_a_full_walk_gives(
    dedup: Any, doc_ids: bool, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    passages = _passages(400, doc_ids=doc_ids)
    early = _outcome(_assemble(passages, dedup, budget))
    monkeypatch.setattr(selection, "_MIN_TAIL", 10**9)  # never bound the tail: walk it all
    assert _outcome(_assemble(passages, dedup, budget)) == early


def _offers(
    placements: list[str], monkeypatch: pytest.MonkeyPatch, *, doc_ids: bool, dedup: Any
) -> tuple[int, int]:
    """Candidates offered with the early stop, and with a full walk."""
    _assemble(_passages(400, doc_ids=doc_ids), dedup, 700)
    early = len(placements)
    placements.clear()
    monkeypatch.setattr(selection, "_MIN_TAIL", 10**9)
    _assemble(_passages(400, doc_ids=doc_ids), dedup, 700)
    return early, len(placements)


def test_the_tail_is_refused_unoffered(
    placements: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    early, walked = _offers(placements, monkeypatch, doc_ids=False, dedup=["exact", "near"])
    assert walked == 400  # the budget never fills to the floor: a full walk offers them all
    assert early < 100


def test_a_tail_that_could_be_stitched_is_still_offered(
    placements: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # every candidate shares a document with a kept one: stitching might still take it in
    dedup = ["stitch", "exact", "near"]
    early, walked = _offers(placements, monkeypatch, doc_ids=True, dedup=dedup)
    assert early == walked
