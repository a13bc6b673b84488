"""Filling a token budget one candidate at a time: the mechanics every selection strategy shares.

:class:`Meter` prices a candidate in tokens (its text plus the framing the format puts around it)
lazily, so a candidate that is never offered is never tokenized. :class:`Packing` admits
candidates in the order a strategy chooses, consulting the dedup chain only for candidates that
fit, and records an exclusion for every candidate it turns away.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from ctxasm.model import Candidate, Exclusion, Reason
from ctxasm.stages.dedup import DedupSession, Duplicate, Merge
from ctxasm.tokens import TokenCounter

__all__ = ["Meter", "Offer", "Packing"]

SELECTION = "selection"
DEDUP = "dedup"


class Meter:
    """Token prices of candidates: text tokens (cached by content) plus framing tokens."""

    def __init__(
        self, counter: TokenCounter, framing: Callable[[Candidate], tuple[str, str]]
    ) -> None:
        self.counter = counter
        self.framing = framing

    def tokens(self, candidate: Candidate) -> int:
        """Tokens of the candidate's text alone."""
        return self.counter.count(candidate.text)

    def cost(self, candidate: Candidate) -> int:
        """Tokens the candidate adds to the context block, framing included.

        One extra token per passage covers BPE merges across the seams between framing and
        text; the verify stage recounts the real block in any case.
        """
        before, after = self.framing(candidate)
        count = self.counter.count
        return count(before) + count(candidate.text) + count(after) + 1

    def lower_bound(self, candidate: Candidate) -> int:
        """A cost the candidate cannot be below, known without tokenizing it."""
        return self.counter.lower_bound(candidate.text)


class Offer(Enum):
    """What happened to an offered candidate."""

    ADDED = "added"
    MERGED = "merged"
    DUPLICATE = "duplicate"
    TOO_BIG = "too_big"


@dataclass
class Packing:
    """The kept candidates and the tokens they use, inside one budget."""

    budget: int
    meter: Meter
    dedup: DedupSession

    def __post_init__(self) -> None:
        self.kept: list[Candidate] = []
        self.costs: dict[str, int] = {}
        self.used = 0
        self.excluded: list[Exclusion] = []

    @property
    def remaining(self) -> int:
        return self.budget - self.used

    def offer(self, candidate: Candidate) -> Offer:
        """Add ``candidate`` if it fits and is not redundant; otherwise record why not."""
        remaining = self.remaining
        if self.meter.lower_bound(candidate) > remaining:
            return self._too_big(candidate, f"at least {self.meter.lower_bound(candidate)} tokens")
        cost = self.meter.cost(candidate)
        if cost > remaining and not self.dedup.may_merge(candidate):
            return self._too_big(candidate, f"needs {cost} tokens")
        verdict = self.dedup.verdict(candidate)
        if isinstance(verdict, Duplicate):
            self.excluded.append(Exclusion(candidate.id, DEDUP, Reason.DUPLICATE, verdict.detail))
            return Offer.DUPLICATE
        if isinstance(verdict, Merge):
            return self._merge(candidate, verdict)
        if cost > remaining:
            return self._too_big(candidate, f"needs {cost} tokens")
        self.kept.append(candidate)
        self.costs[candidate.id] = cost
        self.used += cost
        self.dedup.accept(candidate, None)
        return Offer.ADDED

    def _merge(self, candidate: Candidate, verdict: Merge) -> Offer:
        position = next(i for i, kept in enumerate(self.kept) if kept.id == verdict.into.id)
        new_cost = self.meter.cost(verdict.merged)
        delta = new_cost - self.costs[verdict.into.id]
        if delta > self.remaining:
            return self._too_big(
                candidate, f"stitching it into {verdict.into.id} needs {delta} more tokens"
            )
        self.kept[position] = verdict.merged
        self.costs[verdict.into.id] = new_cost
        self.used += delta
        self.dedup.accept(verdict.merged, verdict.into)
        self.excluded.append(Exclusion(candidate.id, DEDUP, Reason.MERGED, verdict.detail))
        return Offer.MERGED

    def _too_big(self, candidate: Candidate, need: str) -> Offer:
        detail = f"{need}, {self.remaining} of {self.budget} left"
        self.excluded.append(Exclusion(candidate.id, SELECTION, Reason.OVER_BUDGET, detail))
        return Offer.TOO_BIG

    def screen(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Dedup ``candidates`` in order against each other, ignoring the budget.

        For strategies that choose a whole set at once: the survivors (with stitched windows
        merged) are returned, duplicates and merged windows are recorded as exclusions.
        """
        survivors: list[Candidate] = []
        for candidate in candidates:
            verdict = self.dedup.verdict(candidate)
            if isinstance(verdict, Duplicate):
                self.excluded.append(
                    Exclusion(candidate.id, DEDUP, Reason.DUPLICATE, verdict.detail)
                )
            elif isinstance(verdict, Merge):
                at = next(i for i, c in enumerate(survivors) if c.id == verdict.into.id)
                survivors[at] = verdict.merged
                self.dedup.accept(verdict.merged, verdict.into)
                self.excluded.append(Exclusion(candidate.id, DEDUP, Reason.MERGED, verdict.detail))
            else:
                survivors.append(candidate)
                self.dedup.accept(candidate, None)
        return survivors

    def admit(self, candidate: Candidate, cost: int) -> None:
        """Keep a screened candidate whose ``cost`` the caller has checked against the budget."""
        if cost > self.remaining:
            raise ValueError(f"{candidate.id} costs {cost} tokens, {self.remaining} left")
        self.kept.append(candidate)
        self.costs[candidate.id] = cost
        self.used += cost

    def exclude(self, candidates: Sequence[Candidate], reason: Reason, detail: str) -> None:
        """Record ``candidates`` as excluded by the selection stage without offering them."""
        self.excluded.extend(Exclusion(c.id, SELECTION, reason, detail) for c in candidates)
