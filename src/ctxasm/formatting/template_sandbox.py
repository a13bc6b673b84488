"""The Jinja2 sandbox that user templates run in, with the work of one request bounded.

Jinja's own sandbox stops templates from reaching Python internals, and caps one ``range`` at
100,000 items, but loops multiply: two nested ``range(100000)`` loops run 10^10 times. Here
every unit of template work is charged to one budget per request (:class:`RenderBudget`):

- **steps:** each iteration of every ``for`` loop (over any iterable, at any nesting level),
  each call (functions, macros, methods), each filter, each item a filter reads from a list or
  a lazy sequence, each intercepted operator; at most :data:`MAX_STEPS`;
- **time:** checked at every step; at most :data:`MAX_SECONDS` for all renders of a request;
- **size:** no string built by the template (``*``, ``+``, ``~``, ``join``, ``replace``,
  ``center``, a macro's output, a ``{% set %}`` block, the whole output, a list or a dict
  written out by ``{{ }}``, ``string`` or ``tojson``, measured before it is written) may exceed
  :data:`MAX_CHARS` characters; widths and precisions in ``%`` and ``format`` specs (and a
  ``tojson`` indent) are at most :data:`MAX_WIDTH`; integer arithmetic is capped at
  :data:`MAX_INT_BITS` bits;
- **reading:** what one step reads whole is sized as it would be written out, at most
  :data:`MAX_CHARS`: a list or a tuple repeated by ``*``, each container operand of a
  comparison (``==``, ``<``, ``in``, ..., the tests ``eq``, ``in``, ..., ``loop.changed``,
  a list's ``count`` and ``index``; the dict or set that ``in`` finds a key in by its hash
  is not read), and the list given to ``sort``, ``unique``, ``groupby``, ``dictsort``,
  ``min`` and ``max`` (the attribute they read of each item, when given one);
- **memory:** every string, list, dict and integer a render builds (operators, slices, list
  and dict displays, filters, method calls, ``~``, macro outputs, ``{% set %}`` blocks, the
  output; the items of a list a filter or a method returns) is charged its bytes, at most
  :data:`MAX_BUILT` for each render (what a render built is garbage once it returns, so the
  limit is a render's, not a request's: a request renders its template about ten times);
- **hashing:** a dict built from many keys (``dict(pairs)``, ``namespace(pairs)``,
  ``fromkeys``) takes a step per key, and a strip takes at most ``_MAX_STRIPPED``
  characters to strip, so no one call does work the time limit cannot stop.

Work that cannot be bounded cheaply is not offered: recursive ``for`` loops, and the filters
``random`` (not deterministic), ``pprint``, ``urlize`` and ``wordwrap``. Going over any limit
is a :class:`~ctxasm.errors.RequestError` naming the ``template`` field and the limit.
"""

from __future__ import annotations

import inspect
import operator
import re
import sys
import time
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from contextvars import ContextVar
from functools import wraps
from string import Formatter
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, operators, optimizeconst
from jinja2.filters import FILTERS, make_attrgetter, make_multi_attrgetter
from jinja2.runtime import LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace
from markupsafe import Markup

from ctxasm.errors import RequestError

__all__ = [
    "MAX_BUILT",
    "MAX_CHARS",
    "MAX_INT_BITS",
    "MAX_SECONDS",
    "MAX_STEPS",
    "MAX_WIDTH",
    "BoundedEnvironment",
    "RenderBudget",
    "active_budget",
]

MAX_STEPS = 1_000_000
MAX_SECONDS = 2.0
MAX_CHARS = 8_000_000
MAX_BUILT = 32 * MAX_CHARS  # bytes
MAX_WIDTH = 10_000
MAX_INT_BITS = 100_000
FIELD = "template"

REMOVED_FILTERS = ("pprint", "random", "urlize", "wordwrap")
REMOVED_GLOBALS = ("lipsum",)
# Filters whose work is linear in a list argument: each item is charged as a step.
_LINEAR_FILTERS = frozenset(
    "batch dictsort groupby items join list map max min reject rejectattr reverse select "
    "selectattr slice sort sum tojson unique urlencode xmlattr".split()
)
# Filters whose integer arguments size their output (a width, a count of slices).
_SIZED_FILTERS = frozenset(("batch", "center", "indent", "slice"))
# str methods whose integer arguments size their output.
_SIZED_METHODS = frozenset(("center", "ljust", "rjust", "zfill", "expandtabs"))
# str methods that change case: a character beyond ASCII may become up to three.
_CASE_METHODS = frozenset(("upper", "lower", "title", "capitalize", "swapcase", "casefold"))
# Methods that make bytes (refused: templates write text, and bytes escape the size checks).
_BYTES_METHODS = frozenset(("encode", "to_bytes"))
_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d*))?")
_DIGITS = re.compile(r"\d+")
_NESTED_KEY = re.compile(r"%\([^)]*\(")  # "%(a(b))9s": Python reads the key to its matching ")"


