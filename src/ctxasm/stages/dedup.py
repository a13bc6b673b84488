"""The dedup slot: redundancy against what has already been selected.

A dedup strategy opens a :class:`DedupSession` per assembly. Selection offers each candidate it
is about to keep; the session answers with a verdict, computed only then (so candidates that
never get that far are never shingled or hashed):

* ``None``: nothing redundant, keep it;
* :class:`Duplicate`: it repeats a kept passage (the detail names which and how similar);
* :class:`Merge`: it is an overlapping window of a kept passage's document, and the two are
  stitched into one passage that keeps the earlier one's id and label.

Strategies are chained in the order the request lists them; the first verdict wins. Comparing
against *selected* passages (not every higher-ranked one) means a near-copy of a passage that was
too long to fit can still be chosen in its place.

Here: the verdicts, the session and strategy protocols, the chain, and :class:`ExactDedup`. The
other strategies import them: stitching in :mod:`ctxasm.stages.dedup_stitch`, near-duplicates
in :mod:`ctxasm.stages.dedup_near`, embeddings in :mod:`ctxasm.stages.dedup_semantic`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ctxasm.data import Candidate
from ctxasm.keys import CACHE_CHARS, content_key, text_cache
from ctxasm.lexical import phrase_key
from ctxasm.strategy import Strategy

__all__ = [
    "DedupChain",
    "DedupSession",
    "DedupStrategy",
    "Duplicate",
    "ExactDedup",
    "Merge",
    "NearDuplicateDedup",  # noqa: F822 - read from its module by __getattr__ (below)
    "StitchWindowsDedup",  # noqa: F822
    "clear_caches",  # noqa: F822
]

# Names this module held before the strategies moved to modules of their own, still found here
# (code that imports them, an installed entry point that names this module), read when first
# asked for: those modules import this one.
_MOVED = {
    "NearDuplicateDedup": "ctxasm.stages.dedup_near",
    "StitchWindowsDedup": "ctxasm.stages.dedup_stitch",
    "clear_caches": "ctxasm.stages.dedup_near",
}


def __getattr__(name: str) -> Any:
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The candidate repeats kept passage ``of``."""

    of: str
    detail: str


@dataclass(frozen=True, slots=True)
class Merge:
    """The candidate overlaps kept passage ``into``; ``merged`` is the two stitched together."""

    into: Candidate
    merged: Candidate
    detail: str


Verdict = Duplicate | Merge | None


class DedupSession(Protocol):
    """Per-assembly state of one dedup strategy.

    Two questions, asked at different moments: :meth:`placement` before the candidate is priced
    (cheap, from document identity and offsets: a window that extends a kept passage only costs
    its new text), :meth:`verdict` once it is known to fit (comparing content).
    """

    def placement(self, candidate: Candidate) -> Verdict:
        """Whether ``candidate`` is part of a kept passage's document window (stitching)."""
        ...

    def verdict(self, candidate: Candidate) -> Verdict:
        """Whether ``candidate``'s content repeats what has been accepted so far."""
        ...

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        """Record that ``candidate`` was kept (replacing ``replaced`` after a merge)."""
        ...


class DedupStrategy(Protocol):
    name: ClassVar[str]

    def session(self) -> DedupSession: ...

    def to_config(self) -> dict[str, Any]: ...


class DedupChain:
    """Several sessions asked in order; the first verdict wins."""

    def __init__(self, sessions: Sequence[DedupSession]) -> None:
        self.sessions = list(sessions)

    def placement(self, candidate: Candidate) -> Verdict:
        for session in self.sessions:
            found = session.placement(candidate)
            if found is not None:
                return found
        return None

    def verdict(self, candidate: Candidate) -> Verdict:
        for session in self.sessions:
            found = session.verdict(candidate)
            if found is not None:
                return found
        return None

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        for session in self.sessions:
            session.accept(candidate, replaced)


@text_cache(CACHE_CHARS)
def _normalized_key(text: str) -> int:
    # The phrase key is the text's words joined by single spaces (and is usually cached
    # already: selection and relevance key every candidate the same way).
    return content_key(phrase_key(text))


@dataclass(frozen=True)
class ExactDedup(Strategy):
    """Drop a passage whose text equals a kept one's after normalisation (case, whitespace and
    punctuation ignored). Cheap; always worth running."""

    name: ClassVar[str] = "exact"
    slot: ClassVar[str] = "dedup"

    def session(self) -> DedupSession:
        return _ExactSession()


class _ExactSession:
    def __init__(self) -> None:
        self.seen: dict[int, str] = {}

    def placement(self, candidate: Candidate) -> Verdict:
        return None

    def verdict(self, candidate: Candidate) -> Verdict:
        owner = self.seen.get(_normalized_key(candidate.text))
        if owner is None:
            return None
        return Duplicate(owner, f"same text as {owner} after normalisation (similarity 1.0)")

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        self.seen.setdefault(_normalized_key(candidate.text), candidate.id)
