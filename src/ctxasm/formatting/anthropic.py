"""Anthropic Messages API: a separate ``system`` string, the history, and one user message whose
sources are XML documents, the layout Anthropic recommends for long documents::

    <documents>
    <document index="1">
    <source>[Source 1] Title &lt;https://example.org/a&gt;</source>
    <document_content>
    passage text, with &amp; &lt; &gt; escaped
    </document_content>
    </document>
    </documents>

Passage text and metadata are XML-escaped (and the few characters XML 1.0 forbids outright,
such as control characters, become U+FFFD), so nothing a passage contains can close, open or
forge an element: the block always parses as XML and holds exactly one ``document`` element per
included passage. Anthropic publishes no tokenizer for its current models, so counts are the
registry's estimate (``exact_count: false``) with the safety margin the budget keeps for
estimates.

Planning for the prompt cache (``PromptParts.sources_first``), the sources come first, as a
user message of text blocks, one per document (the heading in the first, the closing tag
last), so that ``cache_control`` breakpoints can sit between documents (docs/caching.md); the
history and the question follow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm.data import Candidate
from ctxasm.formatting.base import PromptParts, Rendered, user_content
from ctxasm.formatting.blocks import SourcesBlock, _header_line, flag_note
from ctxasm.formatting.labels import neutral_text
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["AnthropicFormat", "XmlBlock"]

HEADING = "<documents>\n"
CLOSING = "</documents>"
# Characters XML 1.0 does not allow even escaped: control characters (except tab and line
# breaks), lone surrogates and the two non-characters. They become U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def escape(text: str) -> str:
    """``text`` as XML character data: ``& < >`` escaped, characters XML forbids replaced."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _NOT_XML.sub("\ufffd", text)


def _source_line(number: int, title: str | None, url: str | None, passage_id: str) -> str:
    """The fenced block's header line, escaped for XML."""
    return escape(_header_line(number, title, url, passage_id))


class XmlBlock:
    """Sources as ``<document>`` elements with escaped content."""

    heading = HEADING

    def _opening(self, candidate: Candidate, number: int) -> str:
        passage = candidate.passage
        source = _source_line(number, passage.title, passage.url, passage.id)
        if candidate.flags:
            source += escape(flag_note(candidate.flags))
        return f'<document index="{number}">\n<source>{source}</source>\n<document_content>\n'

    def body(self, candidate: Candidate) -> str:
        return f"{escape(neutral_text(candidate.text))}\n</document_content>\n</document>\n"

    def pricing(self, candidate: Candidate, number: int) -> tuple[str, str]:
        return self._opening(candidate, number), self.body(candidate)

    def parts(
        self, ordered: Sequence[Candidate], labels: Mapping[str, int] | None = None
    ) -> list[tuple[str, str]]:
        found = []
        for number, candidate in enumerate(ordered, start=1):
            opening = self._opening(candidate, number if labels is None else labels[candidate.id])
            if number == 1:
                opening = HEADING + opening
            found.append((opening, self.body(candidate)))
        return found

    def render(self, ordered: Sequence[Candidate], labels: Mapping[str, int] | None = None) -> str:
        if not ordered:
            return HEADING + CLOSING
        return "".join(o + b for o, b in self.parts(ordered, labels)) + CLOSING


class AnthropicFormat:
    """``system`` plus ``messages`` for the Messages API, sources as XML documents.

    Counted as the system prompt, every message's role and content, ``tokens_per_message`` per
    message and ``reply_priming`` (the registry's values for Claude models).
    """

    name = "anthropic"
    block: SourcesBlock = XmlBlock()

    def render(
        self, parts: PromptParts, context: str, sources: Sequence[Candidate] = ()
    ) -> Rendered:
        history = [{"role": turn.role, "content": turn.content} for turn in parts.history]
        if not parts.sources_first:
            question = {"role": "user", "content": user_content(context, parts.query)}
            return Rendered((*history, question), parts.system, None)
        first = {"role": "user", "content": self._blocks(context, sources, parts.labels)}
        last = {"role": "user", "content": user_content("", parts.query)}
        return Rendered((first, *history, last), parts.system, None)

    def _blocks(
        self, context: str, sources: Sequence[Candidate], labels: Mapping[str, int] | None
    ) -> list[dict[str, Any]] | str:
        """The sources as text blocks, one per document and the closing tag (or the note)."""
        if not sources:
            return context
        texts = [opening + body for opening, body in self.block.parts(sources, labels)]
        texts.append(CLOSING)
        return [{"type": "text", "text": text} for text in texts]

    def count(self, rendered: Rendered, counter: TokenCounter, model: ModelSpec) -> int:
        total = model.reply_priming + counter.count(rendered.system or "")
        for message in rendered.messages:
            total += model.tokens_per_message + counter.count(message["role"])
            content = message["content"]
            if isinstance(content, str):
                total += counter.count(content)
            else:
                total += sum(counter.count(block["text"]) for block in content)
        return total