class RenderBudget:
    """Steps and seconds left to the renders of one request; a plain counter (not frozen)
    because every step of the template decrements it. Only rendering spends the seconds:
    :meth:`start` and :meth:`stop` bracket each render, so the assembly between a format's
    making and its renders (loading a tokenizer, selecting passages) is not charged to the
    template."""

    __slots__ = ("built", "built_left", "deadline", "seconds_left", "steps_left")

    def __init__(
        self, steps: int = MAX_STEPS, seconds: float | None = None, built: int = MAX_BUILT
    ) -> None:
        self.steps_left = steps
        self.seconds_left = MAX_SECONDS if seconds is None else seconds  # read when made
        self.built = self.built_left = built
        self.deadline = time.monotonic() + self.seconds_left

    def start(self) -> None:
        """A render begins: its seconds run from now, and it may build :data:`MAX_BUILT`
        bytes (what a render before built is garbage once it returned its text)."""
        self.deadline = time.monotonic() + self.seconds_left
        self.built_left = self.built

    def stop(self) -> None:
        """A render ended: what it took is spent."""
        self.seconds_left = max(0.0, self.deadline - time.monotonic())

    def charge(self, steps: int = 1) -> None:
        """Spend ``steps``; a RequestError once the steps or the time are used up."""
        self.steps_left -= steps
        if self.steps_left < 0:
            raise RequestError(
                f"template does more than {MAX_STEPS:,} steps (loop iterations, calls, filter "
                "items) for one request; simplify it",
                field=FIELD,
            )
        if time.monotonic() > self.deadline:
            raise RequestError(
                f"template took more than {MAX_SECONDS:g} s to render for one request; simplify it",
                field=FIELD,
            )

    def build(self, size: int) -> None:
        """Spend ``size`` of the bytes the render may build; a RequestError once they are
        used up (what one step builds is bounded by MAX_CHARS, what a render builds in all
        by this, and with it the memory a render can hold at once)."""
        self.built_left -= size
        if self.built_left < 0:
            raise RequestError(
                f"template builds more than {MAX_BUILT // 1_000_000:,} MB in all (strings, "
                "lists, dicts, integers) in one render; simplify it",
                field=FIELD,
            )


_ACTIVE: ContextVar[RenderBudget | None] = ContextVar("ctxasm_template_budget", default=None)


def active_budget() -> ContextVar[RenderBudget | None]:
    """The context variable holding the budget of the render in progress."""
    return _ACTIVE


def _budget() -> RenderBudget:
    budget = _ACTIVE.get()
    if budget is None:  # a render outside TemplateFormat: give it a budget of its own
        budget = RenderBudget()
        _ACTIVE.set(budget)
    return budget


def _refused(action: str, size: int) -> RequestError:
    """The refusal of a template that ``action`` (a verb and its object) of ``size``
    characters, over MAX_CHARS; every size limit's message says it so."""
    return RequestError(
        f"template {action} of {size:,} characters; at most {MAX_CHARS:,}", field=FIELD
    )


def _too_long(size: int, what: str = "a string") -> RequestError:
    """:func:`_refused` of a template that builds ``what``."""
    return _refused(f"builds {what}", size)


def _check_width(value: int, what: str) -> None:
    if value > MAX_WIDTH:
        raise RequestError(
            f"template asks for a {what} of {value:,}; at most {MAX_WIDTH:,}", field=FIELD
        )


# What an empty one of each kind takes: a value made is charged what it takes beyond that.
_EMPTY_SIZES = tuple(
    (kind, sys.getsizeof(kind())) for kind in (str, list, tuple, dict, set, frozenset, int)
)


def _built_size(value: Any, *, items: bool = False) -> int:
    """The bytes ``value`` takes beyond an empty one of its kind (found in constant time): a
    text a byte a character in ASCII, up to four beyond it; a list eight for each item it
    has room for; an integer its digits; anything else nothing. With ``items``, a list's,
    tuple's or dict's items (keys and values) are added as they are (not what they hold):
    what a filter or a method returns is mostly new (``s.split()``: a million texts of 50
    bytes each in a list of 8 MB)."""
    for kind, empty in _EMPTY_SIZES:
        if isinstance(value, kind):
            size = max(sys.getsizeof(value) - empty, 0)
            if items and isinstance(value, list | tuple):
                size += sum(map(sys.getsizeof, value))
            elif items and isinstance(value, dict):
                size += sum(map(sys.getsizeof, value)) + sum(map(sys.getsizeof, value.values()))
            return size
    return 0


def _charge_built(result: Any, *inputs: Any, items: bool = False) -> None:
    """Charge ``result`` to the bytes built, unless it is one of ``inputs`` (returned as it
    was: ``s * 1``, ``s.strip()`` with nothing to strip); ``items`` as for
    :func:`_built_size`."""
    if not any(result is value for value in inputs):
        _budget().build(_built_size(result, items=items))


# Filters that write their first argument out as text (a list or a dict is written whole).
_TEXT_FILTERS = frozenset(
    "capitalize center e escape forceescape format indent join lower replace safe string "
    "striptags title tojson trim truncate upper urlencode wordcount xmlattr".split()
)
_CONTAINERS = (list, tuple, dict, set, frozenset, KeysView, ValuesView, ItemsView)
# What is written out at a size of its own: containers, and namespaces (their attributes).
_WRITTEN = (*_CONTAINERS, Namespace)


