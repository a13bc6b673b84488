"""Assembler configuration: request defaults, model overrides and limits, validated once.

A config file is TOML or JSON::

    [defaults]                 # any request field except query and passages
    model = "gpt-4o-mini"
    format = "text"
    [defaults.strategy]
    selection = "knapsack"

    [models."my-llama"]        # a new model, or fields that override a registry model
    context_window = 8192
    max_output = 2048
    tokenizer = "hf:/models/llama/tokenizer.json"   # a relative path: from this file's folder

    [limits]
    max_request_chars = 32000000
    max_body_bytes = 8388608   # the HTTP service: body size, passages, passage length, turns
    max_passages = 2000

    [service]                  # the HTTP service (ctxasm serve); see docs/service.md
    allow_request_templates = false   # accept a "template" field in requests
    allow_request_model_paths = false # accept a request's sentence-transformers:/path embedder
    header_timeout_s = 10      # close a connection whose request headers take longer
    body_timeout_s = 30        # answer 408 when a request body takes longer (and abort a
                               # response the client stops reading for as long)
    request_timeout_s = 30     # answer 503 when assembling or checking citations takes longer
    keep_alive_s = 5           # close an idle keep-alive connection after this
    max_connections = 1000     # answer 503 beyond this many connections and requests

    [providers.anthropic]      # exact counts for Claude through Anthropic's API (ctxasm.providers)
    count_tokens = true
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from ctxasm.errors import ConfigError, CtxasmError, RequestError, TokenizerError
from ctxasm.jsonio import decode_json
from ctxasm.models import ModelRegistry, default_registry
from ctxasm.schema import DEFAULT_MAX_REQUEST_CHARS, REQUEST_FIELDS, parse_request
from ctxasm.tokens import check_spec, resolve_spec_path
from ctxasm.validation import close_name, shown

__all__ = ["AssemblerConfig", "defaults_error", "load_config_file"]

_SECTIONS = ("defaults", "models", "limits", "providers", "service")
# Limits of the HTTP service (``[limits]`` in a config file), with their defaults.
SERVICE_LIMITS: dict[str, int] = {
    "max_body_bytes": 8 * 1024 * 1024,
    "max_passages": 2000,
    "max_passage_chars": 200_000,
    "max_history_turns": 500,
}

# Settings of the HTTP service (``[service]`` in a config file), with their defaults.
SERVICE_SETTINGS: dict[str, bool | float | int] = {
    "allow_request_templates": False,
    "allow_request_model_paths": False,
    "header_timeout_s": 10.0,
    "body_timeout_s": 30.0,
    "request_timeout_s": 30.0,
    "keep_alive_s": 5.0,
    "max_connections": 1000,
}


def _service_settings(data: Any) -> dict[str, bool | float | int]:
    if not isinstance(data, Mapping) or set(data) - set(SERVICE_SETTINGS):
        raise ConfigError(f"[service] accepts only {', '.join(SERVICE_SETTINGS)}")
    settings = dict(SERVICE_SETTINGS)
    for key, default in SERVICE_SETTINGS.items():
        value = data.get(key, default)
        field = f"service.{key}"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{field} must be true or false, got {shown(value)}", field=field)
            settings[key] = value
            continue
        most = _MOST_CONNECTIONS if isinstance(default, int) else _MOST_SECONDS
        kind = "an integer" if isinstance(default, int) else "a number"
        if (
            isinstance(value, bool)
            or not isinstance(value, int if isinstance(default, int) else int | float)
            or not 0 < value <= most
        ):
            raise ConfigError(
                f"{field} must be {kind} over 0, at most {most:,}, got {shown(value)}", field=field
            )
        settings[key] = value
    return settings


_MOST_SECONDS = 86_400  # a timeout of a day: a float holds every value up to it
_MOST_CONNECTIONS = 1_000_000


def _check_tokenizers(models: Mapping[str, Any]) -> None:
    """Refuse a model whose tokenizer spec names no tokenizer, or a file that is not there,
    naming the key (the registry has checked that each entry is a table)."""
    for name, entry in models.items():
        spec = entry.get("tokenizer")
        if spec is None:
            continue
        try:
            check_spec(spec)
        except TokenizerError as error:
            raise ConfigError(
                f"models.{name}.tokenizer: {error.message}", field=f"models.{name}.tokenizer"
            ) from None


def _tokenizer_paths_from(models: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """``models`` with each tokenizer spec's relative file path made absolute against
    ``folder``; entries that are no table, and specs that are no string, are left for the
    registry to refuse."""
    resolved = dict(models)
    for name, entry in models.items():
        spec = entry.get("tokenizer") if isinstance(entry, Mapping) else None
        if isinstance(spec, str):
            resolved[name] = {**entry, "tokenizer": resolve_spec_path(spec, folder)}
    return resolved


def defaults_error(error: CtxasmError) -> ConfigError:
    """``error``, raised by a request made of ``[defaults]`` alone, as the config's error: its
    field moves under ``defaults.`` and the message says to fix the config."""
    field = f"defaults.{error.field}" if error.field else "defaults"
    message = error.message
    if error.field and message.startswith(error.field):
        message = f"defaults.{message}"
    else:
        message = f"{field}: {message}"
    return ConfigError(message, field=field)


MAX_CONFIG_BYTES = 16 * 1024 * 1024  # a config is a few kB; anything near this is no config


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The raw mapping in a TOML or JSON config file."""
    from ctxasm.files import TooLargeError, read_bounded

    path = Path(path)
    try:
        raw = read_bounded(path, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except TooLargeError as exc:  # a device such as /dev/zero filled memory
        raise ConfigError(f"config file {path} is too large: {exc}") from None
    try:
        if path.suffix.lower() == ".json":
            # read as requests are: repeated keys, NaN and nesting over 64 levels refused
            data = decode_json(raw, what="config file")
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except CtxasmError as error:
        raise ConfigError(f"config file {path} is not valid JSON: {error.message}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML/JSON: {exc}") from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        raise ConfigError(f"config file {path} nests its values too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table/object at the top")
    return data


@dataclass(frozen=True)
class AssemblerConfig:
    """Validated configuration shared by every assembly of one :class:`~ctxasm.Assembler`."""

    models: ModelRegistry = field(default_factory=default_registry)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    max_request_chars: int = DEFAULT_MAX_REQUEST_CHARS
    providers: Mapping[str, Any] = field(default_factory=dict)
    # What the HTTP service accepts (requests over a limit get 413); see SERVICE_LIMITS.
    service_limits: Mapping[str, int] = field(default_factory=lambda: dict(SERVICE_LIMITS))
    # How the HTTP service treats templates and slow connections; see SERVICE_SETTINGS.
    service: Mapping[str, bool | float | int] = field(
        default_factory=lambda: dict(SERVICE_SETTINGS)
    )

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, folder: str | Path | None = None
    ) -> AssemblerConfig:
        """Check a config mapping (see the module docstring) and build the config.

        A relative tokenizer path in ``[models]`` is read from ``folder`` (the config file's,
        given by :meth:`load`); without one, from the working folder."""
        unknown = [key for key in data if key not in _SECTIONS]
        if unknown:
            raise ConfigError(
                f"unknown config section {unknown[0]!r}; sections: {', '.join(_SECTIONS)}"
            )
        defaults = data.get("defaults", {})
        if not isinstance(defaults, Mapping):
            raise ConfigError("[defaults] must be a table of request fields")
        for key in defaults:
            if key not in REQUEST_FIELDS or key in ("query", "passages"):
                allowed = [f for f in REQUEST_FIELDS if f not in ("query", "passages")]
                raise ConfigError(
                    f"[defaults] has unknown field {shown(key)}{close_name(key, allowed)}; "
                    f"allowed: {', '.join(allowed)}"
                )
        models = data.get("models", {})
        if not isinstance(models, Mapping):
            raise ConfigError("[models] must be a table of models")
        limits = data.get("limits", {})
        allowed_limits = ("max_request_chars", *SERVICE_LIMITS)
        if not isinstance(limits, Mapping) or set(limits) - set(allowed_limits):
            raise ConfigError(f"[limits] accepts only {', '.join(allowed_limits)}")
        service_limits = dict(SERVICE_LIMITS)
        for key, default in SERVICE_LIMITS.items():
            value = limits.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"limits.{key} must be a positive integer, got {shown(value)}",
                    field=f"limits.{key}",
                )
            service_limits[key] = value
        max_chars = limits.get("max_request_chars", DEFAULT_MAX_REQUEST_CHARS)
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ConfigError(
                f"limits.max_request_chars must be a positive integer, got {shown(max_chars)}",
                field="limits.max_request_chars",
            )
        try:
            parse_request({"query": "check", "passages": [], **defaults})
        except RequestError as exc:
            raise defaults_error(exc) from None
        from ctxasm.providers import check_providers

        if folder is not None:
            models = _tokenizer_paths_from(models, Path(folder).absolute())
        registry = default_registry().with_overrides(models)
        _check_tokenizers(models)
        return cls(
            models=registry,
            defaults=dict(defaults),
            max_request_chars=max_chars,
            providers=check_providers(data.get("providers", {})),
            service_limits=service_limits,
            service=_service_settings(data.get("service", {})),
        )

    @classmethod
    def load(
        cls, source: AssemblerConfig | Mapping[str, Any] | str | Path | None
    ) -> AssemblerConfig:
        """A config from an existing config, a mapping, a file path, or ``None`` (defaults)."""
        if source is None:
            return cls()
        if isinstance(source, AssemblerConfig):
            return source
        if isinstance(source, Mapping):
            return cls.from_mapping(source)
        if not isinstance(source, str | PathLike):
            raise ConfigError(
                "config must be a mapping, a path to a TOML or JSON file, or None, got "
                f"{shown(source)}",
                field="config",
            )
        return cls.from_mapping(load_config_file(source), folder=Path(source).parent)
