"""The ordering slot: where each kept passage sits in the prompt.

Every strategy returns a permutation of its input; ties always fall back to request order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

from ctxasm.data import Candidate
from ctxasm.schema import parse_timestamp
from ctxasm.strategy import Strategy, require_number

__all__ = [
    "ByScoreOrdering",
    "BySourceOrdering",
    "CacheStableOrdering",
    "ChronologicalOrdering",
    "OrderingStrategy",
    "PrimacyRecencyOrdering",
    "RetrievalOrderOrdering",
]


class OrderingStrategy(Protocol):
    name: ClassVar[str]

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]: ...

    def to_config(self) -> dict[str, Any]: ...


def _by_score(kept: Sequence[Candidate]) -> list[Candidate]:
    return sorted(kept, key=lambda c: (-c.score, c.request_index))


@dataclass(frozen=True)
class ByScoreOrdering(Strategy):
    """Best score first. Use with models that read the top of the context most carefully."""

    name: ClassVar[str] = "score"
    slot: ClassVar[str] = "ordering"

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]:
        return _by_score(kept)


@dataclass(frozen=True)
class RetrievalOrderOrdering(Strategy):
    """The order the passages arrived in (trust the retriever or reranker as it is)."""

    name: ClassVar[str] = "retrieval"
    slot: ClassVar[str] = "ordering"

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]:
        return sorted(kept, key=lambda c: c.request_index)


_UNDATED = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class ChronologicalOrdering(Strategy):
    """Oldest ``timestamp`` first; undated passages last. Use for news, logs and conversations."""

    name: ClassVar[str] = "chronological"
    slot: ClassVar[str] = "ordering"

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]:
        def when(c: Candidate) -> datetime:
            stamp = c.passage.timestamp
            return _UNDATED if stamp is None else parse_timestamp(stamp)

        return sorted(kept, key=lambda c: (when(c), c.request_index))


@dataclass(frozen=True)
class BySourceOrdering(Strategy):
    """Passages of one document together, in document order (``start``, else request order);
    documents ordered by their best passage. Use for multi-document questions. A passage that
    compression shortened keeps its place by the offsets it was given."""

    name: ClassVar[str] = "source"
    slot: ClassVar[str] = "ordering"

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]:
        def document(c: Candidate) -> str:
            p = c.passage
            return p.doc_id or p.source or p.url or p.title or f"\0{c.id}"

        def start(c: Candidate) -> int:
            # a shortened text has no offsets of its own; its passage's, as given, still place it
            found = c.start if c.start is not None else c.passage.start
            return -1 if found is None else found

        rank: dict[str, int] = {}
        for c in _by_score(kept):
            rank.setdefault(document(c), len(rank))
        return sorted(kept, key=lambda c: (rank[document(c)], start(c), c.request_index))


@dataclass(frozen=True)
class PrimacyRecencyOrdering(Strategy):
    """Best first, second best last, weakest in the middle ("lost in the middle").

    Ranks alternate between the front and the back: 1, 3, 5, ..., 6, 4, 2. Models attend most to
    the start and end of a long context, so the strongest evidence goes there (the default).
    """

    name: ClassVar[str] = "primacy_recency"
    slot: ClassVar[str] = "ordering"

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]:
        ranked = _by_score(kept)
        front, back = ranked[0::2], ranked[1::2]
        return front + back[::-1]


@dataclass(frozen=True)
class CacheStableOrdering(Strategy):
    """For the prompt cache: the passages of the previous turn that are still kept come first,
    in the previous turn's order; the new ones follow, best first and second best last
    (primacy/recency within the new tail). Without a previous turn it is ``primacy_recency``.

    ``attention`` (0 to 1) trades cache reuse for attention: the share of those previous
    passages given up to attention ordering. The first ``ceil((1 - attention) * s)`` of the
    ``s`` previous passages still kept stay in place; the rest join the new ones in the
    primacy/recency tail. 0 (the default) keeps them all in place; 1 gives the
    ``primacy_recency`` order.

    ``stickiness`` (0 to 10, default 0.5) is read by the pipeline's selection step, not by
    this ordering: with a previous turn, selection sees the previous passages' scores raised
    by ``stickiness`` times the share of the input price a cached token saves, times the
    scores' scale, the earlier ones in the previous prompt more, none past the best score (see
    :func:`ctxasm.prompt_cache.prefer_previous`), so it keeps them unless new passages are
    clearly better. 0: selection does not favour them. docs/caching.md gives the measured
    effect of both parameters.
    """

    name: ClassVar[str] = "cache_stable"
    slot: ClassVar[str] = "ordering"
    attention: float = 0.0
    stickiness: float = 0.5

    def __post_init__(self) -> None:
        require_number("attention", self.attention, low=0.0, high=1.0)
        require_number("stickiness", self.stickiness, low=0.0, high=10.0)

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]:
        return self.order_after(kept, ())

    def order_after(self, kept: Sequence[Candidate], stable: Sequence[str]) -> list[Candidate]:
        """``kept`` ordered after a previous turn whose sources, still unchanged, were
        ``stable`` (passage ids in their previous order; ids not kept are skipped)."""
        by_id = {c.id: c for c in kept}
        still = [by_id[i] for i in stable if i in by_id]
        # rounded first: (1 - 0.7) * 10 is 3.0000000000000004 in binary, and must stay 3
        prefix = still[: math.ceil(round((1 - self.attention) * len(still), 9))]
        placed = {c.id for c in prefix}
        tail = [c for c in _by_score(kept) if c.id not in placed]
        return prefix + tail[0::2] + tail[1::2][::-1]


ByScore = ByScoreOrdering  # former name, kept importable
ByRetrievalOrder = RetrievalOrderOrdering  # former name, kept importable
Chronological = ChronologicalOrdering  # former name, kept importable
BySource = BySourceOrdering  # former name, kept importable
PrimacyRecency = PrimacyRecencyOrdering  # former name, kept importable
