"""What ctxasm asks of a retriever, defined once: :class:`Retriever` (``retrieve(query, k)``,
best first) and the :class:`Hit` it returns.

:func:`ctxasm.context_for_chat` takes any :class:`Retriever`; a document store becomes one for
a single principal with ``store.for_principal(principal)`` (see :mod:`ctxasm.store`), whose
hits are :class:`~ctxasm.Passage` objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ctxasm.data import Passage

__all__ = ["Hit", "Retriever"]


class Hit(Protocol):
    """A retrieved chunk: its text and its score (higher is better). An ``id`` is optional."""

    @property
    def text(self) -> str: ...

    @property
    def score(self) -> float: ...


class Retriever(Protocol):
    """Anything that returns the top ``k`` hits for a query, best first.

    A hit is an object with ``.text``, ``.score`` and optionally ``.id`` (a
    :class:`~ctxasm.Passage` with its score set is one), or a mapping with the keys ``"text"``,
    ``"score"`` and optionally ``"id"``.
    """

    def retrieve(self, query: str, k: int) -> Sequence[Hit | Passage | Mapping[str, Any]]: ...
