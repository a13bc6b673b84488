"""One Markdown document: instructions, the conversation so far, the sources and the question
under level-two headings, for models and tools that read Markdown rather than chat messages."""

from __future__ import annotations

from collections.abc import Sequence

from ctxasm.data import Candidate
from ctxasm.formatting.base import PromptParts, Rendered
from ctxasm.formatting.blocks import FencedBlock, SourcesBlock
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["MarkdownFormat"]

_SPEAKERS = {"user": "User", "assistant": "Assistant"}


class MarkdownFormat:
    """``text`` holds the whole prompt as Markdown; the sources are the fenced block (a passage
    cannot close its fence, so it cannot start a heading or a source header either).

    Counted as the text itself: there are no per-message tokens.
    """

    name = "markdown"
    block: SourcesBlock = FencedBlock()

    def render(
        self, parts: PromptParts, context: str, sources: Sequence[Candidate] = ()
    ) -> Rendered:
        sections = [f"## Instructions\n\n{parts.system}"]
        if context and parts.sources_first:  # planning for the prompt cache: stable part first
            sections.append(context)
        if parts.history:
            turns = "\n\n".join(f"**{_SPEAKERS[t.role]}:** {t.content}" for t in parts.history)
            sections.append(f"## Conversation so far\n\n{turns}")
        if context and not parts.sources_first:
            sections.append(context)  # the block opens with its own "Sources:" line
        sections.append(f"## Question\n\n{parts.query}")
        sections.append("## Answer\n")
        return Rendered((), None, "\n\n".join(sections))

    def count(self, rendered: Rendered, counter: TokenCounter, model: ModelSpec) -> int:
        # a server prepends its BOS to a prompt sent as one text (Llama 3, Mistral)
        return counter.count(rendered.text or "") + model.chat_template.text_start
