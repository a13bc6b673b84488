"""What every adapter shares: a framework document's fields and metadata as a passage, and an
assembly as the (role, content) pairs of a chat."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from ctxasm.data import Assembly
from ctxasm.schema import parse_request

__all__ = ["chat_turns", "checked_fields", "passage_from"]

# Metadata keys that are passage fields; other plain values stay as passage metadata.
FIELDS = ("title", "source", "url", "doc_id", "start", "end", "timestamp", "authority", "tenant")


def passage_from(
    passage_id: str, text: str, score: object, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A passage for ``ctxasm.assemble``; non-plain metadata values, which JSON cannot carry,
    are left out. Scores and access data go as given, for the core to check and name the field
    (``passages[0].readers``): a bare string as ``readers`` is refused there, never read as the
    list of its letters. Only numeric scalars (numpy's) become floats, and a tuple or set of
    readers a list."""
    meta = dict(metadata or {})
    passage: dict[str, Any] = {"id": passage_id, "text": text}
    if score is not None:
        passage["score"] = _score(score)
    for key in FIELDS:
        if meta.get(key) is not None:
            passage[key] = meta.pop(key)
    readers = meta.pop("readers", None)
    if readers is not None:
        passage["readers"] = (
            list(readers) if isinstance(readers, tuple | set | frozenset) else readers
        )
    passage["metadata"] = {
        key: value
        for key, value in meta.items()
        if isinstance(value, str | int | float | bool) or value is None
    }
    return passage


def _score(score: object) -> object:
    """A real number that is not a Python ``int`` or ``float`` (numpy's) as a float; anything
    else as given (a string, a list, a bool), for the core to refuse by name."""
    if isinstance(score, numbers.Real) and not isinstance(score, bool | int | float):
        try:
            return float(score)
        except (OverflowError, ValueError):
            return score
    return score


def chat_turns(assembly: Assembly) -> list[tuple[str, str]]:
    """The assembled prompt as ``(role, content)`` pairs, roles ``system``, ``user`` and
    ``assistant``: a separate system prompt first, a text format's prompt as one user turn."""
    turns = []
    if assembly.system is not None:
        turns.append(("system", assembly.system))
    turns.extend((message["role"], message["content"]) for message in assembly.messages)
    if assembly.text is not None:
        turns.append(("user", assembly.text))
    return turns


def checked_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields``, request fields given to an adapter's constructor, validated at once, so a
    misspelt field or model fails where the component is built rather than on its first run."""
    parse_request({"query": "check", "passages": [], **fields})
    return dict(fields)
