"""The assembler: the only place that knows the order of the slots.

One assembly runs these steps of :mod:`ctxasm.pipeline`, in this order, each taking and
returning frozen state (``docs/pipeline.md`` draws them):

1. access: drop what the principal may not read;
2. budget: the token envelope of the sources block, with history trimmed to its allowance
   (and summarised, when there is a summariser);
3. relevance: score, cut below the thresholds and past top k, rank;
4. compression, placed by the assembler: before selection (``all``), after it (``fill``) or off;
5. selection: the strategy's offers, each one an admission (dedup placement, size bound,
   guard, price, dedup verdict; see :mod:`ctxasm.stages.selection_admission`);
6. ordering;
7. format;
8. verify: recount exactly, drop the weakest passage while over;
9. history: room the passages left unused goes back to dropped turns;
10. report.

Each stage starts at a checkpoint of :mod:`ctxasm.deadline`, and the stages check it in their
loops: under a deadline (the HTTP service's ``request_timeout_s``) an assembly stops soon after
it passes; without one the checkpoints cost nothing to speak of.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from ctxasm import pipeline, registry
from ctxasm.config import AssemblerConfig, defaults_error
from ctxasm.data import Assembly, Candidate, Message, Request, Strategies, StrategySpec
from ctxasm.deadline import checkpoint
from ctxasm.errors import (
    ArgumentTypeError,
    BudgetError,
    ConfigError,
    RequestError,
    TokenizerError,
    TokenizerFileError,
)
from ctxasm.formatting import Format, PromptParts, Rendered, get_format
from ctxasm.formatting.measure import MeasuredPrompt
from ctxasm.models import ModelSpec
from ctxasm.pipeline import DEFAULT_SYSTEM_PROMPT, Placement, ResolvedStrategies, Setup
from ctxasm.providers import AnthropicCounter, anthropic_counter
from ctxasm.schema import parse_request
from ctxasm.stages.budget import plan_budget
from ctxasm.stages.dedup import DedupChain, DedupStrategy, Verdict
from ctxasm.stages.history import HistoryStep, Summarizer, repeats_query
from ctxasm.stages.ordering import OrderingStrategy
from ctxasm.stages.relevance import RelevanceStrategy
from ctxasm.stages.selection import SelectionStrategy
from ctxasm.stages.selection_admission import Guard
from ctxasm.tokens import TokenCounter, get_counter
from ctxasm.validation import received, type_name

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Assembler", "assemble"]

# Strategies built per parameter set are kept for reuse, up to this many.
_MAX_CACHED_STRATEGIES = 256


class Assembler:
    """Builds prompts from requests with one validated configuration.

    >>> assembler = Assembler({"defaults": {"model": "gpt-4o-mini"}})
    >>> result = assembler.assemble(query="Who wrote it?", passages=[{"text": "Ann wrote it."}])
    >>> result.report.selected
    1
    """

    def __init__(
        self,
        config: AssemblerConfig | Mapping[str, object] | str | Path | None = None,
        *,
        summarizer: Summarizer | None = None,
    ):
        """``summarizer``, when given, turns dropped history turns into a summary (see
        :mod:`ctxasm.stages.history`)."""
        if summarizer is not None and not callable(summarizer):
            raise ArgumentTypeError(
                "summarizer must be a function taking the dropped history turns (a list of "
                f"Message) and returning their summary as a string; got {received(summarizer)}",
                field="summarizer",
            )
        self.config = AssemblerConfig.load(config)
        self.summarizer = summarizer
        self._strategies: dict[str, object] = {}
        self._lock = threading.Lock()
        self._default_strategy = self.config.defaults.get("strategy") or {}
        self._check_defaults()

    def assemble(
        self,
        request: Request | Mapping[str, object] | str | None = None,
        passages: object = None,
        /,
        **fields: object,
    ) -> Assembly:
        """Assemble one request, given as a :class:`Request`, request JSON, or keywords; or as
        :func:`ctxasm.assemble` takes it: ``assemble(query, passages, **fields)``."""
        started = time.perf_counter()
        if isinstance(request, str):  # the question first, as ctxasm.assemble takes it
            request, fields = None, positional_fields(request, passages, fields)
        elif passages is not None:
            raise ArgumentTypeError(
                "passages go second after a question, assemble(query, passages, ...), not after "
                f"a request; got {type_name(request)} first",
                field="passages",
            )
        if isinstance(request, Request):
            if fields:
                raise RequestError(
                    f"give either a Request or request fields, not both (got {sorted(fields)})",
                    field=sorted(fields)[0],
                )
            parsed = parse_request(request, max_request_chars=self.config.max_request_chars)
        else:
            if request is not None and not isinstance(request, Mapping):
                raise _not_a_request(request)
            data = {**(request or {}), **fields}
            parsed = parse_request(
                self._merge(data), max_request_chars=self.config.max_request_chars
            )
        return self._run(parsed, started)

    def _run(self, request: Request, started: float) -> Assembly:
        """The pipeline: one step per slot, in slot order (see the module docstring)."""
        clock = _Clock()
        setup = self._setup(request)
        with clock.stage("access"):
            readable = pipeline.access(setup)
        with clock.stage("budget"):
            planned = pipeline.plan(setup)
        with clock.stage("relevance"):
            ranked = pipeline.relevance(setup, readable)
        placement = _compression_placement(setup, ranked, planned, clock)
        if placement is Placement.BEFORE_SELECTION:
            with clock.stage("compression"):
                ranked = pipeline.compress(setup, ranked, planned)
        with clock.stage("selection"):
            dedup = _timed_dedup(setup, clock)
            selected = pipeline.select(setup, ranked, planned, dedup, placement)
        if placement is Placement.AFTER_SELECTION:
            with clock.stage("compression"):
                selected = pipeline.compress_to_fill(setup, selected)
        with clock.stage("ordering"):
            ordered = pipeline.order(setup, selected)
        rendering = pipeline.render(setup, planned, ordered, self._request_counter(setup))
        with clock.stage("verify"):
            verified = pipeline.verify(rendering, ordered, planned)
        if setup.history.reclaims(verified.history):
            with clock.stage("history"):
                verified = pipeline.give_back(setup, rendering, verified)
        clock.ms["total"] = (time.perf_counter() - started) * 1000
        checkpoint()
        return pipeline.report(setup, ordered, rendering, verified, clock.ms)

    def _setup(self, request: Request) -> Setup:
        """What the request resolves to: its model, format, strategies and tokenizer."""
        model = self.config.models.get(request.model)
        fmt = get_format(request.format, request.template)
        strategies = self._resolve(request.strategy)
        counter = get_counter(model.tokenizer)
        turns = request.history
        repeat = len(turns) - 1 if repeats_query(turns, request.query) else None
        history = HistoryStep(
            turns if repeat is None else turns[:repeat],
            request.history_policy,
            _TurnCost(model, counter),
            self.summarizer,
            repeat,
        )
        return Setup(request, model, fmt, counter, strategies, history)

    def _resolve(self, chosen: Strategies) -> ResolvedStrategies:
        guard, compression = chosen.guard, chosen.compression
        return ResolvedStrategies(
            relevance=cast(
                RelevanceStrategy, self._build("relevance", chosen.relevance, "strategy.relevance")
            ),
            dedup=tuple(
                cast(DedupStrategy, self._build("dedup", spec, f"strategy.dedup[{i}]"))
                for i, spec in enumerate(chosen.dedup)
            ),
            selection=cast(
                SelectionStrategy, self._build("selection", chosen.selection, "strategy.selection")
            ),
            compression=None
            if compression is None
            else cast(
                pipeline.CompressionStrategy,
                self._build("compression", compression, "strategy.compression"),
            ),
            ordering=cast(
                OrderingStrategy, self._build("ordering", chosen.ordering, "strategy.ordering")
            ),
            guard=None
            if guard is None
            else cast(Guard, self._build("guard", guard, "strategy.guard")),
        )

    def _build(self, slot: str, spec: StrategySpec, where: str) -> object:
        try:
            key = f"{slot}:{json.dumps(spec.to_config(), sort_keys=True)}"
        except (TypeError, ValueError, RecursionError):
            # not JSON (an object, a cycle, an int too long to write, deep nesting): built
            # uncached, and its checks name what is wrong
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

    def _request_counter(self, setup: Setup) -> _RequestCounter:
        """How the verify stage counts the whole request: the format's count, or Anthropic's
        counting endpoint when the config asks for it and a key is set."""
        fmt, model = setup.fmt, setup.model
        api = anthropic_counter(self.config.providers) if fmt.name == "anthropic" else None
        name = setup.request.model
        if name == model.name and model.aliases:
            # the registry's short name is not an API id; its aliases are
            name = next((a for a in model.aliases if a.endswith("-latest")), model.aliases[0])
        return _RequestCounter(name, fmt, setup.counter, model, api)

    def _check_defaults(self) -> None:
        """Refuse, with a :class:`ConfigError`, defaults that would fail every request: build
        the configured strategies, find the default model and format, load the model's
        tokenizer (cached for the process) and plan the budget of an empty request."""
        try:
            request = parse_request(self._merge({"query": "check", "passages": []}))
            self._defaults_resolved: ResolvedStrategies = self._resolve(request.strategy)
            model = self.config.models.get(request.model)
            fmt = get_format(request.format, request.template)
        except (RequestError, BudgetError) as error:
            raise defaults_error(error) from None
        try:
            counter = get_counter(model.tokenizer)
            bare = PromptParts(pipeline.system_prompt(request), (), request.query)
            plan_budget(request, model, counter, MeasuredPrompt(fmt, bare, counter, model))
        except TokenizerFileError as error:
            if error.field is None:
                raise self._default_tokenizer_error(model, error) from None
            raise  # it names the environment variable that led to the file: fix that
        except TokenizerError as error:
            raise self._default_tokenizer_error(model, error) from None
        except BudgetError as error:
            if self.config.defaults:
                raise defaults_error(error) from None
            # no [defaults]: the built-in default model, as the config's [models] changed it
            where = f"models.{model.name}"
            raise ConfigError(
                f"{where}: {error.message}; the model's context_window, max_output, "
                "tokens_per_message or tokenizer in the config leave no room for a request",
                field=where,
            ) from None
        except RequestError as error:
            raise defaults_error(error) from None

    def _default_tokenizer_error(self, model: ModelSpec, error: TokenizerError) -> ConfigError:
        """The error for a default model whose tokenizer cannot be loaded, naming
        ``defaults.model`` as the config's when it set one, else the built-in default."""
        which = "defaults.model" if "model" in self.config.defaults else "the default model"
        return ConfigError(
            f"{which} {model.name!r} counts with {model.tokenizer!r}, which cannot be loaded: "
            f"{error.message.rstrip('.')}; fix the tokenizer (models.{model.name}.tokenizer in "
            "a config) or choose another defaults.model",
            field="defaults.model",
        )

    def warm_up(self) -> None:
        """Load now what the configured default strategies otherwise load when a request first
        uses them: the lemma dictionary of ``sentences`` compression (about 0.4 s and 27 MB)
        and the guard's tables. A long-lived process calls it once at start (``ctxasm serve``
        and ``ctxasm eval`` do), so that its first requests do not wait; the default model's
        tokenizer is loaded by the constructor already."""
        resolved = self._defaults_resolved
        for strategy in (
            resolved.relevance,
            *resolved.dedup,
            resolved.selection,
            resolved.compression,
            resolved.ordering,
            resolved.guard,
        ):
            prepare = getattr(strategy, "prepare", None)  # a strategy of the user's may have none
            if callable(prepare):
                prepare()

    def _merge(self, fields: Mapping[str, object]) -> dict[str, object]:
        merged = {**self.config.defaults, **fields}
        given = fields.get("strategy")
        if isinstance(given, Mapping) and isinstance(self._default_strategy, Mapping):
            merged["strategy"] = {**self._default_strategy, **given}
        return merged


