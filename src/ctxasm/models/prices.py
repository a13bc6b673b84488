"""A model's prices, and the tiers some providers bill long prompts at.

Google bills a Gemini 1.5 or 2.5 Pro request whose prompt is over 128,000 or 200,000 tokens at
higher prices, for every token of it (input, cached input and output alike). A registry
entry lists such rates as ``price_tiers``: tables of ``above`` (prompt tokens) and the prices
that apply past it; a price a tier leaves out is the model's own. :func:`prices_for` gives
the prices for a prompt of a given size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxasm.errors import ConfigError
from ctxasm.validation import shown

__all__ = [
    "MAX_PRICE",
    "PRICE_FIELDS",
    "PriceTier",
    "Prices",
    "check_price",
    "check_tiers",
    "prices_for",
]

PRICE_FIELDS = ("input_price", "output_price", "cached_input_price", "cache_write_price")
MAX_PRICE = 1_000_000.0  # USD per million tokens: a dollar a token; costs stay finite
_MAX_ABOVE = 1_000_000_000  # tokens, as every integer field of a model (MAX_CONFIG_INT)


@dataclass(frozen=True, slots=True)
class PriceTier:
    """The prices of a request whose prompt has more than ``above`` tokens (``None``: the
    model's own price, or a lower tier's)."""

    above: int
    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None
    cache_write_price: float | None = None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"above": self.above}
        for key in PRICE_FIELDS:
            if getattr(self, key) is not None:
                found[key] = getattr(self, key)
        return found


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per 1M tokens for one request (``None``: no price known)."""

    input: float | None
    output: float | None
    cached_input: float | None
    cache_write: float | None


def prices_for(base: Prices, tiers: Sequence[PriceTier], prompt_tokens: int) -> Prices:
    """``base`` with the prices of every tier the prompt is past, the highest last."""
    input_, output, cached, write = base.input, base.output, base.cached_input, base.cache_write
    for tier in tiers:  # increasing ``above`` (check_tiers)
        if prompt_tokens <= tier.above:
            break
        input_ = input_ if tier.input_price is None else tier.input_price
        output = output if tier.output_price is None else tier.output_price
        cached = cached if tier.cached_input_price is None else tier.cached_input_price
        write = write if tier.cache_write_price is None else tier.cache_write_price
    return Prices(input_, output, cached, write)


def check_price(value: object, where: str) -> None:
    """Raise a :class:`ConfigError` naming ``where`` unless ``value`` is a price or null."""
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= MAX_PRICE
    ):
        raise ConfigError(
            f"{where} must be a price from 0 to {MAX_PRICE:,} (USD per million tokens) or "
            f"null, got {shown(value)}",
            field=where,
        )


def check_tiers(value: object, where: str) -> tuple[PriceTier, ...]:
    """``value`` (a list of tables) as tiers; a :class:`ConfigError` naming the field that is
    wrong unless each has an ``above`` greater than the one before and at least one price."""
    if not isinstance(value, list | tuple):
        raise ConfigError(
            f"{where} must be a list of tables such as {{ above = 200000, input_price = 2.5 }}, "
            f"got {shown(value)}",
            field=where,
        )
    tiers: list[PriceTier] = []
    for index, entry in enumerate(value):
        tier = _check_tier(entry, f"{where}[{index}]")
        if tiers and tier.above <= tiers[-1].above:
            raise ConfigError(
                f"{where}[{index}].above must be greater than the tier before it "
                f"({tiers[-1].above:,}), got {tier.above:,}; list tiers from the lowest",
                field=f"{where}[{index}].above",
            )
        tiers.append(tier)
    return tuple(tiers)


def _check_tier(entry: object, where: str) -> PriceTier:
    if isinstance(entry, PriceTier):  # a registry's own tiers, overridden again
        entry = entry.to_dict()
    if not isinstance(entry, Mapping):
        raise ConfigError(
            f"{where} must be a table of above and prices, got {shown(entry)}", field=where
        )
    allowed = ("above", *PRICE_FIELDS)
    unknown = sorted(str(key) for key in entry if key not in allowed)
    if unknown:
        raise ConfigError(
            f"{where} has unknown field(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}",
            field=f"{where}.{unknown[0]}",
        )
    above = entry.get("above")
    if isinstance(above, bool) or not isinstance(above, int) or not 1 <= above <= _MAX_ABOVE:
        raise ConfigError(
            f"{where}.above must be an integer from 1 to {_MAX_ABOVE:,} (the prompt tokens "
            f"past which the tier's prices apply), got {shown(above)}",
            field=f"{where}.above",
        )
    for key in PRICE_FIELDS:
        check_price(entry.get(key), f"{where}.{key}")
    if all(entry.get(key) is None for key in PRICE_FIELDS):
        raise ConfigError(
            f"{where} sets no price; give at least one of {', '.join(PRICE_FIELDS)}",
            field=where,
        )
    return PriceTier(above, **{key: entry.get(key) for key in PRICE_FIELDS})
