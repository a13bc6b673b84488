"""The checks every store applies to a retrieval before any SQL runs, so a bad argument is a
:class:`~ctxasm.errors.RequestError` naming it, never a driver error or a silent widening of
access (a NUL in a principal's id, for one, is refused by :class:`~ctxasm.data.Principal`)."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from ctxasm.data import Principal, checked_principal
from ctxasm.errors import RequestError
from ctxasm.store.documents import Document
from ctxasm.store.records import class_key
from ctxasm.validation import integer, invalid, shown, string

__all__ = [
    "check_for_postgres",
    "checked_doc_id",
    "checked_retrieval",
    "checked_scope",
    "without_secrets",
]

# ``\u0000`` in JSON text, not preceded by an escaped backslash.
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def checked_retrieval(
    query: object, principal: object, k: object, allow_public: object
) -> tuple[str, int, Principal | None]:
    """The query (a plain string: a str subclass's own ``lower`` would read another text),
    ``k`` (a plain int: numpy's ``int64`` is taken, and the database driver refuses it) and
    the principal to retrieve for, once every argument of ``retrieve`` is checked."""
    text: str = string(query, "query")
    count = integer(k, "k", minimum=1, optional=False)
    assert count is not None  # not optional
    return text, count, checked_scope(principal, allow_public)


def checked_scope(principal: object, allow_public: object) -> Principal | None:
    """The principal, once it and ``allow_public`` are checked (who a retrieval is for)."""
    if not isinstance(allow_public, bool):
        raise invalid("allow_public", "true or false", allow_public)
    return checked_principal(principal)


def checked_doc_id(doc_id: object) -> str:
    """A document id given to ``delete``: a non-empty string without NUL."""
    checked: str = string(doc_id, "doc_id", nonempty=True)
    if "\x00" in checked:
        raise RequestError(f"doc_id contains a NUL character; got {shown(checked)}", field="doc_id")
    return checked


# PostgreSQL's B-tree indexes hold an entry of at most 2,704 bytes: the document id, the
# access-class key (tenant and readers, as JSON) and the id with each one reader (the readers
# table's key, and its index by reader) are kept well under it.
MAX_KEY_BYTES = 2000


def check_for_postgres(document: Document) -> None:
    """Refuse a document PostgreSQL cannot store, naming the field: a NUL character anywhere
    it would store it (its text columns and ``jsonb`` cannot hold one), or an id or access
    data too long for an index entry. Chunks are cut from the text; the rest is checked by
    :class:`~ctxasm.store.documents.Document`."""
    id_bytes = _size(document.doc_id)
    if id_bytes > MAX_KEY_BYTES:
        raise _too_long(document, "doc_id", "its id takes")
    if _size(class_key(document)) > MAX_KEY_BYTES:
        raise _too_long(document, "readers", "its tenant and readers together take")
    # each under the limit, the id and one reader can still fill an index entry together
    longest = max(document.readers or (), key=_size, default="")
    if id_bytes + _size(longest) > MAX_KEY_BYTES:
        raise _too_long(
            document,
            "readers",
            f"its id and the reader {shown(longest)} together take",
            "use a shorter id or reader name",
        )
    for key in ("text", "title", "url", "timestamp"):
        value = getattr(document, key)
        if value is not None and "\x00" in value:
            raise _nul(document, key)
    dumped = json.dumps(dict(document.metadata), ensure_ascii=False, default=str)
    if _ESCAPED_NUL.search(dumped):
        raise _nul(document, "metadata")


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _too_long(
    document: Document,
    key: str,
    what: str,
    fix: str = "use a shorter id, or a group for many readers",
) -> RequestError:
    return RequestError(
        f"document.{key} of {shown(document.doc_id)}: {what} over {MAX_KEY_BYTES:,} bytes, "
        f"more than the PostgreSQL store can index; {fix}",
        field=f"document.{key}",
    )


def _nul(document: Document, key: str) -> RequestError:
    return RequestError(
        f"document.{key} of {shown(document.doc_id)} contains a NUL character, which PostgreSQL "
        "cannot store; remove it before indexing",
        field=f"document.{key}",
    )


def without_secrets(detail: str, url: str) -> str:
    """``detail`` with the password of the store ``url`` (in its user part or a ``password=``
    option, as written and percent-decoded) written as ``***``: libpq quotes what it cannot
    parse, and an error message ends up in logs."""
    secrets = []
    _, scheme, rest = url.partition("://")
    if scheme:
        authority = rest.split("?", 1)[0]
        # a raw "@" in the password: the driver may split at the first, the user meant the last
        user = authority.rpartition("@")[0]
        if ":" in user:
            password = user.split(":", 1)[1]
            secrets += [password, *password.split("@")]  # each part, if split at an "@"
    for option in url.partition("?")[2].split("&"):
        name, _, value = option.partition("=")
        if name.strip().lower() == "password":
            secrets.append(value)
    found = {s for raw in secrets for s in (raw, unquote(raw)) if s}
    if any(len(secret) < _SHORTEST_MASKED and secret in detail for secret in found):
        return "the driver's message is left out: it may hold the password"  # "***"s spell it
    for secret in sorted(found, key=len, reverse=True):
        detail = detail.replace(secret, "***")
    return detail


_SHORTEST_MASKED = 4  # a shorter password found in a message withholds the message
