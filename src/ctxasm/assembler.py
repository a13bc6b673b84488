"""The assembler: the only place that knows the order of the slots.

access -> budget (with history trimmed to its allowance) -> relevance -> selection (consulting
the guard and dedup for each offered passage; compression before it in ``all`` mode, after it in
``fill`` mode) -> ordering -> format -> verify (dropped history turns may take room left) ->
report
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxasm import registry
from ctxasm.config import AssemblerConfig, defaults_error
from ctxasm.errors import BudgetError, ConfigError, RequestError, TokenizerError
from ctxasm.formatting import Format, PromptParts, get_format
from ctxasm.formatting.blocks import NO_CONTEXT_NOTE, NO_SOURCES_NOTE, RULES
from ctxasm.model import (
    Assembly,
    Budget,
    Candidate,
    Exclusion,
    Message,
    Reason,
    Request,
    Strategies,
    StrategySpec,
)
from ctxasm.models import ModelSpec
from ctxasm.providers import AnthropicCounter, anthropic_counter
from ctxasm.query_class import classify
from ctxasm.report import build_report
from ctxasm.schema import parse_request
from ctxasm.stages.access import filter_readable
from ctxasm.stages.budget import plan_budget
from ctxasm.stages.compression import Compressed
from ctxasm.stages.dedup import DedupChain, Verdict
from ctxasm.stages.history import SUMMARY_HEADING, HistoryPlan, Summarizer, trim_history
from ctxasm.stages.packing import Meter, Packing, SelectionContext
from ctxasm.stages.relevance import rank
from ctxasm.tokens import TokenCounter, get_counter

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Assembler", "assemble"]

DEFAULT_SYSTEM_PROMPT = "You are a careful assistant that answers questions from sources."
# Strategies built per parameter set are kept for reuse, up to this many.
_MAX_CACHED_STRATEGIES = 256
# Tokens the sources block may merge or add at its seams with the question.
_BLOCK_SEAM = 2


class _Clock:
    """Milliseconds per stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000


class _TimedDedup:
    """A dedup chain whose time is booked to the dedup stage (called per candidate, so it
    keeps the clock arithmetic inline)."""

    def __init__(self, chain: DedupChain, clock: _Clock) -> None:
        self.chain, self.ms = chain, clock.ms
        self.ms.setdefault("dedup", 0.0)

    def placement(self, candidate: Candidate) -> Verdict:
        started = time.perf_counter()
        found = self.chain.placement(candidate)
        self.ms["dedup"] += (time.perf_counter() - started) * 1000
        return found

    def verdict(self, candidate: Candidate) -> Verdict:
        started = time.perf_counter()
        found = self.chain.verdict(candidate)
        self.ms["dedup"] += (time.perf_counter() - started) * 1000
        return found

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        started = time.perf_counter()
        self.chain.accept(candidate, replaced)
        self.ms["dedup"] += (time.perf_counter() - started) * 1000


