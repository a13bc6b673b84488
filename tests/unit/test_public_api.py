"""The Python API a user reaches from ``import ctxasm`` alone."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ctxasm
from ctxasm.stages.selection import GreedyByScore


def test_included_and_excluded_items_both_have_an_id() -> None:
    result = ctxasm.assemble(
        "Where does the Danube end?",
        [
            {"id": "a", "text": "The Danube ends in the Black Sea.", "score": 0.9},
            {"id": "b", "text": "Bananas are yellow.", "score": 0.1},
        ],
        min_score=0.3,
    )
    assert [item.id for item in result.report.included] == ["a"]
    assert [item.id for item in result.report.excluded] == ["b"]
    assert [item.candidate_id for item in result.report.excluded] == ["b"]
    excluded = result.to_dict()["report"]["excluded"]
    assert excluded == [
        {
            "id": "b",
            "stage": "relevance",
            "reason": "below_threshold",
            "detail": "given score 0.1 < min_score 0.3",
        }
    ]


def test_testing_is_reachable_after_a_plain_import() -> None:
    code = (
        "import ctxasm\n"
        "from ctxasm.stages.selection import GreedyByScore\n"
        "ctxasm.testing.check_strategy(GreedyByScore())\n"
        "print(ctxasm.testing.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ctxasm.testing\n", "")


def test_check_strategy_runs_the_checks_of_the_strategys_slot() -> None:
    ctxasm.testing.check_strategy(GreedyByScore())

    class Slotless:
        pass

    with pytest.raises(AssertionError) as caught:
        ctxasm.testing.check_strategy(Slotless())
    assert str(caught.value) == (
        "Slotless has slot None; a strategy class needs slot = one of selection, ordering, "
        "relevance, dedup, compression, guard (subclass ctxasm.registry.Strategy)"
    )
