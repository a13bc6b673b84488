"""The model registry: what each target model can take and what it costs.

The bundled data file ``registry.toml`` lists current models; a config file (or a mapping passed
to :meth:`ModelRegistry.with_overrides`) adds models or overrides fields of existing ones.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from ctxasm.errors import ConfigError, UnknownModelError
from ctxasm.models.chat import ChatTemplate, chat_template, check_chat_name
from ctxasm.models.prices import (
    PRICE_FIELDS,
    Prices,
    PriceTier,
    check_price,
    check_tiers,
    prices_for,
)
from ctxasm.validation import shown

__all__ = [
    "CACHE_KINDS",
    "ModelRegistry",
    "ModelSpec",
    "PriceTier",
    "Prices",
    "default_registry",
]

_INT_FIELDS = (
    "context_window",
    "max_output",
    "tokens_per_message",
    "reply_priming",
    "cache_min_tokens",
    "cache_increment",
)
_KNOWN_FIELDS = {
    *_INT_FIELDS,
    *PRICE_FIELDS,
    "price_tiers",
    "provider",
    "tokenizer",
    "chat",
    "aliases",
    "cache",
    "reasoning",
}
# How a provider caches prompt prefixes (docs/caching.md): "automatic" (every request's prefix,
# OpenAI and Gemini 2.5's implicit caching), "breakpoints" (Anthropic's cache_control), or
# "explicit" (a cache object the caller creates: no automatic reuse). Absent: no caching.
CACHE_KINDS = ("automatic", "breakpoints", "explicit")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One model: its window, its tokenizer spec, its chat overhead and prices per 1M tokens.

    ``chat`` names the template a chat request is counted with (:mod:`ctxasm.models.chat`):
    ``openai`` adds ``tokens_per_message`` per message and ``reply_priming`` before the reply;
    with any other template, ``tokens_per_message`` is only what the budget allows for the
    framing of one history turn before the exact recount.

    ``price_tiers`` are the higher prices some providers bill a long prompt at (Gemini 1.5 and
    2.5 Pro); :meth:`prices` gives the prices for a prompt of a given size.

    ``reasoning`` marks a model that thinks in hidden tokens before it answers, and counts them
    against its output limit (OpenAI's o-series and gpt-5): the budget's default output reserve
    is then larger (:data:`ctxasm.stages.budget.DEFAULT_REASONING_RESERVE`), and ``ctxasm ask``
    sends the limit as ``max_completion_tokens``, the one parameter such models take.
    """

    name: str
    provider: str
    context_window: int
    max_output: int
    tokenizer: str
    tokens_per_message: int = 3
    reply_priming: int = 3
    chat: str = "openai"
    input_price: float | None = None
    output_price: float | None = None
    aliases: tuple[str, ...] = field(default=())
    cache: str | None = None
    cached_input_price: float | None = None
    cache_write_price: float | None = None
    cache_min_tokens: int = 0
    cache_increment: int = 1
    reasoning: bool = False
    price_tiers: tuple[PriceTier, ...] = ()

    def __post_init__(self) -> None:
        check_chat_name(self.chat, f"models.{self.name}.chat")
        if self.cache is not None and self.cache not in CACHE_KINDS:
            raise ConfigError(
                f"models.{self.name}.cache must be one of {', '.join(CACHE_KINDS)} (or left "
                f"out for no caching), got {self.cache!r}",
                field=f"models.{self.name}.cache",
            )
        if self.cache_increment < 1:
            raise ConfigError(
                f"models.{self.name}.cache_increment must be an integer >= 1, "
                f"got {self.cache_increment!r}",
                field=f"models.{self.name}.cache_increment",
            )

    def prices(self, prompt_tokens: int) -> Prices:
        """The prices of a request whose prompt has ``prompt_tokens`` tokens (the tier it is
        past, else the model's own)."""
        base = Prices(
            self.input_price, self.output_price, self.cached_input_price, self.cache_write_price
        )
        return prices_for(base, self.price_tiers, prompt_tokens)

    @property
    def chat_template(self) -> ChatTemplate:
        """The template that counts a chat request for this model."""
        return chat_template(self.chat, self.tokens_per_message, self.reply_priming)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "provider": self.provider,
            "context_window": self.context_window,
            "max_output": self.max_output,
            "tokenizer": self.tokenizer,
            "tokens_per_message": self.tokens_per_message,
            "reply_priming": self.reply_priming,
            "chat": self.chat,
            "input_price": self.input_price,
            "output_price": self.output_price,
            "aliases": list(self.aliases),
            "cache": self.cache,
            "cached_input_price": self.cached_input_price,
            "cache_write_price": self.cache_write_price,
            "cache_min_tokens": self.cache_min_tokens,
            "cache_increment": self.cache_increment,
            "reasoning": self.reasoning,
            "price_tiers": [tier.to_dict() for tier in self.price_tiers],
        }


