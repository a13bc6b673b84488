"""A time limit on one request's work, and its cancellation, checked where the work can stop.

Python cannot stop a thread from outside, so the work stops itself: the assembler calls
:func:`checkpoint` before each stage, and the stages call it in their loops whose work grows
with the number or size of the candidates (relevance's term search, the guard's windows,
selection's offers, compression's cuts), as does the citation check in its scans of the answer
(:func:`checked` for loops of many small steps). Once the deadline has passed, or the caller
cancelled, the next checkpoint raises :class:`~ctxasm.errors.DeadlineError`, so the work done
past the limit is about one candidate's.

The deadline is held in a context variable: it applies to the work of the thread (or task) that
applies it, and to nothing else. Without one (the CLI, ``ctxasm batch``, the Python API unless
the caller applies one), a checkpoint reads that variable and returns::

    from ctxasm.deadline import Deadline

    limit = Deadline(5.0)             # from now
    with limit.applied():
        assembler.assemble(request)   # DeadlineError after about 5 s, or once limit.cancel()

The HTTP service applies one per request (``[service] request_timeout_s``), and cancels it when
the client hangs up.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from ctxasm.errors import DeadlineError

__all__ = ["Deadline", "checked", "checkpoint"]


class Deadline:
    """A limit of ``seconds`` from its creation on the work run under :meth:`applied`.

    ``setting`` names where the limit comes from (``[service] request_timeout_s``), for the
    error's message. :meth:`cancel` may be called from any thread; the work stops at its next
    checkpoint."""

    __slots__ = ("_cancelled", "expires", "seconds", "setting")

    def __init__(self, seconds: float, *, setting: str | None = None) -> None:
        self.seconds = seconds
        self.setting = setting
        self.expires = time.monotonic() + seconds
        # A plain flag: one thread sets it, the worker reads it; the GIL makes both atomic.
        self._cancelled = False

    def cancel(self) -> None:
        """Stop the work at its next checkpoint (its caller no longer wants the answer)."""
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.expires

    def check(self) -> None:
        """Raise :class:`~ctxasm.errors.DeadlineError` when cancelled or past the limit."""
        if self._cancelled:
            raise DeadlineError("the work was cancelled before it finished")
        if time.monotonic() >= self.expires:
            raise DeadlineError(self._message())

    def _message(self) -> str:
        limit = f"{self.seconds:g} s"
        if self.setting is None:
            return (
                f"the work took longer than its time limit of {limit}; give it fewer or "
                "shorter passages, or a longer limit"
            )
        return (
            f"the work took longer than this service's time limit of {limit} "
            f"({self.setting}); send fewer or shorter passages, or the operator can raise "
            f"{self.setting}"
        )

    @contextmanager
    def applied(self) -> Iterator[Deadline]:
        """Apply this deadline to the checkpoints of the work run inside the block (in this
        thread or task; the one applied before is restored after)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


_CURRENT: ContextVar[Deadline | None] = ContextVar("ctxasm_deadline", default=None)


def checkpoint() -> None:
    """Raise :class:`~ctxasm.errors.DeadlineError` when the deadline applied to this work has
    passed or was cancelled; do nothing without one (one context variable read)."""
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.check()


_T = TypeVar("_T")


def checked(items: Iterable[_T], every: int = 256) -> Iterator[_T]:
    """``items``, with a :func:`checkpoint` before the first and then every ``every`` items:
    for loops whose steps are too small to check each (the matches of a scan over a long
    text), but whose count grows with the input."""
    deadline = _CURRENT.get()
    if deadline is None:
        yield from items
        return
    for index, item in enumerate(items):
        if not index % every:
            deadline.check()
        yield item
