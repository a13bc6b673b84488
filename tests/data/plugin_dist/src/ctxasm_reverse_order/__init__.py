"""An ordering strategy shipped as a plugin: the request's order, reversed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ctxasm.data import Candidate
from ctxasm.strategy import Strategy

__all__ = ["ReverseRetrievalOrder"]


@dataclass(frozen=True)
class ReverseRetrievalOrder(Strategy):
    """The last passage of the request first."""

    name: ClassVar[str] = "reverse_retrieval"
    slot: ClassVar[str] = "ordering"

    def order(self, kept: Sequence[Candidate]) -> list[Candidate]:
        return sorted(kept, key=lambda c: -c.request_index)