def _not_a_request(request: object) -> ArgumentTypeError:
    """The error for a positional request that is neither a Request nor a mapping."""
    return ArgumentTypeError(
        "request must be a Request, request JSON (a mapping) or the question (a string), or "
        f"give the request fields as keyword arguments; got {received(request)}",
        field="request",
    )


def positional_fields(
    query: object, passages: object, fields: Mapping[str, object]
) -> dict[str, object]:
    """``fields`` with the question and passages given positionally; a :class:`RequestError`
    for one given twice, positionally and by keyword (the keyword was silently dropped)."""
    data = dict(fields)
    for name, value in (("query", query), ("passages", passages)):
        if value is None:
            continue
        if name in data:
            raise RequestError(
                f"{name} given twice: as an argument and as {name}=; give it once", field=name
            )
        data[name] = value
    return data


def _compression_placement(
    setup: Setup, ranked: pipeline.Ranked, planned: pipeline.Planned, clock: _Clock
) -> Placement:
    """Where compression runs (its decision is booked to the compression stage)."""
    if setup.strategies.compression is None:
        return Placement.OFF
    with clock.stage("compression"):
        return pipeline.compression_placement(setup, ranked, planned)


def _timed_dedup(setup: Setup, clock: _Clock) -> _TimedDedup:
    """The assembly's dedup chain (the request's dedup strategies in order), timed."""
    return _TimedDedup(DedupChain([s.session() for s in setup.strategies.dedup]), clock)


