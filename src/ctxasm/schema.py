"""Turning request JSON (or keyword arguments) into a validated :class:`~ctxasm.model.Request`.

Every check names the field by its path (``passages[3].score``), says what it received and what
is allowed. Strategy *names* are checked later, against the registry, when the assembler is built.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
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
from ctxasm.validation import invalid, parse_timestamp, relocated, string

__all__ = [
    "DEFAULT_MAX_REQUEST_CHARS",
    "ENVELOPE_FIELDS",
    "PASSAGE_FIELDS",
    "REQUEST_FIELDS",
    "parse_passage",
    "parse_request",
    "parse_strategies",
    "parse_timestamp",
    "request_envelope",
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
# The caller's own fields: accepted on every request, checked, never read by the pipeline; batch
# copies them onto the result line so results can be joined back to their requests.
ENVELOPE_FIELDS = ("id", "metadata")
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


# The shared validators (ctxasm.validation) under the names this module has always used.
_fail = invalid
_string = string


def parse_passage(data: object, index: int) -> Passage:
    """One passage from a mapping or a :class:`Passage`. The passage's constructor checks every
    field (see :mod:`ctxasm.model`); errors name the field by its path (``passages[3].score``)."""
    where = f"passages[{index}]"
    if type(data) is Passage:
        return data  # checked when it was built
    if isinstance(data, Passage):  # a subclass: its constructor may have skipped the checks
        data = {name: getattr(data, name) for name in PASSAGE_FIELDS}
    elif not isinstance(data, Mapping):
        raise _fail(where, "an object with at least 'text'", data)
    unknown = [key for key in data if key not in _PASSAGE_FIELD_SET]
    if unknown:
        raise RequestError(
            f"{where} has unknown field {unknown[0]!r}; allowed: {', '.join(PASSAGE_FIELDS)} "
            "(put anything else in metadata)",
            field=f"{where}.{unknown[0]}",
        )
    if "text" not in data:
        raise RequestError(f"{where}.text is required", field=f"{where}.text")
    try:
        if data.get("id") is None:
            return Passage(**{**data, "id": f"passage-{index}"})
        return Passage(**data)
    except RequestError as error:
        raise relocated(error, "passage", where) from None


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
        if isinstance(item, Message):
            turns.append(item)  # checked when it was built
            continue
        if not isinstance(item, Mapping):
            raise _fail(where, "an object with role and content", item)
        try:
            fields: dict[str, Any] = {key: item.get(key) for key in ("role", "content")}
            turns.append(Message(**fields))
        except RequestError as error:
            raise relocated(error, "message", where) from None
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
    # The constructor checks every field, with the same messages for objects and JSON.
    fields: dict[str, Any] = {key: value.get(key) for key in ("id", "tenant", "groups")}
    return Principal(**fields)


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
    unknown = [key for key in data if key not in REQUEST_FIELDS and key not in ENVELOPE_FIELDS]
    if unknown:
        allowed = ", ".join((*REQUEST_FIELDS, *ENVELOPE_FIELDS))
        raise RequestError(
            f"unknown request field {unknown[0]!r}; allowed: {allowed}", field=unknown[0]
        )
    request_envelope(data)
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
    query_class = data.get("query_class")
    if query_class is not None and query_class not in ("auto", *QUERY_CLASSES):
        raise _fail("query_class", "one of auto, " + ", ".join(QUERY_CLASSES), query_class)
    # The constructor checks the types and ranges of the plain fields (ctxasm.model), with the
    # messages every entry point shares; what needs more than the value is checked here.
    request = Request(
        query=query,
        passages=passages,
        model=data.get("model", "gpt-4o"),
        system_prompt=data.get("system_prompt"),
        history=_parse_history(data.get("history")),
        context_window=data.get("context_window"),
        reserve_output_tokens=data.get("reserve_output_tokens"),
        max_context_tokens=data.get("max_context_tokens"),
        safety_margin=data.get("safety_margin"),
        principal=_parse_principal(data.get("principal")),
        format=data.get("format", "openai"),
        strategy=parse_strategies(data.get("strategy")),
        min_score=data.get("min_score"),
        top_k=data.get("top_k"),
        allow_public=data.get("allow_public", False),
        query_class=None if query_class == "auto" else query_class,
        template=data.get("template"),
        history_policy=parse_history_policy(data.get("history_policy")),
    )
    _VALIDATED.add(request)
    return request


def request_envelope(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request's ``id`` (a string or an integer) and ``metadata`` (an object), checked;
    only those present, so that a result can carry them back unchanged."""
    envelope = {name: data[name] for name in ENVELOPE_FIELDS if name in data}
    given = envelope.get("id")
    if "id" in envelope and (isinstance(given, bool) or not isinstance(given, str | int)):
        raise _fail("id", "a string or an integer (your own key for this request)", given)
    if "metadata" in envelope and not isinstance(envelope["metadata"], Mapping):
        raise _fail("metadata", "an object (yours, returned unchanged)", envelope["metadata"])
    return envelope
