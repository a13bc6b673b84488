"""What every format receives and returns, and the format protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ctxasm.data import Candidate, Message
from ctxasm.formatting.blocks import SourcesBlock
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["Format", "PromptParts", "Rendered"]


@dataclass(frozen=True, slots=True)
class PromptParts:
    """Everything in a prompt except the sources block."""

    system: str
    history: tuple[Message, ...]
    query: str


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered request: chat messages (and a separate system prompt), or one text."""

    messages: tuple[Mapping[str, str], ...]
    system: str | None
    text: str | None


class Format(Protocol):
    """Renders a prompt and counts it exactly as the target API will."""

    name: str
    block: SourcesBlock

    def render(
        self, parts: PromptParts, context: str, sources: Sequence[Candidate] = ()
    ) -> Rendered:
        """The request with ``context`` (the sources block, or a note saying there is none);
        ``sources`` are the passages in it, in order, for formats that lay them out
        themselves."""
        ...

    def count(self, rendered: Rendered, counter: TokenCounter, model: ModelSpec) -> int:
        """The tokens the whole request takes, format overhead included."""
        ...


def user_content(context: str, query: str) -> str:
    """The user turn: the sources block (or note), then the question."""
    question = f"Question: {query}"
    return f"{context}\n\n{question}" if context else question
