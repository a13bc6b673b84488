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

**Two readers, one answer.** Where the ``jiter`` package is installed, input is first read by
it in one pass of compiled code, which itself refuses invalid UTF-8, lone surrogates, ``NaN``,
``Infinity`` and repeated keys; what it cannot see (the nesting limit, a float that overflowed,
a number literal over the length limit) is then checked in one linear pass. Anything that
fails there, for whatever reason, is read again by the standard library's parser with a check
per object and per number, which gives every error message. So the fast reader only ever
accepts what the careful one accepts, with the same value (the tests hold the two to that);
without ``jiter`` the careful one reads everything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from ctxasm.errors import InvalidJSONError, RequestTooLargeError

try:
    import jiter
except ImportError:  # the careful reader alone: slower, the same answers
    jiter = None  # type: ignore[assignment]

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
    value = _read_plain(raw)
    return _read_checked(raw, what) if value is _NOT_PLAIN else value


_JITER_OPTIONS: dict[str, Any] = {
    "allow_inf_nan": False,
    "catch_duplicate_keys": True,
    "cache_mode": "keys",
}
_NOT_PLAIN: Any = object()
# Bytes that can be part of a number literal, all mapped to b"0" (other bytes keep their value,
# and none of them is b"0").
_NUMBER_BYTES = bytes.maketrans(b"123456789+-.eE", b"0" * 14)
_LONG_NUMBER = b"0" * (MAX_NUMBER_CHARS + 1)
# A literal over MAX_NUMBER_CHARS covers at least three consecutive multiples of this stride.
_STRIDE = (MAX_NUMBER_CHARS + 1) // 3


def _jiter_as_needed() -> bool:
    """Whether the installed ``jiter`` takes the options this module relies on and, with them,
    refuses what the fast reader leaves to it; otherwise it is left unused."""
    if jiter is None:
        return False
    try:
        if jiter.from_json(b'{"a": [1, 2.5, "\\u00e9"]}', **_JITER_OPTIONS) != {"a": [1, 2.5, "é"]}:
            return False
    except (TypeError, ValueError):  # a release without these options
        return False
    for refused in (b'{"a": 1, "a": 2}', b'["\\ud800"]', b"[NaN]", b'["\xff"]'):
        try:
            jiter.from_json(refused, **_JITER_OPTIONS)
        except ValueError:
            continue
        return False
    return True


_USE_JITER = _jiter_as_needed()


def _read_plain(raw: bytes) -> Any:
    """The value of ``raw`` as ``jiter`` reads it; ``_NOT_PLAIN`` where jiter is missing, or
    refuses the input, or the value needs a check only the careful reader makes (see the module
    docstring). Never raises for bad input."""
    if not _USE_JITER or type(raw) is not bytes:
        return _NOT_PLAIN
    if b"\x00" in raw[:4] or raw[:2] in (b"\xfe\xff", b"\xff\xfe"):
        return _NOT_PLAIN  # a wide encoding: the careful reader names it
    if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM) :]
    try:
        value = jiter.from_json(raw, **_JITER_OPTIONS)
    except ValueError:
        return _NOT_PLAIN
    if _may_hold_a_long_number(raw) or not _within_limits(value):
        return _NOT_PLAIN
    return value


def _may_hold_a_long_number(raw: bytes) -> bool:
    """False when ``raw`` surely holds no number literal longer than MAX_NUMBER_CHARS: no run
    of that many bytes that can make up a number (digits, sign, point, exponent). Such a run
    covers three consecutive bytes of a sample taken every ``_STRIDE`` bytes, so only around
    those (rare in text) is the run measured: linear, and a few percent of reading the input."""
    sample = raw[::_STRIDE].translate(_NUMBER_BYTES)
    at = sample.find(b"000")
    while at >= 0:
        start = at * _STRIDE
        window = raw[max(0, start - MAX_NUMBER_CHARS) : start + 2 * _STRIDE + MAX_NUMBER_CHARS + 1]
        if _LONG_NUMBER in window.translate(_NUMBER_BYTES):
            return True
        at = sample.find(b"000", at + 1)
    return False


def _within_limits(value: Any) -> bool:
    """Whether ``value`` nests at most MAX_DEPTH levels and its floats are finite (a literal
    such as ``1e999`` overflows to infinity), checked level by level without recursion."""
    if type(value) is float:
        return value - value == 0.0
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 1
    while level:
        if depth > MAX_DEPTH:
            return False
        nested: list[Any] = []
        add = nested.append
        for node in level:
            for child in node.values() if type(node) is dict else node:
                kind = type(child)
                if kind is str:
                    continue
                if kind is dict or kind is list:
                    add(child)
                elif kind is float and child - child != 0.0:  # inf - inf is NaN
                    return False
        level = nested
        depth += 1
    return True


def _read_checked(raw: bytes, what: str) -> Any:
    """The standard library's reader with a check per object and per number: the reader of
    record, whose refusals are the messages every entry point gives."""
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
        if not text.strip(" \t\r\n"):  # "Expecting value at line 1 column 1" says less
            raise InvalidJSONError(f"the {what} is empty", field=what) from None
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
                        f"the {what} repeats the key {_short(key)} in one object; "
                        "each key may appear once",
                        field=what,
                    )
                seen.add(key)
        return obj

    return build


def _short(key: str) -> str:
    """A key's repr for a message, cut to 60 characters (a key may be megabytes long)."""
    shown = repr(key[:60])
    return shown if len(key) <= 60 else f"{shown[:-1]}...{shown[-1]}"


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
