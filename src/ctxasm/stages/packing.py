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
from typing import Protocol

from ctxasm.errors import UntokenizableError
from ctxasm.model import Candidate, Exclusion, Passage, Reason
from ctxasm.stages.dedup import DedupSession, Duplicate, Merge
from ctxasm.tokens import TokenCounter
from ctxasm.tokens.runs import find_long_run

__all__ = ["Guard", "Meter", "Offer", "Packing", "SelectionContext"]

SELECTION = "selection"
DEDUP = "dedup"
GUARD = "guard"


class Guard(Protocol):
    """What :class:`Packing` needs of a guard strategy."""

    policy: str

    def scan(self, text: str) -> tuple[str, ...]: ...


class Meter:
    """Token prices of candidates: their fenced body plus their opening (separator and header).

    ``pricing`` gives a candidate's (opening, body) as rendered in the sources block; bodies
    are exactly the segments the final block is made of, so the verify recount finds their
    counts cached.
    """

    def __init__(
        self, counter: TokenCounter, pricing: Callable[[Candidate], tuple[str, str]]
    ) -> None:
        self.counter = counter
        self.pricing = pricing
        self._floor: int | None = None

    def cost(self, candidate: Candidate) -> int:
        """Tokens the candidate adds to the sources block, framing included.

        One extra token per passage covers a longer label or fence in the final order; the
        verify stage recounts the real block in any case.
        """
        opening, fenced = self.pricing(candidate)
        return self.counter.count(opening) + self.counter.count(fenced) + 1

    def cost_upto(self, candidate: Candidate, limit: int) -> int:
        """The exact cost when it is at most ``limit``, else some cost above ``limit``:
        a passage that cannot fit is only tokenized as far as needed to know it."""
        opening, fenced = self.pricing(candidate)
        framing = self.counter.count(opening) + 1
        return framing + self.counter.count_upto(fenced, max(0, limit - framing))

    def cost_after_merge(self, kept: Candidate, merged: Candidate) -> int:
        """The cost of ``merged``, a kept passage grown by stitching: only the new text is
        tokenized when the tokenizer allows it."""
        opening, fenced = self.pricing(merged)
        _, kept_fenced = self.pricing(kept)
        return self.counter.count(opening) + self.counter.count_edited(kept_fenced, fenced) + 1

    def lower_bound(self, candidate: Candidate) -> int:
        """A cost the candidate cannot be below, known without tokenizing its text."""
        return self.counter.lower_bound(candidate.text) + self.floor

    def unreadable(self, candidate: Candidate) -> str | None:
        """Why the candidate's text, title or url cannot be tokenized in linear time (an
        unbroken run too long, see :mod:`ctxasm.tokens.runs`), or ``None``; a scan only."""
        passage = candidate.passage
        limit = self.counter.max_run
        for name, value in (
            ("text", candidate.text),
            ("title", passage.title),
            ("url", passage.url),
        ):
            run = find_long_run(value, limit) if value else None
            if run is not None:
                return f"its {name} has {run.describe(limit)}"
        return None

    @property
    def floor(self) -> int:
        """The fewest tokens any passage costs: a minimal header and an empty body."""
        if self._floor is None:
            opening, _ = self.pricing(Candidate.of(Passage(id="x", text=""), 0, 0.0))
            self._floor = self.counter.count(opening) + 1
        return self._floor


class Offer(Enum):
    """What happened to an offered candidate."""

    ADDED = "added"
    MERGED = "merged"
    DUPLICATE = "duplicate"
    TOO_BIG = "too_big"
    REFUSED = "refused"  # the guard dropped it
    UNTOKENIZABLE = "untokenizable"  # it cannot be counted (see Meter.unreadable)


def _scanned(candidate: Candidate) -> str:
    """What the guard reads of a candidate: its text, and the title and url the header shows."""
    passage = candidate.passage
    extra = [value for value in (passage.title, passage.url) if value]
    return "\n".join([*extra, candidate.text]) if extra else candidate.text


@dataclass(frozen=True, slots=True)
class SelectionContext:
    """What a planner may know about the request besides the candidates."""

    query: str = ""
    query_class: str = "factoid"


