"""LlamaIndex: a node postprocessor that selects, deduplicates and orders nodes within a token
budget, and a function from ``NodeWithScore`` objects to the assembled chat messages
(``pip install 'ctxasm[llamaindex]'``).

A node becomes a passage: its content is the text, ``node_id`` the id, the ``NodeWithScore``
score the score; metadata keys ``title``, ``source``, ``url``, ``doc_id``, ``start``/``end``,
``timestamp``, ``authority``, ``tenant`` and ``readers`` carry over (``ref_doc_id`` and the
node's character offsets too, so overlapping chunks are stitched).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from ctxasm.adapters._common import passage_from
from ctxasm.assembler import Assembler
from ctxasm.model import Assembly

__all__ = ["CtxasmNodePostprocessor", "assemble_nodes", "nodes_to_passages"]


def nodes_to_passages(nodes: list[NodeWithScore]) -> list[dict[str, Any]]:
    """Passages for ``ctxasm.assemble`` from scored nodes."""
    passages = []
    for scored in nodes:
        node = scored.node
        passage = passage_from(node.node_id, node.get_content(), scored.score, node.metadata)
        reference = getattr(node, "ref_doc_id", None)
        start = getattr(node, "start_char_idx", None)
        end = getattr(node, "end_char_idx", None)
        if reference and "doc_id" not in passage:
            passage["doc_id"] = reference
            offsets = (start, end) if isinstance(start, int) and isinstance(end, int) else None
            if offsets is not None and offsets[1] - offsets[0] == len(passage["text"]):
                passage["start"], passage["end"] = offsets
        passages.append(passage)
    return passages


def assemble_nodes(
    nodes: list[NodeWithScore], query: str, assembler: Assembler | None = None, **fields: Any
) -> tuple[list[ChatMessage], Assembly]:
    """The assembled chat messages for ``query`` (LlamaIndex ``ChatMessage`` objects), and the
    :class:`~ctxasm.Assembly` with its report. Keyword arguments are request fields."""
    assembly = (assembler or Assembler()).assemble(
        {**fields, "query": query, "passages": nodes_to_passages(nodes)}
    )
    roles = {
        "system": MessageRole.SYSTEM,
        "user": MessageRole.USER,
        "assistant": MessageRole.ASSISTANT,
    }
    messages = []
    if assembly.system is not None:
        messages.append(ChatMessage(role=MessageRole.SYSTEM, content=assembly.system))
    for message in assembly.messages:
        messages.append(ChatMessage(role=roles[message["role"]], content=message["content"]))
    if assembly.text is not None:
        messages.append(ChatMessage(role=MessageRole.USER, content=assembly.text))
    return messages, assembly


class CtxasmNodePostprocessor(BaseNodePostprocessor):
    """The nodes ctxasm selects (deduplicated, within the budget), in prompt order."""

    model: str = "gpt-4o"
    max_context_tokens: int | None = None
    min_score: float | None = None
    strategy: dict[str, Any] | None = None

    @classmethod
    def class_name(cls) -> str:
        return "CtxasmNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = query_bundle.query_str if query_bundle is not None else ""
        fields: dict[str, Any] = {"model": self.model}
        for key in ("max_context_tokens", "min_score", "strategy"):
            if getattr(self, key) is not None:
                fields[key] = getattr(self, key)
        _, assembly = assemble_nodes(nodes, query or " ", **fields)
        by_id = {scored.node.node_id: scored for scored in nodes}
        return [by_id[item.id] for item in assembly.report.included]
