"""Named strategies per slot.

A strategy is a frozen dataclass whose fields are its parameters; it is registered under a name
in one slot and rebuilt from ``{"name": ..., **params}``. Unknown names and parameters fail with
the allowed ones listed. Validation happens once, when the strategy is built.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from ctxasm.errors import RequestError, UnknownStrategyError
from ctxasm.model import StrategySpec

__all__ = [
    "SLOTS",
    "ParamError",
    "Strategy",
    "build",
    "names",
    "register",
    "require_choice",
    "require_int",
    "require_number",
]

SLOTS = ("relevance", "dedup", "selection", "compression", "ordering", "guard")


class ParamError(ValueError):
    """A strategy parameter is invalid (converted to a RequestError naming its field)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class Strategy:
    """Mixin for strategy dataclasses: a registry name and a config round-trip."""

    name: ClassVar[str]
    slot: ClassVar[str]

    def to_config(self) -> dict[str, Any]:
        """``{"name": ..., **params}``: what :func:`build` turns back into an equal strategy."""
        assert dataclasses.is_dataclass(self)
        params = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        return {"name": self.name, **params}


_REGISTRY: dict[str, dict[str, type[Strategy]]] = {slot: {} for slot in SLOTS}
S = TypeVar("S", bound=type[Strategy])


def register(cls: S) -> S:
    """Class decorator: register ``cls`` under ``cls.name`` in ``cls.slot``."""
    table = _REGISTRY[cls.slot]
    if cls.name in table and table[cls.name] is not cls:
        raise ValueError(f"{cls.slot} strategy {cls.name!r} is already registered")
    table[cls.name] = cls
    return cls


def names(slot: str) -> list[str]:
    """The registered strategy names of ``slot``, sorted."""
    _load_builtins()
    return sorted(_REGISTRY[slot])


def build(slot: str, spec: StrategySpec | Mapping[str, Any] | str, field: str) -> Any:
    """The strategy ``spec`` names in ``slot``, with its parameters checked."""
    _load_builtins()
    if isinstance(spec, str):
        spec = StrategySpec(spec)
    elif isinstance(spec, Mapping):
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError(f"{field}.name must be a strategy name", field=f"{field}.name")
        spec = StrategySpec(name, {k: v for k, v in spec.items() if k != "name"})
    cls = _REGISTRY[slot].get(spec.name)
    if cls is None:
        available = names(slot)
        choices = (
            f"choose one of {', '.join(available)}"
            if available
            else f"no {slot} strategies are available yet; leave {field} null"
        )
        raise UnknownStrategyError(f"unknown {slot} strategy {spec.name!r}; {choices}", field=field)
    assert dataclasses.is_dataclass(cls)
    allowed = [f.name for f in dataclasses.fields(cls) if f.init]
    for key in spec.params:
        if key not in allowed:
            listed = ", ".join(allowed) if allowed else "none"
            raise RequestError(
                f"{slot} strategy {spec.name!r} has no parameter {key!r}; parameters: {listed}",
                field=f"{field}.{key}",
            )
    try:
        return cls(**spec.params)
    except ParamError as exc:
        raise RequestError(f"{field}.{exc.param}: {exc}", field=f"{field}.{exc.param}") from None


def require_number(
    param: str, value: object, *, low: float | None = None, high: float | None = None
) -> float:
    """``value`` as a finite float within [low, high], or a ParamError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParamError(param, f"must be a finite number, got {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite:
        raise ParamError(param, f"must be a finite number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ParamError(param, f"must be between {low} and {high}, got {value!r}")
    return float(value)


def require_int(param: str, value: object, *, low: int) -> int:
    """``value`` as an int >= low, or a ParamError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParamError(param, f"must be an integer >= {low}, got {value!r}")
    if value > 2**53:
        raise ParamError(param, f"must be an integer <= 2**53, got {value!r}")
    return value


def require_choice(param: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, or a ParamError."""
    if value not in choices:
        raise ParamError(param, f"must be one of {', '.join(choices)}, got {value!r}")
    assert isinstance(value, str)
    return value


_LOADED = False


def _load_builtins() -> None:
    # The built-in strategies register themselves on import; import them on first use so that
    # importing ctxasm stays cheap.
    global _LOADED  # noqa: PLW0603 - one-time registration
    if not _LOADED:
        _LOADED = True
        from ctxasm.stages import (  # noqa: F401
            compression,
            dedup,
            guard,
            ordering,
            planners,
            relevance,
            selection,
            semantic,
            utility,
        )
