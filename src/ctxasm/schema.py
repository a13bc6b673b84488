"""Turning request JSON (or keyword arguments) into a validated :class:`~ctxasm.data.Request`.

Every check names the field by its path (``passages[3].score``), says what it received and what
is allowed. Strategy *names* are checked later, against the registry, when the assembler is built.
A request gives its passages as ``passages``, or as ``hits``: a retriever's hits, mapped to
passages by :func:`ctxasm.hits.passages_from_hits` (whose errors name ``hits[3].text``).
"""

from __future__ import annotations

import dataclasses
import json
import weakref
from collections.abc import Mapping, Sequence
from itertools import count, repeat
from operator import attrgetter, is_
from typing import Any

from ctxasm.cache_state import CacheReport, CacheState, parse_previous
from ctxasm.data import (
    Assembly,
    HistoryPolicy,
    Message,
    Passage,
    Principal,
    Report,
    Request,
    Strategies,
    StrategySpec,
    default_passage_id,
    passage_from_checked,
)
from ctxasm.errors import RequestError
from ctxasm.hits import adapter_hint, hit_list, hit_text, passages_from_hits
from ctxasm.query_class import QUERY_CLASSES
from ctxasm.validation import (
    MAX_INTEGER,
    close_name,
    encodable,
    invalid,
    key_path,
    parse_timestamp,
    plain,
    received,
    relocated,
    shortened,
    shown,
    string,
    visible,
)

__all__ = [
    "DEFAULT_MAX_REQUEST_CHARS",
    "ENVELOPE_FIELDS",
    "INPUT_FIELDS",
    "PASSAGE_FIELDS",
    "REQUEST_FIELDS",
    "parse_history_policy",
    "parse_passage",
    "parse_request",
    "parse_strategies",
    "parse_timestamp",
    "request_envelope",
]

# Far above any context window (2M tokens is about 8M characters), low enough that a runaway
# request is refused before any work is done.
DEFAULT_MAX_REQUEST_CHARS = 32_000_000

# Derived from the dataclasses, so a new field is accepted (and listed in errors) where it is
# declared; the order is the declaration order, which error messages show.
REQUEST_FIELDS = tuple(f.name for f in dataclasses.fields(Request))
# The caller's own fields: accepted on every request, checked, never read by the pipeline; batch
# copies them onto the result line so results can be joined back to their requests.
ENVELOPE_FIELDS = ("id", "metadata")
# Read in place of a request field: ``hits``, a retriever's hits, for ``passages``.
INPUT_FIELDS = ("hits",)
_REQUEST_KEYS = frozenset((*REQUEST_FIELDS, *INPUT_FIELDS, *ENVELOPE_FIELDS))
PASSAGE_FIELDS = tuple(f.name for f in dataclasses.fields(Passage))
_PASSAGE_FIELD_SET = frozenset(PASSAGE_FIELDS)
# Requests this module built; a Request made by hand is validated before use.
_VALIDATED: weakref.WeakSet[Request] = weakref.WeakSet()
_SLOTS = tuple(f.name for f in dataclasses.fields(Strategies))
_HISTORY_POLICY_KEYS = tuple(f.name for f in dataclasses.fields(HistoryPolicy))
_OPTIONAL_SLOTS = frozenset({"compression", "guard"})
# Frozen, so one of each serves every request that leaves them out.
_DEFAULT_STRATEGIES = Strategies()
_DEFAULT_HISTORY_POLICY = HistoryPolicy()
_ID = attrgetter("id")


# The shared validators (ctxasm.validation) under the names this module has always used.
_fail = invalid
_string = string


def parse_passage(data: object, index: int) -> Passage:
    """One passage from a mapping or a :class:`Passage`. The passage's constructor checks every
    field (see :mod:`ctxasm.data`); errors name the field by its path (``passages[3].score``)."""
    where = f"passages[{index}]"
    if type(data) is Passage:
        return data  # checked when it was built
    if isinstance(data, Passage):  # a subclass: its constructor may have skipped the checks
        data = {name: getattr(data, name) for name in PASSAGE_FIELDS}
    elif not isinstance(data, Mapping):
        error = _fail(where, "an object with at least 'text'", data)
        hint = adapter_hint(data)
        raise error if hint is None else RequestError(f"{error.message}; {hint}", field=where)
    else:  # one plain copy, read by every check below: a subclass's get may disagree with []
        data = dict(data)
    unknown = [key for key in data if key not in _PASSAGE_FIELD_SET]
    if unknown:
        raise RequestError(
            f"{where} has unknown field {shown(unknown[0])}; allowed: "
            f"{', '.join(PASSAGE_FIELDS)} (put anything else in metadata)",
            field=key_path(where, unknown[0]),
        )
    if "text" not in data:
        raise RequestError(f"{where}.text is required", field=f"{where}.text")
    try:
        if data.get("id") is None:
            return Passage(**{**data, "id": f"passage-{index}"})
        return Passage(**data)
    except RequestError as error:
        raise relocated(error, "passage", where) from None


