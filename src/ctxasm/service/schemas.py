"""The HTTP contract as typed models: what ``/openapi.json`` and ``/docs`` show.

These models *document* the bodies; they never parse them. Requests are still read by
:mod:`ctxasm.jsonio` and checked by :func:`ctxasm.schema.parse_request`, so a request gets the
same decision and message over HTTP as from the CLI. The field sets are those of the
dataclasses in :mod:`ctxasm.data` (and the request's ``hits``, read in place of its passages;
``tests/service/test_schemas.py`` checks that they cannot drift), and every result model
forbids extra keys, so a response that grew a field the contract does not name fails the
OpenAPI test.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from ctxasm.data import Reason

__all__ = [
    "REQUEST_MODELS",
    "AssembleRequest",
    "AssembleResult",
    "CheckCitationsRequest",
    "CitationReport",
    "ErrorResponse",
    "Health",
    "ModelInfo",
    "components",
]

FormatName = Literal["openai", "anthropic", "markdown", "text", "template"]
QueryClass = Literal["auto", "factoid", "multihop", "comparison", "summary"]
_CLOSED = ConfigDict(extra="forbid")


class _Closed(BaseModel):
    model_config = _CLOSED


# ---- request -------------------------------------------------------------------------------


class Passage(_Closed):
    """One retrieved candidate; only ``text`` is required."""

    id: str | None = Field(None, description="Unique in the request; default passage-<index>.")
    text: str = Field(description="The passage; blank text is excluded with reason empty.")
    score: float | None = Field(None, description="Retriever or reranker score (finite).")
    title: str | None = Field(None, description="Shown in the [Source N] header.")
    source: str | None = Field(None, description="Shown in the report.")
    url: str | None = Field(None, description="Shown in the header and the report.")
    doc_id: str | None = Field(None, description="The document this chunk comes from.")
    start: int | None = Field(None, ge=0, description="Character offset of the chunk.")
    end: int | None = Field(None, ge=0, description="Character offset after the chunk.")
    timestamp: str | None = Field(None, description="ISO-8601; for chronological ordering.")
    authority: float | None = Field(None, ge=0, le=1, description="Source authority, 0..1.")
    graph_distance: int | None = Field(None, ge=0, description="Hops from the query entity.")
    priority: float | None = Field(None, description="For the priority selection strategy.")
    embedding: list[float] | None = Field(None, description="For MMR and semantic dedup.")
    tenant: str | None = Field(None, description="Access data: the tenant that owns it.")
    readers: list[str] | None = Field(
        None, description="Access data: principal ids or groups that may read it."
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Anything else; carried, never interpreted."
    )


class Principal(_Closed):
    """Who the prompt is for; passages are filtered by access data first."""

    id: str = Field(description="The principal's id, matched against readers.")
    tenant: str | None = Field(None, description="The principal's tenant.")
    groups: list[str] | None = Field(None, description="Groups, matched against readers.")


class HistoryTurn(_Closed):
    """An earlier turn of the conversation."""

    role: Literal["user", "assistant"]
    content: str = Field(description="The turn's text (not blank).")


class HistoryPolicy(_Closed):
    """How much of the budget history may take."""

    min_recent_turns: int = Field(2, ge=0, description="Turns always kept, newest first.")
    max_share: float = Field(0.5, ge=0, le=1, description="Share of the budget for history.")
    max_tokens: int | None = Field(None, ge=1, description="Cap on history tokens.")
    reclaim: bool = Field(True, description="Give room left after selection back to history.")


class StrategyChoice(BaseModel):
    """A strategy with parameters: ``{"name": "mmr", "lam": 0.7}``."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(description="The strategy's registry name.")


Slot = str | StrategyChoice


class Strategy(_Closed):
    """A strategy per slot: a name or ``{"name", ...params}``; null turns an optional slot off."""

    relevance: Slot | None = Field(None, description="auto, utility, given, bm25.")
    dedup: Slot | list[Slot] | None = Field(None, description="A chain: stitch, exact, ...")
    selection: Slot | None = Field(None, description="auto, bridge, knapsack, mmr, ...")
    compression: Slot | None = Field(None, description="sentences, or null for none.")
    ordering: Slot | None = Field(None, description="primacy_recency, by_score, ...")
    guard: Slot | None = Field(None, description="scan, or null for none.")


