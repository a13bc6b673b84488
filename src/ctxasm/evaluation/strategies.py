"""Which strategies ``ctxasm eval`` runs: presets, the oracle, a selection strategy by name, or
the configuration's own strategy.

>>> [s.name for s in choose_strategies(["bm25_greedy", "oracle"], config_source=None)]
['bm25_greedy', 'oracle']
>>> [s.name for s in choose_strategies([], config_source="configs/tuned.toml")]
['tuned']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxasm.errors import RequestError
from ctxasm.presets import PRESETS, named_strategy, strategy_names
from ctxasm.registry import names
from ctxasm.validation import shown

__all__ = [
    "DEFAULT_MODEL",
    "ORACLE",
    "PRESETS",
    "EvalStrategy",
    "choose_model",
    "choose_strategies",
    "resolve_strategy",
]

DEFAULT_MODEL = "gpt-4o"

ORACLE = "oracle"


@dataclass(frozen=True, slots=True)
class EvalStrategy:
    """A named strategy to evaluate: a request ``strategy`` object (``None``: the assembler's
    default), or the gold-first oracle, which scores gold passages 1 and the rest 0."""

    name: str
    strategy: Mapping[str, Any] | None = None
    oracle: bool = False


def resolve_strategy(name: str) -> EvalStrategy:
    """A preset, ``oracle``, or the name of a selection strategy (with utility relevance): see
    :mod:`ctxasm.presets`."""
    if name == ORACLE:
        return EvalStrategy(
            ORACLE,
            {"relevance": "given", "selection": "greedy_by_score", "compression": None},
            oracle=True,
        )
    if name in strategy_names():
        return EvalStrategy(name, named_strategy(name))
    allowed = ", ".join(dict.fromkeys([*PRESETS, ORACLE, *names("selection")]))
    raise RequestError(f"unknown strategy {shown(name)}; choose one of {allowed}", field="strategy")


def choose_strategies(requested: Sequence[str], *, config_source: str | None) -> list[EvalStrategy]:
    """The strategies to evaluate: each ``requested`` name resolved; with none requested, the
    configuration's own strategy (named after its file, ``config_source``) when there is one,
    else the ``default`` preset. Presets run on the configuration's models and defaults."""
    if requested:
        return [resolve_strategy(name) for name in requested]
    if config_source:
        return [EvalStrategy(Path(config_source).stem)]
    return [resolve_strategy("default")]


def choose_model(requested: str | None, defaults: Mapping[str, Any]) -> str:
    """The target model: the one ``requested``, else the configuration's default, else
    :data:`DEFAULT_MODEL`."""
    return requested or str(defaults.get("model", DEFAULT_MODEL))