@dataclass
class Packing:
    """The kept candidates and the tokens they use, inside one budget."""

    budget: int
    meter: Meter
    dedup: DedupSession
    context: SelectionContext = SelectionContext()
    # Scans a candidate's text before it is priced: returns its flags (see stages.guard), and
    # whether a flagged candidate is to be dropped rather than marked.
    guard: Guard | None = None

    def __post_init__(self) -> None:
        self.kept: list[Candidate] = []
        self.costs: dict[str, int] = {}
        self.used = 0
        self.excluded: list[Exclusion] = []

    @property
    def remaining(self) -> int:
        return self.budget - self.used

    @property
    def full(self) -> bool:
        """Whether not even the smallest passage could be added any more."""
        return self.remaining <= self.meter.floor

    def offer(self, candidate: Candidate) -> Offer:
        """Add ``candidate`` if it fits and is not redundant; otherwise record why not.

        Order matters for speed: stitching is decided from offsets before pricing; a passage
        is scanned by the guard and tokenized only when its lower bound fits; content dedup
        runs only on what fits.
        """
        placement = self.dedup.placement(candidate)
        if placement is not None:
            return self._redundant(candidate, placement)
        remaining = self.remaining
        if self.meter.lower_bound(candidate) > remaining:
            return self._too_big(candidate)  # (flags only add tokens: the bound stands)
        unreadable = self.meter.unreadable(candidate)
        if unreadable is not None:
            return self._untokenizable(candidate, unreadable)
        if self.guard is not None:
            flags = self.guard.scan(_scanned(candidate))
            if flags and self.guard.policy == "drop":
                detail = "looks like a prompt injection: " + ", ".join(flags)
                self.excluded.append(Exclusion(candidate.id, GUARD, Reason.INJECTION, detail))
                return Offer.REFUSED
            candidate = candidate._replace(flags=flags)
        try:
            cost = self.meter.cost_upto(candidate, remaining)
        except UntokenizableError as exc:
            return self._untokenizable(candidate, exc.message)
        if cost > remaining:
            return self._too_big(candidate)
        verdict = self.dedup.verdict(candidate)
        if verdict is not None:
            return self._redundant(candidate, verdict)
        self.kept.append(candidate)
        self.costs[candidate.id] = cost
        self.used += cost
        self.dedup.accept(candidate, None)
        return Offer.ADDED

    def _redundant(self, candidate: Candidate, verdict: Duplicate | Merge) -> Offer:
        if isinstance(verdict, Merge):
            return self._merge(candidate, verdict)
        self.excluded.append(Exclusion(candidate.id, DEDUP, Reason.DUPLICATE, verdict.detail))
        return Offer.DUPLICATE

    def _merge(self, candidate: Candidate, verdict: Merge) -> Offer:
        position = next(i for i, kept in enumerate(self.kept) if kept.id == verdict.into.id)
        if self.guard is not None:  # the grown text is what the header describes
            merged = verdict.merged._replace(flags=self.guard.scan(_scanned(verdict.merged)))
            verdict = Merge(verdict.into, merged, verdict.detail)
        try:
            new_cost = self.meter.cost_after_merge(verdict.into, verdict.merged)
        except UntokenizableError as exc:
            return self._untokenizable(candidate, f"stitching it into {verdict.into.id}: {exc}")
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

    def _too_big(self, candidate: Candidate, need: str | None = None) -> Offer:
        # Whether the exact count was cached must not change the report, so the size is given
        # in characters, which every path knows.
        if need is None:
            need = f"{len(candidate.text):,} characters do not fit"
        detail = f"{need}: {self.remaining} of {self.budget} tokens left"
        self.excluded.append(Exclusion(candidate.id, SELECTION, Reason.OVER_BUDGET, detail))
        return Offer.TOO_BIG

    def _untokenizable(self, candidate: Candidate, why: str) -> Offer:
        detail = f"cannot be counted: {why}"
        self.excluded.append(Exclusion(candidate.id, SELECTION, Reason.UNTOKENIZABLE, detail))
        return Offer.UNTOKENIZABLE

    def price(self, candidates: Sequence[Candidate]) -> list[tuple[Candidate, int]]:
        """The candidates that could fit the whole remaining budget, with their exact costs;
        the others are excluded as too big (after counting only as much as needed) or as
        untokenizable."""
        fitting = []
        for candidate in candidates:
            remaining = self.remaining
            if self.meter.lower_bound(candidate) > remaining:
                self._too_big(candidate)
                continue
            unreadable = self.meter.unreadable(candidate)
            try:
                if unreadable is not None:
                    raise UntokenizableError(unreadable)
                cost = self.meter.cost_upto(candidate, remaining)
            except UntokenizableError as exc:
                self._untokenizable(candidate, exc.message)
                continue
            if cost > remaining:
                self._too_big(candidate)
            else:
                fitting.append((candidate, cost))
        return fitting

    def readmit(self, candidate: Candidate) -> Offer:
        """Offer a changed version (a compressed one) of a candidate already turned away: on
        success its earlier exclusion is withdrawn, otherwise the earlier one stands."""
        before = len(self.excluded)
        outcome = self.offer(candidate)
        if outcome in (Offer.ADDED, Offer.MERGED):
            self.excluded[:before] = [
                e
                for e in self.excluded[:before]
                if e.candidate_id != candidate.id or e.reason is not Reason.OVER_BUDGET
            ]
        else:
            del self.excluded[before:]
        return outcome

    def exclude(self, candidates: Sequence[Candidate], reason: Reason, detail: str) -> None:
        """Record ``candidates`` as excluded by the selection stage without offering them."""
        self.excluded.extend(Exclusion(c.id, SELECTION, reason, detail) for c in candidates)
