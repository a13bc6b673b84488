"""Admission: the order of the checks one offered candidate goes through, and what each
check decides (a fake meter, dedup session and guard record every question asked)."""

from __future__ import annotations

from typing import cast

import pytest

from ctxasm.data import Candidate, Exclusion, Passage, Reason
from ctxasm.stages.dedup import Duplicate, Merge, Verdict
from ctxasm.stages.selection_admission import (
    Admission,
    Decision,
    Keep,
    Meter,
    Offer,
    Refuse,
    Room,
    Stitch,
)
from ctxasm.stages.selection_packing import Packing

FULL_ORDER = [
    "placement",
    "lower_bound",
    "unreadable",
    "body_upto",
    "scan",
    "cost_upto",
    "verdict",
]
# With policy drop the guard is asked before the body is counted: an injection is one.
DROP_ORDER = [call for call in FULL_ORDER if call != "body_upto"]
OPENING = 5  # of the tokens the fake meter charges for a text, those of its header


class _Log:
    def __init__(self) -> None:
        self.calls: list[str] = []


class _Meter:
    """Costs one token per character, ``OPENING`` of them for the header and the rest for the
    body; ``long`` texts have an unbroken run."""

    def __init__(self, log: _Log) -> None:
        self.log, self.floor = log, 1

    def lower_bound(self, candidate: Candidate) -> int:
        self.log.calls.append("lower_bound")
        return len(candidate.text) // 2

    def unreadable(self, candidate: Candidate) -> str | None:
        self.log.calls.append("unreadable")
        return "an unbroken run" if candidate.text.startswith("long") else None

    def pricing(self, candidate: Candidate) -> tuple[str, str]:
        return candidate.text[:OPENING], candidate.text[OPENING:]

    def body_upto(self, fenced: str, limit: int) -> int | None:
        self.log.calls.append("body_upto")
        return len(fenced)

    def cost_upto(
        self,
        candidate: Candidate,
        limit: int,
        body: int | None = None,
        priced: tuple[str, str] | None = None,
    ) -> int:
        self.log.calls.append("cost_upto")
        opening, fenced = priced or self.pricing(candidate)
        return len(opening) + (len(fenced) if body is None else body)

    def cost_after_merge(self, kept: Candidate, merged: Candidate) -> int:
        self.log.calls.append("cost_after_merge")
        return len(merged.text)


class _Dedup:
    def __init__(self, log: _Log, placement: Verdict = None, verdict: Verdict = None) -> None:
        self.log, self.found_placement, self.found_verdict = log, placement, verdict
        self.accepted: list[tuple[str, str | None]] = []

    def placement(self, candidate: Candidate) -> Verdict:
        self.log.calls.append("placement")
        return self.found_placement

    def verdict(self, candidate: Candidate) -> Verdict:
        self.log.calls.append("verdict")
        return self.found_verdict

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        self.accepted.append((candidate.id, None if replaced is None else replaced.id))


class _Guard:
    window_chars = 1000  # reads every text of these tests in one window

    def __init__(self, log: _Log, policy: str, flags: tuple[str, ...] = ()) -> None:
        self.log, self.policy, self.flags = log, policy, flags

    def scan(self, text: str) -> tuple[str, ...]:
        self.log.calls.append("scan")
        return self.flags


class _WindowedGuard(_Guard):
    """Flags a text by what it holds, reading it in windows of ``window_chars``."""

    window_chars = 12

    def scan(self, text: str) -> tuple[str, ...]:
        self.log.calls.append(f"scan {text.splitlines()[0]}")
        return ("hidden_text",) if "!" in text else ()


def _candidate(pid: str, text: str) -> Candidate:
    return Candidate.of(Passage(pid, text), 0, 1.0)


def _admission(log: _Log, dedup: _Dedup | None = None, guard: _Guard | None = None) -> Admission:
    return Admission(cast(Meter, _Meter(log)), dedup or _Dedup(log), guard)


def test_a_candidate_that_passes_goes_through_every_check_in_order() -> None:
    log = _Log()
    admission = _admission(log, guard=_Guard(log, "flag", ("role_marker",)))
    decision = admission.admit(_candidate("a", "x" * 10), Room(100, 30), {})
    assert log.calls == FULL_ORDER
    assert isinstance(decision, Keep)
    assert (decision.candidate.id, decision.candidate.flags, decision.cost) == (
        "a",
        ("role_marker",),
        10,
    )


