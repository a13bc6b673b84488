"""The steps of one assembly and the frozen state passed between them.

:class:`ctxasm.assembler.Assembler` calls these steps in the slot order (see
``docs/pipeline.md``); each step takes the state of the steps before it and returns new frozen
state, never changing what it was given:

========================  =========================  ==========================================
step                      returns                    slot
========================  =========================  ==========================================
:func:`access`            :class:`Readable`          access
:func:`plan`              :class:`Planned`           budget (history trimmed and summarised)
:func:`relevance`         :class:`Ranked`            relevance
:func:`compress`          :class:`Ranked`            compression, before selection (``all``)
:func:`select`            :class:`Selected`          dedup + selection, guard: via admission
:func:`compress_to_fill`  :class:`Selected`          compression, after selection (``fill``)
:func:`order`             :class:`Ordered`           ordering
:func:`render`            :class:`Rendering`         format
:func:`verify`            :class:`Verified`          verify
:func:`give_back`         :class:`Verified`          history takes room the passages left
:func:`report`            :class:`~ctxasm.Assembly`  report
========================  =========================  ==========================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from types import MappingProxyType
from typing import ClassVar, Protocol, TypeVar

from ctxasm import prompt_cache
from ctxasm.cache_state import MAX_LABEL, CacheState
from ctxasm.data import (
    Assembly,
    Budget,
    Candidate,
    Compressed,
    Exclusion,
    Message,
    Passage,
    Reason,
    Request,
)
from ctxasm.deadline import checkpoint
from ctxasm.errors import BudgetError, ConfigError
from ctxasm.formatting import Format, PromptParts, Rendered
from ctxasm.formatting.blocks import NO_CONTEXT_NOTE, NO_SOURCES_NOTE, RULES, SourcesBlock
from ctxasm.formatting.measure import MeasuredPrompt
from ctxasm.lexical import titled
from ctxasm.models import ModelSpec
from ctxasm.query_class import classify
from ctxasm.report import build_report
from ctxasm.stages.access import filter_readable
from ctxasm.stages.budget import plan_budget
from ctxasm.stages.dedup import DedupSession, DedupStrategy
from ctxasm.stages.history import SUMMARY_HEADING, HistoryPlan, HistoryStep
from ctxasm.stages.ordering import CacheStableOrdering, OrderingStrategy
from ctxasm.stages.relevance import RelevanceStrategy, Scores, rank
from ctxasm.stages.relevance_follow_up import follow_up, points_back
from ctxasm.stages.selection import SelectionStrategy
from ctxasm.stages.selection_admission import Guard, Meter
from ctxasm.stages.selection_packing import Packed, Packing, SelectionContext
from ctxasm.tokens import TokenCounter

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "CompressionStrategy",
    "Ordered",
    "Placement",
    "Planned",
    "Ranked",
    "Readable",
    "Rendering",
    "RequestCount",
    "ResolvedStrategies",
    "Selected",
    "Setup",
    "Verified",
    "access",
    "compress",
    "compress_to_fill",
    "compression_placement",
    "fit",
    "give_back",
    "order",
    "plan",
    "relevance",
    "render",
    "report",
    "select",
    "verify",
]

DEFAULT_SYSTEM_PROMPT = "You are a careful assistant that answers questions from sources."
# Tokens the sources block may merge or add at its seams with the question.
_BLOCK_SEAM = 2

R = TypeVar("R")


class CompressionStrategy(Protocol):
    """What the pipeline needs of a compression strategy (see
    :class:`ctxasm.stages.compression.SentenceCompression`): the placement its configuration
    asks for, and the two placements."""

    name: ClassVar[str]

    def mode_for(self, ranked: Sequence[Candidate], budget: int) -> str: ...

    def before_selection(
        self, query: str, ranked: Sequence[Candidate], budget: int | None = None
    ) -> tuple[list[Candidate], dict[str, Compressed]]: ...

    def after_selection(
        self, query: str, ranked: Sequence[Candidate], packing: Packing
    ) -> dict[str, Compressed]: ...

    # Optional: ``cut_pick(query, candidate, packing, in_play) -> Compressed | None`` cuts a
    # planner's pick during selection (see SentenceCompression.cut_pick); a strategy without
    # it has ``after_selection`` called with that one candidate.


@dataclass(frozen=True, slots=True)
class ResolvedStrategies:
    """The strategy of every slot, built from the request's :class:`~ctxasm.data.Strategies`
    (``None``: the optional slot is off)."""

    relevance: RelevanceStrategy
    dedup: tuple[DedupStrategy, ...]
    selection: SelectionStrategy
    compression: CompressionStrategy | None
    ordering: OrderingStrategy
    guard: Guard | None


class Placement(Enum):
    """Where the compression step runs."""

    OFF = "off"
    BEFORE_SELECTION = "all"  # every candidate compressed, then selected
    AFTER_SELECTION = "fill"  # what did not fit whole is offered again, compressed


@dataclass(frozen=True, slots=True)
class Setup:
    """What a request resolves to before the first slot; fixed for the whole assembly."""

    request: Request
    model: ModelSpec
    fmt: Format
    counter: TokenCounter
    strategies: ResolvedStrategies
    history: HistoryStep

    @property
    def previous(self) -> CacheState | None:
        """The previous turn's cache state when the assembly plans for the prompt cache
        (``previous`` given, or the ``cache_stable`` ordering); else ``None``. When this
        request's passages could take label numbers past :data:`MAX_LABEL` (the largest a
        citation can name), the session's numbers start again at 1, as on a first turn."""
        given = self.request.previous
        if given is None and isinstance(self.strategies.ordering, CacheStableOrdering):
            return CacheState()
        if given is not None and _labels_run_out(given, self.request.passages):
            return CacheState()
        return given

    @property
    def stickiness(self) -> float:
        """How far selection favours the previous turn's passages: ``cache_stable``'s
        ``stickiness`` times the share of the input price a cached token saves (0 without a
        previous turn, with another ordering, or when the model and format cache nothing)."""
        ordering, previous = self.strategies.ordering, self.previous
        if previous is None or not previous.sources:
            return 0.0
        if not isinstance(ordering, CacheStableOrdering):
            return 0.0
        return ordering.stickiness * prompt_cache.cache_discount(self.model, self.fmt)


