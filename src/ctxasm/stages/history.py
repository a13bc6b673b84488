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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxasm.errors import RequestError
from ctxasm.model import Exclusion, Message, Reason
from ctxasm.validation import invalid, relocated

__all__ = ["HistoryPlan", "HistoryPolicy", "Summarizer", "parse_history_policy", "trim_history"]

STAGE = "history"
SUMMARY_HEADING = "Summary of the earlier conversation:"

Summarizer = Callable[[Sequence[Message]], str]


@dataclass(frozen=True, slots=True)
class HistoryPolicy:
    """How much of the budget history may take (see the module docstring)."""

    min_recent_turns: int = 2
    max_share: float = 0.5
    max_tokens: int | None = None
    reclaim: bool = True

    def __post_init__(self) -> None:
        where = "history_policy"
        if not isinstance(self.reclaim, bool):
            raise RequestError(f"{where}.reclaim must be true or false", field=f"{where}.reclaim")
        turns = self.min_recent_turns
        if isinstance(turns, bool) or not isinstance(turns, int) or not 0 <= turns <= 10_000:
            raise invalid(f"{where}.min_recent_turns", "an integer from 0 to 10000", turns)
        share = self.max_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise invalid(f"{where}.max_share", "a number from 0 to 1", share)
        object.__setattr__(self, "max_share", float(share))
        tokens = self.max_tokens
        if tokens is not None and (
            isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= 2**53
        ):
            raise invalid(f"{where}.max_tokens", "a non-negative integer or null", tokens)

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_recent_turns": self.min_recent_turns,
            "max_share": self.max_share,
            "max_tokens": self.max_tokens,
            "reclaim": self.reclaim,
        }


def parse_history_policy(value: object, field: str = "history_policy") -> HistoryPolicy:
    """The ``history_policy`` request object, checked."""
    if value is None:
        return HistoryPolicy()
    if isinstance(value, HistoryPolicy):
        return value
    if not isinstance(value, Mapping):
        raise RequestError(
            f"{field} must be an object with min_recent_turns, max_share, max_tokens",
            field=field,
        )
    keys = ("min_recent_turns", "max_share", "max_tokens", "reclaim")
    unknown = [key for key in value if key not in keys]
    if unknown:
        raise RequestError(
            f"{field} has unknown key {unknown[0]!r}; keys: {', '.join(keys)}",
            field=f"{field}.{unknown[0]}",
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


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """The turns kept (in order, with their indices), the dropped indices, and the summary."""

    kept: tuple[tuple[int, Message], ...]
    dropped: tuple[int, ...]
    allowance: int
    summary: str | None = None

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
                kept.pop(0)
    first = kept[0] if kept else len(history)
    return HistoryPlan(
        kept=tuple((i, history[i]) for i in kept),
        dropped=tuple(range(first)),
        allowance=allowance,
    )