def _parse_passages(items: Sequence[Any]) -> tuple[Passage, ...]:
    """Every passage, in order: one in the common plain form is built in one pass
    (:func:`_plain_passage`), any other by :func:`parse_passage`, whose error is then the one
    for the first bad passage (every one before it was valid)."""
    passages: list[Passage | None] = list(map(_plain_passage, items, count()))
    if any(map(is_, passages, repeat(None))):
        for index, passage in enumerate(passages):
            if passage is None:
                passages[index] = parse_passage(items[index], index)
    return tuple(passages)  # type: ignore[arg-type]  # no None is left


def _plain_passage(fields: object, index: int) -> Passage | None:
    """The :class:`Passage` :func:`parse_passage` would build from ``fields`` at ``index``, when
    they take the common, plainly valid form; ``None`` for anything else, which goes to
    :func:`parse_passage` (the one place whose errors callers see).

    The plain form: ``id`` a non-empty string and ``text`` a string; ``title``, ``source``,
    ``url`` and ``doc_id`` strings; ``score`` a finite float or an integer within 2**53;
    ``start`` and ``end`` both integers with ``0 <= start <= end <= 2**53``; ``metadata`` a
    dict; every field but ``id`` and ``text`` optional, none null, no other; strings of the
    exact type ``str`` holding valid Unicode. These are the constructor's rules for those values
    (``ctxasm.data``), read in one pass for a fifth of its time; the tests hold the two to the
    same answers.
    """
    # One function, no calls per field: this runs once per passage of every request. Each field
    # found is counted, so that a count short of len(fields) means a field it does not take
    # (or an explicit null, which the constructor judges).
    if type(fields) is not dict:
        return None
    get = fields.get
    id, text = get("id"), get("text")
    found = 2
    if id is None:  # named by its position, as parse_passage does
        id, found = f"passage-{index}", 1 + ("id" in fields)
    if type(text) is not str or type(id) is not str or not id:
        return None
    if not (text.isascii() or encodable(text)) or not (id.isascii() or encodable(id)):
        return None
    title = get("title")
    if title is not None:
        if type(title) is not str or not (title.isascii() or encodable(title)):
            return None
        found += 1
    source = get("source")
    if source is not None:
        if type(source) is not str or not (source.isascii() or encodable(source)):
            return None
        found += 1
    url = get("url")
    if url is not None:
        if type(url) is not str or not (url.isascii() or encodable(url)):
            return None
        found += 1
    doc_id = get("doc_id")
    if doc_id is not None:
        if type(doc_id) is not str or not (doc_id.isascii() or encodable(doc_id)):
            return None
        found += 1
    score = get("score")
    if score is not None:
        if type(score) is int and -MAX_INTEGER <= score <= MAX_INTEGER:
            score = float(score)
        elif not isinstance(score, float):
            return None
        found += 1
    start, end = get("start"), get("end")
    if start is not None or end is not None:
        if type(start) is not int or type(end) is not int or not 0 <= start <= end <= MAX_INTEGER:
            return None
        found += 2
    metadata = get("metadata")
    if metadata is None:
        metadata = {}
    elif type(metadata) is dict:
        found += 1
        if metadata:
            metadata = dict(metadata)  # a copy, as the constructor makes
    else:
        return None
    if found != len(fields):
        return None
    if score is not None:
        if type(score) is not float:  # a subclass (numpy's float64), converted as the
            score = float(score)  # constructor does, after every field it checks first
        if score - score != 0.0:  # NaN and infinities
            return None
    return passage_from_checked(id, text, score, title, source, url, doc_id, start, end, metadata)


