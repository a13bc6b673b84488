"""The CPU time of a call, for tests that hold work to a scaling bound (n against a multiple of
n) rather than to a time: shared by the unit tests (imported by name; conftest modules are
not)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_cpu_seconds(call: Callable[[], object], runs: int = 5) -> float:
    """The least CPU time of this process over ``runs`` calls (other processes on a loaded
    machine do not count; the best run is the one least disturbed)."""
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        call()
        best = min(best, time.process_time() - started)
    return best
