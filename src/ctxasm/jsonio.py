"""Request bytes to a JSON value: the one parser behind the CLI, batch lines and the service.

Every entry point that reads JSON from outside (``ctxasm assemble``, ``ctxasm batch`` lines,
``ctxasm check-citations`` and the HTTP service) goes through :func:`decode_object`, so they
accept and refuse the same inputs with the same message. What is accepted:

- **Encoding:** UTF-8, with or without a byte order mark (RFC 8259 section 8.1). A body that
  starts with a UTF-16 or UTF-32 byte order mark, or with NUL bytes, is refused: send UTF-8.
- **Size:** at most ``max_bytes`` (the caller's limit); over it is a
  :class:`~ctxasm.errors.RequestTooLargeError` (HTTP 413).
- **Nesting:** at most :data:`MAX_DEPTH` levels of arrays and objects. Deeper input is refused
  without recursion escaping (the standard parser's ``RecursionError`` is caught, and the parsed
  value is measured with an explicit stack).
- **Numbers:** a literal of at most :data:`MAX_NUMBER_CHARS` characters; ``NaN``,
  ``Infinity`` and a float that overflows to infinity are refused (they are not JSON numbers).
- **Strings:** no lone UTF-16 surrogate escapes (``"\\ud800"``), which cannot be written back
  as UTF-8.
- **Objects:** a key may appear once per object; a repeated key is refused rather than letting
  the last one silently win.
- **Top level:** :func:`decode_object` requires an object; :func:`decode_json` takes any value.

Every refusal is an :class:`~ctxasm.errors.InvalidJSONError` (code ``invalid_json``) or a
:class:`~ctxasm.errors.RequestTooLargeError` (code ``too_large``), with ``field`` set to what
was read (``request`` unless the caller says ``result``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from ctxasm.errors import InvalidJSONError, RequestTooLargeError

__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "decode_json",
    "decode_object",
    "too_large",
]

MAX_DEPTH = 64
MAX_NUMBER_CHARS = 100

_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_KINDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def too_large(limit: int, what: str = "request", size: int | None = None) -> RequestTooLargeError:
    """The error for input over ``limit`` bytes (the CLI, batch and the service share it);
    ``size`` is the input's real size, stated when it is known."""
    actual = "" if size is None else f"{size:,} bytes, "
    return RequestTooLargeError(
        f"the {what} is {actual}more than the limit of {limit:,} bytes", field=what
    )


def decode_object(
    raw: bytes, *, what: str = "request", max_bytes: int | None = None
) -> dict[str, Any]:
    """The JSON object in ``raw``; anything else is refused (see the module docstring)."""
    value = decode_json(raw, what=what, max_bytes=max_bytes)
    if not isinstance(value, dict):
        raise InvalidJSONError(f"the {what} must be a JSON object, got {_kind(value)}", field=what)
    return value


def decode_json(raw: bytes, *, what: str = "request", max_bytes: int | None = None) -> Any:
    """The JSON value in ``raw``; refusals are described in the module docstring."""
    if max_bytes is not None and len(raw) > max_bytes:
        raise too_large(max_bytes, what, size=len(raw))
    text = _text(raw, what)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys(what),
            parse_int=_integer(what),
            parse_float=_float(what),
            parse_constant=_constant(what),
        )
    except json.JSONDecodeError as exc:
        raise InvalidJSONError(
            f"the {what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            field=what,
        ) from None
    except RecursionError:
        raise _too_deep(what) from None
    _check_structure(value, what, surrogates=_SURROGATE_ESCAPE.search(text) is not None)
    return value


def _text(raw: bytes, what: str) -> str:
    for bom, encoding in _WIDE_BOMS:
        if raw.startswith(bom):
            raise InvalidJSONError(
                f"the {what} is {encoding} (it starts with a {encoding} byte order mark); "
                "send UTF-8",
                field=what,
            )
    if b"\x00" in raw[:4]:
        raise InvalidJSONError(
            f"the {what} starts with NUL bytes, as UTF-16 or UTF-32 text does; send UTF-8",
            field=what,
        )
    if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJSONError(
            f"the {what} is not valid UTF-8 (byte {exc.start}: {exc.reason})", field=what
        ) from None


def _unique_keys(what: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise InvalidJSONError(
                        f"the {what} repeats the key {key!r} in one object; "
                        "each key may appear once",
                        field=what,
                    )
                seen.add(key)
        return obj

    return build


def _integer(what: str) -> Callable[[str], int]:
    def parse(literal: str) -> int:
        if len(literal) > MAX_NUMBER_CHARS:
            raise _long_number(literal, what)
        return int(literal)

    return parse


def _float(what: str) -> Callable[[str], float]:
    def parse(literal: str) -> float:
        if len(literal) > MAX_NUMBER_CHARS:
            raise _long_number(literal, what)
        value = float(literal)
        if not math.isfinite(value):
            raise InvalidJSONError(
                f"the {what} has the number {literal}, which is too large for a float; "
                "numbers must be finite",
                field=what,
            )
        return value

    return parse


def _constant(what: str) -> Callable[[str], Any]:
    def parse(name: str) -> Any:
        raise InvalidJSONError(
            f"the {what} has {name}, which is not a JSON number; numbers must be finite",
            field=what,
        )

    return parse


def _long_number(literal: str, what: str) -> InvalidJSONError:
    return InvalidJSONError(
        f"the {what} has a number of {len(literal):,} characters; "
        f"at most {MAX_NUMBER_CHARS} are allowed",
        field=what,
    )


def _too_deep(what: str) -> InvalidJSONError:
    return InvalidJSONError(
        f"the {what} is nested more than {MAX_DEPTH} levels deep (arrays and objects)",
        field=what,
    )


def _check_structure(value: Any, what: str, *, surrogates: bool) -> None:
    """Depth (and, when the text had surrogate escapes, the strings), with an explicit stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if surrogates:
                for key in node:
                    _check_string(key, what)
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            if surrogates and isinstance(node, str):
                _check_string(node, what)
            continue
        if depth > MAX_DEPTH:
            raise _too_deep(what)
        for child in children:
            if isinstance(child, dict | list) or (surrogates and isinstance(child, str)):
                stack.append((child, depth + 1))


def _check_string(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidJSONError(
            f"the {what} has a string with a lone UTF-16 surrogate escape (\\ud800 to \\udfff "
            "without its pair), which is not text",
            field=what,
        ) from None


def _kind(value: Any) -> str:
    for kind, name in _KINDS.items():
        if isinstance(value, kind):
            return name
    return "null" if value is None else "a number"
