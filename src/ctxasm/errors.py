"""The exceptions ctxasm raises, all under one root.

::

    CtxasmError                  anything ctxasm refuses or cannot do
    ├── RequestError             the request is malformed: names the field and what is allowed
    │   ├── InvalidJSONError     the bytes are not one JSON value ctxasm accepts (ctxasm.jsonio)
    │   ├── RequestTooLargeError the request is over a size limit (HTTP 413)
    │   ├── UnknownModelError    a model name that is not in the registry (lists close matches)
    │   ├── UnknownStrategyError a strategy name that is not registered for its slot
    │   ├── AccessPolicyError    passages carry access data but no principal was given
    │   └── UntokenizableError   a text no tokenizer can count in linear time, or that one failed on
    ├── BudgetError              the request cannot fit the model even with no passages
    ├── ConfigError              a configuration file or value is invalid
    ├── StoreUnavailableError    the document store cannot be reached now (retry later: 503)
    └── TokenizerError           a tokenizer cannot be loaded (offline, missing file, bad hash)

Excluding a passage is never an exception: it is an ``Exclusion`` in the report. Exceptions
are for requests that cannot be answered at all. Every error carries a stable ``code`` and,
where one field is to blame, the ``field`` path (``passages[3].score``), so the CLI, the batch
runner and the HTTP service can report it as data with :meth:`CtxasmError.to_dict`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AccessPolicyError",
    "BudgetError",
    "ConfigError",
    "CtxasmError",
    "InvalidJSONError",
    "RequestError",
    "RequestTooLargeError",
    "StoreUnavailableError",
    "TokenizerError",
    "UnknownModelError",
    "UnknownStrategyError",
    "UntokenizableError",
]


class CtxasmError(Exception):
    """Root of every error ctxasm raises on purpose."""

    code = "error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON data: ``{"code", "message", "field"}``."""
        return {"code": self.code, "message": self.message, "field": self.field}


class RequestError(CtxasmError, ValueError):
    """The request is malformed; ``field`` names the part to fix."""

    code = "invalid_request"


class InvalidJSONError(RequestError):
    """The request bytes are not JSON that ctxasm accepts (see :mod:`ctxasm.jsonio`)."""

    code = "invalid_json"


class RequestTooLargeError(RequestError):
    """The request is larger than a configured limit."""

    code = "too_large"


class UnknownModelError(RequestError):
    """The model name is not in the registry."""

    code = "unknown_model"


class UnknownStrategyError(RequestError):
    """The strategy name is not registered for its slot."""

    code = "unknown_strategy"


class AccessPolicyError(RequestError):
    """Passages carry access data but the request names no principal."""

    code = "principal_required"


class UntokenizableError(RequestError):
    """A text holds a run of characters too long to tokenize in linear time, or the tokenizer
    failed on it. A passage like that is excluded; anywhere else the request is refused."""

    code = "untokenizable"


class BudgetError(CtxasmError):
    """The mandatory parts of the request do not fit the model's context window.

    ``sections`` holds the token count of every part so callers can show the arithmetic.
    """

    code = "over_budget"

    def __init__(self, message: str, *, sections: dict[str, int], field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.sections = dict(sections)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["sections"] = dict(self.sections)
        return data


class ConfigError(CtxasmError, ValueError):
    """A configuration file or value is invalid."""

    code = "invalid_config"


class StoreUnavailableError(CtxasmError):
    """The document store cannot answer now (database down, restarting, or over its statement
    timeout); the request itself may be fine, so an HTTP service answers 503."""

    code = "store_unavailable"


class TokenizerError(CtxasmError):
    """A tokenizer cannot be loaded."""

    code = "tokenizer_unavailable"
