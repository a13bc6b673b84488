"""ctxasm.presets: a strategy by one name, for ``eval --strategy`` and ``ask --strategy``."""

from __future__ import annotations

import pytest

import ctxasm
from ctxasm.errors import RequestError
from ctxasm.presets import PRESETS, named_strategy, strategy_names
from ctxasm.registry import names


def test_the_names_are_the_presets_then_the_other_selection_strategies() -> None:
    assert strategy_names() == [
        *PRESETS,
        *(name for name in names("selection") if name not in PRESETS),
    ]
    assert strategy_names()[:3] == ["default", "bm25_greedy", "utility_greedy"]


def test_a_name_stands_for_a_new_strategy_object_each_time() -> None:
    assert named_strategy("default") is None
    first = named_strategy("bm25_greedy")
    assert first == {"relevance": "bm25", "selection": "greedy_by_score", "compression": None}
    assert first is not PRESETS["bm25_greedy"]
    assert first is not named_strategy("bm25_greedy")  # a caller may change its own copy
    assert named_strategy("priority") == {
        "relevance": "utility",
        "compression": None,
        "selection": "priority",
    }


@pytest.mark.parametrize("name", strategy_names())
def test_every_name_assembles(name: str) -> None:
    strategy = named_strategy(name)
    result = ctxasm.assemble(
        "Who taught at the Lyceum?",
        [{"id": "a", "text": "Aristotle taught at the Lyceum.", "score": 0.9}],
        **({} if strategy is None else {"strategy": strategy}),
    )
    assert [item.id for item in result.report.included] == ["a"]


def test_an_unknown_name_lists_the_names() -> None:
    with pytest.raises(RequestError) as caught:
        named_strategy("oracle")
    assert (caught.value.message, caught.value.field) == (
        f"unknown strategy 'oracle'; choose one of {', '.join(strategy_names())}",
        "strategy",
    )