@pytest.mark.parametrize(
    ("case", "calls", "offer", "reason"),
    [
        ("duplicate by placement", ["placement"], Offer.DUPLICATE, Reason.DUPLICATE),
        ("over the size bound", ["placement", "lower_bound"], Offer.TOO_BIG, Reason.OVER_BUDGET),
        ("unreadable", FULL_ORDER[:3], Offer.UNTOKENIZABLE, Reason.UNTOKENIZABLE),
        ("body over budget", FULL_ORDER[:4], Offer.TOO_BIG, Reason.OVER_BUDGET),
        ("dropped by the guard", DROP_ORDER[:4], Offer.REFUSED, Reason.INJECTION),
        ("over budget once priced", FULL_ORDER[:6], Offer.TOO_BIG, Reason.OVER_BUDGET),
        ("duplicate by content", FULL_ORDER, Offer.DUPLICATE, Reason.DUPLICATE),
    ],
)
def test_each_check_stops_the_ones_after_it(
    case: str, calls: list[str], offer: Offer, reason: Reason
) -> None:
    log = _Log()
    duplicate = Duplicate("k", "repeats k")
    dedup = _Dedup(
        log,
        placement=duplicate if case == "duplicate by placement" else None,
        verdict=duplicate if case == "duplicate by content" else None,
    )
    dropping = case == "dropped by the guard"
    guard = _Guard(log, "drop", ("role_marker",)) if dropping else _Guard(log, "flag")
    text = {
        "over the size bound": "x" * 100,
        "unreadable": "long" + "x" * 6,
        "body over budget": "x" * 30,
        "over budget once priced": "x" * 22,
    }.get(case, "x" * 10)
    decision = _admission(log, dedup, guard).admit(_candidate("a", text), Room(40, 20), {})
    assert log.calls == calls
    assert isinstance(decision, Refuse)
    assert (decision.offer, decision.exclusion.candidate_id, decision.exclusion.reason) == (
        offer,
        "a",
        reason,
    )


def test_an_injection_too_big_to_fit_is_reported_as_one_under_policy_drop() -> None:
    log = _Log()
    admission = _admission(log, guard=_Guard(log, "drop", ("role_marker",)))
    decision = admission.admit(_candidate("a", "x" * 30), Room(40, 20), {})
    assert log.calls == DROP_ORDER[:4]
    assert isinstance(decision, Refuse)
    assert decision.exclusion.reason is Reason.INJECTION
    log.calls.clear()
    admission = _admission(log, guard=_Guard(log, "flag", ("role_marker",)))
    decision = admission.admit(_candidate("a", "x" * 30), Room(40, 20), {})
    assert log.calls == FULL_ORDER[:4]  # flags could not make it fit: it is not read
    assert isinstance(decision, Refuse)
    assert decision.exclusion.reason is Reason.OVER_BUDGET


def test_a_refusal_over_budget_says_what_is_left() -> None:
    decision = _admission(_Log()).admit(_candidate("a", "x" * 30), Room(40, 20), {})
    assert decision == Refuse(
        Offer.TOO_BIG,
        Exclusion(
            "a", "selection", Reason.OVER_BUDGET, "30 characters do not fit: 20 of 40 tokens left"
        ),
    )


def _stitching(log: _Log, guard: _Guard, kept_flags: tuple[str, ...] = ()) -> Admission:
    """An admission whose dedup stitches every offer into kept passage "k" (10 characters,
    14 once grown)."""
    kept = _candidate("k", "x" * 10)._replace(flags=kept_flags)
    merged = kept._replace(text="x" * 14)
    return _admission(log, _Dedup(log, placement=Merge(kept, merged, "overlaps k")), guard)


def test_a_stitch_is_priced_then_rescanned_and_priced_again_when_flagged() -> None:
    log = _Log()
    admission = _stitching(log, _Guard(log, "flag", ("hidden_text",)))
    decision = admission.admit(_candidate("a", "x" * 8), Room(20, 10), {"k": 10})
    # priced with the kept passage's flags, scanned, priced again with the new flag
    assert log.calls == ["placement", "cost_after_merge", "scan", "cost_after_merge"]
    assert isinstance(decision, Stitch)
    assert (decision.merge.merged.flags, decision.cost) == (("hidden_text",), 14)
    assert decision.exclusion == Exclusion("a", "dedup", Reason.MERGED, "overlaps k")


def test_a_stitch_that_cannot_fit_is_refused_before_the_guard_reads_it() -> None:
    log = _Log()
    admission = _stitching(log, _Guard(log, "drop", ("hidden_text",)))
    too_big = admission.admit(_candidate("a", "x" * 8), Room(20, 17), {"k": 10})
    assert log.calls == ["placement", "cost_after_merge"]  # no scan
    assert isinstance(too_big, Refuse)
    assert (too_big.offer, too_big.exclusion.reason) == (Offer.TOO_BIG, Reason.OVER_BUDGET)
    assert (
        too_big.exclusion.detail == "stitching it into k needs 4 more tokens: 3 of 20 tokens left"
    )


def test_a_stitch_with_no_new_flag_is_priced_once() -> None:
    log = _Log()
    admission = _stitching(log, _Guard(log, "flag", ()), kept_flags=("hidden_text",))
    decision = admission.admit(_candidate("a", "x" * 8), Room(20, 10), {"k": 10})
    assert log.calls == ["placement", "cost_after_merge", "scan"]
    assert isinstance(decision, Stitch)
    # a grown text that scans clean keeps the kept passage's flag: a stitch takes none away
    assert decision.merge.merged.flags == ("hidden_text",)