def _never_null(schema: dict[str, Any]) -> None:
    """The schema of a field that may be left out but is never null: without the null its
    ``None`` default adds (and without that default)."""
    schema.pop("default", None)
    kinds = [kind for kind in schema.pop("anyOf", []) if kind != {"type": "null"}]
    if len(kinds) == 1:
        schema.update(kinds[0])
    elif kinds:
        schema["anyOf"] = kinds


class AssembleRequest(_Closed):
    """The request JSON of ``ctxasm assemble``; only ``query`` and the candidates are required:
    ``passages``, or ``hits`` in their place (exactly one of the two)."""

    # The candidates come in one of two fields: the schema requires exactly one.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"oneOf": [{"required": ["passages"]}, {"required": ["hits"]}]},
    )

    query: str = Field(description="The user's question (not blank).")
    passages: list[Passage] | None = Field(
        None, description="Retrieved candidates (may be empty); or give hits instead."
    )
    model: str = Field("gpt-4o", description="A registry name or alias (GET /v1/models).")
    system_prompt: str | None = Field(None, description="Your instructions.")
    history: list[HistoryTurn] | None = Field(None, description="Earlier turns.")
    context_window: int | None = Field(None, ge=1, description="A smaller window.")
    reserve_output_tokens: int | None = Field(None, ge=1, description="Kept for the answer.")
    max_context_tokens: int | None = Field(None, ge=1, description="Cap on the sources.")
    safety_margin: float | None = Field(None, ge=0, le=0.5, description="Share kept in hand.")
    principal: Principal | None = Field(None, description="Who the prompt is for.")
    format: FormatName = Field("openai", description="Output format.")
    strategy: Strategy | None = Field(None, description="A strategy per slot.")
    min_score: float | None = Field(None, description="Drop candidates scoring below it.")
    top_k: int | None = Field(None, ge=1, description="Keep at most this many candidates.")
    allow_public: bool = Field(False, description="Admit passages without access data.")
    query_class: QueryClass | None = Field(None, description="Planner for auto selection.")
    template: str | None = Field(
        None, description="Jinja2 source for format template (only if the operator allows it)."
    )
    history_policy: HistoryPolicy | None = Field(None, description="History's share.")
    previous: dict[str, Any] | None = Field(
        None,
        description="The previous turn's result, its report.cache or report.cache.state (null: "
        "a session's first turn); plans the prompt for the cache (docs/caching.md). The "
        "service also takes session_id (8 to 128 of A-Z a-z 0-9 . _ : -) and then keeps the "
        "state itself between turns.",
    )
    hits: list[dict[str, Any]] | None = Field(
        None,
        description="A retriever's hits in place of passages, mapped to them: the text from "
        "text, content or page_content; the score from score, similarity or relevance_score; "
        "title, url and source from the hit or its metadata (without a title or url, an "
        "http(s) source is the url, else the source's file and page, or file_name, the title); "
        "the id from id, else hit- and a hash of the text; any other passage field as is, "
        "anything else into metadata. A LlamaIndex NodeWithScore as JSON ({node, score}) is "
        "read from its node.",
    )
    # Optional, but never null: the service refuses null for these three (422 naming them).
    id: str | int | None = Field(
        None,
        description="Your own key for this request, returned first on the result.",
        json_schema_extra=_never_null,
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description="Yours, never read by the pipeline; returned on the result.",
        json_schema_extra=_never_null,
    )
    session_id: str | None = Field(
        None,
        json_schema_extra=_never_null,
        description="Service only: 8 to 128 of A-Z a-z 0-9 . _ : -; the service keeps the "
        "session's prompt-cache state between turns (see previous).",
    )


class CheckCitationsRequest(_Closed):
    """An answer and the result of the assembly it answers."""

    answer: str | dict[str, Any] = Field(
        description="The model's answer, with [Source N] markers, or the provider's chat "
        "completion response holding it (OpenAI's choices[0].message.content or Responses "
        "output, Anthropic's text content)."
    )
    result: dict[str, Any] = Field(description="The result JSON of POST /v1/assemble.")


# ---- results -------------------------------------------------------------------------------


class Budget(_Closed):
    """The token envelope: every section and what was left for context."""

    context_window: int
    reserve_output: int
    system: int
    query: int
    history: int
    overhead: int
    margin: int
    context: int = Field(description="Tokens the sources block may take.")


