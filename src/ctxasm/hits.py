"""A retriever's hits as request passages: the field names retrievers emit, mapped once.

Retrievers and vector stores return lists of hits, each a JSON object, with their own names
for the same things. :func:`passages_from_hits` maps them onto passage fields:

- **text** from ``text``, ``content`` or ``page_content`` (LangChain), the first one present;
- **score** from ``score``, ``similarity`` or ``relevance_score``, the first one present, else
  from the hit's ``metadata`` (where LangChain's rerankers put ``relevance_score``) (optional);
- **id** from ``id`` (a string or an integer, unique among the hits); without one, a stable id
  from the text (``hit-`` and 10 hex digits of its SHA-256), the same whatever the hit's
  position (``-2``, ``-3`` where texts repeat, and never the id of another hit);
- **title**, **url** and **source** from the hit, else from its ``metadata`` object;
- every other passage field (``doc_id``, ``timestamp``, ...) as is; any other key of the hit
  goes into the passage's ``metadata``, so nothing the retriever sent is lost or refused.

Errors are :class:`~ctxasm.errors.RequestError` naming the hit (``hits[3].text``). A request
gives its hits as ``hits``, in place of ``passages`` (:func:`ctxasm.schema.parse_request` maps
them here), so every entry point takes them: the Python API, ``ctxasm assemble`` and ``batch``,
and the HTTP service.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm.data import Passage, default_passage_id
from ctxasm.errors import RequestError
from ctxasm.validation import invalid, shown

__all__ = ["SCORE_FIELDS", "TEXT_FIELDS", "hit_list", "hit_text", "passages_from_hits"]

TEXT_FIELDS = ("text", "content", "page_content")
SCORE_FIELDS = ("score", "similarity", "relevance_score")
_LIFTED = ("title", "url", "source")
_ALIASES = frozenset((*TEXT_FIELDS, *SCORE_FIELDS, "id", "metadata"))
_KEPT = frozenset(f.name for f in dataclasses.fields(Passage)) - _ALIASES
_PASSAGE = "passage"  # the name the Passage constructor's errors give the passage


def hit_list(hits: object) -> Sequence[object]:
    """``hits`` when it is a list (or a tuple) of hits, else a :class:`RequestError` naming
    ``hits``."""
    if not isinstance(hits, list | tuple):
        raise invalid(
            "hits",
            "a list of a retriever's hits (objects with their text in text, content or "
            "page_content)",
            hits,
        )
    return hits


def hit_text(hit: object) -> tuple[str, str] | None:
    """The key of a hit's text and the text (the first of :data:`TEXT_FIELDS` it holds), or
    ``None`` when that is no string or the hit is no object."""
    if not isinstance(hit, Mapping):
        return None
    name = next((name for name in TEXT_FIELDS if hit.get(name) is not None), None)
    text = None if name is None else hit[name]
    return (name, text) if name is not None and isinstance(text, str) else None


def passages_from_hits(hits: object) -> list[dict[str, Any]]:
    """Passage objects (request JSON) for a list of retriever hits, in the same order, each
    with an id: its own (unique, or the error names the repeat), else one made from its text
    (:mod:`ctxasm.hits`), numbered where texts repeat and never one a hit has."""
    passages: list[dict[str, Any]] = []
    given: dict[str, int] = {}
    for index, hit in enumerate(hit_list(hits)):
        where = f"hits[{index}]"
        passage, origins = _passage(hit, where)
        try:  # checked here, so that an error names the hit's own field
            checked = Passage(**{"id": where, **passage})  # an id is made below, from the text
        except RequestError as error:
            raise _in_hit(error, where, origins) from None
        if "id" in passage:
            passage["id"] = checked.id  # an integer as its decimal string: 7 repeats "7"
            first = given.setdefault(passage["id"], index)
            if first != index:
                raise RequestError(
                    f"{where}.id {shown(passage['id'])} repeats hits[{first}].id; the ids of "
                    "hits must be unique (leave a hit's id out for one made from its text)",
                    field=f"{where}.id",
                )
        passages.append(passage)
    taken = set(given)
    for passage in passages:
        if "id" not in passage:
            base = default_passage_id(passage["text"], "hit")
            made, repeat = base, 1
            while made in taken:
                repeat += 1
                made = f"{base}-{repeat}"
            taken.add(made)
            passage["id"] = made
    return passages


def _in_hit(error: RequestError, where: str, origins: Mapping[str, str]) -> RequestError:
    """``error``, raised by the :class:`Passage` built from the hit at ``where`` (about its
    field ``passage.<name>...``), about the hit's own field."""
    field = error.field or _PASSAGE
    if not field.startswith(_PASSAGE):
        return error
    name = field[len(_PASSAGE) + 1 :].split(".", 1)[0].split("[", 1)[0]
    moved = f"{where}.{origins.get(name, name)}" if name else where  # one it lacks: its name
    message = error.message
    if name and message.startswith(f"{_PASSAGE}.{name}"):
        message = moved + message[len(_PASSAGE) + 1 + len(name) :]
    elif message.startswith(_PASSAGE):  # "passage needs both start and end"
        message = where + message[len(_PASSAGE) :]
    rest = field[len(_PASSAGE) + 1 + len(name) :] if name else ""
    return type(error)(message, field=moved + rest)


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
    given = hit.get("id")  # an integer is the passage's to judge, as in passages
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
    if "score" not in passage and _first(extra, SCORE_FIELDS) is not None:
        passage["score"] = _first(extra, SCORE_FIELDS)
        origins["score"] = f"metadata.{_first_name(extra, SCORE_FIELDS)}"
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