class Assembler:
    """Builds prompts from requests with one validated configuration.

    >>> assembler = Assembler({"defaults": {"model": "gpt-4o-mini"}})
    >>> result = assembler.assemble(query="Who wrote it?", passages=[{"text": "Ann wrote it."}])
    >>> result.report.selected
    1
    """

    def __init__(
        self,
        config: AssemblerConfig | Mapping[str, Any] | str | Path | None = None,
        *,
        summarizer: Summarizer | None = None,
    ):
        """``summarizer``, when given, turns dropped history turns into a summary (see
        :mod:`ctxasm.stages.history`)."""
        self.config = AssemblerConfig.load(config)
        self.summarizer = summarizer
        self._strategies: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._default_strategy = self.config.defaults.get("strategy") or {}
        self._check_defaults()

    def _check_defaults(self) -> None:
        """Refuse, with a :class:`ConfigError`, defaults that would fail every request: build
        the configured strategies, find the default model and format, load the model's
        tokenizer (cached for the process) and plan the budget of an empty request."""
        try:
            request = parse_request(self._merge({"query": "check", "passages": []}))
            self._resolve(request.strategy)
            model = self.config.models.get(request.model)
            fmt = get_format(request.format, request.template)
        except (RequestError, BudgetError) as error:
            raise defaults_error(error) from None
        try:
            counter = get_counter(model.tokenizer)
            system = f"{request.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n{RULES}"
            plan_budget(request, model, counter, fmt, PromptParts(system, (), request.query))
        except TokenizerError as error:
            raise ConfigError(
                f"defaults.model {model.name!r} counts with {model.tokenizer!r}, which cannot "
                f"be loaded: {error.message}; fix the tokenizer (models.{model.name}.tokenizer "
                "in the config) or choose another defaults.model",
                field="defaults.model",
            ) from None
        except (RequestError, BudgetError) as error:
            raise defaults_error(error) from None

    def _merge(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        merged = {**self.config.defaults, **fields}
        given = fields.get("strategy")
        if isinstance(given, Mapping) and isinstance(self._default_strategy, Mapping):
            merged["strategy"] = {**self._default_strategy, **given}
        return merged

    def _build(self, slot: str, spec: StrategySpec, where: str) -> Any:
        try:
            key = f"{slot}:{json.dumps(spec.to_config(), sort_keys=True)}"
        except TypeError:
            return registry.build(slot, spec, where)
        with self._lock:
            cached = self._strategies.get(key)
        if cached is None:
            cached = registry.build(slot, spec, where)
            with self._lock:
                if len(self._strategies) >= _MAX_CACHED_STRATEGIES:
                    self._strategies.clear()
                self._strategies[key] = cached
        return cached

    def _resolve(self, chosen: Strategies) -> dict[str, Any]:
        return {
            "guard": None
            if chosen.guard is None
            else self._build("guard", chosen.guard, "strategy.guard"),
            "relevance": self._build("relevance", chosen.relevance, "strategy.relevance"),
            "dedup": [
                self._build("dedup", spec, f"strategy.dedup[{i}]")
                for i, spec in enumerate(chosen.dedup)
            ],
            "selection": self._build("selection", chosen.selection, "strategy.selection"),
            "compression": None
            if chosen.compression is None
            else self._build("compression", chosen.compression, "strategy.compression"),
            "ordering": self._build("ordering", chosen.ordering, "strategy.ordering"),
        }

    def assemble(
        self, request: Request | Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Assembly:
        """Assemble one request, given as a :class:`Request`, request JSON, or keywords."""
        started = time.perf_counter()
        if isinstance(request, Request):
            if fields:
                raise RequestError(
                    f"give either a Request or request fields, not both (got {sorted(fields)})",
                    field=sorted(fields)[0],
                )
            parsed = parse_request(request, max_request_chars=self.config.max_request_chars)
        else:
            data = {**(request or {}), **fields}
            parsed = parse_request(
                self._merge(data), max_request_chars=self.config.max_request_chars
            )
        return self._run(parsed, started)

    def _plan(
        self,
        request: Request,
        model: ModelSpec,
        counter: TokenCounter,
        fmt: Format,
        cost: Callable[[Message], int],
    ) -> tuple[HistoryPlan, PromptParts, Budget]:
        """The history that fits, the prompt parts around the sources, and the budget."""
        system = f"{request.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n{RULES}"
        bare = plan_budget(request, model, counter, fmt, PromptParts(system, (), request.query))
        history = self._plan_history(request, bare, cost)
        if history.summary:
            system = f"{system}\n\n{SUMMARY_HEADING}\n{history.summary}"
        parts = PromptParts(system, history.turns, request.query)
        return history, parts, plan_budget(request, model, counter, fmt, parts)

    def _plan_history(
        self, request: Request, bare: Budget, cost: Callable[[Message], int]
    ) -> HistoryPlan:
        """Which history turns fit, and the summary of the others when there is a summariser."""
        if not request.history:
            return HistoryPlan((), (), 0)
        room = bare.prompt_limit - bare.system - bare.query - bare.overhead
        plan = trim_history(request.history, room, request.history_policy, cost)
        if not plan.dropped or self.summarizer is None:
            return plan
        turns = request.history
        minimum = request.history_policy.min_recent_turns
        original = plan
        while True:
            summary = self.summarizer([turns[i] for i in plan.dropped])
            if not isinstance(summary, str) or not summary.strip():
                if not isinstance(summary, str):
                    warnings.warn(
                        f"the summarizer returned {type(summary).__name__}, not a string; "
                        "no summary is used",
                        stacklevel=3,
                    )
                return original
            used = sum(cost(turn) for turn in plan.turns)
            summary_cost = cost(Message("user", f"{SUMMARY_HEADING}\n{summary}"))
            if used + summary_cost <= plan.allowance:
                return HistoryPlan(plan.kept, plan.dropped, plan.allowance, summary.strip())
            if len(plan.kept) <= minimum:
                return original  # no summary fits beside the turns that must stay
            # Make room: the oldest kept turn (and an assistant turn it would leave first)
            # joins the summarised ones.
            kept = list(plan.kept[1:])
            while kept and kept[0][1].role == "assistant" and len(kept) > minimum:
                kept.pop(0)
            first = kept[0][0] if kept else len(turns)
            plan = HistoryPlan(tuple(kept), tuple(range(first)), plan.allowance)

    def _request_counter(
        self, request: Request, fmt: Format, counter: TokenCounter, model: ModelSpec
    ) -> _RequestCounter:
        """How the verify stage counts the whole request: the format's count, or Anthropic's
        counting endpoint when the config asks for it and a key is set."""
        api = anthropic_counter(self.config.providers) if fmt.name == "anthropic" else None
        name = request.model
        if name == model.name and model.aliases:
            # the registry's short name is not an API id; its aliases are
            name = next((a for a in model.aliases if a.endswith("-latest")), model.aliases[0])
        return _RequestCounter(name, fmt, counter, model, api)

    def _run(self, request: Request, started: float) -> Assembly:
        clock = _Clock()
        model = self.config.models.get(request.model)
        fmt = get_format(request.format, request.template)
        strategies = self._resolve(request.strategy)
        counter = get_counter(model.tokenizer)
        passages = request.passages
        with clock.stage("access"):
            readable, excluded = filter_readable(
                passages, request.principal, allow_public=request.allow_public
            )

        def turn_cost(turn: Message) -> int:
            return model.tokens_per_message + counter.count(turn.role) + counter.count(turn.content)

        with clock.stage("budget"):
            history, parts, budget = self._plan(request, model, counter, fmt, turn_cost)
        with clock.stage("relevance"):
            ranked, cut = rank(
                request.query,
                readable,
                strategies["relevance"],
                min_score=request.min_score,
                top_k=request.top_k,
            )
        excluded += cut
        compressor = strategies["compression"]
        compressed: dict[str, Compressed] = {}
        mode = ""
        if compressor is not None:
            with clock.stage("compression"):
                mode = compressor.mode_for(ranked, budget.context)
                ranked, compressed = compressor.before_selection(request.query, ranked, mode)
        with clock.stage("selection"):
            worst_label = max(1, len(ranked))
            block = fmt.block
            meter = Meter(counter, lambda c: block.pricing(c, worst_label))
            chain = DedupChain([strategy.session() for strategy in strategies["dedup"]])
            heading = counter.count(block.heading) + _BLOCK_SEAM
            context = SelectionContext(
                request.query, request.query_class or classify(request.query)
            )
            packing = Packing(
                max(0, budget.context - heading),
                meter,
                _TimedDedup(chain, clock),
                context,
                strategies["guard"],
            )
            strategies["selection"].select(ranked, packing)
        if compressor is not None:
            with clock.stage("compression"):
                compressed.update(compressor.after_selection(request.query, ranked, packing, mode))
        excluded += packing.excluded
        with clock.stage("ordering"):
            ordered = strategies["ordering"].order(packing.kept)
        note = NO_CONTEXT_NOTE if not ranked else NO_SOURCES_NOTE
        count_request = self._request_counter(request, fmt, counter, model)
        with clock.stage("verify"):
            ordered, rendered, total, context_tokens, dropped = _fit(
                ordered,
                lambda kept: fmt.render(parts, block.render(kept) if kept else note, kept),
                count_request,
                lambda kept: counter.count(block.render(kept) if kept else note),
                budget.prompt_limit,
                budget.context,
            )
        excluded += dropped
        if history.dropped and history.summary is None and request.history_policy.reclaim:
            with clock.stage("history"):
                history, parts, rendered, total, budget = _give_back_history(
                    request.history,
                    history,
                    parts,
                    lambda p: fmt.render(p, block.render(ordered) if ordered else note, ordered),
                    count_request,
                    budget,
                    rendered,
                    total,
                    counter,
                )
        excluded += history.exclusions(request.history, turn_cost)
        clock.ms["total"] = (time.perf_counter() - started) * 1000
        positions = {p.id: i for i, p in enumerate(passages)}
        report = build_report(
            model=model,
            counter=counter,
            budget=budget,
            ordered=ordered,
            excluded=excluded,
            positions=positions,
            total_tokens=total,
            context_tokens=context_tokens,
            considered=len(passages),
            no_relevant_context=not ranked,
            timings_ms=clock.ms,
            compressed=compressed,
            query_class=context.query_class,
            block=block,
            exact_count=count_request.exact,
            history={
                "turns": len(request.history),
                "kept": len(history.kept),
                "tokens": sum(counter.count(t.content) for t in history.turns),
                "dropped": list(history.dropped),
                "summary_tokens": counter.count(history.summary) if history.summary else 0,
            },
        )
        return Assembly(rendered.messages, rendered.system, rendered.text, report, tuple(ordered))


class _RequestCounter:
    """Counts whole requests for the verify stage (see :meth:`Assembler._request_counter`)."""

    def __init__(
        self,
        name: str,
        fmt: Format,
        counter: TokenCounter,
        model: ModelSpec,
        api: AnthropicCounter | None,
    ) -> None:
        self.name, self.fmt, self.counter, self.model, self.api = name, fmt, counter, model, api

    @property
    def exact(self) -> bool:
        """Whether the counts are exact: the tokenizer is, or the provider counted."""
        return self.counter.exact or self.api is not None

    def __call__(self, rendered: Any) -> int:
        if self.api is not None:
            try:
                return self.api.count(self.name, rendered)
            except TokenizerError as exc:
                self.api = None  # the estimate stands for the rest of this assembly
                warnings.warn(f"{exc.message}; using the estimate", stacklevel=2)
        return self.fmt.count(rendered, self.counter, self.model)


def _give_back_history(
    turns: Sequence[Message],
    history: HistoryPlan,
    parts: PromptParts,
    render: Callable[[PromptParts], Any],
    count_request: Callable[[Any], int],
    budget: Budget,
    rendered: Any,
    total: int,
    counter: TokenCounter,
) -> tuple[HistoryPlan, PromptParts, Any, int, Budget]:
    """:func:`_reclaim_history`, with the budget's sections updated to what was taken."""
    before = total
    history, parts, rendered, total = _reclaim_history(
        turns, history, parts, render, count_request, budget.prompt_limit, rendered, total
    )
    kept_tokens = sum(counter.count(turn.content) for turn in parts.history)
    grown = total - before
    budget = replace(
        budget,
        history=kept_tokens,
        overhead=budget.overhead + grown - (kept_tokens - budget.history),
        context=max(0, budget.context - grown),
    )
    return history, parts, rendered, total, budget


def _reclaim_history(
    turns: Sequence[Message],
    history: HistoryPlan,
    parts: PromptParts,
    render: Callable[[PromptParts], Any],
    count_request: Callable[[Any], int],
    prompt_limit: int,
    rendered: Any,
    total: int,
) -> tuple[HistoryPlan, PromptParts, Any, int]:
    """Give room the passages left unused back to dropped turns, newest first and from a user
    turn on, as many as the exact recount allows. More turns never take fewer tokens, so a
    binary search over the possible starting turns needs only a logarithmic number of recounts
    (each one a request to the provider, when Anthropic counts)."""
    first = history.kept[0][0] if history.kept else len(turns)
    starts = [i for i in range(first - 1, -1, -1) if turns[i].role == "user"]  # newest first

    def trial(start: int) -> tuple[HistoryPlan, PromptParts, Any, int]:
        added = tuple((i, turns[i]) for i in range(start, first))
        plan = HistoryPlan(added + history.kept, tuple(range(start)), history.allowance)
        trial_parts = PromptParts(parts.system, plan.turns, parts.query)
        trial_rendered = render(trial_parts)
        return plan, trial_parts, trial_rendered, count_request(trial_rendered)

    best = (history, parts, rendered, total)
    low, high = 0, len(starts) - 1  # the last index of starts that still fits
    while low <= high:
        middle = (low + high) // 2
        found = trial(starts[middle])
        if found[3] <= prompt_limit:
            best, low = found, middle + 1
        else:
            high = middle - 1
    return best


def _fit(
    ordered: list[Candidate],
    render: Callable[[list[Candidate]], Any],
    count_request: Callable[[Any], int],
    count_block: Callable[[list[Candidate]], int],
    prompt_limit: int,
    context_limit: int,
) -> tuple[list[Candidate], Any, int, int, list[Exclusion]]:
    """Render and recount exactly; while over a limit, drop the lowest-scoring passage."""
    dropped: list[Exclusion] = []
    while True:
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


_DEFAULT_ASSEMBLER: Assembler | None = None


def assemble(query: str | None = None, passages: Any = None, /, **fields: Any) -> Assembly:
    """Assemble a prompt with the default configuration.

    ``ctxasm.assemble(query, passages, model="gpt-4o", **options)`` or
    ``ctxasm.assemble(**request_json)``: every request field is a keyword of the same name.
    """
    global _DEFAULT_ASSEMBLER  # noqa: PLW0603 - built on first use, shared afterwards
    if _DEFAULT_ASSEMBLER is None:
        _DEFAULT_ASSEMBLER = Assembler()
    data = dict(fields)
    if query is not None:
        data["query"] = query
    if passages is not None:
        data["passages"] = passages
    return _DEFAULT_ASSEMBLER.assemble(data)
