"""OpenAI chat messages: a system message, the history, and one user message with the sources."""

from __future__ import annotations

from collections.abc import Sequence

from ctxasm.data import Candidate
from ctxasm.formatting.base import PromptParts, Rendered, user_content
from ctxasm.formatting.blocks import FencedBlock, SourcesBlock
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["OpenAIChatFormat"]


class OpenAIChatFormat:
    """``messages`` for the Chat Completions API.

    Counted with OpenAI's published method: every message costs ``tokens_per_message`` plus its
    role and content, and the reply is primed with ``reply_priming`` tokens (3 and 3 for current
    OpenAI models; the registry holds the values for each model).
    """

    name = "openai"
    block: SourcesBlock = FencedBlock()

    def render(
        self, parts: PromptParts, context: str, sources: Sequence[Candidate] = ()
    ) -> Rendered:
        messages = [{"role": "system", "content": parts.system}]
        messages += [{"role": turn.role, "content": turn.content} for turn in parts.history]
        messages.append({"role": "user", "content": user_content(context, parts.query)})
        return Rendered(tuple(messages), None, None)

    def count(self, rendered: Rendered, counter: TokenCounter, model: ModelSpec) -> int:
        total = model.reply_priming
        for message in rendered.messages:
            total += model.tokens_per_message
            total += counter.count(message["role"]) + counter.count(message["content"])
        return total
