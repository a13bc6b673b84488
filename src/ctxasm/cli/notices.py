"""Warnings ``ctxasm assemble`` and ``ctxasm ask`` print on standard error about a result that
succeeded but may not be what was meant, drawn from the report's JSON alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["nothing_fit"]


def nothing_fit(report: Mapping[str, Any]) -> str | None:
    """A one-line warning when relevant passages were found but none fitted the budget (each
    excluded ``over_budget``, none included), else ``None``. The prompt then tells the model
    that no sources could be included, which reads as if none were found. The warning names how
    many did not fit and the context budget, and what would make room: a larger budget where
    ``max_context_tokens`` capped it, else a smaller fixed part of the window."""
    if report["included"]:
        return None
    turned_away = sum(1 for item in report["excluded"] if item["reason"] == "over_budget")
    if not turned_away:
        return None
    budget = report["budget"]
    passages = (
        "the 1 relevant passage does not fit"
        if turned_away == 1
        else f"none of the {turned_away} relevant passages fits"
    )
    room = _room(budget)
    if budget["context"] < room:
        advice = f"raise --budget (max_context_tokens in a request; the window leaves {room})"
    else:
        advice = "shorten the query, history or system prompt, or lower reserve_output_tokens"
    return (
        f"warning: {passages} the context budget of {budget['context']} tokens "
        f"(over_budget in the report), so the prompt says no sources could be included; "
        f"{advice}"
    )


def _room(budget: Mapping[str, Any]) -> int:
    """What the model's window leaves for the sources, before ``max_context_tokens`` caps it
    (see :mod:`ctxasm.stages.budget`)."""
    parts = ("reserve_output", "margin", "system", "query", "history", "overhead")
    taken: int = sum(budget[part] for part in parts)
    window: int = budget["context_window"]
    return max(0, window - taken)
