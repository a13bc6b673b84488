"""Frozen data that flows through the pipeline.

Values here never change after construction: a stage that wants a different candidate builds a
new one with :func:`dataclasses.replace`. Validation of user input lives in :mod:`ctxasm.schema`;
these classes trust their arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ctxasm.stages.history import HistoryPolicy

__all__ = [
    "Assembly",
    "Budget",
    "Candidate",
    "Compression",
    "Exclusion",
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


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved passage, as the caller gave it."""

    id: str
    text: str
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

    @property
    def has_access_data(self) -> bool:
        return self.tenant is not None or self.readers is not None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who the prompt is built for: access is checked against this identity."""

    id: str
    tenant: str | None = None
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of chat history."""

    role: str
    content: str


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


def _default_history_policy() -> HistoryPolicy:
    from ctxasm.stages.history import HistoryPolicy

    return HistoryPolicy()


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
    history_policy: HistoryPolicy = field(default_factory=_default_history_policy)


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
        }


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
    """Every decision of one assembly, in the shape of DESIGN.md's result JSON."""

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

    def to_dict(self) -> dict[str, Any]:
        return {
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
        }


@dataclass(frozen=True, slots=True)
class Assembly:
    """The prompt to send and the report that explains it.

    Chat formats fill ``messages`` (and ``system`` where the provider takes it separately);
    text formats fill ``text`` and leave ``messages`` empty.
    """

    messages: tuple[Mapping[str, str], ...]
    system: str | None
    text: str | None
    report: Report
    # The passages as rendered, in order (stitched or compressed text included); not part of
    # the result JSON.
    passages: tuple[Candidate, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The result JSON of DESIGN.md."""
        return {
            "messages": [dict(message) for message in self.messages],
            "system": self.system,
            "text": self.text,
            "report": self.report.to_dict(),
        }
