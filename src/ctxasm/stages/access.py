"""The access slot: drop every passage the principal may not read, before anything else.

Rules (default-deny):

* when any passage carries ``tenant`` or ``readers`` and the request names no principal, the
  request is refused (:class:`~ctxasm.errors.AccessPolicyError`), never served as public;
* a passage with ``tenant`` is readable only by a principal of that tenant (a principal without a
  tenant sees nothing tenant-scoped);
* a passage with ``readers`` is readable only by a principal whose id or one of whose groups is
  listed (an empty list admits nobody);
* a passage with neither is public: with a principal it is denied unless the request opts in with
  ``allow_public``; without a principal (and no passage carrying access data) everything passes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxasm.data import Exclusion, Passage, Principal, Reason, checked_principal
from ctxasm.errors import AccessPolicyError
from ctxasm.validation import shown

__all__ = ["STAGE", "check_access", "filter_readable"]

STAGE = "access"


def check_access(passage: Passage, principal: Principal, *, allow_public: bool) -> str | None:
    """Why ``principal`` may not read ``passage``, or ``None`` when it may."""
    if not passage.has_access_data:
        return None if allow_public else "no access data and allow_public is false"
    if passage.tenant is not None and passage.tenant != principal.tenant:
        return "belongs to another tenant"
    if passage.readers is not None:
        allowed = set(passage.readers)
        if principal.id not in allowed and allowed.isdisjoint(principal.groups):
            return "principal is not among its readers"
    return None


def filter_readable(
    passages: Sequence[Passage], principal: Principal | None, *, allow_public: bool
) -> tuple[list[tuple[int, Passage]], list[Exclusion]]:
    """The passages ``principal`` may read (with their request positions) and the exclusions.
    ``principal`` must be a :class:`Principal` (or ``None``); anything else is refused."""
    principal = checked_principal(principal)
    if principal is None:
        restricted = next((p for p in passages if p.has_access_data), None)
        if restricted is not None:
            raise AccessPolicyError(
                f"passage {shown(restricted.id)} carries access data (tenant or readers) but the "
                "request names no principal; pass principal={id, tenant, groups} so access can "
                "be checked",
                field="principal",
            )
        return list(enumerate(passages)), []
    readable: list[tuple[int, Passage]] = []
    excluded: list[Exclusion] = []
    for index, passage in enumerate(passages):
        why = check_access(passage, principal, allow_public=allow_public)
        if why is None:
            readable.append((index, passage))
        else:
            excluded.append(Exclusion(passage.id, STAGE, Reason.ACCESS_DENIED, why))
    return readable, excluded
