"""Filling a token budget one candidate at a time: the handle every selection strategy fills.

A strategy offers candidates to a :class:`Packing` in the order it chooses; whether each one is
kept is decided by :class:`~ctxasm.stages.selection_admission.Admission` (dedup placement, size
bound, guard, price, dedup verdict, in that order: see :mod:`ctxasm.stages.selection_admission`),
and the packing records the decision: the kept candidates and their costs, or an exclusion. Between
pipeline steps the packing is frozen into a :class:`Packed` (:meth:`Packing.snapshot`); a later
step that offers more (compression in ``fill`` placement) resumes it with
:meth:`Packing.resume`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ctxasm.data import Candidate, Chosen, Exclusion, Reason
from ctxasm.deadline import checkpoint
from ctxasm.stages.dedup import DedupSession
from ctxasm.stages.selection_admission import (
    SELECTION,
    Admission,
    Guard,
    Keep,
    Meter,
    Offer,
    Refuse,
    Room,
    Stitch,
)

__all__ = ["Guard", "Meter", "Offer", "Packed", "Packing", "SelectionContext"]


@dataclass(frozen=True, slots=True)
class SelectionContext:
    """What a planner may know about the request besides the candidates."""

    query: str = ""
    query_class: str = "factoid"
    # The ids of candidates whose scores were raised to keep the previous turn's passages in
    # the prompt cache (see ctxasm.prompt_cache.prefer_previous): part of their score is no
    # relevance.
    favoured: frozenset[str] = frozenset()
    # Offers a candidate just turned away as too big again, compressed to the room left (the
    # ``fill`` placement of compression, for a planner whose best pick does not fit whole),
    # given the candidates still open (the planner's, whose titles name the next hops), and
    # says whether it was kept; ``None`` where the request compresses no passage there.
    shrink: Callable[[Candidate, Packing, Sequence[Candidate]], bool] | None = None


@dataclass(frozen=True, slots=True)
class Packed:
    """A packing between pipeline steps: what is kept (in the order admitted), the cost of each
    kept candidate by id, the tokens used of ``budget``, and every exclusion so far.

    ``admission`` carries the assembly's dedup session, which remembers what was kept; only
    :meth:`Packing.resume` (then offers) advances it.
    """

    budget: int
    admission: Admission
    context: SelectionContext
    kept: tuple[Candidate, ...]
    costs: Mapping[str, int]
    used: int
    excluded: tuple[Exclusion, ...]
    # Stitched-away id -> the id of the kept passage it became part of.
    merged_into: Mapping[str, str] = field(default_factory=dict)
    # The ids of candidates kept in a changed (compressed) form: see Packing.readmit.
    readmitted: frozenset[str] = frozenset()


@dataclass
class Packing:
    """The kept candidates and the tokens they use, inside one budget.

    ``guard``, when given, scans each candidate before it is priced (see
    :mod:`ctxasm.stages.selection_admission`).
    """

    budget: int
    meter: Meter
    dedup: DedupSession
    context: SelectionContext = SelectionContext()
    guard: Guard | None = None

    def __post_init__(self) -> None:
        self.admission = Admission(self.meter, self.dedup, self.guard)
        self.kept: list[Candidate] = []
        self.positions: dict[str, int] = {}  # a kept candidate's place in ``kept``, by id
        self.costs: dict[str, int] = {}
        self.used = 0
        self.excluded: list[Exclusion] = []
        self.merged_into: dict[str, str] = {}
        self.readmitted: set[str] = set()  # kept in a changed (compressed) form

    @classmethod
    def resume(cls, packed: Packed) -> Packing:
        """A packing that goes on from ``packed``."""
        admission = packed.admission
        packing = cls(
            packed.budget, admission.meter, admission.dedup, packed.context, admission.guard
        )
        packing.kept = list(packed.kept)
        packing.positions = {candidate.id: i for i, candidate in enumerate(packing.kept)}
        packing.costs = dict(packed.costs)
        packing.used = packed.used
        packing.excluded = list(packed.excluded)
        packing.merged_into = dict(packed.merged_into)
        packing.readmitted = set(packed.readmitted)
        return packing

    def snapshot(self) -> Packed:
        """The packing as it stands, frozen; a kept passage's ``chosen.linked_from`` names the
        passage that stayed when the one it named was stitched into another."""
        return Packed(
            self.budget,
            self.admission,
            self.context,
            tuple(self._resolved(c) for c in self.kept),
            MappingProxyType(dict(self.costs)),
            self.used,
            tuple(self.excluded),
            MappingProxyType(dict(self.merged_into)),
            frozenset(self.readmitted),
        )

    def _resolved(self, candidate: Candidate) -> Candidate:
        chosen = candidate.chosen
        if chosen is None or chosen.linked_from not in self.merged_into:
            return candidate
        target, seen = chosen.linked_from, set()
        while target in self.merged_into and target not in seen:
            seen.add(target)
            target = self.merged_into[target]
        return candidate._replace(chosen=replace(chosen, linked_from=target))

    @property
    def remaining(self) -> int:
        return self.budget - self.used

    @property
    def full(self) -> bool:
        """Whether not even the smallest passage could be added any more."""
        return self.remaining <= self.meter.floor

    def offer(self, candidate: Candidate, chosen: Chosen | None = None) -> Offer:
        """Add ``candidate`` if admission keeps it (see :mod:`ctxasm.stages.selection_admission`
        for the order of the checks); otherwise record why not. ``chosen`` says why the
        strategy offers it, for the report."""
        checkpoint()  # every strategy's offers come here: each is one candidate's work
        if chosen is not None:
            candidate = candidate._replace(chosen=chosen)
        decision = self.admission.admit(candidate, Room(self.budget, self.used), self.costs)
        if isinstance(decision, Refuse):
            self.excluded.append(decision.exclusion)
            return decision.offer
        if isinstance(decision, Stitch):
            self._stitch(decision)
            return Offer.MERGED
        self._keep(decision)
        return Offer.ADDED

    def _keep(self, decision: Keep) -> None:
        self.positions[decision.candidate.id] = len(self.kept)
        self.kept.append(decision.candidate)
        self.costs[decision.candidate.id] = decision.cost
        self.used += decision.cost
        self.admission.accept(decision)

    def _stitch(self, decision: Stitch) -> None:
        into = decision.merge.into
        position = self.positions[into.id]
        # why the kept passage was chosen, as the packing holds it (see relabel)
        self.kept[position] = decision.merge.merged._replace(chosen=self.kept[position].chosen)
        self.used += decision.cost - self.costs[into.id]
        self.costs[into.id] = decision.cost
        self.admission.accept(decision)
        self.excluded.append(decision.exclusion)
        self.merged_into[decision.exclusion.candidate_id] = decision.merge.merged.id

    def price(self, candidates: Sequence[Candidate]) -> list[tuple[Candidate, int]]:
        """The candidates that could fit the whole remaining budget, with their exact costs;
        the others are excluded as too big (after counting only as much as needed) or as
        untokenizable."""
        fitting = []
        room = Room(self.budget, self.used)  # pricing keeps nothing: the room stays
        for candidate in candidates:
            checkpoint()
            priced = self.admission.price(candidate, room)
            if isinstance(priced, Refuse):
                self.excluded.append(priced.exclusion)
            else:
                fitting.append((candidate, priced))
        return fitting

    def readmit(self, candidate: Candidate) -> Offer:
        """Offer a changed version (a compressed one) of a candidate already turned away: on
        success its earlier exclusion is withdrawn, otherwise the earlier one stands."""
        before = len(self.excluded)
        outcome = self.offer(candidate)
        if outcome in (Offer.ADDED, Offer.MERGED):
            self.readmitted.add(candidate.id)
            self.excluded[:before] = [
                e
                for e in self.excluded[:before]
                if e.candidate_id != candidate.id or e.reason is not Reason.OVER_BUDGET
            ]
        else:
            del self.excluded[before:]
        return outcome

    def kept_form(self, candidate_id: str) -> Candidate | None:
        """The kept candidate of that id as kept (compressed, grown by stitching), or ``None``
        when it is not kept itself."""
        position = self.positions.get(candidate_id)
        return None if position is None else self.kept[position]

    def relabel(self, candidate_id: str, chosen: Chosen) -> None:
        """Say why a kept candidate was chosen in other words (the report's ``chosen``)."""
        position = self.positions[candidate_id]
        self.kept[position] = self.kept[position]._replace(chosen=chosen)

    def holds(self, candidate_id: str) -> bool:
        """Whether the candidate is kept, itself or stitched into a kept passage."""
        return candidate_id in self.positions or candidate_id in self.merged_into

    def exclude(self, candidates: Sequence[Candidate], reason: Reason, detail: str) -> None:
        """Record ``candidates`` as excluded by the selection stage without offering them."""
        self.excluded.extend(Exclusion(c.id, SELECTION, reason, detail) for c in candidates)