def _labels_run_out(previous: CacheState, passages: Sequence[Passage]) -> bool:
    """Whether the passages that have no label yet could take numbers past :data:`MAX_LABEL`
    (counted one by one only when all of them together could)."""
    if previous.next_label + len(passages) <= MAX_LABEL + 1:
        return False
    new = sum(1 for p in passages if p.id not in previous.labels)
    return previous.next_label + new > MAX_LABEL + 1


@dataclass(frozen=True, slots=True)
class Readable:
    """After access: the passages the principal may read, with their request positions."""

    passages: tuple[tuple[int, Passage], ...]
    excluded: tuple[Exclusion, ...]


@dataclass(frozen=True, slots=True)
class Planned:
    """After budget: the history that fits, the prompt parts around the sources, the budget."""

    history: HistoryPlan
    parts: PromptParts
    budget: Budget


@dataclass(frozen=True, slots=True)
class Reading:
    """How relevance read the request: the words it ranked by (the query, or with a follow-up
    that the query alone finds nothing for, the last question of the history too: ``turn`` is
    its index), the scores it ranked with (``method``) and what it noted about the retriever's
    scores (``note``: trusted, ignored and why; "" for nothing)."""

    query: str
    turn: int | None = None
    method: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class Ranked:
    """After relevance (and compression before selection): candidates best first, what was
    excluded so far, and what compression changed (by id)."""

    candidates: tuple[Candidate, ...]
    excluded: tuple[Exclusion, ...]
    compressed: Mapping[str, Compressed]
    reading: Reading


@dataclass(frozen=True, slots=True)
class Selected:
    """After selection (and compression after it): the ranked candidates and the packing."""

    ranked: Ranked
    packed: Packed
    compressed: Mapping[str, Compressed]


