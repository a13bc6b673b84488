"""LlamaIndex: a node postprocessor that selects, deduplicates and orders nodes within a token
budget, and a function from ``NodeWithScore`` objects to the assembled chat messages
(the ``llamaindex`` extra).

A node becomes a passage: its content is the text, ``node_id`` the id, the ``NodeWithScore``
score the score (a bare node, such as a ``TextNode``, has none); metadata keys ``title``,
``source``, ``url``, ``doc_id``, ``start``/``end``, ``timestamp``, ``authority``, ``tenant`` and
``readers`` carry over (``ref_doc_id`` and the node's character offsets too, so overlapping
chunks are stitched). A node without a title is titled by its file (``file_name`` or
``file_path``, with ``page_label``, as LlamaIndex readers set them), else, without a url, by its
position (``node 2``), so its header never shows an opaque UUID.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from pydantic import ConfigDict

from ctxasm.adapters._common import (
    FIXED_FIELDS,
    chat_turns,
    checked_options,
    headed,
    kept_originals,
    passage_from,
    without_repeats,
)
from ctxasm.assembler import Assembler
from ctxasm.data import Assembly
from ctxasm.errors import RequestError
from ctxasm.loader_metadata import file_name_title

__all__ = ["CtxasmNodePostprocessor", "assemble_nodes", "nodes_to_passages", "readable_title"]


def readable_title(metadata: dict[str, Any], position: int) -> str:
    """A title for a node that has none: its file name (and page), else ``node <position>``."""
    return file_name_title(metadata) or f"node {position}"


def nodes_to_passages(nodes: list[NodeWithScore] | list[BaseNode]) -> list[dict[str, Any]]:
    """Passages for ``ctxasm.assemble`` from scored nodes, or from bare nodes (no score)."""
    scored_nodes = _scored(nodes)
    passages = []
    for scored in scored_nodes:
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
    files = [file_name_title(scored.node.metadata) for scored in scored_nodes]
    return headed(passages, files, "node")


def _scored(nodes: object) -> list[NodeWithScore]:
    """``nodes`` as ``NodeWithScore`` objects: a bare node (what a docstore or a node parser
    gives) with no score; anything else refused, naming where it is."""
    if not isinstance(nodes, list | tuple):
        raise RequestError(
            "nodes must be a list of LlamaIndex NodeWithScore objects (what a retriever "
            f"returns) or nodes; got {type(nodes).__name__}",
            field="nodes",
        )
    scored = []
    for index, item in enumerate(nodes):
        if isinstance(item, NodeWithScore):
            scored.append(item)
        elif isinstance(item, BaseNode):
            scored.append(NodeWithScore(node=item, score=None))
        else:
            raise RequestError(
                f"nodes[{index}] must be a LlamaIndex NodeWithScore (what a retriever returns) "
                f"or a node such as a TextNode; got {type(item).__name__}",
                field=f"nodes[{index}]",
            )
    return scored


def assemble_nodes(
    nodes: list[NodeWithScore] | list[BaseNode],
    query: str,
    assembler: Assembler | None = None,
    **fields: Any,
) -> tuple[list[ChatMessage], Assembly]:
    """The assembled chat messages for ``query`` (LlamaIndex ``ChatMessage`` objects), and the
    :class:`~ctxasm.Assembly` with its report. Keyword arguments are request fields. ``nodes``
    are what a retriever returns (``NodeWithScore``) or bare nodes, which have no score."""
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
    flags in ``metadata["ctxasm_flags"]``.

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
        checked_options(
            "CtxasmNodePostprocessor",
            fields,
            FIXED_FIELDS,
            framework=("callback_manager",),
            instead="assemble_nodes",
        )
        super().__init__(**fields)

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
        for key in FIXED_FIELDS[1:]:
            if getattr(self, key) is not None:
                fields[key] = getattr(self, key)
        scored = _scored(nodes)
        passages = nodes_to_passages(scored)  # once: for the request and the nodes returned
        _, assembly = _assembled(passages, query, None, **fields)
        by_id = kept_originals(passages, scored)
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
