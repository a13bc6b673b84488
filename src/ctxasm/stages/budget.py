"""The budget slot: the token envelope for the sources block.

``context = context_window - reserve_output - margin - (system + query + history + overhead)``,
where every section is counted with the model's tokenizer on the request as it will be rendered
(``overhead`` is what the format adds: chat message framing, reply priming, joins), and
``context`` is further capped by ``max_context_tokens``. This stage counts but never renders:
the prompt's sizes come from a :class:`PromptSize` the assembler passes in.
"""

from __future__ import annotations

import math
from typing import Protocol

from ctxasm.data import Budget, Request
from ctxasm.errors import BudgetError, RequestError, UntokenizableError
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = [
    "DEFAULT_REASONING_RESERVE",
    "DEFAULT_RESERVE_OUTPUT",
    "ESTIMATE_MARGIN",
    "PromptSize",
    "plan_budget",
]

# A typical grounded answer fits in 1,024 tokens; models with smaller limits reserve all of it.
DEFAULT_RESERVE_OUTPUT = 1024
# A reasoning model (ModelSpec.reasoning) spends hidden reasoning tokens out of the same limit,
# often thousands before the answer: 1,024 would often leave it no answer at all. OpenAI advises
# reserving at least 25,000 tokens for reasoning and output when starting with these models.
DEFAULT_REASONING_RESERVE = 25_000
# Estimated counts keep 5% of the window in hand; exact counts need no margin.
ESTIMATE_MARGIN = 0.05


class PromptSize(Protocol):
    """The prompt without its sources block, counted as the target format renders it
    (``ctxasm.formatting.measure.MeasuredPrompt``). Each call measures when it is made."""

    def sections(self) -> tuple[int, int, int]:
        """Tokens of the system prompt, the question turn and the history turns."""
        ...

    def bare(self) -> int:
        """Tokens of the whole request with an empty sources block."""
        ...

    def without_sources(self) -> int:
        """Tokens of the larger of the requests that say no sources were found."""
        ...


def plan_budget(
    request: Request, model: ModelSpec, counter: TokenCounter, prompt: PromptSize
) -> Budget:
    """The budget of ``request``, or a :class:`BudgetError` when nothing but the query fits."""
    _require_countable(request, counter)
    window = _window(request, model)
    reserve = _reserve(request, model, window)
    share = request.safety_margin
    if share is None:
        share = 0.0 if counter.exact else ESTIMATE_MARGIN
    margin = math.ceil(share * (window - reserve))
    system, query, history = prompt.sections()
    bare = prompt.bare()
    overhead = max(0, bare - system - query - history)
    limit = window - reserve - margin
    smallest = prompt.without_sources()
    if smallest > limit:
        sections = {
            "system": system,
            "query": query,
            "history": history,
            "overhead": overhead,
            "reserve_output": reserve,
            "margin": margin,
            "context_window": window,
        }
        raise BudgetError(
            f"the request does not fit {model.name} even with no passages: its prompt alone "
            f"takes {smallest} tokens (system {system}, query {query}, history {history}, "
            f"overhead {overhead}, and {smallest - bare} for the note that no sources were "
            f"found), which with reserve_output {reserve} and margin {margin} is more than the "
            f"context window {window}. {_advice(system, query, history, reserve)}",
            sections=sections,
        )
    context = limit - bare
    if request.max_context_tokens is not None:
        context = min(context, request.max_context_tokens)
    return Budget(
        context_window=window,
        reserve_output=reserve,
        system=system,
        query=query,
        history=history,
        overhead=overhead,
        margin=margin,
        context=max(0, context),
    )


def _advice(system: int, query: int, history: int, reserve: int) -> str:
    """What to change when the prompt without passages does not fit: the largest part first
    (a query of 15,000 tokens was met with "shorten the history or system prompt")."""
    parts = {"the query": query, "the history": history, "the system prompt": system}
    largest = max(parts, key=lambda part: parts[part])  # the query where two are as large
    if reserve >= parts[largest]:
        return (
            f"Lower reserve_output_tokens ({reserve} tokens, the largest part), or shorten "
            f"{largest} ({parts[largest]})."
        )
    return (
        f"Shorten {largest} ({parts[largest]} tokens, the largest part), or lower "
        f"reserve_output_tokens ({reserve})."
    )


def _window(request: Request, model: ModelSpec) -> int:
    """The request's context window: the model's, or a smaller one the request asks for."""
    window = model.context_window if request.context_window is None else request.context_window
    if window > model.context_window:
        raise RequestError(
            f"context_window ({window}) exceeds {model.name}'s window of {model.context_window} "
            "tokens; to use a larger deployment, override the model in a config file",
            field="context_window",
        )
    return window


def _reserve(request: Request, model: ModelSpec, window: int) -> int:
    """The tokens kept for the answer: the request's, or a default the model and window allow."""
    reserve = request.reserve_output_tokens
    if reserve is None:
        wanted = DEFAULT_REASONING_RESERVE if model.reasoning else DEFAULT_RESERVE_OUTPUT
        reserve = min(model.max_output, wanted, max(1, window // 4))
        if reserve >= window:
            # the caller set no reserve: blame the window, the one number they can change
            whose = "" if request.context_window is not None else f", {model.name}'s window"
            raise RequestError(
                f"context_window ({window}{whose}) is too small for any reply: the default "
                f"reserve_output_tokens (a quarter of the window, at least 1) is {reserve}, the "
                "whole window, and leaves nothing for the prompt; give a larger context_window",
                field="context_window",
            )
    elif reserve > model.max_output:
        raise RequestError(
            f"reserve_output_tokens ({reserve}) exceeds {model.name}'s maximum output of "
            f"{model.max_output} tokens",
            field="reserve_output_tokens",
        )
    if reserve >= window:
        raise RequestError(
            f"reserve_output_tokens ({reserve}) must be smaller than the context window "
            f"({window}); nothing would be left for the prompt",
            field="reserve_output_tokens",
        )
    return reserve


def _require_countable(request: Request, counter: TokenCounter) -> None:
    """Refuse, naming the field, a query, system prompt or history turn that holds a run of
    characters too long to tokenize in linear time (passages are excluded instead)."""
    fields = [("query", request.query), ("system_prompt", request.system_prompt or "")]
    fields += [(f"history[{i}].content", turn.content) for i, turn in enumerate(request.history)]
    for field, text in fields:
        try:
            counter.check(text)
        except UntokenizableError as exc:
            raise UntokenizableError(
                f"{field} cannot be counted: {exc.message}; break the run with spaces or "
                "punctuation, or shorten it",
                field=field,
            ) from None
