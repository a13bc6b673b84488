"""Strategies by one name: a request ``strategy`` object for ``ctxasm eval --strategy NAME`` and
``ctxasm ask --strategy NAME``.

A name is a preset, or the name of a selection strategy, which stands for that selection with
utility relevance on whole passages. Each sets some slots; the slots it leaves out keep the
configuration's strategy (``[defaults.strategy]``), else the built-in one, so ``default`` sets
none.

>>> named_strategy("bm25_greedy")
{'relevance': 'bm25', 'selection': 'greedy_by_score', 'compression': None}
>>> named_strategy("priority")
{'relevance': 'utility', 'compression': None, 'selection': 'priority'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxasm.errors import RequestError
from ctxasm.registry import names
from ctxasm.validation import shown

__all__ = ["PRESETS", "named_strategy", "strategy_names"]

_PLAIN = {"relevance": "utility", "compression": None}

# The default configuration (utility relevance, `auto` selection, `fill` compression), the
# classic baseline, each planner on its own (whole passages, utility relevance), and bridge with
# every passage compressed.
PRESETS: dict[str, Mapping[str, Any] | None] = {
    "default": None,
    "bm25_greedy": {"relevance": "bm25", "selection": "greedy_by_score", "compression": None},
    "utility_greedy": {**_PLAIN, "selection": "greedy_by_score"},
    "utility_per_token": {**_PLAIN, "selection": "utility_per_token"},
    "knapsack": {**_PLAIN, "selection": "knapsack"},
    "mmr": {**_PLAIN, "selection": "mmr"},
    "coverage": {**_PLAIN, "selection": "coverage"},
    "bridge": {**_PLAIN, "selection": "bridge"},
    "compress_all": {
        "relevance": "utility",
        "selection": "bridge",
        "compression": {"name": "sentences", "mode": "all"},
    },
}


def strategy_names() -> list[str]:
    """Every name :func:`named_strategy` takes: the presets, then the other selection
    strategies (those of plugins too)."""
    return list(dict.fromkeys([*PRESETS, *names("selection")]))


def named_strategy(name: str) -> dict[str, Any] | None:
    """The request ``strategy`` object ``name`` stands for, a new one on each call (``None``
    for ``default``: the configuration's own); an unknown name is a
    :class:`~ctxasm.errors.RequestError` (field ``strategy``) listing :func:`strategy_names`."""
    if name in PRESETS:
        preset = PRESETS[name]
        return None if preset is None else dict(preset)
    if name in names("selection"):
        return {**_PLAIN, "selection": name}
    raise RequestError(
        f"unknown strategy {shown(name)}; choose one of {', '.join(strategy_names())}",
        field="strategy",
    )