class _Clock:
    """Milliseconds per stage; each stage starts at a checkpoint (see :mod:`ctxasm.deadline`)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        checkpoint()
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


class _TurnCost:
    """A history turn's tokens, as the model's chat template frames it."""

    def __init__(self, model: ModelSpec, counter: TokenCounter) -> None:
        self.template, self.counter = model.chat_template, counter

    def __call__(self, turn: Message) -> int:
        return self.template.turn(turn.role, turn.content, self.counter.count)


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

    def __call__(self, rendered: Rendered) -> int:
        if self.api is not None:
            try:
                return self.api.count(self.name, rendered)
            except TokenizerError as exc:
                self.api = None  # the estimate stands for the rest of this assembly
                warnings.warn(f"{exc.message}; using the estimate", stacklevel=2)
        return self.fmt.count(rendered, self.counter, self.model)


_DEFAULT_ASSEMBLER: Assembler | None = None


def assemble(
    query: str | Request | Mapping[str, object] | None = None,
    passages: object = None,
    /,
    **fields: object,
) -> Assembly:
    """Assemble a prompt with the default configuration.

    ``ctxasm.assemble(query, passages, model="gpt-4o", **options)``,
    ``ctxasm.assemble(**request_json)``, or a whole request (request JSON or a
    :class:`Request`) first: every request field is a keyword of the same name.
    """
    global _DEFAULT_ASSEMBLER  # noqa: PLW0603 - built on first use, shared afterwards
    if _DEFAULT_ASSEMBLER is None:
        _DEFAULT_ASSEMBLER = Assembler()
    if isinstance(query, (Request, Mapping)):
        return _DEFAULT_ASSEMBLER.assemble(query, passages, **fields)
    return _DEFAULT_ASSEMBLER.assemble(positional_fields(query, passages, fields))
