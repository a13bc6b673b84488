"""Field validators shared by the constructors in :mod:`ctxasm.data` and the JSON parser in
:mod:`ctxasm.schema`, so a value is judged by the same rule and named by the same message
whichever way it arrives.

Each validator takes the value and the field's path (``principal.groups``), returns the value
normalised (lists become tuples, string subclasses plain strings) and raises
:class:`~ctxasm.errors.RequestError` naming the field, what it received and what is allowed.
This module is a leaf: it imports nothing of ctxasm but the errors.
"""

from __future__ import annotations

import math
import numbers
import operator
import re
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ctxasm.errors import RequestError

__all__ = [
    "MAX_INTEGER",
    "as_real",
    "as_whole",
    "check_text",
    "encodable",
    "integer",
    "invalid",
    "key_path",
    "name",
    "names",
    "number",
    "parse_timestamp",
    "plain",
    "received",
    "relocated",
    "shortened",
    "shown",
    "string",
    "timestamp",
    "type_name",
    "visible",
]

# Far above any real token count, offset or rank, and small enough to stay exact as a float.
MAX_INTEGER = 2**53
# C0 and C1 control characters (NUL, newlines, tabs, escape, DEL, ...): never part of a name.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def type_name(value: object) -> str:
    """The JSON-ish name of a value's type, as error messages show it."""
    return "null" if value is None else type(value).__name__


def plain(value: Any) -> Any:
    """``value`` as the built-in str, int or float it subclasses, read without any method the
    subclass overrides; any other value as it is. A subclass may redefine equality, comparison
    or ``replace`` (``markupsafe.Markup`` escapes the arguments of its ``replace``, so passage
    text was escaped twice), so checks and every later use see the plain value."""
    kind = type(value)
    if kind is str or kind is int or kind is float or value is None or kind is bool:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def invalid(field: str, expected: str, value: object) -> RequestError:
    """The error for ``field``: what was expected and what was received (shortened)."""
    return RequestError(f"{field} must be {expected}; got {received(value)}", field=field)


def received(value: object) -> str:
    """What an error says it got: the type and the value (``int 5``, ``str 'x'``), or ``null``
    alone, which names both."""
    return "null" if value is None else f"{type_name(value)} {shown(value)}"


def shown(value: object) -> str:
    """``value``'s repr, shortened; an integer too long to print (Python refuses over 4,300
    digits) by its size, and an object whose repr fails by its type."""
    number = plain(value)
    if type(number) is int and number.bit_length() > 200:
        sign = "a negative" if number < 0 else "an"
        return f"({sign} integer of {number.bit_length():,} bits)"
    try:
        shown = repr(value)
    except Exception:  # a repr that raises is the caller's object, not a ctxasm error
        return "(its repr failed)"
    return shortened(shown)