class Compression(_Closed):
    """What compression kept of a passage."""

    original_tokens: int
    kept_tokens: int
    sentences: int
    kept_sentences: int


class Chosen(_Closed):
    """Why selection kept a passage: the signal that decided, the query terms it covers, the
    kept passage that links to it and the title (or the name both hold, as a lower-case phrase
    key) that links them, and the retriever's score."""

    by: Literal["score", "query", "link", "fill"] = Field(
        description="score: the retriever's score; query: the query terms it covers; link: a "
        "link to a passage kept before it; fill: budget left after the planned picks."
    )
    terms: list[str] = Field(default_factory=list)
    linked_from: str | None = None
    via: str | None = None
    given_score: float | None = None


class Included(_Closed):
    """A passage in the prompt."""

    id: str
    label: str = Field(description="Its citation label, Source N.")
    tokens: int = Field(description="Its exact share of the sources block.")
    score: float
    position: int = Field(description="1-based position in the prompt.")
    source: str | None
    url: str | None
    compression: Compression | None = None
    flags: list[str] = Field(default_factory=list, description="Guard flags, if any.")
    chosen: Chosen | None = Field(None, description="Why selection kept it.")


class Excluded(_Closed):
    """A candidate left out, with the stage and a stable reason code."""

    id: str
    stage: str
    reason: Reason
    detail: str = Field(description="One sentence that explains the decision.")


class HistoryReport(_Closed):
    """What happened to the history turns."""

    turns: int
    kept: int
    tokens: int
    dropped: list[int] = Field(description="Indices of the turns left out.")
    summary_tokens: int
    relevance_turn: int | None = Field(
        description="The index of the earlier user turn whose words relevance read with a "
        "follow-up query that points back at it; null when the query alone ranked the passages."
    )


class RelevanceReport(_Closed):
    """How relevance ranked the passages."""

    method: str = Field(
        description="The scores it ranked by: utility, given, utility+given, bm25 or a "
        "registered strategy's name."
    )
    note: str | None = Field(
        description="What it noted about the retriever's scores (trusted, ignored and why); "
        "null when it noted nothing."
    )


class CacheBreakpoint(_Closed):
    """A cache_control breakpoint the anthropic format placed."""

    after_sources: int = Field(description="After this many sources of the prompt.")
    tokens: int = Field(description="Tokens of the prompt up to it.")
    reason: str


class CacheReport(_Closed):
    """The prompt cache: what is identical to the previous turn, what it costs."""

    prefix_tokens: int = Field(description="Tokens from the start identical to the last turn.")
    prefix_sources: int = Field(description="Sources in that identical prefix.")
    reused_context_tokens: int = Field(description="The sources block's share of them.")
    cached_tokens: int = Field(description="Expected read from the provider's cache.")
    written_tokens: int = Field(description="Expected written to it (Anthropic).")
    cost_usd: float | None = Field(description="Input cost with caching.")
    cost_usd_uncached: float | None = Field(description="Input cost without caching.")
    rule: str = Field(description="The provider rule applied, in a sentence.")
    breakpoints: list[CacheBreakpoint]
    state: dict[str, Any] = Field(description="Send it back as previous on the next turn.")


class Report(_Closed):
    """Every decision of one assembly."""

    model: str
    tokenizer: str
    exact_count: bool = Field(description="False when the count is an estimate.")
    budget: Budget
    total_tokens: int = Field(description="The whole request, chat overhead included.")
    context_tokens: int
    considered: int
    selected: int
    no_relevant_context: bool
    included: list[Included]
    excluded: list[Excluded]
    cost_usd: float | None = Field(description="Input cost at the registry price.")
    timings_ms: dict[str, float]
    query_class: str | None = None
    history: HistoryReport | None = None
    cache: CacheReport | None = Field(
        None,
        description="Only when the assembly planned for the prompt cache (absent otherwise).",
        exclude_if=lambda value: value is None,
    )
    relevance: RelevanceReport | None = None


class _Envelope(_Closed):
    """The request's own ``id`` and ``metadata``, first on what answers it, where it gave
    them."""

    id: str | int | None = Field(
        None, description="The request's id, where it gave one.", exclude_if=lambda v: v is None
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description="The request's metadata, where it gave some.",
        exclude_if=lambda v: v is None,
    )