def test_price_asks_neither_the_guard_nor_dedup() -> None:
    log = _Log()
    admission = _admission(log, guard=_Guard(log, "drop", ("role_marker",)))
    assert admission.price(_candidate("a", "x" * 10), Room(40, 0)) == 10
    assert log.calls == ["lower_bound", "unreadable", "cost_upto"]


def test_packing_records_decisions_and_resumes_from_a_snapshot() -> None:
    log = _Log()
    dedup = _Dedup(log)
    packing = Packing(25, cast(Meter, _Meter(log)), dedup)
    assert packing.offer(_candidate("a", "x" * 10)) is Offer.ADDED
    assert packing.offer(_candidate("b", "x" * 20)) is Offer.TOO_BIG
    packed = packing.snapshot()
    assert ([c.id for c in packed.kept], dict(packed.costs), packed.used) == (["a"], {"a": 10}, 10)
    assert [e.candidate_id for e in packed.excluded] == ["b"]
    resumed = Packing.resume(packed)
    assert resumed.offer(_candidate("c", "x" * 5)) is Offer.ADDED
    after = resumed.snapshot()
    assert ([c.id for c in after.kept], after.used, len(after.excluded)) == (["a", "c"], 15, 1)
    assert [c.id for c in packed.kept] == ["a"]  # the snapshot did not change
    assert dedup.accepted == [("a", None), ("c", None)]


@pytest.mark.parametrize(("policy", "window"), [("drop", 12), ("flag", 12), ("drop", 0)])
def test_a_stitch_read_in_several_windows_is_judged_by_its_parts_too(
    policy: str, window: int
) -> None:
    # The grown text scans clean (as when a window bound splits the evidence), the offered
    # window alone does not: with drop it is refused, with flag the grown passage is marked.
    # A guard that does not say how far it reads in one window is always asked about both.
    log = _Log()
    kept = _candidate("k", "x" * 10)
    merged = kept._replace(text="x" * 14)
    guard = _WindowedGuard(log, policy)
    guard.window_chars = window
    dedup = _Dedup(log, placement=Merge(kept, merged, "overlaps k"))
    decision = _admission(log, dedup, guard).admit(
        _candidate("a", "x!" * 4), Room(20, 10), {"k": 10}
    )
    assert log.calls[:4] == ["placement", "cost_after_merge", "scan id: k", "scan id: a"]
    if policy == "drop":
        assert isinstance(decision, Refuse)
        assert (decision.exclusion.candidate_id, decision.exclusion.reason) == (
            "a",
            Reason.INJECTION,
        )
        assert decision.exclusion.detail.startswith("stitching it into k would make text")
    else:
        assert isinstance(decision, Stitch)
        assert decision.merge.merged.flags == ("hidden_text",)


class _SeamGuard:
    """Reads 40 characters in one window, and can read only the new spans of a text; flags
    "AB"."""

    window_chars = 40
    policy = "flag"

    def __init__(self) -> None:
        self.read: list[str] = []

    def scan(self, text: str) -> tuple[str, ...]:
        self.read.append(text)
        return ("hidden_text",) if "AB" in text else ()

    def scan_new(self, text: str, new: list[tuple[int, int]]) -> tuple[str, ...]:
        self.read.append(" | ".join(text[start:end] for start, end in new))
        return ("hidden_text",) if any("AB" in text[start:end] for start, end in new) else ()


def _stitch_long(
    head: str, tail: str, kept_text: str = "keptKEPT" * 5
) -> tuple[Decision, list[str]]:
    kept = _candidate("k", kept_text)
    merged = kept._replace(text=head + kept_text + tail)
    offered = _candidate("a", head + kept_text[:4] if head else kept_text[-4:] + tail)
    guard = _SeamGuard()
    admission = Admission(
        cast(Meter, _Meter(_Log())), _Dedup(_Log(), placement=Merge(kept, merged, "k")), guard
    )
    return admission.admit(offered, Room(200, 10), {"k": 40}), guard.read


@pytest.mark.parametrize(
    ("head", "tail", "first"),
    [
        ("", "TAILtail", "TAILtail"),  # appended: only what is new
        ("headHEAD", "", "id: k\nheadHEAD" + "keptKEPT" * 5),  # prepended: whole
        ("headHEAD", "TAILtail", "id: k\nheadHEAD" + "keptKEPT" * 5 + "TAILtail"),  # both
    ],
)
def test_a_long_stitch_is_read_where_it_is_new_when_added_at_its_end(
    head: str, tail: str, first: str
) -> None:
    # Past one window, a guard that can read only what is new is asked about what was added
    # after the kept text (its windows before are the kept text's own, read before). Text
    # added before moves every window: the grown text is read whole. Then the offered window.
    decision, read = _stitch_long(head, tail)
    assert isinstance(decision, Stitch)
    assert read == [first, "id: a\n" + (head + "kept" if head else "KEPT" + tail)]


def test_what_a_long_stitch_adds_is_flagged() -> None:
    decision, _ = _stitch_long("", "ABtail")
    assert isinstance(decision, Stitch)
    assert decision.merge.merged.flags == ("hidden_text",)
