"""What every adapter shares: a framework document's fields and metadata as a passage, and an
assembly as the (role, content) pairs of a chat."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxasm.model import Assembly
from ctxasm.schema import parse_request

__all__ = ["chat_turns", "checked_fields", "passage_from"]

# Metadata keys that are passage fields; other plain values stay as passage metadata.
FIELDS = ("title", "source", "url", "doc_id", "start", "end", "timestamp", "authority", "tenant")


def passage_from(
    passage_id: str, text: str, score: float | None, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A passage for ``ctxasm.assemble`` (``readers`` becomes a list; non-plain metadata values,
    which JSON cannot carry, are left out)."""
    meta = dict(metadata or {})
    passage: dict[str, Any] = {"id": passage_id, "text": text}
    if score is not None:
        passage["score"] = float(score)
    for key in FIELDS:
        if meta.get(key) is not None:
            passage[key] = meta.pop(key)
    if meta.get("readers") is not None:
        passage["readers"] = list(meta.pop("readers"))
    passage["metadata"] = {
        key: value
        for key, value in meta.items()
        if isinstance(value, str | int | float | bool) or value is None
    }
    return passage


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
