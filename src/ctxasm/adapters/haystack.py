"""Haystack: a component with typed inputs (``documents``, ``query``) and outputs
(``messages``, ``report``) (``pip install 'ctxasm[haystack]'``).

A ``Document`` becomes a passage: ``content`` is the text, ``id`` the id, ``score`` the score;
``meta`` keys ``title``, ``source``, ``url``, ``doc_id``, ``start``/``end``, ``timestamp``,
``authority``, ``tenant`` and ``readers`` carry over, other plain values stay as metadata.

The component serialises with its pipeline (``Pipeline.dumps()``/``loads()``): its init
parameters are the request fields it was given.
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from ctxasm.adapters._common import chat_turns, checked_fields, passage_from, without_repeats
from ctxasm.assembler import Assembler
from ctxasm.errors import RequestError

__all__ = ["CtxasmPromptBuilder", "documents_to_passages"]


def documents_to_passages(documents: list[Document]) -> list[dict[str, Any]]:
    """Passages for ``ctxasm.assemble`` from Haystack documents."""
    if not isinstance(documents, list | tuple) or not all(
        isinstance(document, Document) for document in documents
    ):
        raise RequestError(
            "documents must be a list of Haystack Documents (what a retriever returns); got "
            f"{type(documents).__name__}",
            field="documents",
        )
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
        self.request_fields = checked_fields(request_fields)
        self._assembler = Assembler()

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serialises it: its request fields as init parameters."""
        return default_to_dict(self, **self.request_fields)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CtxasmPromptBuilder:
        """The component :meth:`to_dict` describes."""
        built: CtxasmPromptBuilder = default_from_dict(cls, data)
        return built

    @component.output_types(messages=list[ChatMessage], report=dict)
    def run(self, documents: list[Document], query: str) -> dict[str, Any]:
        request = {**self.request_fields, "query": query}
        request["passages"] = without_repeats(documents_to_passages(documents))
        assembly = self._assembler.assemble(request)
        kinds = {
            "system": ChatMessage.from_system,
            "user": ChatMessage.from_user,
            "assistant": ChatMessage.from_assistant,
        }
        messages = [kinds[role](content) for role, content in chat_turns(assembly)]
        return {"messages": messages, "report": assembly.report.to_dict()}
