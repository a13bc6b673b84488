"""Haystack: a component with typed inputs (``documents``, ``query``) and outputs
(``messages``, ``report``) (the ``haystack`` extra).

A ``Document`` becomes a passage: ``content`` is the text, ``id`` the id, ``score`` the score;
``meta`` keys ``title``, ``source``, ``url``, ``doc_id``, ``start``/``end``, ``timestamp``,
``authority``, ``tenant`` and ``readers`` carry over, other plain values stay as metadata.
A document without a title or url is titled by its file (``file_name`` or ``file_path``, with
``page_number``, as Haystack's converters and splitters set them), else by its position
(``document 2``): never by its id, which Haystack fills with a SHA-256 hash of the document
when none is given. The id stays the passage's id, as the report shows it.

The component serialises with its pipeline (``Pipeline.dumps()``/``loads()``): its init
parameters are the request fields it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from ctxasm.adapters._common import (
    chat_turns,
    checked_fields,
    headed,
    passage_from,
    without_repeats,
)
from ctxasm.assembler import Assembler
from ctxasm.errors import RequestError
from ctxasm.loader_metadata import file_title

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
    passages = [
        passage_from(str(document.id), document.content or "", document.score, document.meta)
        for document in documents
    ]
    return headed(passages, [_file(document.meta) for document in documents], "document")


def _file(meta: object) -> str | None:
    """The document's file name and page, as Haystack's converters and splitters set them."""
    if not isinstance(meta, Mapping):
        return None
    return file_title(meta.get("file_name") or meta.get("file_path"), meta.get("page_number"))


@component
class CtxasmPromptBuilder:
    """Assemble the chat messages for ``query`` from ``documents`` within the model's budget;
    outputs ``messages`` (Haystack ``ChatMessage`` objects) and ``report`` (ctxasm's report
    as a dict). Keyword arguments are request fields (``model``, ``max_context_tokens``, ...),
    checked where it is built: a misspelt field or an unknown model is refused there."""

    def __init__(self, **request_fields: Any) -> None:
        self._assembler = Assembler()
        self.request_fields = checked_fields(request_fields, self._assembler.config.models)

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