def _free_default_ids(passages: tuple[Passage, ...], items: Sequence[Any]) -> tuple[Passage, ...]:
    """``passages``, where a passage given without an id was named ``passage-<index>`` (or,
    a :class:`Passage`, after its text) and a given id or an earlier default has that name,
    with the first ``passage-<n>`` after it that no id uses, given or default, instead (the
    error blamed an id the caller never gave). Nothing changes when the
    ids are unique, and no other passage is renamed. Linear: the search only moves forward."""
    ids = list(map(_ID, passages))
    if len(set(ids)) == len(ids):
        return passages
    unnamed = [i for i, item in enumerate(items) if _without_id(item)]
    given = set(range(len(ids))).difference(unnamed)
    taken = {ids[i] for i in given}
    standing: set[str] = set()  # the defaults that keep their names
    clashing = []  # a default a given id uses, or an earlier default (Passages of one text)
    for i in unnamed:
        if ids[i] in taken or ids[i] in standing:
            clashing.append(i)
        else:
            standing.add(ids[i])
    if not clashing:
        return passages  # given ids repeat each other: _check_unique_ids names them
    taken |= standing
    renamed = list(passages)
    number = 0
    for i in clashing:
        # a position default clashed with a given id: the first free name after it; a text
        # default (a Passage of a text another one has) takes its position's name where free
        number = max(number, i + 1 if ids[i] == f"passage-{i}" else i)
        while f"passage-{number}" in taken:
            number += 1
        taken.add(f"passage-{number}")
        renamed[i] = dataclasses.replace(passages[i], id=f"passage-{number}")
    return tuple(renamed)


def _without_id(item: object) -> bool:
    """Whether a request's passage item leaves its id to ctxasm: a mapping without one (named
    by its position), a :class:`Passage` built without one (named by its text: see
    :func:`ctxasm.data.default_passage_id`; two of the same text are told apart as mappings
    are), or a Passage subclass whose constructor let a null id through."""
    if isinstance(item, Passage):
        given, text = getattr(item, "id", None), getattr(item, "text", None)
        if given is None:
            return type(item) is not Passage
        return isinstance(text, str) and given == default_passage_id(text)
    return isinstance(item, Mapping) and dict(item).get("id") is None


def _check_unique_ids(passages: Sequence[Passage]) -> None:
    ids = list(map(_ID, passages))
    if len(set(ids)) == len(ids):
        return
    seen: dict[str, int] = {}
    for i, passage_id in enumerate(ids):
        if passage_id in seen:
            raise RequestError(
                f"passages[{i}].id {shown(passage_id)} repeats passages[{seen[passage_id]}].id; "
                "passage ids must be unique",
                field=f"passages[{i}].id",
            )
        seen[passage_id] = i


def _parse_spec(value: object, field: str) -> StrategySpec:
    if isinstance(value, StrategySpec):
        return _checked_spec(value, field)
    if isinstance(value, str) and value:
        return StrategySpec(value)
    if isinstance(value, Mapping):
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError(f"{field}.name must be a strategy name", field=f"{field}.name")
        return StrategySpec(name, {k: v for k, v in value.items() if k != "name"})
    raise _fail(field, 'a strategy name or {"name": ..., <parameters>}', value)


def _checked_spec(spec: StrategySpec, field: str) -> StrategySpec:
    """``spec`` when its name is a plain string and its parameters a mapping; rebuilt as a
    plain :class:`StrategySpec` when it is a subclass (or its name a str subclass). Nothing
    checks a StrategySpec's fields when it is built."""
    name, params = plain(getattr(spec, "name", None)), getattr(spec, "params", None)
    if type(name) is not str or not name:
        raise _fail(f"{field}.name", "a strategy name", name)
    if not isinstance(params, Mapping):
        raise _fail(f"{field}.params", "a mapping of parameter names to values", params)
    if type(spec) is StrategySpec and name is spec.name and type(params) is dict:
        return spec
    return StrategySpec(name, dict(params))


def parse_strategies(value: object, field: str = "strategy") -> Strategies:
    """The ``strategy`` object: per slot a name, ``{"name", ...params}``, or null where optional.
    A :class:`Strategies` object is read slot by slot like the JSON: nothing checks its fields
    when it is built (``Strategies(relevance="auto")`` is taken as that name)."""
    if value is None or value is _DEFAULT_STRATEGIES:
        return _DEFAULT_STRATEGIES
    if isinstance(value, Strategies):
        value = {slot: getattr(value, slot, None) for slot in _SLOTS}
    if not isinstance(value, Mapping):
        expected = "an object with keys " + ", ".join(_SLOTS)
        if isinstance(value, str):  # a name, as the CLI's --strategy takes one
            raise RequestError(
                f"{field} must be {expected}; got {received(value)}: a strategy is named under "
                f'its slot, {{"selection": {json.dumps(shortened(value))}}} (docs/strategies.md)',
                field=field,
            )
        raise _fail(field, expected, value)
    unknown = [key for key in value if key not in _SLOTS]
    if unknown:
        raise RequestError(
            f"{field} has unknown slot {shown(unknown[0])}; slots are {', '.join(_SLOTS)}",
            field=key_path(field, unknown[0]),
        )
    defaults = _DEFAULT_STRATEGIES
    chosen: dict[str, Any] = {}
    for slot, given in value.items():
        where = f"{field}.{slot}"
        raw = plain(given)  # a str subclass may redefine == (and turn the guard off)
        off = raw is None or (type(raw) is str and raw == "none")  # no other type's ==
        if slot == "dedup":
            if off:
                chosen[slot] = ()
            elif isinstance(raw, list | tuple):
                chosen[slot] = tuple(_parse_spec(v, f"{where}[{i}]") for i, v in enumerate(raw))
            else:
                chosen[slot] = (_parse_spec(raw, where),)
        elif off:
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