MAX_CONFIG_INT = 1_000_000_000  # tokens: far past any window, and a float holds it exactly


def _check_entry(name: str, entry: Mapping[str, Any], *, partial: bool) -> dict[str, Any]:
    where = f"models.{name}"
    if not isinstance(entry, Mapping):
        raise ConfigError(
            f"{where} must be a table of fields, got {type(entry).__name__}", field=where
        )
    unknown = set(entry) - _KNOWN_FIELDS
    if unknown:
        raise ConfigError(
            f"{where} has unknown field(s) {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(_KNOWN_FIELDS))}",
            field=f"{where}.{sorted(unknown)[0]}",
        )
    checked = dict(entry)
    for key in _INT_FIELDS:
        if key in entry:
            value = entry[key]
            minimum = 1 if key in ("context_window", "max_output", "cache_increment") else 0
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not minimum <= value <= MAX_CONFIG_INT
            ):
                raise ConfigError(
                    f"{where}.{key} must be an integer from {minimum} to {MAX_CONFIG_INT:,}, "
                    f"got {shown(value)}",
                    field=f"{where}.{key}",
                )
    for key in PRICE_FIELDS:
        check_price(entry.get(key), f"{where}.{key}")
    if "price_tiers" in entry:  # replaces the tiers as a whole: [] removes them
        checked["price_tiers"] = check_tiers(entry["price_tiers"], f"{where}.price_tiers")
    for key in ("provider", "tokenizer", "chat", "cache"):
        if key in entry and not isinstance(entry[key], str):
            raise ConfigError(
                f"{where}.{key} must be a string, got {entry[key]!r}", field=f"{where}.{key}"
            )
    if "reasoning" in entry and not isinstance(entry["reasoning"], bool):
        raise ConfigError(
            f"{where}.reasoning must be true or false, got {shown(entry['reasoning'])}",
            field=f"{where}.reasoning",
        )
    if "aliases" in entry:
        aliases = entry["aliases"]
        if not isinstance(aliases, list | tuple) or not all(isinstance(a, str) for a in aliases):
            raise ConfigError(
                f"{where}.aliases must be a list of strings", field=f"{where}.aliases"
            )
        checked["aliases"] = tuple(aliases)
    if not partial:
        missing = _missing(entry)
        if missing:
            raise ConfigError(
                f"{where} is a new model and needs {', '.join(missing)} "
                "(or name an existing model to override it)",
                field=f"{where}.{missing[0]}",
            )
    return checked


_NEW_MODEL_FIELDS = ("context_window", "max_output", "tokenizer")  # what a new model must give


def _missing(entry: Mapping[str, Any]) -> list[str]:
    """The fields a new model needs that ``entry`` does not give."""
    return [key for key in _NEW_MODEL_FIELDS if key not in entry]


def _check_priming(spec: ModelSpec, entry: Mapping[str, Any]) -> None:
    """Refuse a ``reply_priming`` that a chat template would leave unused."""
    if "reply_priming" in entry and spec.chat != "openai":
        raise ConfigError(
            f"models.{spec.name}.reply_priming is only used with chat = 'openai', and "
            f"{spec.name} is counted with the {spec.chat!r} template; set chat = 'openai' too "
            "to count with tokens_per_message and reply_priming (docs/models.md#chat-overhead)",
            field=f"models.{spec.name}.reply_priming",
        )


def _fixed_names(spec: ModelSpec) -> str:
    """``spec``'s name and its aliases that do not move (not ``-latest``), comma-separated."""
    return ", ".join([spec.name, *(a for a in spec.aliases if not a.endswith("-latest"))])