def _text_size(value: Any, refused: str = "builds a text") -> int:
    """A lower bound on the characters of ``value`` written out (``str``, ``tojson``), found
    without writing it: the strings it holds, at any depth, and two per item. A RequestError
    ("template {refused} of N characters") as soon as it passes :data:`MAX_CHARS`:
    ``[s] * 1000`` is a list of 1,000 items, but writing it out with a string ``s`` of a
    million characters takes a gigabyte. The time limit is checked as it goes (the items a
    template can build are bounded by its steps)."""
    if isinstance(value, str):
        return len(value)
    total = 0
    stack = [value]
    budget = _budget()
    visited = 0
    while stack:
        item = stack.pop()
        held = None if isinstance(item, str) else _held(item)
        if isinstance(item, str):  # written as its repr: quoted, an unprintable one escaped
            total += _repr_size(item)
        elif held is not None:
            stack.extend(held)
            total += 0 if isinstance(item, Namespace) else 2 * len(item)
        elif isinstance(item, int):  # its digits, in binary at most (with "_" every four)
            total += item.bit_length() * 5 // 4 + 2
        else:
            total += 1
        if total > MAX_CHARS:
            raise _refused(refused, total)
        visited += 1
        if visited % 4096 == 0:
            budget.charge(0)
    return total


def _repr_size(text: str) -> int:
    """The most characters ``repr(text)`` takes: quotes and backslashes, line breaks and tabs
    as two, another unprintable character as up to ten ("\\U000e0001")."""
    size = len(text) + 2 + text.count("\\") + text.count("'")
    if text.isprintable():
        return size
    size += text.count("\n") + text.count("\t") + text.count("\r")
    if text.translate(_PLAIN_BREAKS).isprintable():
        return size
    # each unprintable character by its escape (a no-break space is "\xa0", U+3000 "\u3000"),
    # counted kind by kind while the kinds are few (one in a long text made it all ten times)
    odd = [c for c in set(text) if not c.isprintable() and c not in "\n\t\r"]
    if len(odd) > _ODD_KINDS:
        return _REPR_GROWTH * len(text) + 2
    return size + sum(
        text.count(c) * (3 if c <= "\xff" else 5 if c <= "\uffff" else 9) for c in odd
    )


_ODD_KINDS = 64


_PLAIN_BREAKS = str.maketrans("", "", "\n\t\r")


def _metered(items: Iterable[Any], budget: RenderBudget) -> Iterator[Any]:
    for item in items:
        budget.charge()
        yield item


def _checked_join(parts: Iterable[Any], separator: int = 0, *, escaped: bool = False) -> str:
    """``parts`` joined, refused as soon as they (and a ``separator`` of that many characters
    between each two; ``escaped`` as a Markup join escapes them) pass MAX_CHARS."""
    chunks: list[str] = []
    total = -separator
    for part in parts:
        total += separator
        if escaped and isinstance(part, str) and not isinstance(part, Markup):
            total += _grown("escape", part) - len(part)
        if isinstance(part, _WRITTEN) and total + _text_size(part) > MAX_CHARS:
            raise _too_long(total + _text_size(part))
        text = part if isinstance(part, str) else str(part)
        total += len(text)
        if total > MAX_CHARS:
            raise _too_long(total)
        chunks.append(text)
    return "".join(chunks)


def _built_join(parts: Iterable[Any]) -> str:
    """``~``, and Jinja's concat (macro bodies, ``{% set %}`` blocks, the whole output):
    :func:`_checked_join`, charged to the bytes built."""
    text = _checked_join(parts)
    _budget().build(_built_size(text))
    return text


def _check_printf(spec: str, values: Any = ()) -> None:
    """Each width and precision of %-format ``spec`` at most MAX_WIDTH, and its output at
    most MAX_CHARS. Only a tuple is a list of values to ``%``, each written once by the field
    that takes it; a dict whose fields are all named gives each field its value (one may be
    written many times); anything else is one value, written whole (a list, or a dict under
    a field with no name)."""
    if _NESTED_KEY.search(spec):
        raise RequestError(
            "template uses parentheses inside a %(name) key; name the value plainly", field=FIELD
        )
    fields = named = widths = 0
    expands = False
    for match in _PRINTF_SPEC.finditer(spec):
        fields += 1
        named += spec.startswith("%(", match.start())
        expands = expands or spec[match.end() : match.end() + 1] in ("r", "a")
        for group in match.groups():
            if group == "*":
                raise RequestError(
                    "template uses a '*' width in %-formatting; give a number", field=FIELD
                )
            if group:
                _check_width(int(group), "width or precision")
                widths += int(group)
    escaped = isinstance(spec, Markup)
    if isinstance(values, tuple) and not expands:  # each value once, by its own field
        size = len(spec) + widths + sum(_field_size(value, escaped) for value in values)
        if size > MAX_CHARS:
            raise _too_long(size, "a formatted string")
        return
    if isinstance(values, dict) and fields and named == fields:
        values = list(values.values())
    elif not isinstance(values, tuple):
        values = [values]
    _check_fields(len(spec), fields, widths, values, _REPR_GROWTH if expands else 1, escaped)


