"""ctxasm.deadline: a checkpoint raises once the applied deadline has passed or was cancelled,
and does nothing without one; an assembly under a deadline stops at its stages' checkpoints."""

from __future__ import annotations

import threading
import time

import pytest

from ctxasm.assembler import Assembler
from ctxasm.deadline import Deadline, checkpoint
from ctxasm.errors import CtxasmError, DeadlineError

PASSAGES = [
    {"id": "a", "text": "Aristotle taught at the Lyceum in Athens."},
    {"id": "b", "text": "Plato founded the Academy."},
]


def test_a_checkpoint_without_a_deadline_does_nothing() -> None:
    for _ in range(1000):
        checkpoint()


def test_a_checkpoint_raises_once_the_deadline_has_passed() -> None:
    limit = Deadline(0.05, setting="[service] request_timeout_s")
    with limit.applied():
        checkpoint()  # in time
        time.sleep(0.06)
        with pytest.raises(DeadlineError) as caught:
            checkpoint()
    assert caught.value.to_dict() == {
        "code": "deadline_exceeded",
        "message": "the work took longer than this service's time limit of 0.05 s ([service] "
        "request_timeout_s); send fewer or shorter passages, or the operator can raise "
        "[service] request_timeout_s",
        "field": None,
    }
    assert (caught.value.http_status, caught.value.exit_code) == (503, 1)
    assert isinstance(caught.value, CtxasmError)
    checkpoint()  # the block is left: no deadline applies any more


def test_a_deadline_without_a_setting_says_how_to_fix_it() -> None:
    with Deadline(0.0).applied(), pytest.raises(DeadlineError) as caught:
        checkpoint()
    assert caught.value.message == (
        "the work took longer than its time limit of 0 s; give it fewer or shorter passages, "
        "or a longer limit"
    )


def test_a_cancelled_deadline_raises_at_the_next_checkpoint_from_another_thread() -> None:
    limit = Deadline(3600.0)
    with limit.applied():
        checkpoint()
        canceller = threading.Thread(target=limit.cancel)
        canceller.start()
        canceller.join()
        with pytest.raises(DeadlineError) as caught:
            checkpoint()
    assert (limit.cancelled, limit.expired) == (True, False)
    assert caught.value.message == "the work was cancelled before it finished"


def test_a_deadline_applies_to_its_own_thread_only() -> None:
    seen: list[str] = []

    def elsewhere() -> None:
        checkpoint()  # another thread has no deadline applied
        seen.append("ran")

    with Deadline(0.0).applied():
        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
    assert seen == ["ran"]


def test_an_inner_deadline_gives_way_to_the_outer_one_after_it() -> None:
    outer = Deadline(0.0)
    with outer.applied():
        with Deadline(3600.0).applied():
            checkpoint()
        with pytest.raises(DeadlineError):
            checkpoint()


def test_an_assembly_stops_at_a_passed_deadline_and_is_unchanged_under_a_distant_one() -> None:
    assembler = Assembler()
    free = assembler.assemble("Where did Aristotle teach?", PASSAGES)
    with Deadline(3600.0).applied():
        bounded = assembler.assemble("Where did Aristotle teach?", PASSAGES)
    assert (bounded.text, bounded.messages) == (free.text, free.messages)
    assert [c.id for c in bounded.report.included] == [c.id for c in free.report.included] == ["a"]
    with Deadline(0.0).applied(), pytest.raises(DeadlineError):
        assembler.assemble("Where did Aristotle teach?", PASSAGES)