@dataclass(frozen=True, slots=True)
class Ordered:
    """After ordering: the kept passages in their final order, and every exclusion so far."""

    candidates: tuple[Candidate, ...]
    excluded: tuple[Exclusion, ...]
    compressed: Mapping[str, Compressed]
    query_class: str
    no_relevant_context: bool
    reading: Reading  # how relevance read the request (Ranked.reading)
    # Label numbers by passage id, kept across turns when planning for the prompt cache.
    labels: Mapping[str, int] | None = None


class RequestCount(Protocol):
    """How the verify step counts a whole rendered request, and whether the count is exact."""

    @property
    def exact(self) -> bool: ...

    def __call__(self, rendered: Rendered) -> int: ...


@dataclass(frozen=True, slots=True)
class Rendering:
    """The format step: the request rendered around any list of passages, and how it is
    counted (``count``: the whole request, as the verify step recounts it)."""

    fmt: Format
    counter: TokenCounter
    parts: PromptParts
    note: str  # the context when no passage is left
    count: RequestCount
    labels: Mapping[str, int] | None = None  # label numbers by id (None: in prompt order)

    @property
    def block(self) -> SourcesBlock:
        return self.fmt.block

    def context(self, kept: Sequence[Candidate]) -> str:
        """The sources block of ``kept``, or the note saying there is none."""
        return self.block.render(kept, self.labels) if kept else self.note

    def context_tokens(self, kept: Sequence[Candidate]) -> int:
        return self.counter.count(self.context(kept))

    def request(self, kept: Sequence[Candidate], parts: PromptParts | None = None) -> Rendered:
        """The request with ``kept`` as its sources (and ``parts``, else the planned ones)."""
        parts = replace(self.parts if parts is None else parts, labels=self.labels)
        return self.fmt.render(parts, self.context(kept), kept)


@dataclass(frozen=True, slots=True)
class Verified:
    """After verify: the passages that fit the exact recount, the rendered request, its
    tokens and the sources block's, the history and budget as they stand, every exclusion."""

    kept: tuple[Candidate, ...]
    rendered: Rendered
    total: int
    context_tokens: int
    excluded: tuple[Exclusion, ...]
    history: HistoryPlan
    budget: Budget


def system_prompt(request: Request) -> str:
    """The system prompt with the citation rules, before any history summary."""
    return f"{request.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n{RULES}"


def access(setup: Setup) -> Readable:
    """Access: drop what the principal may not read (always first)."""
    request = setup.request
    readable, excluded = filter_readable(
        request.passages, request.principal, allow_public=request.allow_public
    )
    return Readable(tuple(readable), tuple(excluded))


def plan(setup: Setup) -> Planned:
    """Budget: the history that fits (trimmed, then summarised), the prompt parts around the
    sources, and the token envelope of the sources block."""
    request, model, counter, fmt = setup.request, setup.model, setup.counter, setup.fmt
    system = system_prompt(request)
    alone = MeasuredPrompt(fmt, PromptParts(system, (), request.query), counter, model)
    bare = plan_budget(request, model, counter, alone)
    # What the mandatory parts leave, measured with the no-sources note they grow into when no
    # passage fits beside the turns: room past it would admit turns the budget then refuses.
    history = setup.history.plan(bare.prompt_limit - alone.without_sources())
    if history.summary:
        system = f"{system}\n\n{SUMMARY_HEADING}\n{history.summary}"
    try:
        return _planned(setup, system, history)
    except BudgetError:
        if not history.kept:
            raise
    # The turns were costed as a chat template frames them; a format that writes them into
    # its text (markdown, text) may spend more on each. The oldest go, from a user turn on,
    # until the request fits: the fewer turns, the fewer tokens, so a binary search finds it.
    starts = [at for at, (_, turn) in enumerate(history.kept) if turn.role == "user"]
    starts.append(len(history.kept))
    total = len(setup.history.turns)
    low, high = 0, len(starts) - 1
    found = None  # the plan with the most turns that fits
    refused = None  # why the last plan tried did not fit
    while low <= high:
        middle = (low + high) // 2
        fewer = _fewer_turns(history, starts[middle], total)
        try:
            found = _planned(setup, system, fewer)
        except BudgetError as error:
            refused, low = error, middle + 1
        else:
            high = middle - 1
    if found is None:  # not even without turns (the last tried): that error says what
        assert refused is not None
        raise refused
    return found


