"""What every format receives and returns, and the format protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ctxasm.data import Candidate, Message
from ctxasm.formatting.blocks import SourcesBlock
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["Format", "PromptParts", "Rendered"]


@dataclass(frozen=True, slots=True)
class PromptParts:
    """Everything in a prompt except the sources block.

    ``sources_first``: the sources come right after the system prompt, before the history and
    the question, so that a prompt cache can reuse them across turns (docs/caching.md);
    ``labels``: each source's label number by passage id, where labels are kept across turns
    (``None``: sources are numbered in prompt order); ``join_turns``: chat messages of one role
    in a row are joined into one, for a model whose chat template refuses them (Gemma's).
    """

    system: str
    history: tuple[Message, ...]
    query: str
    sources_first: bool = False
    labels: Mapping[str, int] | None = None
    join_turns: bool = False


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered request: chat messages (and a separate system prompt), or one text."""

    messages: tuple[Mapping[str, Any], ...]
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
