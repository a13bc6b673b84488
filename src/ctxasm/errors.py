"""The exceptions ctxasm raises, all under one root.

::

    CtxasmError                   anything ctxasm refuses or cannot do             HTTP exit
    ├── RequestError              the request is malformed: names the field         422    2
    │   ├── InvalidJSONError      the bytes are not one JSON value ctxasm accepts   422    2
    │   ├── RequestTooLargeError  the request is over a size limit                  413    2
    │   ├── UnknownModelError     a model name not in the registry (close matches)  422    2
    │   ├── UnknownStrategyError  a strategy name not registered for its slot       422    2
    │   ├── AccessPolicyError     passages carry access data, no principal given    422    2
    │   ├── UntokenizableError    a text no tokenizer can count in linear time      422    2
    │   └── ArgumentTypeError     a Python argument of the wrong type (a TypeError) 422    2
    ├── ParamError                a strategy parameter is invalid (ctxasm.strategy) 422    2
    ├── BudgetError               the request cannot fit the model, even empty      422    2
    ├── ConfigError               a configuration file or value is invalid          422    2
    │   └── PluginError           a strategy plugin is broken or clashes by name    422    2
    ├── StoreUnavailableError     the document store cannot be reached now (retry)  503    1
    ├── DeadlineError             the work passed its time limit (ctxasm.deadline)  503    1
    └── TokenizerError            a tokenizer cannot be loaded (offline, bad hash)  500    1
        └── TokenizerFileError    a tokenizer file you gave is missing or broken    500    2

A broken tokenizer file is the operator's to fix, never the client's: the service answers 500
(the request was fine), the CLI exits 2 (its user gave the file).

Excluding a passage is never an exception: it is an ``Exclusion`` in the report. Exceptions
are for requests that cannot be answered at all. Every error carries a stable ``code`` and,
where one field is to blame, the ``field`` path (``passages[3].score``). Each class also carries
the HTTP status (``http_status``) and the CLI exit code (``exit_code``) it is answered with, so
the CLI, the batch runner and the HTTP service decide alike and report the error as the same
data, :meth:`CtxasmError.to_dict`. Errors that are also a built-in kind (``ValueError``,
``TypeError``) subclass it too, so ``except ValueError`` around a constructor keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "AccessPolicyError",
    "ArgumentTypeError",
    "BudgetError",
    "ConfigError",
    "CtxasmError",
    "DeadlineError",
    "InvalidJSONError",
    "PluginError",
    "RequestError",
    "RequestTooLargeError",
    "StoreUnavailableError",
    "TokenizerError",
    "TokenizerFileError",
    "UnknownModelError",
    "UnknownStrategyError",
    "UntokenizableError",
    "install_hint",
]


# The exit codes of the CLI: 1 when ctxasm could not do the work, 2 when the input was wrong.
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def install_hint(extra: str) -> str:
    """How to install ctxasm's optional ``extra``: from the folder ctxasm was installed from,
    as the README installs it (ctxasm is not on a package index, so ``ctxasm[extra]`` there
    would find nothing, or another project of that name)."""
    return f"pip install -c constraints.txt '.[{extra}]' in the ctxasm folder"


class CtxasmError(Exception):
    """Root of every error ctxasm raises on purpose."""

    code = "error"
    http_status = 500
    exit_code = EXIT_FAILED

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
    http_status = 422
    exit_code = EXIT_BAD_INPUT


class InvalidJSONError(RequestError):
    """The request bytes are not JSON that ctxasm accepts (see :mod:`ctxasm.jsonio`)."""

    code = "invalid_json"


class RequestTooLargeError(RequestError):
    """The request is larger than a configured limit."""

    code = "too_large"
    http_status = 413


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


class ArgumentTypeError(RequestError, TypeError):
    """A Python API argument of the wrong type (a ``TypeError`` too, as Python callers expect)."""


class BudgetError(CtxasmError):
    """The mandatory parts of the request do not fit the model's context window.

    ``sections`` holds the token count of every part so callers can show the arithmetic.
    """

    code = "over_budget"
    http_status = 422
    exit_code = EXIT_BAD_INPUT

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
    http_status = 422
    exit_code = EXIT_BAD_INPUT


class PluginError(ConfigError):
    """A strategy plugin cannot be used: its entry point does not load, is not a strategy,
    names another slot or name than its class, or takes a name another strategy has."""

    code = "invalid_plugin"


class StoreUnavailableError(CtxasmError):
    """The document store cannot answer now (database down, restarting, or over its statement
    timeout); the request itself may be fine, so an HTTP service answers 503."""

    code = "store_unavailable"
    http_status = 503


class DeadlineError(CtxasmError):
    """The work passed the time limit applied to it, or its caller cancelled it (see
    :mod:`ctxasm.deadline`); the request may be fine, only too big for the limit, so an HTTP
    service answers 503. Nothing sets a limit unless its caller does: the HTTP service does,
    from ``[service] request_timeout_s``."""

    code = "deadline_exceeded"
    http_status = 503


class TokenizerError(CtxasmError):
    """A tokenizer cannot be loaded."""

    code = "tokenizer_unavailable"


class TokenizerFileError(TokenizerError):
    """A tokenizer file that was given (a path in a spec, a copy in a folder an environment
    variable names) is missing, cannot be read, has another SHA-256 than the one pinned, or is
    not the tokenizer it should be. ``field`` names the variable when one led to the file."""

    code = "invalid_tokenizer_file"
    exit_code = EXIT_BAD_INPUT