class ModelRegistry:
    """Models by name and alias. Immutable: overrides return a new registry."""

    def __init__(self, models: Mapping[str, ModelSpec]) -> None:
        self._models = dict(models)
        self._names: dict[str, str] = {}
        for spec in self._models.values():
            for key in (spec.name, *spec.aliases):
                owner = self._names.get(key.lower())
                if owner is not None and owner != spec.name:
                    raise ConfigError(
                        f"model name {key!r} is used by both {owner} and {spec.name}",
                        field=f"models.{spec.name}",
                    )
                self._names[key.lower()] = spec.name

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
    ) -> ModelRegistry:
        base = dict(defaults or {})
        specs = {}
        for name, entry in data.items():
            checked = _check_entry(name, entry, partial=False)
            merged = {**base, **checked}
            merged.setdefault("provider", "custom")
            specs[name] = ModelSpec(name=name, **merged)
        return cls(specs)

    def with_overrides(self, overrides: Mapping[str, Any]) -> ModelRegistry:
        """A registry where each entry of ``overrides`` replaces fields of, or adds, a model."""
        models = dict(self._models)
        for name, entry in overrides.items():
            if not isinstance(name, str):
                raise ConfigError(
                    f"models: a model's name must be a string, got {type(name).__name__} {name!r}",
                    field="models",
                )
            if not name.strip() or not name.isprintable():  # no request could name it
                raise ConfigError(
                    f"models: a model's name must be printable text, not blank, got {name!r}",
                    field="models",
                )
            existing = self._names.get(name.lower())
            if existing is not None:
                checked = _check_entry(name, entry, partial=True)
                models[existing] = replace(models[existing], **checked)
            else:
                self._check_not_moving(name, entry)
                checked = _check_entry(name, entry, partial=False)
                checked.setdefault("provider", "custom")
                models[name] = ModelSpec(name=name, **checked)
            _check_priming(models[existing or name], entry)
        return ModelRegistry(models)

    def get(self, name: str) -> ModelSpec:
        """The model called ``name`` (case-insensitive, aliases allowed)."""
        canonical = self._names.get(name.lower())
        if canonical is None:
            moving = self._moving_alias_error(name)
            if moving is not None:
                raise moving
            close = difflib.get_close_matches(name.lower(), list(self._names), n=5, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else "."
            raise UnknownModelError(
                f"unknown model {shown(name)}{hint} Run `ctxasm models` for the full list, or add "
                "the model with context_window, max_output and tokenizer in a config file.",
                field="model",
            )
        return self._models[canonical]

    def _moved_from(self, name: str) -> ModelSpec | None:
        """The model ``<model>`` when ``name``, which no model has, is ``<model>-latest``: a
        provider moves such a name to each new release, which may count with another
        tokenizer file or chat format than the entry pins, so it is not resolved to it (an
        exact count would be wrong)."""
        if not name.lower().endswith("-latest"):
            return None
        known = self._names.get(name.lower().removesuffix("-latest"))
        return None if known is None else self._models[known]

    def _moving_alias_error(self, name: str) -> UnknownModelError | None:
        """The error for a request naming ``<model>-latest`` (see :meth:`_moved_from`)."""
        spec = self._moved_from(name)
        if spec is None:
            return None
        return UnknownModelError(
            f"unknown model {shown(name)}: the provider moves a -latest name to each new "
            f"release, which may count with another tokenizer or chat format than {spec.name}; "
            f"name the model: {_fixed_names(spec)}, or add the newer one with its tokenizer in "
            "a config file",
            field="model",
        )

    def _check_not_moving(self, name: str, entry: object) -> None:
        """Refuse a config table for ``<model>-latest`` (see :meth:`_moved_from`) that only
        overrides fields, as the alias it once was: it names no model now. With the fields of a
        new model it is one, as any other new name is."""
        spec = self._moved_from(name)
        if spec is None or not isinstance(entry, Mapping) or not _missing(entry):
            return
        raise ConfigError(
            f"models.{name} overrides no model: {name} is no longer an alias of {spec.name}, as "
            "the provider moves a -latest name to each new release, which may count with "
            f"another tokenizer or chat format; override one of {_fixed_names(spec)} instead, "
            f"or define {name} as a model of its own, with context_window, max_output and "
            "tokenizer",
            field=f"models.{name}",
        )

    def __iter__(self) -> Any:
        return iter(sorted(self._models.values(), key=lambda spec: (spec.provider, spec.name)))

    def __len__(self) -> int:
        return len(self._models)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._names


_DEFAULT: ModelRegistry | None = None


def default_registry() -> ModelRegistry:
    """The bundled registry (parsed once)."""
    global _DEFAULT  # noqa: PLW0603 - a lazily built module-level constant
    if _DEFAULT is None:
        raw = tomllib.loads(resources.files(__package__).joinpath("registry.toml").read_text())
        _DEFAULT = ModelRegistry.from_mapping(raw["models"], raw.get("defaults"))
    return _DEFAULT
