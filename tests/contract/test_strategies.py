"""Every registered strategy passes the public contract checks in ctxasm.testing."""

from __future__ import annotations

from typing import Any

import pytest

from ctxasm import registry, testing
from ctxasm.stages.selection import KnapsackSelection, MMRSelection, PrioritySelection

BUILTINS = testing.builtin_checks()


@pytest.mark.parametrize(("name", "strategy", "check"), BUILTINS, ids=[b[0] for b in BUILTINS])
def test_builtin_strategy_passes_its_contract(name: str, strategy: Any, check: Any) -> None:
    check(strategy)


@pytest.mark.parametrize(
    "strategy",
    [
        PrioritySelection(cutoff="skip"),
        PrioritySelection(cutoff="strict", default_priority=5.0),
        KnapsackSelection(max_candidates=3),
        KnapsackSelection(max_cells=100),
        MMRSelection(lam=0.0),
        MMRSelection(lam=1.0, max_candidates=2),
    ],
    ids=repr,
)
def test_parameterised_selection_passes_its_contract(strategy: Any) -> None:
    testing.check_selection_strategy(strategy)


def test_every_slot_with_strategies_is_covered() -> None:
    covered = {name.split(":")[0] for name, _, _ in BUILTINS}
    populated = {slot for slot in registry.SLOTS if registry.names(slot)}
    assert covered == populated == set(registry.SLOTS)


def test_registered_names_are_the_documented_ones() -> None:
    assert registry.names("selection") == [
        "auto",
        "bridge",
        "coverage",
        "greedy_by_score",
        "knapsack",
        "mmr",
        "priority",
        "utility_per_token",
    ]
    assert registry.names("ordering") == [
        "cache_stable",
        "chronological",
        "primacy_recency",
        "retrieval",
        "score",
        "source",
    ]
    assert registry.names("relevance") == ["auto", "bm25", "given", "utility"]
    assert registry.names("dedup") == ["exact", "near", "semantic", "stitch"]
    assert registry.names("compression") == ["sentences"]
    assert registry.names("guard") == ["scan"]


def test_a_broken_strategy_is_caught() -> None:
    broken = KnapsackSelection()

    class Forgetful:
        """Drops candidates on the floor: neither kept nor excluded."""

        name = "knapsack"

        def to_config(self) -> dict[str, Any]:
            return broken.to_config()

        def __eq__(self, other: object) -> bool:
            return isinstance(other, KnapsackSelection)

        def select(self, candidates: Any, packing: Any) -> None:
            for candidate in candidates[:1]:
                packing.offer(candidate)

    with pytest.raises(AssertionError, match="exactly once"):
        testing.check_selection_strategy(Forgetful())
