"""Multi-turn history inside the budget.

The system prompt and the question (the latest user turn) always stay. Of the earlier turns,
the newest are kept while they fit the history allowance: ``max_share`` of the room left after
the mandatory parts (or ``max_tokens``, whichever is smaller). At least ``min_recent_turns``
stay whenever they fit the room at all. The oldest turns drop first (reason
``history_trimmed``, with the turn's index), and a kept conversation never opens with an
assistant turn (Anthropic's API refuses that). A summariser, when the caller gives one,
replaces the dropped turns with a summary appended to the system prompt; it is budgeted like
the turns and omitted when it does not fit. Once passages are selected, room they left unused
is offered back to the dropped turns (newest first, from a user turn on, as many as the exact
recount allows), unless a summary already stands for them or ``reclaim`` is false: the share
and token caps bound what history takes from the passages, not room the passages leave.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from ctxasm.data import Budget, Exclusion, HistoryPolicy, Message, Reason
from ctxasm.errors import UntokenizableError
from ctxasm.validation import string

__all__ = [
    "GivenBack",
    "HistoryPlan",
    "HistoryStep",
    "Summarizer",
    "repeats_query",
    "trim_history",
]

STAGE = "history"
SUMMARY_HEADING = "Summary of the earlier conversation:"

Summarizer = Callable[[Sequence[Message]], str]
# A rendered request, as the format that renders it shapes it.
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """The turns kept (in order, with their indices), the dropped indices, and the summary."""

    kept: tuple[tuple[int, Message], ...]
    dropped: tuple[int, ...]
    allowance: int
    summary: str | None = None
    # Assistant turns dropped because the conversation would open with them, not for room.
    opening: tuple[int, ...] = ()

    @property
    def turns(self) -> tuple[Message, ...]:
        return tuple(turn for _, turn in self.kept)

    def exclusions(
        self, history: Sequence[Message], cost: Callable[[Message], int]
    ) -> list[Exclusion]:
        """One ``history_trimmed`` exclusion per dropped turn, oldest first."""
        found = []
        for index in self.dropped:
            turn = history[index]
            if index in self.opening:
                detail = (
                    f"turn {index} ({turn.role}, {cost(turn)} tokens): a conversation may not "
                    "open with an assistant turn (Anthropic's API refuses it), and no user turn "
                    "before it fits"
                )
            else:
                detail = (
                    f"turn {index} ({turn.role}, {cost(turn)} tokens): older turns go first; "
                    f"history may take {self.allowance} tokens"
                )
            found.append(Exclusion(f"history[{index}]", STAGE, Reason.HISTORY_TRIMMED, detail))
        return found


def trim_history(
    history: Sequence[Message],
    room: int,
    policy: HistoryPolicy,
    cost: Callable[[Message], int],
) -> HistoryPlan:
    """The newest turns that fit the allowance (``room`` is what the mandatory parts leave)."""
    room = max(0, room)
    allowance = int(policy.max_share * room)
    if policy.max_tokens is not None:
        allowance = min(allowance, policy.max_tokens)
    kept: list[int] = []
    opening: list[int] = []
    used = 0
    for index in range(len(history) - 1, -1, -1):
        turn_cost = cost(history[index])
        recent = len(kept) < policy.min_recent_turns
        limit = room if recent else allowance
        if used + turn_cost > limit:
            break
        kept.append(index)
        used += turn_cost
    kept.reverse()
    if kept and history[kept[0]].role == "assistant":
        # A conversation may not open with an assistant turn: take the user turn before it
        # when it fits the room, else drop the assistant turn.
        # (Within the room when it completes the recent turns that must stay, else within the
        # allowance.)
        before = kept[0] - 1
        limit = room if len(kept) <= policy.min_recent_turns else allowance
        if before >= 0 and history[before].role == "user" and used + cost(history[before]) <= limit:
            kept.insert(0, before)
        else:
            while kept and history[kept[0]].role == "assistant":
                opening.append(kept.pop(0))
    first = kept[0] if kept else len(history)
    return HistoryPlan(
        kept=tuple((i, history[i]) for i in kept),
        dropped=tuple(range(first)),
        allowance=allowance,
        opening=tuple(opening),
    )


def repeats_query(history: Sequence[Message], query: str) -> bool:
    """Whether ``history`` ends with the question itself, a user turn of the query's words
    (as a chat application's message list does once the user has sent it): without it, the
    question would reach the model twice, two user turns in a row."""
    return (
        bool(history)
        and history[-1].role == "user"
        and history[-1].content.split() == query.split()
    )


@dataclass(frozen=True, slots=True)
class GivenBack(Generic[R]):
    """The request after :meth:`HistoryStep.give_back`: the history plan, the rendered request
    and its exact count, and the budget with its history, overhead and context sections
    updated to what the turns took."""

    plan: HistoryPlan
    rendered: R
    total: int
    budget: Budget


@dataclass(frozen=True, slots=True)
class HistoryStep:
    """The history step (see the module docstring): which of ``turns`` go into the prompt.

    :meth:`plan` runs inside the budget slot: it trims the turns to their allowance, then
    summarises the dropped ones when there is a ``summarizer``. :meth:`give_back` runs after
    verify: it offers the room the passages left unused back to dropped turns. ``cost`` is a
    turn's tokens with its message framing.
    """

    turns: tuple[Message, ...]
    policy: HistoryPolicy
    cost: Callable[[Message], int]
    summarizer: Summarizer | None = None
    # The index of the request's last turn when it was the question itself (left out of
    # ``turns``, see :func:`repeats_query`).
    repeat: int | None = None

    def repeated(self) -> list[int]:
        """The index of the turn that repeated the question, if any (a list of one or none)."""
        return [] if self.repeat is None else [self.repeat]

    def repeat_exclusions(self) -> list[Exclusion]:
        """The ``duplicate`` exclusion of the turn that repeated the question, if any."""
        if self.repeat is None:
            return []
        detail = "the question itself: the prompt asks it once, after the sources"
        return [Exclusion(f"history[{self.repeat}]", STAGE, Reason.DUPLICATE, detail)]

    def plan(self, room: int) -> HistoryPlan:
        """The turns that fit ``room`` (what the mandatory parts of the prompt leave), and
        the summary of the others when there is a summariser and it fits beside them."""
        if not self.turns:
            return HistoryPlan((), (), 0)
        plan = trim_history(self.turns, room, self.policy, self.cost)
        if not plan.dropped or self.summarizer is None:
            return plan
        return self._summarised(plan, self.summarizer)

    def _summarised(self, original: HistoryPlan, summarizer: Summarizer) -> HistoryPlan:
        """``original`` with a summary of its dropped turns, making room for it by moving the
        oldest kept turns (and an assistant turn they would leave first) into the summary.
        Each turn is costed once, and each round moves enough turns to fit a summary the
        size of the last one, so the summariser is called a few times, not once per turn."""
        turns, minimum, allowance = self.turns, self.policy.min_recent_turns, original.allowance
        kept = original.kept
        costs = [self.cost(turn) for _, turn in kept]
        used = sum(costs)
        start = 0  # kept[start:] are kept; everything before kept[start] is summarised
        while True:
            first = kept[start][0] if start < len(kept) else len(turns)
            try:
                given = summarizer(list(turns[:first]))
            except Exception as error:  # a model call that timed out: the turns, not the prompt, go
                warnings.warn(
                    f"the summarizer raised {type(error).__name__}: {error}; no summary is used",
                    stacklevel=5,
                )
                return original
            if not isinstance(given, str):
                warnings.warn(
                    f"the summarizer returned {type(given).__name__}, not a string; "
                    "no summary is used",
                    stacklevel=5,
                )
                return original
            # The plain text, which must be sendable: what is costed is what is sent, whatever
            # methods a str subclass redefines.
            summary: str = string(given, "summarizer").strip()
            if not summary:
                return original
            try:
                summary_cost = self.cost(Message("user", f"{SUMMARY_HEADING}\n{summary}"))
            except UntokenizableError as error:  # a summary that cannot be counted never fits
                warnings.warn(
                    f"the summary cannot be tokenized ({error.message}); no summary is used",
                    stacklevel=5,
                )
                return original
            if used + summary_cost <= allowance:
                return HistoryPlan(kept[start:], tuple(range(first)), allowance, summary)
            if len(kept) - start <= minimum:
                return original  # no summary fits beside the turns that must stay
            deficit = used + summary_cost - allowance
            while len(kept) - start > minimum and deficit > 0:
                used, deficit, start = used - costs[start], deficit - costs[start], start + 1
            # A conversation may not open with an assistant turn, whatever the minimum.
            while start < len(kept) and kept[start][1].role == "assistant":
                used, start = used - costs[start], start + 1

    def reclaims(self, plan: HistoryPlan) -> bool:
        """Whether :meth:`give_back` has anything to do: turns were dropped, no summary
        stands for them, and the policy lets them reclaim room."""
        return bool(plan.dropped) and plan.summary is None and self.policy.reclaim

    def give_back(
        self,
        plan: HistoryPlan,
        render: Callable[[tuple[Message, ...]], R],
        count: Callable[[R], int],
        count_text: Callable[[str], int],
        budget: Budget,
        rendered: R,
        total: int,
    ) -> GivenBack[R]:
        """Give room the passages left unused back to dropped turns, newest first and from a
        user turn on, as many as the exact recount allows. ``render`` renders the request with
        the given turns, ``count`` counts a rendered request exactly, ``count_text`` counts a
        turn's text; ``rendered`` and ``total`` are the request as verified.

        More turns never take fewer tokens, so a binary search over the possible starting
        turns needs only a logarithmic number of recounts (each one a request to the
        provider, when Anthropic counts).
        """
        turns = self.turns
        first = plan.kept[0][0] if plan.kept else len(turns)
        starts = [i for i in range(first - 1, -1, -1) if turns[i].role == "user"]  # newest first
        best = (plan, rendered, total)
        low, high = 0, len(starts) - 1  # the last index of starts that still fits
        while low <= high:
            middle = (low + high) // 2
            added = tuple((i, turns[i]) for i in range(starts[middle], first))
            trial = HistoryPlan(added + plan.kept, tuple(range(starts[middle])), plan.allowance)
            trial_rendered = render(trial.turns)
            found = (trial, trial_rendered, count(trial_rendered))
            if found[2] <= budget.prompt_limit:
                best, low = found, middle + 1
            else:
                high = middle - 1
        kept_tokens = sum(count_text(turn.content) for turn in best[0].turns)
        grown = best[2] - total
        grown_budget = replace(
            budget,
            history=kept_tokens,
            overhead=budget.overhead + grown - (kept_tokens - budget.history),
        )
        # The room left for sources, as before capped by max_context_tokens: the cap itself
        # does not shrink when turns take room the sources left unused.
        room = grown_budget.prompt_limit - sum(
            (grown_budget.system, grown_budget.query, grown_budget.history, grown_budget.overhead)
        )
        budget = replace(grown_budget, context=max(0, min(budget.context, room)))
        return GivenBack(best[0], best[1], best[2], budget)
