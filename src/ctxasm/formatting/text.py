"""One plain-text prompt, for completion APIs and models served without a chat template."""

from __future__ import annotations

from collections.abc import Sequence

from ctxasm.data import Candidate
from ctxasm.formatting.base import PromptParts, Rendered, user_content
from ctxasm.formatting.blocks import FencedBlock, SourcesBlock
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["TextFormat"]

_SPEAKERS = {"user": "User", "assistant": "Assistant"}


class TextFormat:
    """System text, the conversation so far, the sources and the question, then ``Answer:``.

    Counted as the text itself: there are no per-message tokens.
    """

    name = "text"
    block: SourcesBlock = FencedBlock()

    def render(
        self, parts: PromptParts, context: str, sources: Sequence[Candidate] = ()
    ) -> Rendered:
        sections = [parts.system]
        if parts.sources_first:  # planning for the prompt cache: what changes comes last
            sections.append(context)
        if parts.history:
            turns = "\n".join(f"{_SPEAKERS[t.role]}: {t.content}" for t in parts.history)
            sections.append(f"Conversation so far:\n{turns}")
        sections.append(user_content("" if parts.sources_first else context, parts.query))
        sections.append("Answer:")
        return Rendered((), None, "\n\n".join(sections))

    def count(self, rendered: Rendered, counter: TokenCounter, model: ModelSpec) -> int:
        # a server prepends its BOS to a prompt sent as one text (Llama 3, Mistral)
        return counter.count(rendered.text or "") + model.chat_template.text_start
