"""Haystack: a component with typed inputs (``documents``, ``query``) and outputs
(``messages``, ``report``) (``pip install 'ctxasm[haystack]'``).

A ``Document`` becomes a passage: ``content`` is the text, ``id`` the id, ``score`` the score;
``meta`` keys ``title``, ``source``, ``url``, ``doc_id``, ``start``/``end``, ``timestamp``,
``authority``, ``tenant`` and ``readers`` carry over, other plain values stay as metadata.
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component
from haystack.dataclasses import ChatMessage

from ctxasm.adapters._common import passage_from
from ctxasm.assembler import Assembler

__all__ = ["CtxasmPromptBuilder", "documents_to_passages"]


def documents_to_passages(documents: list[Document]) -> list[dict[str, Any]]:
    """Passages for ``ctxasm.assemble`` from Haystack documents."""
    return [
        passage_from(str(document.id), document.content or "", document.score, document.meta)
        for document in documents
    ]


@component
class CtxasmPromptBuilder:
    """Assemble the chat messages for ``query`` from ``documents`` within the model's budget;
    outputs ``messages`` (Haystack ``ChatMessage`` objects) and ``report`` (ctxasm's report
    as a dict). Keyword arguments are request fields (``model``, ``max_context_tokens``, ...)."""

    def __init__(self, **request_fields: Any) -> None:
        self.request_fields = request_fields
        self._assembler = Assembler()

    @component.output_types(messages=list[ChatMessage], report=dict)
    def run(self, documents: list[Document], query: str) -> dict[str, Any]:
        request = {**self.request_fields, "query": query}
        request["passages"] = documents_to_passages(documents)
        assembly = self._assembler.assemble(request)
        messages: list[ChatMessage] = []
        if assembly.system is not None:
            messages.append(ChatMessage.from_system(assembly.system))
        for message in assembly.messages:
            role, content = message["role"], message["content"]
            if role == "system":
                messages.append(ChatMessage.from_system(content))
            elif role == "assistant":
                messages.append(ChatMessage.from_assistant(content))
            else:
                messages.append(ChatMessage.from_user(content))
        if assembly.text is not None:
            messages.append(ChatMessage.from_user(assembly.text))
        return {"messages": messages, "report": assembly.report.to_dict()}
