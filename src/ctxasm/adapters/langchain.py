"""LangChain: a Runnable that turns documents and a query into the assembled chat messages, and
a document compressor that returns the selected documents in prompt order
(``pip install 'ctxasm[langchain]'``).

A ``Document`` becomes a passage: ``page_content`` is the text; ``id`` (or ``metadata["id"]``)
the id; ``metadata`` keys ``score`` (or ``relevance_score``), ``title``, ``source``, ``url``,
``doc_id``, ``start``/``end``, ``timestamp``, ``authority``, ``tenant`` and ``readers`` carry
over; the rest of the metadata is kept as passage metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig

from ctxasm.adapters._common import passage_from
from ctxasm.assembler import Assembler
from ctxasm.model import Assembly

__all__ = ["CtxasmCompressor", "CtxasmRunnable", "documents_to_passages"]


def documents_to_passages(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """Passages for ``ctxasm.assemble`` from LangChain documents (see the module docstring)."""
    passages = []
    for index, document in enumerate(documents):
        metadata = dict(document.metadata or {})
        passage_id = str(document.id or metadata.pop("id", None) or f"doc-{index}")
        score = metadata.pop("score", metadata.pop("relevance_score", None))
        passages.append(passage_from(passage_id, document.page_content, score, metadata))
    return passages


def _messages(assembly: Assembly) -> list[BaseMessage]:
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    out: list[BaseMessage] = []
    if assembly.system is not None:
        out.append(SystemMessage(content=assembly.system))
    for message in assembly.messages:
        out.append(kinds[message["role"]](content=message["content"]))
    if assembly.text is not None:
        out.append(HumanMessage(content=assembly.text))
    return out


class CtxasmRunnable(Runnable[dict[str, Any], list[BaseMessage]]):
    """``{"query": str, "documents": [Document, ...]}`` in, the assembled messages out.

    Other keys of the input (``history``, ``principal``, ``max_context_tokens``, ...) and the
    keyword arguments given here are request fields. ``assemble(input)`` returns the whole
    :class:`~ctxasm.Assembly` (with its report) instead.
    """

    def __init__(self, assembler: Assembler | None = None, **request_fields: Any) -> None:
        self.assembler = assembler or Assembler()
        self.request_fields = request_fields

    def assemble(self, input: dict[str, Any]) -> Assembly:
        fields = {**self.request_fields, **{k: v for k, v in input.items() if k != "documents"}}
        fields["passages"] = documents_to_passages(input.get("documents") or [])
        return self.assembler.assemble(fields)

    def invoke(
        self,
        input: dict[str, Any],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[BaseMessage]:
        return _messages(self.assemble(input))


class CtxasmCompressor(BaseDocumentCompressor):
    """The documents ctxasm selects for ``query``, in prompt order, each with
    ``metadata["ctxasm_label"]`` (``Source N``) and ``metadata["ctxasm_tokens"]``."""

    model: str = "gpt-4o"
    max_context_tokens: int | None = None
    min_score: float | None = None
    strategy: dict[str, Any] | None = None

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        passages = documents_to_passages(documents)
        request: dict[str, Any] = {"query": query, "passages": passages, "model": self.model}
        if self.max_context_tokens is not None:
            request["max_context_tokens"] = self.max_context_tokens
        if self.min_score is not None:
            request["min_score"] = self.min_score
        if self.strategy is not None:
            request["strategy"] = self.strategy
        assembly = Assembler().assemble(request)
        by_id = {p["id"]: d for p, d in zip(passages, documents, strict=True)}
        kept = []
        for item in assembly.report.included:
            original = by_id[item.id]
            metadata = {
                **original.metadata,
                "ctxasm_label": item.label,
                "ctxasm_tokens": item.tokens,
            }
            kept.append(
                Document(page_content=original.page_content, metadata=metadata, id=original.id)
            )
        return kept