def _planned(setup: Setup, system: str, history: HistoryPlan) -> Planned:
    """The plan with ``history``'s turns (a :class:`BudgetError` where they do not fit)."""
    request, model, counter = setup.request, setup.model, setup.counter
    parts = PromptParts(
        system,
        history.turns,
        request.query,
        sources_first=setup.previous is not None,
        join_turns=model.chat_template.alternates,
    )
    measured = MeasuredPrompt(setup.fmt, parts, counter, model)
    return Planned(history, parts, plan_budget(request, model, counter, measured))


def _fewer_turns(history: HistoryPlan, start: int, turns: int) -> HistoryPlan:
    """``history`` without its kept turns before ``start`` (of ``turns`` in the request)."""
    kept = history.kept[start:]
    first = kept[0][0] if kept else turns
    return replace(history, kept=kept, dropped=tuple(range(first)))


def relevance(setup: Setup, readable: Readable) -> Ranked:
    """Relevance: score, drop what is below the thresholds, keep the top k, best first.

    When planning for the prompt cache, the previous turn's sources are not dropped by the
    relevance strategy's floor (a follow-up may share no word with them, yet they are part of
    the conversation and cheap to send again, from the cache). The state is the client's and
    not authenticated, so that is all an entry can do: ``min_score``, ``top_k``, access
    control, the guard and the budget apply to every passage.

    A question that points back is ranked by its reading with the earlier turn it points to
    (see :mod:`ctxasm.stages.relevance_follow_up`) where that finds a relevant passage; the
    planners and compression read that reading too (``Reading.query``)."""
    request, previous = setup.request, setup.previous
    keep = frozenset(i for i, _ in previous.sources) if previous else frozenset()

    def ranked_by(query: str) -> tuple[list[Candidate], list[Exclusion], Scores]:
        return rank(
            query,
            readable.passages,
            setup.strategies.relevance,
            min_score=request.min_score,
            top_k=request.top_k,
            keep=keep,
        )

    query, turn, turns = request.query, None, setup.history.turns
    # the passages' texts are gathered only for a question that points back
    again = follow_up(query, turns, _texts(readable)) if turns and points_back(query) else None
    ranked, cut, scores = ranked_by(query if again is None else again.reading)
    if again is not None and ranked:
        query, turn = again.reading, again.turn
    elif again is not None:  # nothing relevant read with the turn: the question alone
        ranked, cut, scores = ranked_by(query)
    reading = Reading(query, turn, scores.method, scores.note)
    return Ranked(tuple(ranked), readable.excluded + tuple(cut), MappingProxyType({}), reading)


def _texts(readable: Readable) -> list[str]:
    """The title and text of each readable passage, as relevance reads them."""
    return [titled(p.title, p.text) for _, p in readable.passages]


def compression_placement(setup: Setup, ranked: Ranked, planned: Planned) -> Placement:
    """Where compression runs: off without a strategy, else the placement its mode asks for
    at this budget (``all``: before selection, ``fill``: after it)."""
    compressor = setup.strategies.compression
    if compressor is None:
        return Placement.OFF
    mode = compressor.mode_for(ranked.candidates, planned.budget.context)
    try:
        return Placement(mode)
    except ValueError:
        allowed = ", ".join(repr(p.value) for p in Placement if p is not Placement.OFF)
        raise ConfigError(
            f"compression strategy {type(compressor).__name__}.mode_for returned {mode!r}; "
            f"it must return one of {allowed}",
            field="strategy.compression",
        ) from None


# A cut that saves this many characters saves tokens too (see compress), on any text but a
# contrived one (a long run of one symbol can be a single token), so it is not counted.
_SURE_SAVING_CHARS = 64