def parse_history_policy(value: object, field: str = "history_policy") -> HistoryPolicy:
    """The ``history_policy`` request object, checked."""
    if value is None:
        return _DEFAULT_HISTORY_POLICY
    if type(value) is HistoryPolicy:
        return value  # checked when it was built
    if isinstance(value, HistoryPolicy):  # a subclass: its constructor may have skipped the checks
        value = {key: getattr(value, key, None) for key in _HISTORY_POLICY_KEYS}
    if not isinstance(value, Mapping):
        raise RequestError(
            f"{field} must be an object with min_recent_turns, max_share, max_tokens",
            field=field,
        )
    keys = _HISTORY_POLICY_KEYS
    unknown = [key for key in value if key not in keys]
    if unknown:
        raise RequestError(
            f"{field} has unknown key {shown(unknown[0])}; keys: {', '.join(keys)}",
            field=key_path(field, unknown[0]),
        )
    try:
        return HistoryPolicy(
            value.get("min_recent_turns", 2),
            value.get("max_share", 0.5),
            value.get("max_tokens"),
            value.get("reclaim", True),
        )
    except RequestError as error:
        raise relocated(error, "history_policy", field) from None


def _parse_history(value: object) -> tuple[Message, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _fail("history", "a list of {role, content} messages", value)
    turns = []
    for i, given in enumerate(value):
        where = f"history[{i}]"
        if type(given) is Message:
            turns.append(given)  # checked when it was built
            continue
        item = given
        if isinstance(given, Message):  # a subclass: its constructor may have skipped the checks
            item = {key: getattr(given, key, None) for key in ("role", "content")}
        if not isinstance(item, Mapping):
            raise _fail(where, "an object with role and content", item)
        unknown = [key for key in item if key not in ("role", "content")]
        if unknown:  # a typo ("contents") would drop the turn's text without a word
            raise RequestError(
                f"{where} has unknown field {shown(unknown[0])}; allowed: role, content",
                field=key_path(where, unknown[0]),
            )
        missing = [key for key in ("role", "content") if key not in item]
        if missing:  # said as a passage's missing text is, not as a null one
            raise RequestError(f"{where}.{missing[0]} is required", field=f"{where}.{missing[0]}")
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
            f"principal has unknown field {shown(name)}; allowed: id, tenant, groups",
            field=key_path("principal", name),
        )
    # The constructor checks every field, with the same messages for objects and JSON.
    fields: dict[str, Any] = {key: value.get(key) for key in ("id", "tenant", "groups")}
    return Principal(**fields)


def _length(value: object) -> int:
    return len(value) if isinstance(value, str) else 0


def _passage_chars(passages: Sequence[Any]) -> int:
    """The characters of every passage's text (a text that is not a string counts none)."""
    if set(map(type, passages)) == {dict}:  # the usual case, counted without a Python loop
        texts: list[Any] = list(map(dict.get, passages, repeat("text")))
        if set(map(type, texts)) == {str}:
            return sum(map(len, texts))
    return sum(
        _length(p.get("text") if isinstance(p, Mapping) else getattr(p, "text", None))
        for p in passages
    )


def _hit_chars(hits: Sequence[Any]) -> int:
    """The characters of every hit's text (a hit without one as a string counts none)."""
    return sum(len(found[1]) for found in map(hit_text, hits) if found is not None)


