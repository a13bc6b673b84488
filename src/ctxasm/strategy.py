"""What a strategy is: the base class, its parameter error and the parameter validators.

A strategy is a frozen dataclass whose fields are its parameters, with class variables ``name``
(what requests call it) and ``slot`` (where the pipeline runs it). Its ``__post_init__`` checks
each parameter once with :func:`require_number`, :func:`require_int` or
:func:`require_choice`, which raise :class:`ParamError` naming the parameter; the registry turns
that into a :class:`~ctxasm.errors.RequestError` naming the request field.

This module is a leaf: it imports nothing of ctxasm but the errors, so a plugin (and every
built-in stage) can import it without importing the registry or the pipeline.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from ctxasm.errors import EXIT_BAD_INPUT, CtxasmError
from ctxasm.validation import as_real, as_whole, shown

__all__ = [
    "SLOTS",
    "ParamError",
    "Strategy",
    "require_choice",
    "require_int",
    "require_number",
]

# The slots that take a named strategy, in pipeline order.
SLOTS = ("relevance", "dedup", "selection", "compression", "ordering", "guard")


class ParamError(CtxasmError, ValueError):
    """A strategy parameter is invalid; ``param`` (also ``field``) names it. Building a strategy
    from a request turns this into a RequestError naming the request field."""

    code = "invalid_parameter"
    http_status = 422
    exit_code = EXIT_BAD_INPUT

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message, field=param)
        self.param = param


class Strategy:
    """Mixin for strategy dataclasses: a registry name and a config round-trip."""

    name: ClassVar[str]
    slot: ClassVar[str]

    def prepare(self) -> None:
        """Load now what this strategy otherwise loads when a request first uses it (tables,
        dictionaries), so that no request waits for it; most strategies load nothing."""

    def to_config(self) -> dict[str, Any]:
        """``{"name": ..., **params}``: what ``ctxasm.registry.build`` turns back into an equal
        strategy."""
        assert dataclasses.is_dataclass(self)
        params = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        return {"name": self.name, **params}


def require_number(
    param: str, value: object, *, low: float | None = None, high: float | None = None
) -> float:
    """``value`` as a finite float within [low, high], or a ParamError. Any real number but a
    bool is taken (numpy's ``float32`` from a tuning script too)."""
    number = as_real(value)
    if number is None or not math.isfinite(number):
        raise ParamError(param, f"must be a finite number, got {shown(value)}")
    if (low is not None and number < low) or (high is not None and number > high):
        raise ParamError(param, f"must be {_range(low, high)}, got {shown(value)}")
    return number


def _range(low: float | None, high: float | None) -> str:
    """The numbers ``require_number`` takes, in words ("between 0 and 1", "at least 1e-06")."""
    if low is not None and high is not None:
        return f"between {low} and {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


def require_int(param: str, value: object, *, low: int, high: int | None = None) -> int:
    """``value`` as a plain int >= low (and <= high, where given), or a ParamError. Any
    integral number but a bool is taken (numpy's ``int64`` too)."""
    number = as_whole(value)
    if high is not None:
        if number is None or not low <= number <= high:
            raise ParamError(
                param, f"must be an integer from {low} to {high:,}, got {shown(value)}"
            )
        return number
    if number is None or number < low:
        raise ParamError(param, f"must be an integer >= {low}, got {shown(value)}")
    if number > 2**53:
        raise ParamError(param, f"must be an integer <= 2**53, got {shown(value)}")
    return number


def require_choice(param: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, or a ParamError."""
    if value not in choices:
        raise ParamError(param, f"must be one of {', '.join(choices)}, got {shown(value)}")
    assert isinstance(value, str)
    return value
