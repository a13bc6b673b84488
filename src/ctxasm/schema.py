"""Turning request JSON (or keyword arguments) into a validated :class:`~ctxasm.model.Request`.

Every check names the field by its path (``passages[3].score``), says what it received and what
is allowed. Strategy *names* are checked later, against the registry, when the assembler is built.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ctxasm.errors import RequestError
from ctxasm.model import (
    Message,
    Passage,
    Principal,
    Request,
    Strategies,
    StrategySpec,
)
from ctxasm.query_class import QUERY_CLASSES
from ctxasm.stages.history import parse_history_policy

__all__ = [
    "DEFAULT_MAX_REQUEST_CHARS",
    "PASSAGE_FIELDS",
    "REQUEST_FIELDS",
    "parse_passage",
    "parse_request",
    "parse_strategies",
    "parse_timestamp",
]

# Far above any context window (2M tokens is about 8M characters), low enough that a runaway
# request is refused before any work is done.
DEFAULT_MAX_REQUEST_CHARS = 32_000_000

REQUEST_FIELDS = (
    "query",
    "passages",
    "model",
    "system_prompt",
    "history",
    "context_window",
    "reserve_output_tokens",
    "max_context_tokens",
    "safety_margin",
    "principal",
    "format",
    "strategy",
    "min_score",
    "top_k",
    "allow_public",
    "query_class",
    "template",
    "history_policy",
)
PASSAGE_FIELDS = (
    "id",
    "text",
    "score",
    "title",
    "source",
    "url",
    "doc_id",
    "start",
    "end",
    "timestamp",
    "authority",
    "graph_distance",
    "priority",
    "embedding",
    "tenant",
    "readers",
    "metadata",
)
_PASSAGE_FIELD_SET = frozenset(PASSAGE_FIELDS)
# Requests this module built; a Request made by hand is validated before use.
_VALIDATED: weakref.WeakSet[Request] = weakref.WeakSet()
_SLOTS = ("relevance", "dedup", "selection", "compression", "ordering", "guard")
_OPTIONAL_SLOTS = frozenset({"compression", "guard"})
_ROLES = ("user", "assistant")


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _fail(field: str, expected: str, value: object) -> RequestError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return RequestError(f"{field} must be {expected}; got {_type_name(value)} {shown}", field=field)


def _string(value: object, field: str, *, optional: bool = False, nonempty: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        return _raise(_fail(field, "a string" + (" or null" if optional else ""), value))
    if nonempty and not value.strip():
        raise RequestError(f"{field} must not be empty", field=field)
    _check_text(value, field)
    return value


def _raise(error: RequestError) -> Any:
    raise error


# Far above any real token count, offset or rank, and small enough to stay exact as a float.
MAX_INTEGER = 2**53


def _integer(value: object, field: str, *, minimum: int, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        qualifier = f"an integer >= {minimum}" + (" or null" if optional else "")
        raise _fail(field, qualifier, value)
    if value > MAX_INTEGER:
        raise _fail(field, "an integer <= 2**53", value)
    return value


def _number(
    value: object,
    field: str,
    *,
    low: float | None = None,
    high: float | None = None,
    optional: bool = True,
) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(field, "a number" + (" or null" if optional else ""), value)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise RequestError(f"{field} must be a finite number; got {value!r}", field=field)
    if (low is not None and number < low) or (high is not None and number > high):
        raise _fail(field, f"a number between {low} and {high}", value)
    return number


def _strings(value: object, field: str, *, optional: bool) -> tuple[str, ...] | None:
    if value is None and optional:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _fail(field, "a list of strings", value)
    for i, item in enumerate(value):
        _check_text(item, f"{field}[{i}]")
    return tuple(value)


def _check_text(text: str, field: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RequestError(
                f"{field} contains an unpaired surrogate at character {exc.start}; "
                "text must be valid Unicode",
                field=field,
            ) from None


def parse_timestamp(value: str) -> datetime:
    """An ISO-8601 timestamp; naive values are taken as UTC."""
    from datetime import UTC

    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_passage(data: object, index: int) -> Passage:
    """One passage from a mapping or a :class:`Passage`, checked field by field."""
    where = f"passages[{index}]"
    if isinstance(data, Passage):
        fields: Mapping[str, Any] = {name: getattr(data, name) for name in PASSAGE_FIELDS}
    elif isinstance(data, Mapping):
        unknown = [key for key in data if key not in _PASSAGE_FIELD_SET]
        if unknown:
            raise RequestError(
                f"{where} has unknown field {unknown[0]!r}; allowed: {', '.join(PASSAGE_FIELDS)} "
                "(put anything else in metadata)",
                field=f"{where}.{unknown[0]}",
            )
        fields = data
    else:
        raise _fail(where, "an object with at least 'text'", data)
    get = fields.get
    if "text" not in fields and not isinstance(data, Passage):
        raise RequestError(f"{where}.text is required", field=f"{where}.text")
    text = _string(get("text"), f"{where}.text")
    raw_id = get("id")
    passage_id = f"passage-{index}" if raw_id is None else _string(raw_id, f"{where}.id")
    if not passage_id:
        raise RequestError(f"{where}.id must not be empty", field=f"{where}.id")
    start = _integer(get("start"), f"{where}.start", minimum=0)
    end = _integer(get("end"), f"{where}.end", minimum=0)
    if (start is None) != (end is None):
        raise RequestError(
            f"{where} needs both start and end (character offsets in its document) or neither",
            field=f"{where}.start",
        )
    if start is not None and end is not None and end < start:
        raise RequestError(f"{where}.end ({end}) is before start ({start})", field=f"{where}.end")
    timestamp = _string(get("timestamp"), f"{where}.timestamp", optional=True)
    if timestamp is not None:
        try:
            parse_timestamp(timestamp)
        except ValueError:
            raise _fail(f"{where}.timestamp", "an ISO-8601 date or time", timestamp) from None
    embedding = get("embedding")
    if embedding is not None:
        if not isinstance(embedding, list | tuple) or not embedding:
            raise _fail(f"{where}.embedding", "a non-empty list of numbers", embedding)
        embedding = tuple(
            _number(v, f"{where}.embedding[{i}]", optional=False) for i, v in enumerate(embedding)
        )
    metadata = get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, Mapping):
        raise _fail(f"{where}.metadata", "an object", metadata)
    graph_distance = _integer(get("graph_distance"), f"{where}.graph_distance", minimum=0)
    return Passage(
        id=passage_id,
        text=text,
        score=_number(get("score"), f"{where}.score"),
        title=_string(get("title"), f"{where}.title", optional=True),
        source=_string(get("source"), f"{where}.source", optional=True),
        url=_string(get("url"), f"{where}.url", optional=True),
        doc_id=_string(get("doc_id"), f"{where}.doc_id", optional=True),
        start=start,
        end=end,
        timestamp=timestamp,
        authority=_number(get("authority"), f"{where}.authority", low=0.0, high=1.0),
        graph_distance=graph_distance,
        priority=_number(get("priority"), f"{where}.priority"),
        embedding=embedding,
        tenant=_string(get("tenant"), f"{where}.tenant", optional=True),
        readers=_strings(get("readers"), f"{where}.readers", optional=True),
        metadata=dict(metadata),
    )


def _parse_spec(value: object, field: str) -> StrategySpec:
    if isinstance(value, StrategySpec):
        return value
    if isinstance(value, str) and value:
        return StrategySpec(value)
    if isinstance(value, Mapping):
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError(f"{field}.name must be a strategy name", field=f"{field}.name")
        return StrategySpec(name, {k: v for k, v in value.items() if k != "name"})
    raise _fail(field, 'a strategy name or {"name": ..., <parameters>}', value)


def parse_strategies(value: object, field: str = "strategy") -> Strategies:
    """The ``strategy`` object: per slot a name, ``{"name", ...params}``, or null where optional."""
    if value is None:
        return Strategies()
    if isinstance(value, Strategies):
        return value
    if not isinstance(value, Mapping):
        raise _fail(field, "an object with keys " + ", ".join(_SLOTS), value)
    unknown = [key for key in value if key not in _SLOTS]
    if unknown:
        raise RequestError(
            f"{field} has unknown slot {unknown[0]!r}; slots are {', '.join(_SLOTS)}",
            field=f"{field}.{unknown[0]}",
        )
    defaults = Strategies()
    chosen: dict[str, Any] = {}
    for slot, raw in value.items():
        where = f"{field}.{slot}"
        if slot == "dedup":
            if raw is None or raw == "none":
                chosen[slot] = ()
            elif isinstance(raw, list | tuple):
                chosen[slot] = tuple(_parse_spec(v, f"{where}[{i}]") for i, v in enumerate(raw))
            else:
                chosen[slot] = (_parse_spec(raw, where),)
        elif raw is None or raw == "none":
            if slot not in _OPTIONAL_SLOTS:
                raise RequestError(
                    f"{where} cannot be turned off; give a strategy name", field=where
                )
            chosen[slot] = None
        else:
            chosen[slot] = _parse_spec(raw, where)
    return Strategies(
        relevance=chosen.get("relevance", defaults.relevance),
        dedup=chosen.get("dedup", defaults.dedup),
        selection=chosen.get("selection", defaults.selection),
        compression=chosen.get("compression", defaults.compression),
        ordering=chosen.get("ordering", defaults.ordering),
        guard=chosen.get("guard", defaults.guard),
    )


def _parse_history(value: object) -> tuple[Message, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _fail("history", "a list of {role, content} messages", value)
    turns = []
    for i, item in enumerate(value):
        where = f"history[{i}]"
        role: object
        content: object
        if isinstance(item, Message):
            role, content = item.role, item.content
        elif isinstance(item, Mapping):
            role, content = item.get("role"), item.get("content")
        else:
            raise _fail(where, "an object with role and content", item)
        if role not in _ROLES:
            raise _fail(f"{where}.role", "'user' or 'assistant'", role)
        text = _string(content, f"{where}.content")
        if not text.strip():
            raise RequestError(
                f"{where}.content is empty; drop the turn or give its text",
                field=f"{where}.content",
            )
        turns.append(Message(str(role), text))
    return tuple(turns)


def _parse_principal(value: object) -> Principal | None:
    if value is None or isinstance(value, Principal):
        return value
    if not isinstance(value, Mapping):
        raise _fail("principal", "an object with id, tenant and groups", value)
    unknown = set(value) - {"id", "tenant", "groups"}
    if unknown:
        name = sorted(unknown)[0]
        raise RequestError(
            f"principal has unknown field {name!r}; allowed: id, tenant, groups",
            field=f"principal.{name}",
        )
    return Principal(
        id=_string(value.get("id"), "principal.id", nonempty=True),
        tenant=_string(value.get("tenant"), "principal.tenant", optional=True),
        groups=_strings(value.get("groups"), "principal.groups", optional=True) or (),
    )


def _check_size(data: Mapping[str, Any], passages: Sequence[Any], limit: int) -> None:
    """Refuse a request whose texts are far larger than any context window, before any work."""

    def length(value: object) -> int:
        return len(value) if isinstance(value, str) else 0

    texts = (
        p.get("text") if isinstance(p, Mapping) else getattr(p, "text", None) for p in passages
    )
    history = data.get("history")
    turns = history if isinstance(history, list | tuple) else ()
    sizes = {
        "passages": sum(length(text) for text in texts),
        "query": length(data.get("query")),
        "system_prompt": length(data.get("system_prompt")),
        "history": sum(
            length(t.get("content") if isinstance(t, Mapping) else getattr(t, "content", None))
            for t in turns
        ),
    }
    total = sum(sizes.values())
    if total > limit:
        largest = max(sizes, key=lambda key: sizes[key])
        raise RequestError(
            f"the request holds {total:,} characters of text ({largest}: {sizes[largest]:,}), "
            f"more than the limit of {limit:,}, far beyond any context window; send less text "
            "or raise max_request_chars in the config",
            field=largest,
        )


def parse_request(
    data: Mapping[str, Any] | Request, *, max_request_chars: int = DEFAULT_MAX_REQUEST_CHARS
) -> Request:
    """A validated :class:`Request` from request JSON (already decoded), or from a
    :class:`Request` built by hand (checked field by field like JSON)."""
    if isinstance(data, Request):
        if data in _VALIDATED:
            return data
        data = {name: getattr(data, name) for name in REQUEST_FIELDS}
    if not isinstance(data, Mapping):
        raise _fail("request", "a JSON object", data)
    unknown = [key for key in data if key not in REQUEST_FIELDS]
    if unknown:
        raise RequestError(
            f"unknown request field {unknown[0]!r}; allowed: {', '.join(REQUEST_FIELDS)}",
            field=unknown[0],
        )
    if "query" not in data:
        raise RequestError("query is required: the user's question", field="query")
    query = _string(data["query"], "query", nonempty=True)
    raw_passages = data.get("passages")
    if raw_passages is None:
        raise RequestError("passages is required (an empty list is allowed)", field="passages")
    if not isinstance(raw_passages, Sequence) or isinstance(raw_passages, str | bytes):
        raise _fail("passages", "a list of passages", raw_passages)
    _check_size(data, raw_passages, max_request_chars)
    passages = tuple(parse_passage(p, i) for i, p in enumerate(raw_passages))
    seen: dict[str, int] = {}
    for i, passage in enumerate(passages):
        if passage.id in seen:
            raise RequestError(
                f"passages[{i}].id {passage.id!r} repeats passages[{seen[passage.id]}].id; "
                "passage ids must be unique",
                field=f"passages[{i}].id",
            )
        seen[passage.id] = i
    fmt = _string(data.get("format", "openai"), "format")
    system_prompt = _string(data.get("system_prompt"), "system_prompt", optional=True)
    allow_public = data.get("allow_public", False)
    if not isinstance(allow_public, bool):
        raise _fail("allow_public", "true or false", allow_public)
    query_class = data.get("query_class")
    if query_class is not None and query_class not in ("auto", *QUERY_CLASSES):
        raise _fail("query_class", "one of auto, " + ", ".join(QUERY_CLASSES), query_class)
    request = Request(
        query=query,
        passages=passages,
        model=_string(data.get("model", "gpt-4o"), "model", nonempty=True),
        system_prompt=system_prompt,
        history=_parse_history(data.get("history")),
        context_window=_integer(data.get("context_window"), "context_window", minimum=1),
        reserve_output_tokens=_integer(
            data.get("reserve_output_tokens"), "reserve_output_tokens", minimum=1
        ),
        max_context_tokens=_integer(
            data.get("max_context_tokens"), "max_context_tokens", minimum=1
        ),
        safety_margin=_number(data.get("safety_margin"), "safety_margin", low=0.0, high=0.5),
        principal=_parse_principal(data.get("principal")),
        format=fmt,
        strategy=parse_strategies(data.get("strategy")),
        min_score=_number(data.get("min_score"), "min_score"),
        top_k=_integer(data.get("top_k"), "top_k", minimum=1),
        allow_public=allow_public,
        query_class=None if query_class == "auto" else query_class,
        template=_string(data.get("template"), "template", optional=True),
        history_policy=parse_history_policy(data.get("history_policy")),
    )
    _VALIDATED.add(request)
    return request
