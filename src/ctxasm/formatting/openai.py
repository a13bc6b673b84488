"""OpenAI chat messages: a system message, the history, and one user message with the sources
and the question (or, planning for the prompt cache, the sources in a user message of their own
right after the system message, then the history and the question)."""

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

    Counted with the model's chat template (:mod:`ctxasm.models.chat`): OpenAI's published
    method (every message costs ``tokens_per_message`` plus its role and content, and the reply
    is primed with ``reply_priming`` tokens) unless the registry names the template an
    open-weight model's server applies, which is counted exactly.
    """

    name = "openai"
    block: SourcesBlock = FencedBlock()

    def render(
        self, parts: PromptParts, context: str, sources: Sequence[Candidate] = ()
    ) -> Rendered:
        messages = [{"role": "system", "content": parts.system}]
        history = [{"role": turn.role, "content": turn.content} for turn in parts.history]
        if parts.sources_first:  # planning for the prompt cache: what changes comes last
            messages += [{"role": "user", "content": context}, *history]
            messages.append({"role": "user", "content": user_content("", parts.query)})
        else:
            messages += history
            messages.append({"role": "user", "content": user_content(context, parts.query)})
        if parts.join_turns:
            messages = _joined(messages)
        return Rendered(tuple(messages), None, None)

    def count(self, rendered: Rendered, counter: TokenCounter, model: ModelSpec) -> int:
        return model.chat_template.count(rendered.messages, counter.count)


def _joined(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """``messages`` with each run of one role joined into one message, a blank line between
    (the sources and the question become the user turn they are without the prompt cache)."""
    joined: list[dict[str, str]] = []
    for message in messages:
        if joined and joined[-1]["role"] == message["role"]:
            content = f"{joined[-1]['content']}\n\n{message['content']}"
            joined[-1] = {**joined[-1], "content": content}
        else:
            joined.append(message)
    return joined
