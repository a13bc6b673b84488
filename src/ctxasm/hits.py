"""A retriever's hits as request passages: the field names retrievers emit, mapped once.

Retrievers and vector stores return lists of hits, each a JSON object, with their own names
for the same things. :func:`passages_from_hits` maps them onto passage fields:

- **text** from ``text``, ``content`` or ``page_content`` (LangChain), the first one present;
- **score** from ``score`` or ``similarity``, the first one present (optional);
- **id** from ``id`` (a string or an integer); without one, a stable id from the text
  (``hit-`` and 10 hex digits of its SHA-256), the same whatever the hit's position;
- **title**, **url** and **source** from the hit, else from its ``metadata`` object;
- every other passage field (``doc_id``, ``timestamp``, ...) as is; any other key of the hit
  goes into the passage's ``metadata``, so nothing the retriever sent is lost or refused.

Errors are :class:`~ctxasm.errors.RequestError` naming the hit (``hits[3].text``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm.errors import RequestError
from ctxasm.schema import PASSAGE_FIELDS, parse_passage

__all__ = ["SCORE_FIELDS", "TEXT_FIELDS", "passages_from_hits"]

TEXT_FIELDS = ("text", "content", "page_content")
SCORE_FIELDS = ("score", "similarity")
_LIFTED = ("title", "url", "source")
_ALIASES = frozenset((*TEXT_FIELDS, *SCORE_FIELDS, "id", "metadata"))
_KEPT = frozenset(PASSAGE_FIELDS) - _ALIASES


def passages_from_hits(hits: Sequence[object]) -> list[dict[str, Any]]:
    """Passage objects (request JSON) for a list of retriever hits, in the same order."""
    passages: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for index, hit in enumerate(hits):
        where = f"hits[{index}]"
        passage, origins = _passage(hit, where)
        try:  # checked here, so that an error names the hit's own field
            parse_passage(passage, index)
        except RequestError as error:
            raise _in_hit(error, f"passages[{index}]", where, origins) from None
        if "id" not in passage:
            base = "hit-" + hashlib.sha256(passage["text"].encode("utf-8")).hexdigest()[:10]
            seen[base] = seen.get(base, 0) + 1
            passage["id"] = base if seen[base] == 1 else f"{base}-{seen[base]}"
        passages.append(passage)
    return passages


def _in_hit(
    error: RequestError, prefix: str, where: str, origins: Mapping[str, str]
) -> RequestError:
    """``error``, about passage field ``prefix.<name>...``, about the hit's own field."""
    field = error.field or prefix
    name = field[len(prefix) + 1 :].split(".", 1)[0].split("[", 1)[0]
    if not field.startswith(prefix) or not name:
        return error
    moved = f"{where}.{origins.get(name, name)}"  # a field the hit lacks: by its own name
    message = error.message
    if message.startswith(f"{prefix}.{name}"):
        message = moved + message[len(prefix) + 1 + len(name) :]
    elif message.startswith(prefix):  # "passages[0] needs both start and end"
        message = where + message[len(prefix) :]
    return type(error)(message, field=moved + field[len(prefix) + 1 + len(name) :])


def _passage(hit: object, where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The passage fields of ``hit``, and where in the hit each came from."""
    if not isinstance(hit, Mapping):
        raise RequestError(
            f"{where} must be an object with the text in 'text', 'content' or 'page_content'; "
            f"got {type(hit).__name__}",
            field=where,
        )
    text = _first(hit, TEXT_FIELDS)
    if not isinstance(text, str):
        raise RequestError(
            f"{where} needs its text as a string in one of {', '.join(TEXT_FIELDS)}; "
            f"found {_found(hit)}",
            field=f"{where}.text",
        )
    passage: dict[str, Any] = {"text": text}
    origins = {"text": _first_name(hit, TEXT_FIELDS)}
    score = _first(hit, SCORE_FIELDS)
    if score is not None:
        passage["score"] = score
        origins["score"] = _first_name(hit, SCORE_FIELDS)
    given = hit.get("id")
    if isinstance(given, int) and not isinstance(given, bool):
        given = str(given)
    if given is not None:
        passage["id"] = given
        origins["id"] = "id"
    metadata = hit.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise RequestError(
            f"{where}.metadata must be an object; got {type(metadata).__name__}",
            field=f"{where}.metadata",
        )
    extra = dict(metadata or {})
    for name in _LIFTED:
        if name not in hit and name in extra:
            passage[name] = extra[name]
            origins[name] = f"metadata.{name}"
    for key, value in hit.items():
        if key in _KEPT:
            passage[key] = value
            origins[key] = key
        elif key not in _ALIASES:
            extra[key] = value
    if extra:
        passage["metadata"] = extra
        origins["metadata"] = "metadata"
    return passage, origins


def _first(hit: Mapping[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if hit.get(name) is not None:
            return hit[name]
    return None


def _first_name(hit: Mapping[str, Any], names: Sequence[str]) -> str:
    return next(name for name in names if hit.get(name) is not None)


def _found(hit: Mapping[str, Any]) -> str:
    keys = ", ".join(repr(key) for key in list(hit)[:8])
    return f"the keys {keys}" if keys else "an empty object"
