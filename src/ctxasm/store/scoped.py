"""A store seen by one principal: the :class:`~ctxasm.Retriever` that
``store.for_principal(principal)`` returns, for :func:`ctxasm.context_for_chat` and anything
else that calls ``retrieve(query, k)``. Every call goes through the store's own ``retrieve``
with that principal, so access is enforced exactly as there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxasm.data import Passage, Principal
from ctxasm.store.arguments import checked_scope

if TYPE_CHECKING:
    from ctxasm.store import Store

__all__ = ["PrincipalRetriever"]


@dataclass(frozen=True, slots=True)
class PrincipalRetriever:
    """``store`` as a :class:`~ctxasm.Retriever` for ``principal`` (public documents only with
    ``allow_public``); its hits are passages with their scores set."""

    store: Store
    principal: Principal | None
    allow_public: bool = False

    def __post_init__(self) -> None:
        # A bad principal is refused here, when the retriever is made, not at its first use;
        # the checked copy is kept, so the caller's object cannot change it afterwards.
        object.__setattr__(self, "principal", checked_scope(self.principal, self.allow_public))

    def retrieve(self, query: str, k: int) -> list[Passage]:
        """The ``k`` best chunks the principal may read, best first."""
        return self.store.retrieve(query, self.principal, k, allow_public=self.allow_public)

    def hidden_matches(self, query: str) -> bool:
        """See :meth:`ctxasm.store.Store.hidden_matches`."""
        return self.store.hidden_matches(query, self.principal, allow_public=self.allow_public)
