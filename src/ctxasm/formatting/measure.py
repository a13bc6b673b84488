"""The prompt around the sources block, measured for the budget slot.

The budget stage needs token counts of a prompt it must not render itself (stages never
render): :class:`MeasuredPrompt` renders with the request's format and counts with the model's
tokenizer, and the assembler hands it to :func:`ctxasm.stages.budget.plan_budget`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxasm.formatting.base import Format, PromptParts, user_content
from ctxasm.formatting.blocks import NO_CONTEXT_NOTE, NO_SOURCES_NOTE
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["NOTES", "MeasuredPrompt"]

# The prompt without passages carries one of these; the request must fit with either.
NOTES = (NO_CONTEXT_NOTE, NO_SOURCES_NOTE)


@dataclass(frozen=True, slots=True)
class MeasuredPrompt:
    """``parts`` as ``fmt`` renders them, counted with ``counter`` for ``model``.

    Each method renders and counts when called, so the budget decides what is measured and in
    which order (a text that cannot be counted fails where it always has).
    """

    fmt: Format
    parts: PromptParts
    counter: TokenCounter
    model: ModelSpec

    def sections(self) -> tuple[int, int, int]:
        """Tokens of the system prompt, the question turn and the history turns."""
        count = self.counter.count
        system = count(self.parts.system)
        query = count(user_content("", self.parts.query))
        history = sum(count(turn.content) for turn in self.parts.history)
        return system, query, history

    def bare(self) -> int:
        """Tokens of the whole request with an empty sources block."""
        return self._request("")

    def without_sources(self) -> int:
        """Tokens of the larger of the requests that say no sources were found."""
        return max(self._request(note) for note in NOTES)

    def _request(self, context: str) -> int:
        return self.fmt.count(self.fmt.render(self.parts, context), self.counter, self.model)
