"""The pipeline: the assembler runs one step per slot, in slot order, and each step returns
frozen state. The steps are spied on through :mod:`ctxasm.pipeline`, which the assembler
calls by module attribute."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from ctxasm import Assembler, pipeline
from ctxasm.data import Assembly, Strategies
from ctxasm.pipeline import Placement

STEPS = (
    "access",
    "plan",
    "relevance",
    "compression_placement",
    "compress",
    "select",
    "compress_to_fill",
    "order",
    "render",
    "verify",
    "give_back",
    "report",
)
QUERY = "Where does the Danube end?"
PASSAGES = [
    {"id": f"p{i}", "text": f"The Danube passes city number {i}. It is a long river. " * 4}
    for i in range(6)
]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    """Record (step, what it returned) for every step the assembler calls."""
    calls: list[tuple[str, object]] = []
    for name in STEPS:
        real: Callable[..., object] = getattr(pipeline, name)

        def step(*args: Any, _real: Callable[..., object] = real, _name: str = name) -> object:
            result = _real(*args)
            calls.append((_name, result))
            return result

        monkeypatch.setattr(pipeline, name, step)
    return calls


def _conversation(pairs: int) -> list[dict[str, str]]:
    turns = []
    for i in range(pairs):
        turns.append({"role": "user", "content": f"Question {i} about the rivers of Europe? " * 2})
        turns.append({"role": "assistant", "content": f"Answer {i}: the Danube is long. " * 4})
    return turns


def test_fill_placement_runs_compression_after_selection_then_history_takes_room_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _spy(monkeypatch)
    result = Assembler().assemble(
        query=QUERY,
        passages=PASSAGES[:2],
        history=_conversation(12),
        history_policy={"max_share": 0.05},
        strategy={"compression": {"name": "sentences", "mode": "fill"}},
        context_window=1500,
        reserve_output_tokens=200,
    )
    assert [name for name, _ in calls] == [
        "access",
        "plan",
        "relevance",
        "compression_placement",
        "select",
        "compress_to_fill",
        "order",
        "render",
        "verify",
        "give_back",
        "report",
    ]
    assert dict(calls)["compression_placement"] is Placement.AFTER_SELECTION
    planned = dict(calls)["plan"]
    given_back = dict(calls)["give_back"]
    assert isinstance(planned, pipeline.Planned)
    assert isinstance(given_back, pipeline.Verified)
    assert len(given_back.history.kept) > len(planned.history.kept)
    assert result.report.history is not None
    assert result.report.history["kept"] == len(given_back.history.kept)


def test_all_placement_runs_compression_before_selection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _spy(monkeypatch)
    Assembler().assemble(
        query=QUERY,
        passages=PASSAGES,
        strategy={"compression": {"name": "sentences", "mode": "all"}},
        max_context_tokens=60,
    )
    assert [name for name, _ in calls] == [
        "access",
        "plan",
        "relevance",
        "compression_placement",
        "compress",
        "select",
        "order",
        "render",
        "verify",
        "report",
    ]
    assert dict(calls)["compression_placement"] is Placement.BEFORE_SELECTION


def test_without_compression_there_is_no_compression_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _spy(monkeypatch)
    Assembler().assemble(query=QUERY, passages=PASSAGES, strategy={"compression": None})
    assert [name for name, _ in calls] == [
        "access",
        "plan",
        "relevance",
        "select",
        "order",
        "render",
        "verify",
        "report",
    ]


def test_every_step_returns_frozen_state(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch)
    Assembler().assemble(
        query=QUERY,
        passages=PASSAGES[:2],
        history=_conversation(12),
        history_policy={"max_share": 0.05},
        strategy={"compression": {"name": "sentences", "mode": "fill"}},
        context_window=1500,
        reserve_output_tokens=200,
    )
    states = [(name, state) for name, state in calls if name != "compression_placement"]
    assert [name for name, _ in states] == [
        "access",
        "plan",
        "relevance",
        "select",
        "compress_to_fill",
        "order",
        "render",
        "verify",
        "give_back",
        "report",
    ]
    for name, state in states:
        assert dataclasses.is_dataclass(state), name
        first = dataclasses.fields(state)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(state, first, None)
    assert isinstance(states[-1][1], Assembly)


def test_strategies_are_resolved_into_one_typed_attribute_per_slot() -> None:
    fields = [f.name for f in dataclasses.fields(pipeline.ResolvedStrategies)]
    assert fields == ["relevance", "dedup", "selection", "compression", "ordering", "guard"]
    resolved = Assembler()._resolve(Strategies())
    assert [s.name for s in resolved.dedup] == ["stitch", "exact", "near"]
    assert resolved.compression is not None
    assert resolved.compression.name == "sentences"
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.guard = None  # type: ignore[misc]