def compress(setup: Setup, ranked: Ranked, planned: Planned) -> Ranked:
    """Compression before selection: the best candidates compressed, so more fit (each to a
    share of the sources block's budget)."""
    assert setup.strategies.compression is not None
    shorter, done = setup.strategies.compression.before_selection(
        ranked.reading.query, ranked.candidates, planned.budget.context
    )
    # A cut that saves few characters may save no tokens (a short sentence dropped, a mark in
    # its place): such a cut is counted, and undone unless its fenced text is shorter. A cut
    # of a passage whose whole text cannot be counted (an unbroken run too long, which the cut
    # may drop) is undone too: the report counts the original, and selection then excludes it
    # as untokenizable, as it would have been uncut.
    body, count, long_run = setup.fmt.block.body, setup.counter.count, setup.counter.long_run

    def undo(cut: Candidate, original: str) -> bool:
        whole = body(cut._replace(text=original))  # rendered once, for both checks
        if long_run(whole) is not None:
            return True
        return len(original) - len(cut.text) < _SURE_SAVING_CHARS and count(body(cut)) >= count(
            whole
        )

    undone = {
        c.id for c in shorter if (found := done.get(c.id)) is not None and undo(c, found.original)
    }
    if undone:
        originals = {c.id: c for c in ranked.candidates}
        shorter = [originals[c.id] if c.id in undone else c for c in shorter]
        done = {i: found for i, found in done.items() if i not in undone}
    compressed = MappingProxyType({**ranked.compressed, **done})
    return replace(ranked, candidates=tuple(shorter), compressed=compressed)


def select(
    setup: Setup,
    ranked: Ranked,
    planned: Planned,
    dedup: DedupSession,
    placement: Placement = Placement.OFF,
) -> Selected:
    """Selection: the strategy offers candidates in its order; each offer is one admission
    (dedup placement, size bound, guard, price, dedup verdict: see
    :mod:`ctxasm.stages.selection_admission`) against ``dedup``, the assembly's dedup chain.

    Where compression runs after selection (``placement``), a planner may have a pick that
    does not fit whole compressed at once (:attr:`SelectionContext.shrink`), before smaller
    passages take the room it needs.

    With :attr:`Setup.stickiness`, the strategy sees the previous turn's passages with raised
    scores (:func:`ctxasm.prompt_cache.prefer_previous`), those it showed compressed in the
    same form (:func:`ctxasm.prompt_cache.previous_forms`); the kept ones get their relevance
    scores back."""
    request, counter, block = setup.request, setup.counter, setup.fmt.block
    previous = setup.previous  # stable labels may run past the number of candidates
    worst_label = max(1, len(ranked.candidates)) + (previous.next_label - 1 if previous else 0)
    meter = Meter(
        counter,
        lambda c: block.pricing(c, worst_label),
        every_id=getattr(setup.fmt, "shows_every_id", False),
    )
    heading = counter.count(block.heading) + _BLOCK_SEAM
    query = ranked.reading.query
    weight, previous = setup.stickiness, setup.previous
    favoured = frozenset(i for i, _ in previous.sources) if weight > 0 and previous else frozenset()
    candidates, forms = ranked.candidates, {}
    if weight > 0 and previous is not None:
        # a source shown compressed is offered as it was shown, so it stays byte-identical
        forms = prompt_cache.previous_forms(previous, candidates, block)
        candidates = tuple(forms[c.id].candidate if c.id in forms else c for c in candidates)
        candidates = tuple(prompt_cache.prefer_previous(candidates, previous, weight))
    shrunk: dict[str, Compressed] = {}
    compressor = setup.strategies.compression
    shrink = None
    if compressor is not None and placement is Placement.AFTER_SELECTION:
        originals = {c.id: c for c in ranked.candidates}

        def shrink(candidate: Candidate, packing: Packing, in_play: Sequence[Candidate]) -> bool:
            # Cut from the passage as given, with its own score (a previous turn's passage is
            # offered with a raised one); one shown compressed before stays as it was shown.
            if candidate.id in forms or candidate.id not in originals:
                return False
            original = originals[candidate.id]._replace(chosen=candidate.chosen)
            done = _cut_pick(compressor, query, original, packing, in_play)
            if done is None or not packing.holds(candidate.id):
                return False  # a strategy's word is not taken for what the packing kept
            shrunk[candidate.id] = done
            return True

    # The class is the question's own: an earlier turn it was read with ("Tell me about the
    # Danube." before "Where does it end?") lends it a subject, not its form.
    query_class = request.query_class or classify(request.query)
    context = SelectionContext(query, query_class, favoured, shrink)
    packing = Packing(
        max(0, planned.budget.context - heading),
        meter,
        dedup,
        context,
        setup.strategies.guard,
    )
    setup.strategies.selection.select(candidates, packing)
    packed = _relevance_scores(setup, packing, ranked)
    reused = {
        c.id: forms[c.id]
        for c in packed.kept
        if c.id in forms and c.text == forms[c.id].candidate.text
    }
    compressed = {**ranked.compressed, **reused, **shrunk}
    return Selected(ranked, packed, MappingProxyType(compressed))