def shortened(text: str, limit: int = 60) -> str:
    """``text``, cut to ``limit`` characters with "..." when longer: what an error or a
    report may quote of a value the caller sent."""
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def close_name(name: object, allowed: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` where ``name`` is a short string that other tools use for one
    of ``allowed`` (``question`` for ``query``: see ``_SYNONYMS``) or that is close to one
    (``reserve_output`` to ``reserve_output_tokens``), else nothing: for an error that names
    an unknown field or choice."""
    if not isinstance(name, str) or len(name) > _MOST_COMPARED:
        return ""  # difflib's time grows with the square of a name's length
    choices = list(allowed)
    meant = [choice for choice in _SYNONYMS.get(name.lower(), ()) if choice in choices]
    if not meant:
        import difflib

        meant = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean {' or '.join(map(repr, meant))}?)" if meant else ""


# What other tools (and ctxasm's own command line) call a request field, and the fields they
# mean, looked up before the closest spelling: "contexts" is spelt like context_window and
# "messages" like passages, but they mean passages and history.
_PASSAGES = ("passages", "hits")  # hits: a retriever's results as they come
_SYNONYMS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("budget", "context_budget", "token_budget"), ("max_context_tokens",)),
    **dict.fromkeys(("question", "prompt", "q", "user_query"), ("query",)),
    **dict.fromkeys(("documents", "docs", "contexts", "chunks", "nodes"), _PASSAGES),
    **dict.fromkeys(("messages", "chat_history", "conversation"), ("history",)),
    **dict.fromkeys(("system", "system_message", "instructions"), ("system_prompt",)),
}


_MOST_COMPARED = 64  # characters: no field name is longer


def key_path(where: str, key: object) -> str:
    """The field path of ``key`` in ``where`` (``passages[3].colour``), a long key shortened:
    an error names it twice (message and field), and a key of a megabyte need not come back
    as two."""
    text = shortened(key if isinstance(key, str) else shown(key))
    return f"{where}.{text}" if where else text


def check_text(text: str, field: str) -> None:
    """Refuse text that is not valid Unicode (an unpaired surrogate cannot be encoded)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RequestError(
                f"{field} contains an unpaired surrogate at character {exc.start}; "
                "text must be valid Unicode",
                field=field,
            ) from None


def string(value: object, field: str, *, optional: bool = False, nonempty: bool = False) -> Any:
    """A string (``None`` too when ``optional``); ``nonempty`` refuses blank text."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise invalid(field, "a string" + (" or null" if optional else ""), value)
    text: str = plain(value)
    if nonempty and not text.strip():
        raise RequestError(f"{field} must not be empty", field=field)
    check_text(text, field)
    return text


def integer(value: object, field: str, *, minimum: int, optional: bool = True) -> int | None:
    """An integer from ``minimum`` to :data:`MAX_INTEGER` (never a bool), as a plain int; any
    integral number is taken (numpy's ``int64`` too)."""
    if value is None and optional:
        return None
    found = as_whole(value)
    if found is None or found < minimum:
        qualifier = f"an integer >= {minimum}" + (" or null" if optional else "")
        raise invalid(field, qualifier, value)
    if found > MAX_INTEGER:
        raise invalid(field, "an integer <= 2**53", value)
    return found


def as_whole(value: object) -> int | None:
    """``value`` as a plain int when it is an integral number other than a bool: an int, or a
    type registered as :class:`numbers.Integral` (numpy's ``int64``), read with
    ``__index__``; ``None`` for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        found: int = plain(value)
        return found
    if not isinstance(value, numbers.Integral):
        return None
    try:
        found = plain(operator.index(value))
    except (TypeError, ValueError):  # an __index__ that refuses its own value
        return None
    return found


def number(
    value: object,
    field: str,
    *,
    low: float | None = None,
    high: float | None = None,
    optional: bool = True,
) -> float | None:
    """A finite number, as a float, within ``low`` and ``high`` where given (never a bool). Any
    real number is taken: an int or a float, or a type registered as :class:`numbers.Real`
    (numpy's ``float32`` and ``int64``, which retrievers return as scores)."""
    if value is None and optional:
        return None
    result = as_real(value)
    if result is None:
        raise invalid(field, "a number" + (" or null" if optional else ""), value)
    if not math.isfinite(result):
        raise RequestError(f"{field} must be a finite number; got {shown(value)}", field=field)
    if (low is not None and result < low) or (high is not None and result > high):
        raise invalid(field, f"a number between {low} and {high}", value)
    return result


def as_real(value: object) -> float | None:
    """``value`` as a float when it is a real number other than a bool, converted with its
    ``__float__`` (infinity when it is too large for a float); ``None`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf
    except (TypeError, ValueError):  # a __float__ that refuses its own value
        return None


def name(value: object, field: str, *, optional: bool = False) -> Any:
    """An access name (principal id, tenant, group, reader): a plain, non-blank string with no
    control characters. Compared exactly, so a string subclass is turned into a plain string
    (its own ``__eq__`` or ``__hash__`` could otherwise match names it does not equal)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise invalid(field, "a string" + (" or null" if optional else ""), value)
    text: str = plain(value)
    if not text.strip():
        hint = "; leave it out (null) for none" if optional else ""
        raise RequestError(f"{field} must not be empty{hint}; got {shown(text)}", field=field)
    if not text.isprintable():
        control = _CONTROL.search(text)
        if control is not None:
            raise RequestError(
                f"{field} contains the control character U+{ord(control.group()):04X} at "
                f"character {control.start()}; names may not contain control characters "
                "(NUL, tab, newline and the like)",
                field=field,
            )
        check_text(text, field)
    return text


def names(value: object, field: str, *, optional: bool) -> tuple[str, ...] | None:
    """A list (or tuple) of access names, as a tuple; each item is checked by :func:`name`.
    A bare string is refused with a hint to wrap it in a list."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        raise _bare_string(field, value)
    if not isinstance(value, list | tuple):
        raise invalid(field, "a list of strings", value)
    return tuple([name(item, f"{field}[{i}]") for i, item in enumerate(value)])


def _bare_string(field: str, value: str) -> RequestError:
    shown = repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
    return RequestError(
        f"{field} must be a list of strings; got the string {shown}, which would be read as "
        f"its characters: pass a list, [{shown}]",
        field=field,
    )


def parse_timestamp(value: str) -> datetime:
    """An ISO-8601 timestamp; naive values are taken as UTC."""
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def timestamp(value: object, field: str) -> str | None:
    """An ISO-8601 date or time as a string, or ``None``."""
    text: str | None = string(value, field, optional=True)
    if text is not None:
        try:
            parse_timestamp(text)
        except ValueError:
            raise invalid(field, "an ISO-8601 date or time", text) from None
    return text


def relocated(error: RequestError, prefix: str, where: str) -> RequestError:
    """``error`` raised by a constructor for field ``prefix.<name>``, moved to the field's path
    in a request (``where.<name>``); the message is otherwise unchanged."""
    field = error.field or prefix
    message = error.message
    if message.startswith(prefix):
        message = where + message[len(prefix) :]
    return type(error)(message, field=where + field[len(prefix) :])


def encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogate): what UTF-8, JSON and the stores
    can hold, as :func:`check_text` asks."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


# Letters that draw nothing, though no Unicode category says so: the Braille blank, the Hangul
# fillers and the combining grapheme joiner.
_BLANK_LETTERS = frozenset("\u2800\u3164\u115f\u1160\uffa0\u034f")


def visible(text: str) -> bool:
    """Whether ``text`` holds a character that shows: not white space, not a control (``Cc``),
    not a format character (``Cf``: zero-width spaces and joiners, direction marks) and not a
    letter that draws nothing (the Braille blank, the Hangul fillers)."""
    if text.isascii():
        return any(" " < c < "\x7f" for c in text)
    return any(
        not c.isspace() and c not in _BLANK_LETTERS and unicodedata.category(c) not in ("Cc", "Cf")
        for c in text
    )
