"""LangChain: a Runnable that turns documents and a query into the assembled chat messages, and
a document compressor that returns the selected documents in prompt order
(the ``langchain`` extra).

The Runnable takes what LangChain users pass: a question string (the documents then come from
its ``retriever``), or a dict with the question under ``query`` or ``question`` and the
documents under ``documents`` or ``context``, which is what the usual LCEL chain
``{"context": retriever, "question": RunnablePassthrough()} | CtxasmRunnable() | chat_model``
hands it.

A ``Document`` becomes a passage: ``page_content`` is the text; ``id`` (or ``metadata["id"]``)
the id; ``metadata`` keys ``score`` (or ``relevance_score``), ``title``, ``source``, ``url``,
``doc_id``, ``start``/``end``, ``timestamp``, ``authority``, ``tenant`` and ``readers`` carry
over; the rest of the metadata is kept as passage metadata. A ``source`` that is an http(s) url
is the url too when the document has none. A document without a title or url is titled by its
``source`` file, with ``page_label``, else ``page`` counted from 1 (LangChain's PDF loaders
count ``page`` from 0), else by its position (``document 2``): never by its id, which is often
a vector store's UUID or, without one, ``doc-<index>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ConfigDict

from ctxasm.adapters._common import (
    FIXED_FIELDS,
    chat_turns,
    checked_fields,
    checked_options,
    headed,
    kept_originals,
    passage_from,
    without_repeats,
)
from ctxasm.assembler import Assembler
from ctxasm.data import Assembly
from ctxasm.errors import RequestError
from ctxasm.loader_metadata import is_web_url, source_title

__all__ = ["CtxasmCompressor", "CtxasmRunnable", "documents_to_passages"]


def documents_to_passages(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """Passages for ``ctxasm.assemble`` from LangChain documents (see the module docstring)."""
    passages, files = [], []
    for index, document in enumerate(documents):
        metadata = dict(document.metadata or {})
        passage_id = _document_id(index, document, metadata)
        score = metadata.pop("score", None)
        fallback = metadata.pop("relevance_score", None)  # a reranker's, when score is unset
        score = fallback if score is None else score
        source = metadata.get("source")
        if metadata.get("url") is None and is_web_url(source):
            metadata["url"] = source
        passages.append(passage_from(passage_id, document.page_content, score, metadata))
        files.append(source_title(source, metadata))
    return headed(passages, files, "document")


def _document_id(index: int, document: Document, metadata: dict[str, Any]) -> str:
    """The document's id, else its metadata's (taken out of the metadata only then), else
    ``doc-<index>``, as a string (a UUID's, a number's); an empty string or 0 is none. A value
    whose ``str`` raises or is empty is refused by name."""
    value: object = document.id
    if _no_id(value):
        value = metadata.pop("id", None)
    if _no_id(value):
        return f"doc-{index}"
    try:
        text = str(value)
    except Exception:  # an object's __str__ may raise
        text = ""
    if not text:
        raise RequestError(
            f"documents[{index}]: its id (a {type(value).__name__}) has no text",
            field=f"documents[{index}].id",
        )
    return text


def _no_id(value: object) -> bool:
    return value is None or (isinstance(value, str | int) and not value)


def _messages(assembly: Assembly) -> list[BaseMessage]:
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[role](content=content) for role, content in chat_turns(assembly)]


# Where LangChain users put the question and the documents in a chain's dict.
QUERY_KEYS = ("query", "question")
DOCUMENT_KEYS = ("documents", "context")


def _one_of(input: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    """The key of ``keys`` that ``input`` has, and its value; an error if it has several."""
    found = [key for key in keys if key in input]
    if len(found) > 1:
        raise RequestError(
            f"the input has both {found[0]!r} and {found[1]!r}; give one of them",
            field=found[1],
        )
    return (found[0], input[found[0]]) if found else (None, None)


def _check_access_fields(fields: Mapping[str, Any], built: Mapping[str, Any]) -> None:
    """Refuse an input that would change what the runnable was built to let a request see.

    A chain's input may come from its user: the principal a runnable was built for is not
    theirs to replace, nor is default-deny theirs to lift (``allow_public`` lets documents
    without access data through) where the runnable was built with a principal or with
    ``allow_public`` of its own."""
    if "principal" in fields and "principal" in built:
        raise RequestError(
            "this CtxasmRunnable was built for a principal; the input cannot give one",
            field="principal",
        )
    decided = [name for name in ("principal", "allow_public") if name in built]
    if "allow_public" in fields and decided:
        raise RequestError(
            f"this CtxasmRunnable was built with {decided[0]!r}, which decides what a "
            "request may see; the input cannot give 'allow_public'",
            field="allow_public",
        )


class CtxasmRunnable(Runnable[str | dict[str, Any], list[BaseMessage]]):
    """A question (with a ``retriever``) or ``{"question": str, "context": [Document, ...]}``
    in, the assembled messages out.

    In a dict, ``query`` may stand for ``question`` and ``documents`` for ``context``; without
    documents the ``retriever`` is asked. Other keys of the dict (``history``, ``principal``,
    ``max_context_tokens``, ...) and the keyword arguments given here are request fields; a
    ``principal`` given here is fixed (an input that gives one is refused), and so is
    ``allow_public`` once a principal or ``allow_public`` is given here.
    ``assemble(input)`` returns the whole :class:`~ctxasm.Assembly` (with its report) instead.
    A misspelt request field or an unknown model given here is refused here.
    """

    def __init__(
        self,
        assembler: Assembler | None = None,
        *,
        retriever: BaseRetriever | None = None,
        **request_fields: Any,
    ) -> None:
        self.assembler = assembler or Assembler()
        self.retriever = retriever
        self.request_fields = checked_fields(request_fields, self.assembler.config.models)

    def request(
        self, input: str | dict[str, Any], config: RunnableConfig | None = None
    ) -> dict[str, Any]:
        """The ctxasm request for ``input`` (retrieving the documents if none were given)."""
        if not isinstance(input, str | Mapping):
            raise RequestError(
                "the input must be the question (a string) or a dict with 'question' and "
                f"optionally 'context'; got {type(input).__name__}",
                field="input",
            )
        fields = {"query": input} if isinstance(input, str) else dict(input)
        query_key, query = _one_of(fields, QUERY_KEYS)
        documents_key, documents = _one_of(fields, DOCUMENT_KEYS)
        fields.pop(query_key or "", None)
        fields.pop(documents_key or "", None)
        if not isinstance(query, str):
            raise RequestError(
                f"the question must be a string, given as the input itself or under "
                f"'question' (or 'query'); got {type(query).__name__}",
                field=query_key or "question",
            )
        _check_access_fields(fields, self.request_fields)
        if documents_key is None:
            documents = self._retrieve(query, config)
        if not isinstance(documents, list | tuple) or not all(
            isinstance(d, Document) for d in documents
        ):
            raise RequestError(
                f"{documents_key!r} must be a list of LangChain Documents (what a retriever "
                f"returns); got {type(documents).__name__}",
                field=documents_key,
            )
        return {
            **self.request_fields,
            **fields,
            "query": query,
            "passages": without_repeats(documents_to_passages(documents)),
        }

    def _retrieve(self, query: str, config: RunnableConfig | None) -> list[Document]:
        if self.retriever is None:
            raise RequestError(
                "no documents to assemble: pass them under 'context' (or 'documents'), or "
                "build CtxasmRunnable(retriever=...) so it retrieves them for the question",
                field="context",
            )
        return self.retriever.invoke(query, config)

    def assemble(
        self, input: str | dict[str, Any], config: RunnableConfig | None = None
    ) -> Assembly:
        """The whole assembly for ``input``: the prompt and its report."""
        return self.assembler.assemble(self.request(input, config))

    def invoke(
        self,
        input: str | dict[str, Any],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[BaseMessage]:
        return _messages(self.assemble(input, config))


class CtxasmCompressor(BaseDocumentCompressor):
    """The documents ctxasm selects for ``query``, in prompt order, each with
    ``metadata["ctxasm_label"]`` (``Source N``), ``metadata["ctxasm_tokens"]`` and
    ``metadata["ctxasm_flags"]`` (the guard's, empty for none). ``page_content`` is the text as
    the prompt shows it: cut to its useful sentences where it was compressed, grown where an
    overlapping chunk was stitched into it; what the guard read, so a sentence it never read
    cannot come back.

    It takes the request fields ``model``, ``max_context_tokens``, ``min_score`` and
    ``strategy``, checked where it is built: another name, misspelt or a request field it does
    not take, is refused rather than left unused, and so is an unknown model."""

    model_config = ConfigDict(extra="forbid")

    model: str = "gpt-4o"
    max_context_tokens: int | None = None
    min_score: float | None = None
    strategy: dict[str, Any] | None = None

    def __init__(self, **fields: Any) -> None:
        # Checked before pydantic, whose errors are no RequestError and name no allowed field.
        checked_options("CtxasmCompressor", fields, FIXED_FIELDS, instead="CtxasmRunnable")
        super().__init__(**fields)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        passages = documents_to_passages(documents)
        by_id = kept_originals(passages, list(documents))
        request: dict[str, Any] = {
            "query": query,
            "passages": without_repeats(passages),
            "model": self.model,
        }
        if self.max_context_tokens is not None:
            request["max_context_tokens"] = self.max_context_tokens
        if self.min_score is not None:
            request["min_score"] = self.min_score
        if self.strategy is not None:
            request["strategy"] = self.strategy
        assembly = Assembler().assemble(request)
        shown = {candidate.id: candidate.text for candidate in assembly.passages}
        kept = []
        for item in assembly.report.included:
            original = by_id[item.id]
            metadata = {
                **original.metadata,
                "ctxasm_label": item.label,
                "ctxasm_tokens": item.tokens,
                "ctxasm_flags": list(item.flags),
            }
            kept.append(Document(page_content=shown[item.id], metadata=metadata, id=original.id))
        return kept