def _cut_pick(
    compressor: CompressionStrategy,
    query: str,
    pick: Candidate,
    packing: Packing,
    in_play: Sequence[Candidate],
) -> Compressed | None:
    """A planner's ``pick``, just turned away as too big, compressed into the room left and
    admitted by the request's compression strategy, or ``None``: by its ``cut_pick`` (given
    the planner's open candidates, whose titles name the next hops), or, for a strategy
    without one, by its ``after_selection`` of that one candidate."""
    cut = getattr(compressor, "cut_pick", None)
    if cut is None:
        return compressor.after_selection(query, [pick], packing).get(pick.id)
    found: Compressed | None = cut(query, pick, packing, in_play)
    return found


def _relevance_scores(setup: Setup, packing: Packing, ranked: Ranked) -> Packed:
    """The packing, its kept passages with their relevance scores (undoing any stickiness)."""
    packed = packing.snapshot()
    if setup.stickiness <= 0:
        return packed
    kept = prompt_cache.relevance_scores(packed.kept, ranked.candidates, packed.merged_into)
    return replace(packed, kept=tuple(kept))


def compress_to_fill(setup: Setup, selected: Selected) -> Selected:
    """Compression after selection: passages that did not fit whole are offered again,
    compressed, into the room left (each offer is an admission, as in selection)."""
    assert setup.strategies.compression is not None
    packing = Packing.resume(selected.packed)
    done = setup.strategies.compression.after_selection(
        selected.ranked.reading.query, selected.ranked.candidates, packing
    )
    compressed = MappingProxyType({**selected.compressed, **done})
    packed = _relevance_scores(setup, packing, selected.ranked)
    return Selected(selected.ranked, packed, compressed)


def order(setup: Setup, selected: Selected) -> Ordered:
    """Ordering: place the kept passages."""
    packed, ordering, previous = selected.packed, setup.strategies.ordering, setup.previous
    labels = None
    if previous is None:
        ordered = ordering.order(packed.kept)
    else:  # planning for the prompt cache: what is unchanged first, labels kept
        if isinstance(ordering, CacheStableOrdering):
            stable = prompt_cache.stable_ids(previous, packed.kept, setup.fmt.block)
            ordered = ordering.order_after(packed.kept, stable)
        else:
            ordered = ordering.order(packed.kept)
        labels = MappingProxyType(prompt_cache.assign_labels(previous, ordered))
    return Ordered(
        tuple(ordered),
        selected.ranked.excluded + packed.excluded,
        selected.compressed,
        packed.context.query_class,
        not selected.ranked.candidates,
        selected.ranked.reading,
        labels,
    )


def render(setup: Setup, planned: Planned, ordered: Ordered, count: RequestCount) -> Rendering:
    """Format: the renderer of the request in the request's format, around the sources block
    or, when no passage is left, the note saying why."""
    note = NO_CONTEXT_NOTE if ordered.no_relevant_context else NO_SOURCES_NOTE
    return Rendering(setup.fmt, setup.counter, planned.parts, note, count, ordered.labels)


def verify(rendering: Rendering, ordered: Ordered, planned: Planned) -> Verified:
    """Verify: recount the rendered request exactly; while over, drop the lowest-value
    passage and render again."""
    budget = planned.budget
    kept, rendered, total, context_tokens, dropped = fit(
        list(ordered.candidates),
        rendering.request,
        rendering.count,
        rendering.context_tokens,
        budget.prompt_limit,
        budget.context,
    )
    excluded = ordered.excluded + tuple(dropped)
    return Verified(tuple(kept), rendered, total, context_tokens, excluded, planned.history, budget)


