"""LlamaIndex: a node postprocessor that selects, deduplicates and orders nodes within a token
budget, and a function from ``NodeWithScore`` objects to the assembled chat messages
(``pip install 'ctxasm[llamaindex]'``).

A node becomes a passage: its content is the text, ``node_id`` the id, the ``NodeWithScore``
score the score; metadata keys ``title``, ``source``, ``url``, ``doc_id``, ``start``/``end``,
``timestamp``, ``authority``, ``tenant`` and ``readers`` carry over (``ref_doc_id`` and the
node's character offsets too, so overlapping chunks are stitched). A node without a title is
titled by its file (``file_name`` or ``file_path``, with ``page_label``, as LlamaIndex readers
set them), else, without a url, by its position (``node 2``), so its header never shows an
opaque UUID.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from ctxasm.adapters._common import chat_turns, kept_originals, passage_from, without_repeats
from ctxasm.assembler import Assembler
from ctxasm.data import Assembly
from ctxasm.errors import RequestError

__all__ = ["CtxasmNodePostprocessor", "assemble_nodes", "nodes_to_passages", "readable_title"]


def readable_title(metadata: dict[str, Any], position: int) -> str:
    """A title for a node that has none: its file name (and page), else ``node <position>``."""
    name = metadata.get("file_name") or metadata.get("file_path")
    if not isinstance(name, str) or not name.strip():
        return f"node {position}"
    title = PurePath(name).name or name
    page = metadata.get("page_label")
    # Written by the built-in types' own methods: no object's str, no subclass's format.
    if isinstance(page, bool):
        return title
    if isinstance(page, str):
        return f"{title}, page {str.__str__(page)}"
    if isinstance(page, float):
        return f"{title}, page {float.__repr__(page)}"
    if isinstance(page, int):
        try:
            return f"{title}, page {int.__repr__(page)}"
        except ValueError:  # more digits than Python writes (4,300 by default)
            return title
    return title


def nodes_to_passages(nodes: list[NodeWithScore]) -> list[dict[str, Any]]:
    """Passages for ``ctxasm.assemble`` from scored nodes."""
    passages = []
    positions: dict[str, int] = {}  # a node returned twice is titled by where it came first
    for position, scored in enumerate(nodes, start=1):
        node = scored.node
        passage = passage_from(node.node_id, node.get_content(), scored.score, node.metadata)
        if "title" not in passage and "url" not in passage:
            first = positions.setdefault(node.node_id, position)
            passage["title"] = readable_title(node.metadata, first)
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
    return _assembled(nodes_to_passages(nodes), query, assembler, **fields)


def _assembled(
    passages: list[dict[str, Any]], query: str, assembler: Assembler | None, **fields: Any
) -> tuple[list[ChatMessage], Assembly]:
    """:func:`assemble_nodes` of the nodes' ``passages``."""
    assembly = (assembler or Assembler()).assemble(
        {**fields, "query": query, "passages": without_repeats(passages)}
    )
    roles = {
        "system": MessageRole.SYSTEM,
        "user": MessageRole.USER,
        "assistant": MessageRole.ASSISTANT,
    }
    messages = [
        ChatMessage(role=roles[role], content=content) for role, content in chat_turns(assembly)
    ]
    return messages, assembly


class CtxasmNodePostprocessor(BaseNodePostprocessor):
    """The nodes ctxasm selects (deduplicated, within the budget), in prompt order. A node
    whose text the prompt shows otherwise (compressed, or grown by a stitched chunk) comes
    back as a copy with that text, what the guard read; a node the guard flagged carries its
    flags in ``metadata["ctxasm_flags"]``."""

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
        if not query.strip():
            # relevance, the guard's echo check and the prompt all need the question
            raise RequestError(
                "CtxasmNodePostprocessor needs the question: pass query_str or a QueryBundle "
                "to postprocess_nodes (a query engine does)",
                field="query_bundle",
            )
        fields: dict[str, Any] = {"model": self.model}
        for key in ("max_context_tokens", "min_score", "strategy"):
            if getattr(self, key) is not None:
                fields[key] = getattr(self, key)
        passages = nodes_to_passages(nodes)  # once: for the request and the nodes returned
        _, assembly = _assembled(passages, query, None, **fields)
        by_id = kept_originals(passages, list(nodes))
        shown = {candidate.id: candidate.text for candidate in assembly.passages}
        return [
            _as_shown(by_id[item.id], shown[item.id], item.flags)
            for item in assembly.report.included
        ]


def _as_shown(scored: NodeWithScore, text: str, flags: tuple[str, ...]) -> NodeWithScore:
    """``scored`` itself, or a copy with the text the prompt shows and the guard's flags."""
    if text == scored.node.get_content() and not flags:
        return scored
    node = scored.node.model_copy(deep=True)
    node.set_content(text)
    if flags:
        node.metadata["ctxasm_flags"] = list(flags)
    return NodeWithScore(node=node, score=scored.score)