class AssembleResult(_Envelope):
    """The prompt to send and the report that explains it (after the request's own ``id`` and
    ``metadata``, where it gave them)."""

    messages: list[dict[str, Any]] = Field(
        description="Chat messages (chat formats); content is a string, or with format "
        "anthropic planning for the cache a list of text blocks."
    )
    system: str | None = Field(description="A separate system prompt (anthropic).")
    text: str | None = Field(description="The prompt (text formats).")
    report: Report


class Citation(_Closed):
    """One cited number of an answer."""

    label: str
    id: str | None
    url: str | None
    valid: bool
    raw: str = Field(description="The marker as the answer wrote it.")
    form: str = Field(description="How the marker was recognised.")
    link: str | None = Field(description="A markdown link's destination, as written.")
    mislinked: bool = Field(description="Valid, but linked elsewhere than its source's url.")


class CitationReport(_Closed):
    """What an answer cites, checked against the sources of its assembly."""

    citations: list[Citation]
    invalid: list[str]
    cited_ids: list[str]
    uncited_ids: list[str]
    uncited_sentences: list[str]
    coverage: float = Field(description="Share of sentences with a valid citation.")
    mislinked: list[str] = Field(description="Labels cited with a link to somewhere else.")
    forms: dict[str, int]


class PriceTierInfo(_Closed):
    """Prices for a request whose prompt is past ``above`` tokens (a price left out: the
    model's own)."""

    above: int = Field(description="Prompt tokens past which these prices apply.")
    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None
    cache_write_price: float | None = None


class ModelInfo(_Closed):
    """One model of the registry."""

    name: str
    provider: str
    context_window: int
    max_output: int
    tokenizer: str = Field(
        description="tiktoken:<encoding>, pinned:<name>, hf:<path>, sentencepiece:<path>, "
        "tekken:<path> or estimate:<encoding>*<factor>"
    )
    tokens_per_message: int
    reply_priming: int
    chat: str = Field(
        description="The chat template requests are counted with: openai (tokens_per_message "
        "and reply_priming), llama3, chatml, mistral-v1, mistral-v3, mistral-v7, gemma or "
        "deepseek-v3"
    )
    input_price: float | None = Field(description="USD per 1M input tokens.")
    output_price: float | None = Field(description="USD per 1M output tokens.")
    aliases: list[str]
    cache: Literal["automatic", "breakpoints", "explicit"] | None = Field(
        description="How the provider caches prompt prefixes (null: it does not)."
    )
    cached_input_price: float | None = Field(description="USD per 1M cached input tokens.")
    cache_write_price: float | None = Field(description="USD per 1M tokens written (Anthropic).")
    cache_min_tokens: int = Field(description="The shortest prefix the provider caches.")
    cache_increment: int = Field(description="Cached prefixes grow in steps of this many tokens.")
    reasoning: bool = Field(
        description="Whether the model thinks in hidden tokens counted against its output "
        "limit (a larger default output reserve)."
    )
    price_tiers: list[PriceTierInfo] = Field(
        description="Higher prices billed for every token of a request whose prompt is long "
        "(Gemini 1.5 and 2.5 Pro), lowest tier first."
    )


class Health(_Closed):
    """The service is up."""

    status: Literal["ok"]


class ErrorDetail(_Closed):
    """What went wrong, where, and the id to quote when asking about it."""

    code: str = Field(description="Stable: invalid_request, too_large, not_found, ...")
    message: str = Field(description="What was received, what is allowed, how to fix it.")
    field: str | None = Field(description="The part of the request to fix, if one is to blame.")
    request_id: str = Field(description="Also in the x-request-id header and the log.")
    sections: dict[str, int] | None = Field(
        None, description="Token counts per section (over_budget only)."
    )


class ErrorResponse(_Envelope):
    """Every answer that is not a result (after the request's own ``id`` and ``metadata``,
    where an assemble request gave them valid)."""

    error: ErrorDetail


REQUEST_MODELS: tuple[type[BaseModel], ...] = (AssembleRequest, CheckCitationsRequest)


def components() -> dict[str, Any]:
    """The request models' JSON schemas, keyed by name, for ``components/schemas``."""
    _, top = models_json_schema(
        [(model, "validation") for model in REQUEST_MODELS],
        ref_template="#/components/schemas/{model}",
    )
    return dict(top.get("$defs", {}))