def give_back(setup: Setup, rendering: Rendering, verified: Verified) -> Verified:
    """History: room the passages left unused goes back to dropped turns, as far as the exact
    recount allows (see :meth:`ctxasm.stages.history.HistoryStep.give_back`)."""
    parts, kept = rendering.parts, list(verified.kept)

    def with_turns(turns: tuple[Message, ...]) -> Rendered:
        return rendering.request(kept, replace(parts, history=turns))

    back = setup.history.give_back(
        verified.history,
        with_turns,
        rendering.count,
        setup.counter.count,
        verified.budget,
        verified.rendered,
        verified.total,
    )
    return replace(
        verified, rendered=back.rendered, total=back.total, history=back.plan, budget=back.budget
    )


def report(
    setup: Setup,
    ordered: Ordered,
    rendering: Rendering,
    verified: Verified,
    timings_ms: Mapping[str, float],
) -> Assembly:
    """Report: the assembly and its report, a pure function of the final state."""
    request, counter, history = setup.request, setup.counter, verified.history
    reading = ordered.reading
    excluded = (
        verified.excluded
        + tuple(history.exclusions(request.history, setup.history.cost))
        + tuple(setup.history.repeat_exclusions())
    )
    built = build_report(
        model=setup.model,
        counter=counter,
        budget=verified.budget,
        ordered=list(verified.kept),
        excluded=list(excluded),
        positions={p.id: i for i, p in enumerate(request.passages)},
        total_tokens=verified.total,
        context_tokens=verified.context_tokens,
        considered=len(request.passages),
        no_relevant_context=ordered.no_relevant_context,
        timings_ms=timings_ms,
        compressed=ordered.compressed,
        query_class=ordered.query_class,
        block=rendering.block,
        exact_count=rendering.count.exact,
        history={
            "turns": len(request.history),
            "kept": len(history.kept),
            "tokens": sum(counter.count(t.content) for t in history.turns),
            # the trimmed turns, and a last one that repeated the question
            "dropped": sorted([*history.dropped, *setup.history.repeated()]),
            "summary_tokens": counter.count(history.summary) if history.summary else 0,
            "relevance_turn": reading.turn,
        },
        labels=ordered.labels,
        query=reading.query,
        relevance={"method": reading.method, "note": reading.note or None},
    )
    rendered, previous = verified.rendered, setup.previous
    if previous is not None and ordered.labels is not None:
        cache, rendered = prompt_cache.plan(
            model=setup.model,
            fmt=setup.fmt,
            counter=counter,
            parts=rendering.parts,
            previous=previous,
            kept=verified.kept,
            labels=ordered.labels,
            rendered=rendered,
            total_tokens=verified.total,
        )
        built = replace(built, cache=cache)
    return Assembly(rendered.messages, rendered.system, rendered.text, built, verified.kept)


def fit(
    ordered: list[Candidate],
    render: Callable[[list[Candidate]], R],
    count_request: Callable[[R], int],
    count_block: Callable[[list[Candidate]], int],
    prompt_limit: int,
    context_limit: int,
) -> tuple[list[Candidate], R, int, int, list[Exclusion]]:
    """Render and recount exactly; while over a limit, drop the lowest-scoring passage."""
    dropped: list[Exclusion] = []
    while True:
        checkpoint()  # each round renders and counts the whole request
        rendered = render(ordered)
        total = count_request(rendered)
        block = count_block(ordered)
        over_context = bool(ordered) and block > context_limit
        if (total <= prompt_limit and not over_context) or not ordered:
            return ordered, rendered, total, block, dropped
        weakest = min(ordered, key=lambda c: (c.score, -c.request_index))
        ordered = [c for c in ordered if c is not weakest]
        detail = (
            f"the rendered request took {total} tokens (limit {prompt_limit}) and the sources "
            f"{block} (limit {context_limit}); dropped the lowest-scoring passage"
        )
        dropped.append(Exclusion(weakest.id, "verify", Reason.OVER_BUDGET, detail))