def _check_size(data: Mapping[str, Any], given: tuple[str, int], limit: int) -> None:
    """Refuse a request whose texts are far larger than any context window, before any work;
    ``given`` is the field the passages came in (``passages`` or ``hits``) and their
    characters."""
    history = data.get("history")
    turns = history if isinstance(history, list | tuple) else ()
    sizes = {
        given[0]: given[1],
        "query": _length(data.get("query")),
        "system_prompt": _length(data.get("system_prompt")),
        "history": sum(
            _length(t.get("content") if isinstance(t, Mapping) else getattr(t, "content", None))
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
        if data["previous"] is None:
            del data["previous"]  # not planning for the cache (None here is not JSON's null)
    if type(data) is not dict and not isinstance(data, Mapping):
        raise _fail("request", "a JSON object", data)
    unknown = [key for key in data if key not in _REQUEST_KEYS]
    if unknown:
        allowed = ", ".join((*REQUEST_FIELDS, *INPUT_FIELDS, *ENVELOPE_FIELDS))
        raise RequestError(
            f"unknown request field {shown(unknown[0])}"
            f"{close_name(unknown[0], _REQUEST_KEYS)}; allowed: {allowed}",
            field=key_path("", unknown[0]),
        )
    request_envelope(data)
    if "query" not in data:
        raise RequestError("query is required: the user's question", field="query")
    query = _string(data["query"], "query", nonempty=True)
    if not visible(query):
        raise RequestError(
            "query has no visible character: only white space, control or format characters "
            f"(such as zero-width spaces); got {shown(query)}",
            field="query",
        )
    raw_passages = _given_passages(data, max_request_chars)
    passages = _free_default_ids(_parse_passages(raw_passages), raw_passages)
    _check_unique_ids(passages)
    query_class = plain(data.get("query_class"))  # compared as a str, not by a subclass's ==
    if query_class is not None and (
        not isinstance(query_class, str) or query_class not in ("auto", *QUERY_CLASSES)
    ):
        raise _fail("query_class", "one of auto, " + ", ".join(QUERY_CLASSES), query_class)
    # The constructor checks the types and ranges of the plain fields (ctxasm.data), with the
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
        previous=_parse_previous(data),
    )
    if request.previous is not None and not _chose_ordering(data.get("strategy")):
        request = dataclasses.replace(
            request, strategy=dataclasses.replace(request.strategy, ordering=_CACHE_STABLE)
        )
    _VALIDATED.add(request)
    return request


_CACHE_STABLE = StrategySpec("cache_stable")


def _given_passages(data: Mapping[str, Any], max_request_chars: int) -> Sequence[Any]:
    """The request's passages, as given in ``passages`` or mapped from ``hits``: exactly one of
    the two (null is none), its texts within ``max_request_chars`` with the rest of the
    request's (checked before the hits are mapped)."""
    raw_passages, hits = data.get("passages"), data.get("hits")
    if hits is not None:
        if raw_passages is not None:
            raise RequestError(
                "the request has both passages and hits; give the candidates once, as passages "
                "or as a retriever's hits",
                field="hits",
            )
        _check_size(data, ("hits", _hit_chars(hit_list(hits))), max_request_chars)
        return passages_from_hits(hits)
    if raw_passages is None:
        raise RequestError(
            "passages is required (an empty list is allowed), or hits: a retriever's hits",
            field="passages",
        )
    if type(raw_passages) is not list and (
        not isinstance(raw_passages, Sequence) or isinstance(raw_passages, str | bytes)
    ):
        raise _fail("passages", "a list of passages", raw_passages)
    _check_size(data, ("passages", _passage_chars(raw_passages)), max_request_chars)
    return raw_passages


def _parse_previous(data: Mapping[str, Any]) -> CacheState | None:
    """``previous``: absent, not planning for the cache; ``null``, a session's first turn;
    else the previous turn's cache state, given as a prior result (an :class:`Assembly` or its
    JSON), its report or ``report.cache`` (objects or JSON) or the state itself."""
    if "previous" not in data:
        return None
    value = data["previous"]
    if isinstance(value, CacheReport):  # result.report.cache
        return parse_previous(value.state)
    report = value.report if isinstance(value, Assembly) else value
    if isinstance(report, Report):  # a result, or its report
        if report.cache is None:
            raise RequestError(
                "previous is a result that did not plan for the cache; send previous=None for "
                'a first turn, or use strategy.ordering "cache_stable"',
                field="previous",
            )
        return parse_previous(report.cache.state)  # checked as any state is
    return parse_previous(value)


def _chose_ordering(strategy: object) -> bool:
    """Whether the request named its ordering (else a previous state selects cache_stable)."""
    if isinstance(strategy, Strategies):
        return strategy.ordering != _DEFAULT_STRATEGIES.ordering
    return isinstance(strategy, Mapping) and "ordering" in strategy


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
