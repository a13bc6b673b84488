"""What every adapter shares: a framework document's fields and metadata as a passage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["passage_from"]

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