def _check_format_spec(template: str, values: Iterable[Any] = ()) -> None:
    """As :func:`_check_printf`, for a ``str.format`` template and its arguments (each of
    which a field may write whole, or any part of)."""
    fields = widths = 0
    expands = False
    for _, name, spec, conversion in Formatter().parse(template):
        if spec and "{" in spec:
            raise RequestError(
                "template uses a nested {} inside a format spec; give a number", field=FIELD
            )
        fields += name is not None
        expands = expands or conversion in ("r", "a")
        for digits in _DIGITS.findall(spec or ""):
            _check_width(int(digits), "width or precision")
            widths += int(digits)
    growth = _REPR_GROWTH if expands else 1
    _check_fields(len(template), fields, widths, list(values), growth, isinstance(template, Markup))


# A repr writes a character as up to 10 ("\U0001f600"): %r, %a, !r and !a fields may. Markup
# (a |safe text) escapes what is added to it, a character as up to 5 ("&amp;").
_REPR_GROWTH = 10
_ESCAPE_GROWTH = 5


def _check_fields(
    length: int,
    fields: int,
    widths: int,
    values: Sequence[Any],
    growth: int = 1,
    escaped: bool = False,
) -> None:
    """Refuse a format of ``length`` characters with ``fields`` fields of ``widths`` in all
    that could write more than MAX_CHARS, each field at most the longest of ``values``
    written out (escaped, for a Markup format), ``growth`` times (a repr)."""
    longest = max((_field_size(value, escaped) for value in values), default=0)
    size = length + widths + fields * longest * growth
    if size > MAX_CHARS:
        raise _too_long(size, "a formatted string")


def _field_size(value: Any, escaped: bool) -> int:
    """The most characters a format field writes for ``value``: a text as it is (escaped by
    a Markup format: "&" as "&amp;"), anything else as its ``str``."""
    if isinstance(value, str):
        return _grown("escape", value) if escaped and not isinstance(value, Markup) else len(value)
    size = _text_size(value)
    return size * _ESCAPE_GROWTH if escaped else size


def _check_replace(text: Any, old: Any, new: Any, count: Any = -1) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        hits = text.count(old) if old else len(text) + 1
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        size = len(text) + hits * (len(new) - len(old))
        if size > MAX_CHARS:
            raise _too_long(size)


def _check_binop(symbol: str, left: Any, right: Any) -> None:
    if symbol == "*":
        for seq, times in ((left, right), (right, left)):
            if not isinstance(times, int) or times <= 0:
                continue
            if isinstance(seq, str) and len(seq) * times > MAX_CHARS:
                raise _too_long(len(seq) * times, "a repetition")
            # a list by what it writes out: [s] * 1000 is 1,000 items, but each holds all of s
            # (and every comparison or sort key of it reads s whole)
            size = _text_size(seq, "builds a repetition") if isinstance(seq, list | tuple) else 0
            size *= times
            if size > MAX_CHARS:
                raise _too_long(size, "a repetition")
        if isinstance(left, int) and isinstance(right, int):
            _check_bits(left.bit_length() + right.bit_length())
    elif symbol == "**" and isinstance(left, int) and isinstance(right, int):
        if right > 0 and abs(left) > 1:
            _check_bits(left.bit_length() * right)
    elif symbol == "+" and isinstance(left, str) and isinstance(right, str):
        # Markup escapes a plain text added to it ("&" as "&amp;")
        markup = isinstance(left, Markup) or isinstance(right, Markup)
        size = sum(
            _grown("escape", text) if markup and not isinstance(text, Markup) else len(text)
            for text in (left, right)
        )
        if size > MAX_CHARS:
            raise _too_long(size)
    elif symbol == "+" and isinstance(left, list | tuple) and isinstance(right, type(left)):
        # by its items (sizing what they hold would read the list again on each "+" of a
        # loop that adds to it); what reads them (a comparison, sort, join) sizes them
        if len(left) + len(right) > MAX_CHARS:
            raise _too_long(len(left) + len(right))
    elif symbol in ("//", "%") and isinstance(left, int) and isinstance(right, int):
        _check_bits(max(left.bit_length(), right.bit_length()))  # division is quadratic
    elif symbol == "%" and isinstance(left, str):
        _check_printf(left, right)  # written out, a named value maybe many times


def _check_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise RequestError(
            f"template computes an integer of about {bits:,} bits; at most {MAX_INT_BITS:,}",
            field=FIELD,
        )


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(func) if name in _READERS else None

    @wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.charge()
        args = tuple(_meter_argument(name, value, budget) for value in args)
        if name == "join" or name in _READERS:  # its items, read now (each a step), sized
            args = tuple(list(value) if isinstance(value, Iterator) else value for value in args)
        elif name in _TEXT_FILTERS:  # a list or dict is written out whole: refused before
            for value in (*args, *kwargs.values()):
                if isinstance(value, _WRITTEN):
                    _text_size(value)
        if signature is not None:
            _check_read(name, signature, args, kwargs)
        _check_filter(name, args, kwargs)
        result = func(*args, **kwargs)
        if isinstance(result, str) and len(result) > MAX_CHARS:
            raise _too_long(len(result))
        if name not in _PICKING:
            _charge_built(result, *args, *kwargs.values(), items=True)
        return result

    return guarded


