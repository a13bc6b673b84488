"""Admission: whether one offered candidate joins what selection has kept so far.

Selection strategies only choose the order of offers; every offer is decided here, by
:meth:`Admission.admit`, which runs these checks in this order and stops at the first that
turns the candidate away:

1. **dedup placement**: from document identity and offsets only (nothing is tokenized), is it a
   window of a kept passage's document? Then it is stitched into that passage or is a duplicate
   of it (see *stitching* below);
2. **size bound**: a lower bound on its tokens, known without tokenizing, must fit what is left
   (``over_budget``); guard flags only add tokens, so the bound holds for the flagged candidate;
3. **readability**: its text, title and url must be tokenizable in linear time
   (``untokenizable``);
4. **guard**: with policy ``flag``, its body alone (the text as the block carries it, which
   flags never change) is counted first, as far as what is left, and one that cannot fit is
   refused (``over_budget``) unscanned (with policy ``drop`` an injection is reported as one,
   whatever its size); then its id, title, url and text (all a header or a template can show)
   are scanned;
   with policy ``drop`` a flagged candidate is refused (``injection``), otherwise it carries its
   flags from here on;
5. **price**: its exact cost, counted only as far as what is left (``over_budget`` when above);
6. **dedup verdict**: its content is compared with what is kept (``duplicate``, or stitching).

Stitching (a ``Merge`` from step 1 or 6): the grown passage is priced by the new text only, with
the kept passage's flags, and a growth that cannot fit what is left is refused (``over_budget``)
before anything else, as the size bound comes before the guard. Then the guard reads the grown
text (its header describes it; see ``Admission._grown_flags`` for what of it is read); with
policy ``drop``, a grown text that is flagged refuses the offered candidate (``injection``) and
the kept passage stays as it was, so a window cannot bring in by stitching what step 4 would
refuse on its own. A grown passage keeps every flag it had; one with a new flag is priced again.
The offered candidate is recorded as ``merged``.

The order is for speed, and it is part of the contract: a candidate is shingled, scanned or
tokenized only when the cheaper checks before let it through. :meth:`Admission.price` is the
pricing part alone (steps 2, 3 and 5), for strategies that price a pool before they offer.
An admission decides; it keeps nothing. :class:`~ctxasm.stages.selection_packing.Packing`
records the decisions, and :meth:`Admission.accept` tells the dedup sessions what was kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, Protocol

from ctxasm.data import Candidate, Exclusion, Passage, Reason
from ctxasm.errors import UntokenizableError
from ctxasm.stages.dedup import DedupSession, Duplicate, Merge
from ctxasm.tokens import TokenCounter

__all__ = [
    "Admission",
    "Decision",
    "Guard",
    "Keep",
    "Meter",
    "Offer",
    "Refuse",
    "Room",
    "Stitch",
]

SELECTION = "selection"
DEDUP = "dedup"
GUARD = "guard"


class Guard(Protocol):
    """What admission needs of a guard strategy: its flags for a text, and whether a flagged
    candidate is dropped (``policy == "drop"``) rather than marked. A guard that reads a text of
    up to ``window_chars`` characters in one window (the built-in scan does) may say so, and
    one that can read only the new parts of a grown text may offer ``scan_new(text, spans)``:
    a stitch that stays within one window is then scanned once, and a longer one where it is
    new (see ``Admission._grown_flags``)."""

    policy: str

    def scan(self, text: str) -> tuple[str, ...]: ...


Flags = tuple[str, ...]  # a guard's check names, in its order


class Meter:
    """Token prices of candidates: their fenced body plus their opening (separator and header).

    ``pricing`` gives a candidate's (opening, body) as rendered in the sources block; bodies
    are exactly the segments the final block is made of, so the verify recount finds their
    counts cached.
    """

    def __init__(
        self,
        counter: TokenCounter,
        pricing: Callable[[Candidate], tuple[str, str]],
        *,
        every_id: bool = False,
    ) -> None:
        self.counter = counter
        self.pricing = pricing
        # the format may show any passage's id (a template), not only where the header does
        self.every_id = every_id
        self._floor: int | None = None

    def cost(self, candidate: Candidate) -> int:
        """Tokens the candidate adds to the sources block, framing included.

        One extra token per passage covers a longer label or fence in the final order; the
        verify stage recounts the real block in any case.
        """
        opening, fenced = self.pricing(candidate)
        return self.counter.count(opening) + self.counter.count(fenced) + 1

    def cost_upto(
        self,
        candidate: Candidate,
        limit: int,
        body: int | None = None,
        priced: tuple[str, str] | None = None,
    ) -> int:
        """The exact cost when it is at most ``limit``, else some cost above ``limit``:
        a passage that cannot fit is only tokenized as far as needed to know it. ``body`` is
        the exact count of its body where :meth:`body_upto` found it, and ``priced`` its
        ``pricing`` where already made."""
        opening, fenced = self.pricing(candidate) if priced is None else priced
        framing = self.counter.count(opening) + 1
        if body is not None:
            return framing + body
        return framing + self.counter.count_upto(fenced, max(0, limit - framing))

    def body_upto(self, fenced: str, limit: int) -> int | None:
        """The count of a candidate's body ``fenced`` (its text as the block carries it, which
        the guard's flags never change: they go in the opening) when the candidate may fit in
        ``limit`` tokens, else some count of ``limit`` or more; ``None`` where the body cannot
        be tokenized (the price then says so, as it would have)."""
        try:
            return self.counter.count_upto(fenced, max(0, limit - 1))
        except UntokenizableError:
            return None

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
        """Why the candidate's text, title, url or header (which shows the id when there is
        neither title nor url) cannot be tokenized in linear time (an unbroken run too long,
        see :mod:`ctxasm.tokens.runs`), or ``None``; a scan only."""
        passage = candidate.passage
        limit = self.counter.max_run
        for name, value in (
            ("text", candidate.text),
            ("title", passage.title),
            ("url", passage.url),
        ):
            run = self.counter.long_run(value) if value else None
            if run is not None:
                return f"its {name} has {run.describe(limit)}"
        if self.every_id and len(passage.id) > limit // 2:
            run = self.counter.long_run(passage.id)
            if run is not None:
                return f"its id (which the template may show) has {run.describe(limit)}"
        if max(len(passage.id), len(passage.title or ""), len(passage.url or "")) > limit // 2:
            # The header, as rendered: it shows the id only where it shows no title or url,
            # and its parts together may make a run that none makes alone.
            opening, _ = self.pricing(candidate)
            run = self.counter.long_run(opening)
            if run is not None:
                return f"its header (the title, url or id it shows) has {run.describe(limit)}"
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


# Rooms and decisions are made once per offered candidate: immutable tuples, which are the
# cheapest immutable values to build (as Candidate is).


class Room(NamedTuple):
    """The budget selection fills and the tokens the kept candidates already use."""

    budget: int
    used: int

    @property
    def remaining(self) -> int:
        return self.budget - self.used


class Keep(NamedTuple):
    """Admit ``candidate`` (as it is to be kept: with its guard flags) at ``cost`` tokens."""

    candidate: Candidate
    cost: int


class Stitch(NamedTuple):
    """Replace kept ``merge.into`` by ``merge.merged``, which costs ``cost`` tokens in all;
    the offered candidate is recorded as ``exclusion`` (reason ``merged``)."""

    merge: Merge
    cost: int
    exclusion: Exclusion


class Refuse(NamedTuple):
    """Turn the candidate away: ``offer`` says how, ``exclusion`` records why."""

    offer: Offer
    exclusion: Exclusion


Decision = Keep | Stitch | Refuse


def _stitch_too_big(candidate: Candidate, into: Candidate, delta: int, room: Room) -> Refuse:
    return too_big(candidate, room, f"stitching it into {into.id} needs {delta} more tokens")


def _scanned(candidate: Candidate) -> str:
    """What the guard reads of a candidate: every field its header or a template can show (its
    id, title and url, each on a line after its name) and its text. A header or a template
    shows a field on one line, after a label or inside markup: never where it would open a
    line of the prompt, so an id like ``system:doc-17`` or a title like ``System: Overview``
    is not read as a role line (what such a field says is read as it is)."""
    passage = candidate.passage
    fields = (("id", passage.id), ("title", passage.title), ("url", passage.url))
    lines = [f"{name}: {' '.join(value.split())}" for name, value in fields if value]
    return "\n".join([*lines, candidate.text])


def injection(candidate: Candidate, flags: Flags, what: str = "") -> Refuse:
    """An ``injection`` refusal naming the checks ``flags`` (``what`` says whose text it was,
    when not the candidate's own)."""
    detail = f"looks like a prompt injection: {', '.join(flags)}"
    if what:
        detail = f"{what} {detail}"
    return Refuse(Offer.REFUSED, Exclusion(candidate.id, GUARD, Reason.INJECTION, detail))


def too_big(candidate: Candidate, room: Room, need: str | None = None) -> Refuse:
    """An ``over_budget`` refusal, with what is left of the budget."""
    # Whether the exact count was cached must not change the report, so the size is given
    # in characters, which every path knows.
    if need is None:
        need = f"{len(candidate.text):,} characters do not fit"
    detail = f"{need}: {room.remaining} of {room.budget} tokens left"
    return Refuse(Offer.TOO_BIG, Exclusion(candidate.id, SELECTION, Reason.OVER_BUDGET, detail))


def untokenizable(candidate: Candidate, why: str) -> Refuse:
    """An ``untokenizable`` refusal."""
    detail = f"cannot be counted: {why}"
    return Refuse(
        Offer.UNTOKENIZABLE, Exclusion(candidate.id, SELECTION, Reason.UNTOKENIZABLE, detail)
    )


@dataclass(frozen=True, slots=True)
class Admission:
    """The checks one offered candidate goes through, in the order of the module docstring.

    ``dedup`` is the assembly's dedup session: it remembers what :meth:`accept` was told.
    """

    meter: Meter
    dedup: DedupSession
    guard: Guard | None = None

    def admit(self, candidate: Candidate, room: Room, costs: Mapping[str, int]) -> Decision:
        """Whether ``candidate`` joins the kept ones, which use ``room.used`` tokens (``costs``
        by kept id); see the module docstring for the order of the checks."""
        placement = self.dedup.placement(candidate)  # 1. dedup placement
        if placement is not None:
            return self._redundant(candidate, placement, room, costs)
        remaining = room.remaining
        if self.meter.lower_bound(candidate) > remaining:  # 2. size bound
            return too_big(candidate, room)
        unreadable = self.meter.unreadable(candidate)  # 3. readability
        if unreadable is not None:
            return untokenizable(candidate, unreadable)
        body: int | None = None
        priced: tuple[str, str] | None = None
        if self.guard is not None:
            if self.guard.policy != "drop":  # 4a. body bound (a dropped one says injection)
                priced = self.meter.pricing(candidate)
                body = self.meter.body_upto(priced[1], remaining)
                if body is not None and body + 1 > remaining:
                    return too_big(candidate, room)
            flags = self.guard.scan(_scanned(candidate))  # 4. guard
            if flags and self.guard.policy == "drop":
                return injection(candidate, flags)
            if flags != candidate.flags:
                priced = None  # its opening changes
            candidate = candidate._replace(flags=flags)
        try:
            cost = self.meter.cost_upto(candidate, remaining, body, priced)  # 5. price
        except UntokenizableError as exc:
            return untokenizable(candidate, exc.message)
        if cost > remaining:
            return too_big(candidate, room)
        verdict = self.dedup.verdict(candidate)  # 6. dedup verdict
        if verdict is not None:
            return self._redundant(candidate, verdict, room, costs)
        return Keep(candidate, cost)

    def price(self, candidate: Candidate, room: Room) -> int | Refuse:
        """The exact cost of ``candidate`` when it fits ``room``, else the refusal (steps 2, 3
        and 5 of the module docstring: no guard, no dedup)."""
        remaining = room.remaining
        if self.meter.lower_bound(candidate) > remaining:
            return too_big(candidate, room)
        unreadable = self.meter.unreadable(candidate)
        try:
            if unreadable is not None:
                raise UntokenizableError(unreadable)
            cost = self.meter.cost_upto(candidate, remaining)
        except UntokenizableError as exc:
            return untokenizable(candidate, exc.message)
        return too_big(candidate, room) if cost > remaining else cost

    def accept(self, decision: Keep | Stitch) -> None:
        """Tell the dedup session what was kept (so later verdicts compare against it)."""
        if isinstance(decision, Stitch):
            self.dedup.accept(decision.merge.merged, decision.merge.into)
        else:
            self.dedup.accept(decision.candidate, None)

    def _redundant(
        self,
        candidate: Candidate,
        verdict: Duplicate | Merge,
        room: Room,
        costs: Mapping[str, int],
    ) -> Decision:
        if isinstance(verdict, Merge):
            return self._stitch(candidate, verdict, room, costs)
        exclusion = Exclusion(candidate.id, DEDUP, Reason.DUPLICATE, verdict.detail)
        return Refuse(Offer.DUPLICATE, exclusion)

    def _stitch(
        self, candidate: Candidate, verdict: Merge, room: Room, costs: Mapping[str, int]
    ) -> Decision:
        into = verdict.into
        # Priced first with the kept passage's flags (the grown passage keeps them, and flags
        # only add tokens): a growth that cannot fit is refused before the guard reads the
        # grown text, as a candidate's size bound comes before its scan (steps 2 and 4).
        try:
            new_cost = self.meter.cost_after_merge(into, verdict.merged)
        except UntokenizableError as exc:
            return untokenizable(candidate, f"stitching it into {into.id}: {exc}")
        if new_cost - costs[into.id] > room.remaining:
            return _stitch_too_big(candidate, into, new_cost - costs[into.id], room)
        if self.guard is not None:  # the grown text is what the header describes
            flags = self._grown_flags(candidate, into, verdict.merged)
            if flags and self.guard.policy == "drop":  # the window brings what step 4 refuses
                return injection(
                    candidate, flags, f"stitching it into {into.id} would make text that"
                )
            if flags != verdict.merged.flags:
                verdict = Merge(into, verdict.merged._replace(flags=flags), verdict.detail)
                new_cost = self.meter.cost_after_merge(into, verdict.merged)
                if new_cost - costs[into.id] > room.remaining:
                    return _stitch_too_big(candidate, into, new_cost - costs[into.id], room)
        exclusion = Exclusion(candidate.id, DEDUP, Reason.MERGED, verdict.detail)
        return Stitch(verdict, new_cost, exclusion)

    def _grown_flags(self, candidate: Candidate, into: Candidate, merged: Candidate) -> Flags:
        """The guard's flags for ``candidate`` stitched into ``into`` (``merged``), and those
        ``into`` has: a stitch never takes away a flag. A grown text the guard reads in one
        window is read whole. A longer one it reads in several windows, whose bounds fall
        elsewhere than in either part's own scan, so it is judged by both parts too; and where
        text was added after the kept text and the guard can read only what is new in a text
        (``scan_new``: the built-in scan reads the windows that hold new characters), the rest
        is what ``into``'s flags answer for, so a passage grown window by window in document
        order is not read whole at every stitch (which made it quadratic in the windows)."""
        assert self.guard is not None
        guard = self.guard
        text = _scanned(merged)
        if len(text) <= getattr(guard, "window_chars", 0):
            return tuple(dict.fromkeys((*guard.scan(text), *into.flags)))
        scan_new = getattr(guard, "scan_new", None)
        if scan_new is not None and merged.text.startswith(into.text):
            # Added after the kept text: the grown text's windows up to its end are the kept
            # text's, read before. Added before, every window moves, and the text is read
            # whole (a window of kept text alone may join what none of its own windows did).
            grown = scan_new(text, [(len(text) - len(merged.text) + len(into.text), len(text))])
        else:
            grown = guard.scan(text)
        return tuple(dict.fromkeys((*grown, *into.flags, *guard.scan(_scanned(candidate)))))
