"""Exact counts from a provider's token-counting endpoint, for models without a public
tokenizer.

Anthropic publishes no tokenizer for its current models, but its API counts a request exactly
(``POST /v1/messages/count_tokens``). With ``[providers.anthropic] count_tokens = true`` in the
config and an API key in the environment (``ANTHROPIC_API_KEY`` unless ``api_key_env`` names
another variable), the verify stage of an ``anthropic``-format assembly counts the final request
through that endpoint: ``report.total_tokens`` is then Anthropic's own count and
``report.exact_count`` is true (per-passage tokens stay estimates). Without a key nothing is
sent anywhere. If the endpoint fails, the estimate stands (``exact_count: false``) and a warning
says why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxasm.errors import ConfigError, TokenizerError
from ctxasm.formatting.base import Rendered

__all__ = ["AnthropicCounter", "anthropic_counter"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
_KEYS = ("count_tokens", "api_key_env", "base_url", "timeout")
_ANSWER_BYTES = 1024 * 1024  # a count is a few bytes of JSON
MAX_COUNT = 1_000_000_000  # the most tokens a count may say (no context window is larger)


@dataclass(frozen=True, slots=True)
class AnthropicCounter:
    """Counts a rendered ``anthropic`` request with Anthropic's counting endpoint."""

    api_key: str
    base_url: str = DEFAULT_BASE_URL
    timeout: float = 10.0

    def count(self, model: str, rendered: Rendered) -> int:
        """The input tokens of ``rendered`` for ``model``, or a :class:`TokenizerError` (see
        :mod:`ctxasm.endpoint` for what the call refuses)."""
        from ctxasm.endpoint import EndpointError, endpoint_url, post_json

        body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in rendered.messages]}
        if rendered.system:
            body["system"] = rendered.system
        try:
            url = endpoint_url(self.base_url, "v1/messages/count_tokens", name="base_url")
            data = post_json(
                url,
                body,
                {"x-api-key": self.api_key, "anthropic-version": API_VERSION},
                timeout=self.timeout,
                max_bytes=_ANSWER_BYTES,
            )
        except EndpointError as error:
            raise TokenizerError(f"Anthropic token counting failed: {error.message}") from None
        counted = data.get("input_tokens") if isinstance(data, dict) else None
        if type(counted) is not int or not 0 < counted <= MAX_COUNT:
            raise TokenizerError(
                "Anthropic token counting failed: its answer has no input_tokens count (an "
                f"integer from 1 to {MAX_COUNT:,})"
            )
        return counted


def anthropic_counter(providers: Mapping[str, Any]) -> AnthropicCounter | None:
    """The counter the ``[providers.anthropic]`` config asks for, when its API key is set."""
    settings = providers.get("anthropic") or {}
    if not settings.get("count_tokens"):
        return None
    key = os.environ.get(str(settings.get("api_key_env", "ANTHROPIC_API_KEY")), "")
    if not key:
        return None
    return AnthropicCounter(
        key,
        str(settings.get("base_url", DEFAULT_BASE_URL)),
        float(settings.get("timeout", 10.0)),
    )


def check_providers(providers: object) -> dict[str, Any]:
    """The ``[providers]`` config section, checked."""
    if not isinstance(providers, Mapping):
        raise ConfigError("[providers] must be a table of providers")
    unknown = [name for name in providers if name != "anthropic"]
    if unknown:
        raise ConfigError(f"[providers] has unknown provider {unknown[0]!r}; providers: anthropic")
    anthropic = providers.get("anthropic", {})
    if not isinstance(anthropic, Mapping):
        raise ConfigError("[providers.anthropic] must be a table")
    bad = [key for key in anthropic if key not in _KEYS]
    if bad:
        raise ConfigError(
            f"[providers.anthropic] has unknown key {bad[0]!r}; keys: {', '.join(_KEYS)}"
        )
    if not isinstance(anthropic.get("count_tokens", False), bool):
        raise ConfigError("providers.anthropic.count_tokens must be true or false")
    for key in ("api_key_env", "base_url"):
        if key in anthropic and not isinstance(anthropic[key], str):
            raise ConfigError(f"providers.anthropic.{key} must be a string")
    timeout = anthropic.get("timeout", 10.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 300:
        raise ConfigError("providers.anthropic.timeout must be a number of seconds in (0, 300]")
    return {name: dict(value) for name, value in providers.items()}