# Filters that return one of what they are given, building nothing.
_PICKING = frozenset("attr d default first last max min".split())
# Filters that read every item whole in one step (comparing them, or making a key of each:
# a lowered copy of a text, unless case_sensitive): sized before, as they would be written.
_READERS = frozenset("dictsort groupby max min sort unique".split())


def _check_read(
    name: str, signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Refuse a list for filter ``name`` whose items (or the attributes it reads of them)
    hold more than MAX_CHARS characters in all: ``([s] * 1000)|sort`` lowers ``s`` a
    thousand times in one step."""
    try:
        arguments = signature.bind(*args, **kwargs).arguments
    except TypeError:
        return  # the filter itself says what is wrong
    value = arguments.get("value")
    if isinstance(value, str) or not isinstance(value, Iterable):
        return  # a text is read a character at a time, each a step
    refused = f"gives {name} a list"
    if name == "dictsort":
        _text_size(value, refused)
        return
    items: Iterable[Any] = value
    attribute = arguments.get("attribute")
    environment = arguments.get("environment")
    if attribute is not None and environment is not None:
        make = make_multi_attrgetter if name == "sort" else make_attrgetter
        items = map(make(environment, attribute), value)
    size = 0
    for item in items:
        size += len(item) if isinstance(item, str) else _text_size(item, refused)
        if size > MAX_CHARS:
            raise _refused(refused, size)


# Filters that read a string character by character (making an object of each): a step each.
_PER_CHARACTER = frozenset(
    "batch groupby list map max min reject rejectattr select selectattr slice sort sum "
    "unique".split()
)


def _meter_argument(name: str, value: Any, budget: RenderBudget) -> Any:
    if isinstance(value, str):
        if name in _PER_CHARACTER:
            budget.charge(len(value))
        return value
    if isinstance(value, Iterator):  # a lazy sequence: charged per item actually read
        return _metered(value, budget)
    if name in _LINEAR_FILTERS and isinstance(value, list | tuple | dict | set | range):
        budget.charge(len(value))
    return value


def _check_filter(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if name in _SIZED_FILTERS:
        for value in (*args, *kwargs.values()):
            if isinstance(value, int) and not isinstance(value, bool):
                _check_width(value, f"{name} size")
    elif name == "format" and args and isinstance(args[0], str):
        _check_printf(args[0], kwargs if kwargs else tuple(args[1:]))
    if name in _GROWTH:
        values = [value for value in args if not hasattr(value, "environment")]  # no context
        if values and name == "tojson":
            indent = values[1] if len(values) > 1 else kwargs.get("indent")
            _check_growth(name, values[0], _indent_size(values[0], indent))
        elif values:
            _check_growth(name, values[0])
    if name == "indent" and args and isinstance(args[0], str):
        _check_indent(args[0], *args[1:2], **{k: v for k, v in kwargs.items() if k == "width"})
    elif name == "replace":
        values = [value for value in args if not hasattr(value, "environment")]
        _check_replace(*values[:4])
    elif name == "join":
        values = [value for value in args if not hasattr(value, "environment")]
        separator = values[1] if len(values) > 1 else kwargs.get("d", "")
        items = values[0] if values else None
        if isinstance(items, list | tuple | set | frozenset | range):
            # each item written by str (a text as it is), the separator between each two
            size = len(separator) * max(len(items) - 1, 0) if isinstance(separator, str) else 0
            if size > MAX_CHARS:
                raise _too_long(size, "a joined text")
            for item in items:
                size += len(item) if isinstance(item, str) else _text_size(item)
                if size > MAX_CHARS:
                    raise _too_long(size, "a joined text")
        elif isinstance(items, _WRITTEN):  # a dict (its keys) or a namespace
            _text_size(items)
    elif name == "trim":
        values = [value for value in args if not hasattr(value, "environment")]
        _check_strip(values[1] if len(values) > 1 else kwargs.get("chars"))
    elif name == "int":
        values = [value for value in args if not hasattr(value, "environment")]
        text = values[0].strip() if values and isinstance(values[0], str) else ""
        if len(text) > MAX_INT_BITS // 6 and text.isalnum():  # up to 6 bits a digit (base 36)
            _check_bits(6 * len(text))
    elif name == "sum" and not isinstance(kwargs.get("start", 0), int | float):
        raise RequestError("template: sum adds numbers only", field=FIELD)


# Filters that write some characters of their text as several, and the most characters each
# writes for one: tojson ("\ud83d\ude00" for a character beyond the BMP, "\u003c" for "<"),
# escape ("&#34;") and urlencode ("%F0%9F%98%80", three for each byte).
_GROWTH = {
    "tojson": 12,
    "escape": 5,
    "e": 5,
    "forceescape": 5,
    "urlencode": 12,
    "xmlattr": 5,  # its values escaped
    # a letter's case may take up to three ("ﬃ" upper is "FFI")
    "upper": 3,
    "lower": 3,
    "title": 3,
    "capitalize": 3,
}
_JSON_ESCAPED = re.compile(r"[^ !#$%(-;=?-\[\]-~]")  # beyond ASCII, control, <>&'"\
_URL_SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~/-"


def _check_growth(name: str, value: Any, extra: int = 0) -> None:
    """Refuse ``value`` written by filter ``name`` (with ``extra`` characters of its own)
    where that could pass MAX_CHARS: a text by the characters it would expand (counted only
    when the most growth could), anything else by its size times the most growth."""
    most = _GROWTH[name]
    size = _text_size(value) * most + extra
    if size <= MAX_CHARS:
        return
    # each string counted by the characters it would expand, plus a few for its quotes and
    # the separator after it (a list's "[", ", ", a dict's ": ")
    size = extra + sum(_grown(name, text) + 4 for text in _strings(value))
    if size > MAX_CHARS:
        raise _too_long(size, f"a text written by {name}")


def _indent_size(value: Any, indent: Any) -> int:
    """The characters ``tojson(indent=...)`` adds to ``value``: with an indent, every item of
    a list or a dict (and its closing bracket) is on a line of its own, indented once for
    each level it is nested at. An integer indent is a width (at most MAX_WIDTH), a text by
    the characters it writes (escaped as tojson escapes them)."""
    if indent is None:
        return 0
    if isinstance(indent, str):
        width = _grown("tojson", indent)
    elif isinstance(indent, int):
        width = max(int(indent), 0)
    else:
        return 0  # json refuses it
    _check_width(width, "tojson indent")
    total = visited = 0
    budget = _budget()
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        visited += 1
        if visited % 4096 == 0:
            budget.charge(0)
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if item:  # "[" then each item on a line one level in, then "]" on a line of its own
            total += len(item) * (1 + width * (depth + 1)) + 1 + width * depth
            if total > MAX_CHARS:
                raise _too_long(total, "a text written by tojson")
            stack.extend((child, depth + 1) for child in children)
    return total


def _grown(name: str, text: str) -> int:
    """The characters filter ``name`` writes for ``text`` at most."""
    if _GROWTH.get(name) == 3:  # a change of case: only beyond ASCII can a letter grow
        return len(text) if text.isascii() else 3 * len(text)
    if name == "urlencode":
        data = text.encode("utf-8", "surrogatepass")
        return len(data) + 2 * len(data.translate(None, _URL_SAFE))
    if name == "tojson":
        return len(text) + 11 * _JSON_ESCAPED.subn("", text)[1]
    return len(text) + 4 * sum(map(text.count, "&\"'")) + 3 * sum(map(text.count, "<>"))


def _strings(value: Any) -> Iterator[str]:
    """Every string ``value`` writes out, at any depth (keys too), and anything else as its
    ``str`` (a number), read without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
            continue
        held = _held(item)
        if held is not None:
            stack.extend(held)
        else:
            yield _plain_text(item)


def _held(item: Any) -> Iterable[Any] | None:
    """What a container writes out (a dict its keys and values, a namespace the dict of its
    attributes); ``None`` for anything else."""
    if isinstance(item, dict):
        return [*item.keys(), *item.values()]
    if isinstance(item, Namespace):
        return (object.__getattribute__(item, "_Namespace__attrs"),)
    if isinstance(item, _CONTAINERS):
        return item
    return None


def _plain_text(item: Any) -> str:
    """A number or another scalar as it is written (a big integer by its size, not its digits,
    which Python refuses to write past 4,300)."""
    if isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > 64:
        return "0" * (item.bit_length() * 31 // 100 + 1)
    return str(item) if isinstance(item, int | float | bool) or item is None else "?"


def _check_indent(text: str, width: Any = 4, **_: Any) -> None:
    """``indent`` writes ``width`` (spaces, or a string) before every line."""
    each = width if isinstance(width, int) and not isinstance(width, bool) else None
    if each is None:
        each = len(width) if isinstance(width, str) else 0
    size = len(text) + (text.count("\n") + 1) * max(each, 0)
    if size > MAX_CHARS:
        raise _too_long(size, "an indented text")


def _check_str_method(text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse a call of ``text``'s method ``name`` whose result would be over MAX_CHARS (or
    bytes, which no template needs and whose size nothing here measures)."""
    if name in _BYTES_METHODS:
        raise RequestError(f"template cannot call {name}: templates write text", field=FIELD)
    if name in _STRIPS:
        _check_strip(next(iter((*args, *kwargs.values())), None))
    if name in _CASE_METHODS and not text.isascii() and 3 * len(text) > MAX_CHARS:
        raise _too_long(3 * len(text), "a text in another case")  # "ﬃ" upper is "FFI"
    if name in _SIZED_METHODS:
        for value in (*args, *kwargs.values()):
            if isinstance(value, int):
                _check_width(value, f"{name} width")
    if name == "expandtabs":
        tabsize = next(iter((*args, *kwargs.values())), 8)
        if isinstance(tabsize, int):
            size = len(text) + text.count("\t") * max(tabsize, 0)
            if size > MAX_CHARS:
                raise _too_long(size, "a text with its tabs expanded")
    elif name == "translate":
        table = args[0] if args else kwargs.get("table")
        if isinstance(table, dict):
            replacements: Iterable[Any] = table.values()
        elif isinstance(table, list | tuple | str):
            replacements = table
        else:
            raise RequestError(
                "template: translate takes a dict or a list of replacements", field=FIELD
            )
        longest = max((len(v) for v in replacements if isinstance(v, str)), default=1)
        if len(text) * max(longest, 1) > MAX_CHARS:
            raise _too_long(len(text) * longest, "a translated text")
    elif name == "replace":
        _check_replace(text, *args)
        if isinstance(text, Markup) and len(args) > 1 and isinstance(args[1], str):
            # Markup escapes what it puts in: sized as the escaped text
            hits = text.count(args[0]) if isinstance(args[0], str) and args[0] else len(text) + 1
            size = len(text) + hits * _grown("escape", args[1])
            if size > MAX_CHARS:
                raise _too_long(size)


def _hashes_each(function: Any, name: str, given: Any) -> bool:
    """Whether calling ``function`` (named ``name``) on ``given`` builds a dict of its items
    in one call: ``dict(pairs)``, ``namespace(pairs)``, ``{}.fromkeys(keys)`` (a mapping
    given to ``dict`` or ``namespace`` is copied with the hashes it has)."""
    if name == "fromkeys":
        return isinstance(given, Iterable) and not isinstance(given, str)
    if function is dict or function is Namespace:
        return isinstance(given, Iterable) and not isinstance(given, str | Mapping)
    return False


# Strips that take the characters to strip: each character stripped is looked up in them.
_STRIPS = frozenset(("strip", "lstrip", "rstrip"))
_MAX_STRIPPED = 256


def _check_strip(chars: Any) -> None:
    """Refuse a strip (a method, or the ``trim`` filter) given more than ``_MAX_STRIPPED``
    characters to strip: Python looks each character of the text up in them one by one, in
    one step (a million of each took 9 s, holding every other thread)."""
    if isinstance(chars, str) and len(chars) > _MAX_STRIPPED:
        raise RequestError(
            f"template gives a strip {len(chars):,} characters to strip; at most {_MAX_STRIPPED:,}",
            field=FIELD,
        )


def _bounded_filters() -> dict[str, Callable[..., Any]]:
    return {
        name: _guard_filter(name, func)
        for name, func in FILTERS.items()
        if name not in REMOVED_FILTERS
    }


# Tests that compare their value with their argument (``x is eq y``, ``select('in', l)``).
_COMPARING_TESTS = frozenset(
    "== != < <= > >= eq ne lt le gt ge equalto lessthan greaterthan in".split()
)
# What ``x in y`` finds by hashing ``x``: reading ``x`` whole, not ``y``.
_HASHED = (dict, set, frozenset, KeysView, ItemsView)


def _compared(value: Any, membership: bool = False) -> Any:
    """An operand of a comparison, sized first: comparing reads a list, a tuple or a dict
    whole (every item of ``[s] * 1000`` against the other's, in one step), so it is refused
    past what it could write out (MAX_CHARS), as it would be written; a lazy sequence is read
    into a list (a step an item) and sized the same. The right side of ``in`` that finds its
    left by hashing (a dict, a set) is not read."""
    if isinstance(value, Iterator):
        value = list(_metered(value, _budget()))
    if membership and isinstance(value, _HASHED):
        return value
    if isinstance(value, _CONTAINERS):
        _budget().charge()
        _text_size(value, "compares a value")
    return value


def _guard_test(name: str, func: Any) -> Any:  # Any: Jinja types its tests as "function"
    membership = name == "in"

    @wraps(func)
    def guarded(value: Any, *args: Any) -> Any:
        return func(_compared(value), *(_compared(arg, membership) for arg in args))

    return guarded


class _BoundedCodeGenerator(CodeGenerator):
    """Compiles every ``for`` iterable through the budget, ``~`` through a checked join, each
    operand of a comparison through :func:`_compared`, slices and list, tuple and dict
    displays through the bytes built."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:  # noqa: N802 - Jinja's name
        if node.recursive:
            self.fail("recursive for loops are not allowed in ctxasm templates", node.lineno)
        node.iter = nodes.Call(
            nodes.EnvironmentAttribute("ctxasm_iterate"), [node.iter], [], None, None
        ).set_lineno(node.lineno)
        super().visit_For(node, frame)

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:  # noqa: N802
        self.write("environment.ctxasm_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    @optimizeconst
    def visit_Compare(self, node: nodes.Compare, frame: Frame) -> None:  # noqa: N802
        # a chain stays a chain: "a < b < c" reads b once, and c only if a < b
        self.write("(environment.ctxasm_compared(")
        self.visit(node.expr, frame)
        self.write(")")
        for operand in node.ops:
            membership = operand.op in ("in", "notin")
            self.write(f" {operators[operand.op]} environment.ctxasm_compared(")
            self.visit(operand.expr, frame)
            self.write(f", {membership})")
        self.write(")")

    def _charged(self, visit: Callable[[Any, Frame], None], node: Any, frame: Frame) -> None:
        """Write ``node`` (by ``visit``) through the bytes built."""
        self.write("environment.ctxasm_built(")
        visit(node, frame)
        self.write(")")

    @optimizeconst
    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:  # noqa: N802
        # Jinja slices in plain Python; a slice of a text or a list is a copy: charged
        if isinstance(node.arg, nodes.Slice):
            self._charged(super().visit_Getitem, node, frame)
        else:
            super().visit_Getitem(node, frame)

    def visit_List(self, node: nodes.List, frame: Frame) -> None:  # noqa: N802
        self._charged(super().visit_List, node, frame)

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:  # noqa: N802
        self._charged(super().visit_Dict, node, frame)

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:  # noqa: N802
        if node.ctx == "load":  # a target ({% for a, b in ... %}) is written as it is
            self._charged(super().visit_Tuple, node, frame)
        else:
            super().visit_Tuple(node, frame)

    def visit_Const(self, node: nodes.Const, frame: Frame) -> None:  # noqa: N802
        # Jinja folds a display of constants into one, written as a display again
        if isinstance(node.value, list | tuple | dict):
            self._charged(super().visit_Const, node, frame)
        else:
            super().visit_Const(node, frame)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox with the limits of the module docstring."""

    code_generator_class = _BoundedCodeGenerator
    intercepted_binops = frozenset(("*", "**", "+", "-", "%", "//"))
    intercepted_unops = frozenset(("-",))
    concat = staticmethod(_built_join)  # macro bodies, {% set %} blocks, the whole output

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_checked_output, **options)
        self.filters = _bounded_filters()
        for name in _COMPARING_TESTS:
            self.tests[name] = _guard_test(name, self.tests[name])
        # lipsum(n) writes n paragraphs in one call, before any output is measured
        for name in REMOVED_GLOBALS:
            self.globals.pop(name, None)

    @staticmethod
    def ctxasm_iterate(items: Iterable[Any]) -> Iterator[Any]:
        """A ``for`` loop's iterable, charged one step per iteration."""
        return _metered(items, _budget())

    @staticmethod
    def ctxasm_join(parts: Iterable[Any]) -> str:
        """The ``~`` operator, with its size checked and charged."""
        return _built_join(parts)

    @staticmethod
    def ctxasm_compared(value: Any, membership: bool = False) -> Any:
        """An operand of a comparison, sized (:func:`_compared`)."""
        return _compared(value, membership)

    @staticmethod
    def ctxasm_built(value: Any) -> Any:
        """A slice, or a list, tuple or dict display: charged to the bytes built."""
        _budget().build(_built_size(value))
        return value

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        _budget().charge()
        _check_binop(operator_name, left, right)
        result = _BINOPS[operator_name](left, right)
        _charge_built(result, left, right)
        return result

    def call_unop(self, context: Any, operator_name: str, arg: Any) -> Any:
        result = super().call_unop(context, operator_name, arg)
        _charge_built(result, arg)
        return result

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        budget = _budget()
        budget.charge()
        owner = getattr(__obj, "__self__", None)
        name = getattr(__obj, "__name__", "")
        if isinstance(owner, bytes | bytearray | memoryview) or name in _BYTES_METHODS:
            raise RequestError(f"template cannot call {name}: templates write text", field=FIELD)
        if args and _hashes_each(__obj, name, args[0]):
            # each key inserted in its own step, so that the time limit holds between them:
            # keys whose hashes collide (multiples of 2**61 - 1) cost the insertion of each
            # all the others before it (60,000 took 18 s in one call)
            args = (_metered(iter(args[0]), budget), *args[1:])
        if isinstance(owner, LoopContext) and name == "changed":  # compares with the last
            args = tuple(_compared(value) for value in args)
        elif isinstance(owner, list | tuple) and name in ("count", "index"):
            _compared(owner)  # compares each item with the argument
            args = tuple(_compared(value) for value in args)
        if isinstance(owner, str):
            for value in (*args, *kwargs.values()):  # format, %: written out
                if isinstance(value, _WRITTEN) and name != "join":  # join: its items, below
                    _text_size(value)
            _check_str_method(owner, name, args, kwargs)
            if name == "join" and args:
                args = (list(_metered(args[0], budget)), *args[1:])
                _checked_join(args[0], len(owner), escaped=isinstance(owner, Markup))
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, str) and len(result) > MAX_CHARS:
            raise _too_long(len(result))
        if not isinstance(__obj, Macro) and name != "get":  # a macro's output: by concat
            _charge_built(result, owner, *args, *kwargs.values(), items=True)
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        template = value.__self__
        _check_format_spec(template)
        formatter = wrapped

        @wraps(formatter)
        def checked(*args: Any, **kwargs: Any) -> str:
            # written out, each maybe many times ("{0}{0}"): refused before
            values = [*args, *kwargs.values()]
            if value.__name__ == "format_map" and args and isinstance(args[0], dict):
                values = [*args[0].values()]
            _check_format_spec(template, values)
            return formatter(*args, **kwargs)

        return checked


def _checked_output(value: Any) -> Any:
    """What ``{{ ... }}`` writes, its size checked before a list or a dict is written out."""
    if isinstance(value, _WRITTEN):
        _text_size(value)
    return value


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "*": operator.mul,
    "**": operator.pow,
    "//": operator.floordiv,
    "+": operator.add,
    "-": operator.sub,
    "%": operator.mod,
}
