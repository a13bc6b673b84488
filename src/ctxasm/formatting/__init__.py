"""Output formats by name."""

from __future__ import annotations

from ctxasm.errors import RequestError
from ctxasm.formatting.base import Format, PromptParts, Rendered
from ctxasm.formatting.openai import OpenAIChatFormat
from ctxasm.formatting.text import TextFormat

__all__ = ["FORMATS", "Format", "PromptParts", "Rendered", "get_format"]

FORMATS: dict[str, Format] = {
    "openai": OpenAIChatFormat(),
    "text": TextFormat(),
}


def get_format(name: str) -> Format:
    """The format called ``name``."""
    found = FORMATS.get(name)
    if found is None:
        raise RequestError(
            f"unknown format {name!r}; choose one of {', '.join(sorted(FORMATS))}",
            field="format",
        )
    return found
