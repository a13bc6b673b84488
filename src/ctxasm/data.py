"""Frozen data that flows through the pipeline.

Values here never change after construction: a stage that wants a different candidate builds a
new one with :func:`dataclasses.replace`. The classes that carry user input (``Passage``,
``Principal``, ``Message``, ``Request``) check it in their constructors with the validators of
:mod:`ctxasm.validation`, the same ones the JSON path (:mod:`ctxasm.schema`) uses, so no entry
point skips a rule; lists given for tuple fields are stored as tuples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from ctxasm.cache_state import CacheReport, CacheState
from ctxasm.errors import RequestError
from ctxasm.validation import (
    MAX_INTEGER,
    as_real,
    as_whole,
    integer,
    invalid,
    name,
    names,
    number,
    plain,
    string,
    timestamp,
)

__all__ = [
    "ELISION",
    "Assembly",
    "Budget",
    "Candidate",
    "Chosen",
    "Compressed",
    "Compression",
    "Exclusion",
    "HistoryPolicy",
    "Included",
    "Message",
    "Passage",
    "Principal",
    "Reason",
    "Report",
    "Request",
    "Strategies",
    "StrategySpec",
]


class Reason(StrEnum):
    """Why a passage was excluded. The values are a stable public contract."""

    ACCESS_DENIED = "access_denied"
    BELOW_THRESHOLD = "below_threshold"
    TOP_K = "top_k"
    DUPLICATE = "duplicate"
    MERGED = "merged"
    OVER_BUDGET = "over_budget"
    PRIORITY_CUTOFF = "priority_cutoff"
    INJECTION = "injection"
    EMPTY = "empty"
    HISTORY_TRIMMED = "history_trimmed"
    UNTOKENIZABLE = "untokenizable"


class _Unset(str):
    """The default of a passage field the caller left out, told apart from any string the
    caller could give by identity."""

    __slots__ = ()


_NO_ID = _Unset("")
_NO_TEXT = _Unset("")


def default_passage_id(text: str, prefix: str = "passage") -> str:
    """The id of a :class:`Passage` built without one: ``passage-`` (or ``prefix``: a
    retriever's hit is ``hit-``) and the first ten hex digits of its text's SHA-256, the same
    for the same text in every request and process."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{prefix}-{digest[:10]}"


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved passage, as the caller gave it. ``text`` is required; without an ``id``
    (``Passage(text=...)``) it is named :func:`default_passage_id` of its text."""

    id: str = _NO_ID
    text: str = _NO_TEXT
    score: float | None = None
    title: str | None = None
    source: str | None = None
    url: str | None = None
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None
    timestamp: str | None = None
    authority: float | None = None
    graph_distance: int | None = None
    priority: float | None = None
    embedding: tuple[float, ...] | None = None
    tenant: str | None = None
    readers: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_passage(self)

    @property
    def has_access_data(self) -> bool:
        return self.tenant is not None or self.readers is not None


_set = object.__setattr__


def _check_passage(passage: Passage) -> None:
    """Check and normalise a passage's fields in place (it is being constructed). Errors name
    the field as ``passage.<name>``; :func:`ctxasm.schema.parse_passage` puts the index in."""
    if passage.text is _NO_TEXT:
        raise RequestError("passage.text is required", field="passage.text")
    _set(passage, "text", string(passage.text, "passage.text"))
    if passage.id is _NO_ID:
        _set(passage, "id", default_passage_id(passage.text))
    _set(passage, "id", passage_id(passage.id, "passage.id"))
    for key in ("title", "source", "url", "doc_id"):
        value = getattr(passage, key)
        if value is not None:
            _set(passage, key, string(value, f"passage.{key}"))
    if passage.start is not None or passage.end is not None:
        _check_offsets(passage)
    if passage.timestamp is not None:
        _set(passage, "timestamp", timestamp(passage.timestamp, "passage.timestamp"))
    for key in ("score", "priority"):
        if getattr(passage, key) is not None:
            _set(passage, key, number(getattr(passage, key), f"passage.{key}"))
    if passage.authority is not None:
        _set(passage, "authority", number(passage.authority, "passage.authority", low=0, high=1))
    if passage.graph_distance is not None:
        _set(
            passage,
            "graph_distance",
            integer(passage.graph_distance, "passage.graph_distance", minimum=0),
        )
    if passage.embedding is not None:
        _set(passage, "embedding", _embedding(passage.embedding))
    if passage.tenant is not None:
        _set(passage, "tenant", name(passage.tenant, "passage.tenant"))
    if passage.readers is not None:
        _set(passage, "readers", names(passage.readers, "passage.readers", optional=False))
    metadata = passage.metadata
    if not isinstance(metadata, Mapping):
        raise invalid("passage.metadata", "an object", metadata)
    if metadata:
        _set(passage, "metadata", dict(metadata))  # a copy: the caller's dict may change


def passage_id(value: object, field: str) -> str:
    """A passage's id as given: a non-empty string, or an integer of at most 2**53 in size (a
    vector store's row number: FAISS, Milvus; numpy's ``int64`` too) as its decimal string; a
    bool is neither. Errors name ``field`` and show the value as given."""
    row = as_whole(value)
    if row is not None:
        if not -MAX_INTEGER <= row <= MAX_INTEGER:
            raise invalid(
                field,
                "a non-empty string, or an integer of at most 2**53 in size (JSON readers "
                "lose the digits of a larger one: give it as a string)",
                value,
            )
        return str(row)
    if not isinstance(value, str) or not plain(value):
        raise invalid(field, "a non-empty string or an integer", value)
    checked: str = string(value, field)
    return checked


def passage_from_checked(
    id: str,
    text: str,
    score: float | None,
    title: str | None,
    source: str | None,
    url: str | None,
    doc_id: str | None,
    start: int | None,
    end: int | None,
    metadata: dict[str, Any],
) -> Passage:
    """A :class:`Passage` of values the caller has checked by the rules of
    :func:`_check_passage` (strings valid Unicode, ``score`` a finite float, offsets in order,
    ``metadata`` a dict of the passage's own), built without checking them again: plain
    attribute stores on a :class:`_PassageSlots` that then becomes a Passage, a third of the
    cost of the frozen constructor, which sets each field through ``object.__setattr__``.
    :func:`ctxasm.schema.parse_request` uses it for passages in the common, plain form."""
    built: Any = _PassageSlots()  # typed Any: mypy cannot see slots copied from Passage
    built.id = id
    built.text = text
    built.score = score
    built.title = title
    built.source = source
    built.url = url
    built.doc_id = doc_id
    built.start = start
    built.end = end
    built.timestamp = None
    built.authority = None
    built.graph_distance = None
    built.priority = None
    built.embedding = None
    built.tenant = None
    built.readers = None
    built.metadata = metadata
    built.__class__ = Passage
    return built  # type: ignore[no-any-return]


class _PassageSlots:
    """Passage's slots without its frozen ``__setattr__`` (the same slots, so Python allows
    turning one into a :class:`Passage` by setting ``__class__``)."""

    __slots__ = Passage.__slots__


def _check_offsets(passage: Passage) -> None:
    start = integer(passage.start, "passage.start", minimum=0)
    end = integer(passage.end, "passage.end", minimum=0)
    if start is None or end is None:
        raise RequestError(
            "passage needs both start and end (character offsets in its document) or neither",
            field="passage.start",
        )
    if end < start:
        raise RequestError(f"passage.end ({end}) is before start ({start})", field="passage.end")
    _set(passage, "start", start)
    _set(passage, "end", end)


def _embedding(value: object) -> tuple[float, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value:
        raise invalid("passage.embedding", "a non-empty list of numbers", value)
    return tuple(
        [number(v, f"passage.embedding[{i}]", optional=False) for i, v in enumerate(value)]  # type: ignore[misc]
    )


@dataclass(frozen=True, slots=True)
class Principal:
    """Who the prompt is built for: access is checked against this identity.

    ``id`` is required; ``tenant`` is optional (``None``: no tenant); ``groups`` is a list or
    tuple of names (``None``: no groups), stored as a tuple. Every name must be a non-blank
    string without control characters; anything else raises :class:`~ctxasm.errors.RequestError`
    naming the field (``principal.groups[1]``), exactly as the request JSON's principal does.
    """

    id: str
    tenant: str | None = None
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "id", name(self.id, "principal.id"))
        _set(self, "tenant", name(self.tenant, "principal.tenant", optional=True))
        _set(self, "groups", names(self.groups, "principal.groups", optional=True) or ())


def checked_principal(value: object, field: str = "principal") -> Principal | None:
    """``value`` as a freshly checked :class:`Principal` (or ``None``), for functions that take
    one from a caller and are about to use it for access: anything else is refused, and the
    principal is rebuilt, so neither a subclass's constructor nor fields changed after
    construction can skip the checks (a few microseconds, once per call)."""
    if value is None:
        return None
    if not isinstance(value, Principal):
        raise invalid(field, "a ctxasm.Principal or None", value)
    return Principal(value.id, value.tenant, value.groups)


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of chat history."""

    role: str
    content: str

    def __post_init__(self) -> None:
        # read as the plain string first: a str subclass may claim equality with anything
        if not isinstance(self.role, str) or plain(self.role) not in _ROLES:
            raise invalid("message.role", "'user' or 'assistant'", self.role)
        _set(self, "role", plain(self.role))
        _set(self, "content", string(self.content, "message.content"))
        if not self.content.strip():
            raise RequestError(
                "message.content is empty; drop the turn or give its text", field="message.content"
            )


_ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """A strategy chosen by registry name, with its parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_config(self) -> dict[str, Any]:
        return {"name": self.name, **self.params}


@dataclass(frozen=True, slots=True)
class Strategies:
    """The strategy of every slot. ``dedup`` is a chain applied in order."""

    relevance: StrategySpec = StrategySpec("auto")
    dedup: tuple[StrategySpec, ...] = (
        StrategySpec("stitch"),
        StrategySpec("exact"),
        StrategySpec("near"),
    )
    selection: StrategySpec = StrategySpec("auto")
    compression: StrategySpec | None = StrategySpec("sentences")
    ordering: StrategySpec = StrategySpec("primacy_recency")
    guard: StrategySpec | None = StrategySpec("scan")


@dataclass(frozen=True, slots=True)
class HistoryPolicy:
    """How much of the budget history may take (the history step, ``ctxasm.stages.history``)."""

    min_recent_turns: int = 2
    max_share: float = 0.5
    max_tokens: int | None = None
    reclaim: bool = True

    def __post_init__(self) -> None:
        where = "history_policy"
        if not isinstance(self.reclaim, bool):
            raise RequestError(f"{where}.reclaim must be true or false", field=f"{where}.reclaim")
        # Read as plain numbers (numpy's too): a subclass may redefine the comparisons below.
        turns, share = as_whole(self.min_recent_turns), as_real(self.max_share)
        if turns is None or not 0 <= turns <= 10_000:
            raise invalid(
                f"{where}.min_recent_turns",
                "an integer from 0 to 10000",
                plain(self.min_recent_turns),
            )
        object.__setattr__(self, "min_recent_turns", turns)
        if share is None or not 0 <= share <= 1:  # NaN is no number from 0 to 1
            raise invalid(f"{where}.max_share", "a number from 0 to 1", plain(self.max_share))
        object.__setattr__(self, "max_share", share)
        tokens = None if self.max_tokens is None else as_whole(self.max_tokens)
        if self.max_tokens is not None and (tokens is None or not 0 <= tokens <= 2**53):
            raise invalid(
                f"{where}.max_tokens", "a non-negative integer or null", plain(self.max_tokens)
            )
        object.__setattr__(self, "max_tokens", tokens)

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_recent_turns": self.min_recent_turns,
            "max_share": self.max_share,
            "max_tokens": self.max_tokens,
            "reclaim": self.reclaim,
        }


@dataclass(frozen=True, slots=True, weakref_slot=True, eq=False)
class Request:
    """A validated assembly request (see ``ctxasm.schema.parse_request``).

    ``None`` in a numeric field means "use the model's or the config's default"; it is never
    confused with ``0``.
    """

    query: str
    passages: tuple[Passage, ...]
    model: str = "gpt-4o"
    system_prompt: str | None = None
    history: tuple[Message, ...] = ()
    context_window: int | None = None
    reserve_output_tokens: int | None = None
    max_context_tokens: int | None = None
    safety_margin: float | None = None
    principal: Principal | None = None
    format: str = "openai"
    strategy: Strategies = Strategies()
    min_score: float | None = None
    top_k: int | None = None
    allow_public: bool = False
    query_class: str | None = None
    template: str | None = None
    history_policy: HistoryPolicy = HistoryPolicy()
    # The previous turn's cache state (docs/caching.md); None: not planning for the cache.
    previous: CacheState | None = None

    def __post_init__(self) -> None:
        _check_request(self)


def _check_request(request: Request) -> None:
    """Check the types and ranges a request's fields carry (values that need the registry or
    the strategy names are checked by :func:`ctxasm.schema.parse_request`); lists become
    tuples. Errors name the field as the request JSON does."""
    _set(request, "query", string(request.query, "query", nonempty=True))
    _set(request, "model", string(request.model, "model", nonempty=True))
    _set(request, "format", string(request.format, "format"))
    _set(request, "system_prompt", string(request.system_prompt, "system_prompt", optional=True))
    _set(request, "template", string(request.template, "template", optional=True))
    _set(request, "passages", _items(request.passages, "passages", Passage))
    _set(request, "history", _items(request.history, "history", Message))
    for key in ("context_window", "reserve_output_tokens", "max_context_tokens"):
        _set(request, key, integer(getattr(request, key), key, minimum=1))
    _set(request, "top_k", integer(request.top_k, "top_k", minimum=1))
    for key, low, high in (("safety_margin", 0.0, 0.5), ("min_score", None, None)):
        if getattr(request, key) is not None:
            _set(request, key, number(getattr(request, key), key, low=low, high=high))
    if request.principal is not None and not isinstance(request.principal, Principal):
        raise invalid(
            "principal",
            "a ctxasm.Principal (or, in request JSON, {id, tenant, groups})",
            request.principal,
        )
    if not isinstance(request.allow_public, bool):
        raise invalid("allow_public", "true or false", request.allow_public)
    if not isinstance(request.strategy, Strategies):
        raise invalid("strategy", "a ctxasm.data.Strategies", request.strategy)
    _set(request, "query_class", string(request.query_class, "query_class", optional=True))
    if request.previous is not None and not isinstance(request.previous, CacheState):
        raise invalid(
            "previous",
            "a ctxasm.cache_state.CacheState (in request JSON: a prior result or its cache state)",
            request.previous,
        )


def _items(value: object, field: str, kind: type) -> tuple[Any, ...]:
    """A list or tuple whose every item is a ``kind``, as a tuple."""
    if not isinstance(value, list | tuple):
        raise invalid(field, f"a list of {kind.__name__} objects", value)
    for i, item in enumerate(value):
        if not isinstance(item, kind):
            raise invalid(
                f"{field}[{i}]",
                f"a ctxasm.{kind.__name__} (dicts are taken by ctxasm.parse_request and "
                "ctxasm.assemble)",
                item,
            )
    return tuple(value)


class Candidate(NamedTuple):
    """A passage on its way through the pipeline (immutable; ``_replace`` makes a changed copy).

    ``text``, ``start`` and ``end`` may differ from the passage's after stitching;
    ``request_index`` is the position in the request and breaks every tie, which keeps results
    deterministic. A named tuple rather than a dataclass: thousands are made per request, and
    tuples build fastest.
    """

    passage: Passage
    request_index: int
    score: float
    text: str
    start: int | None = None
    end: int | None = None
    # The guard's findings on ``text`` (see ctxasm.stages.guard); shown in the header.
    flags: tuple[str, ...] = ()
    # Why selection kept it, where the strategy says (see Chosen).
    chosen: Chosen | None = None

    @property
    def id(self) -> str:
        return self.passage.id

    @classmethod
    def of(cls, passage: Passage, request_index: int, score: float) -> Candidate:
        return cls(passage, request_index, score, passage.text, passage.start, passage.end)


class Exclusion(NamedTuple):
    """A candidate left out, the stage that left it out, and why."""

    candidate_id: str
    stage: str
    reason: Reason
    detail: str = ""

    @property
    def id(self) -> str:
        """The excluded passage's id (``candidate_id``), named as on :class:`Included` and in
        the result JSON."""
        return self.candidate_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.candidate_id,
            "stage": self.stage,
            "reason": self.reason.value,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Budget:
    """The token envelope: every section of the request and what is left for context."""

    context_window: int
    reserve_output: int
    system: int
    query: int
    history: int
    overhead: int
    margin: int
    context: int

    @property
    def prompt_limit(self) -> int:
        """The most tokens the whole request may take."""
        return self.context_window - self.reserve_output - self.margin

    def to_dict(self) -> dict[str, int]:
        return {
            "context_window": self.context_window,
            "reserve_output": self.reserve_output,
            "system": self.system,
            "query": self.query,
            "history": self.history,
            "overhead": self.overhead,
            "margin": self.margin,
            "context": self.context,
        }


CHOSEN_BY = ("score", "query", "link", "fill")


@dataclass(frozen=True, slots=True)
class Chosen:
    """Why selection kept a passage: ``by`` is the signal that decided, one of
    :data:`CHOSEN_BY`:

    - ``score``: the retriever's given score;
    - ``query``: the query's words and named phrases it covers (``terms``);
    - ``link``: a link to a passage kept before it, ``linked_from`` (that passage's id), ``via``
      the title that links them (the first hop names the second's title, or the other way),
      or the name both texts hold, as the passage (else the one before it) writes it
      ("Steve Hillage");
    - ``fill``: budget that was left after the planned picks, taken in rank order.

    ``terms`` lists the query terms it covers in any case, and ``given_score`` the retriever's
    score when there was one, so the chain a planner followed can be read from the report."""

    by: str
    terms: tuple[str, ...] = ()
    linked_from: str | None = None
    via: str | None = None
    given_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "terms": list(self.terms),
            "linked_from": self.linked_from,
            "via": self.via,
            "given_score": self.given_score,
        }


@dataclass(frozen=True, slots=True)
class Included:
    """A passage that made it into the prompt."""

    id: str
    label: str
    tokens: int
    score: float
    position: int
    source: str | None
    url: str | None
    compression: Compression | None = None
    flags: tuple[str, ...] = ()
    chosen: Chosen | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "tokens": self.tokens,
            "score": self.score,
            "position": self.position,
            "source": self.source,
            "url": self.url,
            "compression": None if self.compression is None else self.compression.to_dict(),
            "flags": list(self.flags),
            "chosen": None if self.chosen is None else self.chosen.to_dict(),
        }


# What a compressed text has in place of every gap (see ctxasm.stages.compression); the
# dedup stage reads it too, to check that texts it stitches keep their document's order.
ELISION = "[…]"


class Compressed(NamedTuple):
    """A compressed candidate and what was kept of it (``original`` is its text before)."""

    candidate: Candidate
    original: str
    kept_sentences: int
    sentences: int


@dataclass(frozen=True, slots=True)
class Compression:
    """What compression kept of a passage: tokens of its fenced text before and after, and
    sentences kept out of all."""

    original_tokens: int
    kept_tokens: int
    sentences: int
    kept_sentences: int

    def to_dict(self) -> dict[str, int]:
        return {
            "original_tokens": self.original_tokens,
            "kept_tokens": self.kept_tokens,
            "sentences": self.sentences,
            "kept_sentences": self.kept_sentences,
        }


@dataclass(frozen=True, slots=True)
class Report:
    """Every decision of one assembly, in the shape of the result JSON (docs/request.md)."""

    model: str
    tokenizer: str
    exact_count: bool
    budget: Budget
    total_tokens: int
    context_tokens: int
    considered: int
    selected: int
    no_relevant_context: bool
    included: tuple[Included, ...]
    excluded: tuple[Exclusion, ...]
    cost_usd: float | None
    timings_ms: Mapping[str, float]
    query_class: str | None = None
    history: Mapping[str, Any] | None = None
    # Only when the assembly planned for the prompt cache (docs/caching.md).
    cache: CacheReport | None = None
    # The scores relevance ranked by ("utility", "given", ...) and what it noted about the
    # retriever's scores (trusted, ignored and why), when it noted anything.
    relevance: Mapping[str, str | None] | None = None

    def to_dict(self) -> dict[str, Any]:
        found = {
            "model": self.model,
            "tokenizer": self.tokenizer,
            "exact_count": self.exact_count,
            "budget": self.budget.to_dict(),
            "total_tokens": self.total_tokens,
            "context_tokens": self.context_tokens,
            "considered": self.considered,
            "selected": self.selected,
            "no_relevant_context": self.no_relevant_context,
            "included": [item.to_dict() for item in self.included],
            "excluded": [item.to_dict() for item in self.excluded],
            "cost_usd": self.cost_usd,
            "timings_ms": dict(self.timings_ms),
            "query_class": self.query_class,
            "history": None if self.history is None else dict(self.history),
            "relevance": None if self.relevance is None else dict(self.relevance),
        }
        if self.cache is not None:
            found["cache"] = self.cache.to_dict()
        return found


@dataclass(frozen=True, slots=True)
class Assembly:
    """The prompt to send and the report that explains it.

    Chat formats fill ``messages`` (and ``system`` where the provider takes it separately);
    text formats fill ``text`` and leave ``messages`` empty.
    """

    messages: tuple[Mapping[str, Any], ...]
    system: str | None
    text: str | None
    report: Report
    # The passages as rendered, in order (stitched or compressed text included); not part of
    # the result JSON.
    passages: tuple[Candidate, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The result JSON, as documented in docs/request.md."""
        return {
            "messages": [dict(message) for message in self.messages],
            "system": self.system,
            "text": self.text,
            "report": self.report.to_dict(),
        }
