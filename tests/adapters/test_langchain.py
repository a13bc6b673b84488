"""The LangChain adapter with the real ``langchain-core`` installed."""

from __future__ import annotations

import pytest

langchain_core = pytest.importorskip("langchain_core", reason="needs langchain-core (make test)")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402

from ctxasm.adapters.langchain import (  # noqa: E402
    CtxasmCompressor,
    CtxasmRunnable,
    documents_to_passages,
)

DOCUMENTS = [
    Document(
        page_content="The Danube ends in the Black Sea.",
        metadata={"source": "atlas", "score": 0.9, "url": "https://x/danube", "page": 3},
        id="d1",
    ),
    Document(page_content="the danube ends in the black sea!", metadata={"score": 0.8}, id="d2"),
    Document(page_content="Bananas are yellow.", metadata={"relevance_score": 0.1}, id="d3"),
]


def test_documents_become_passages_with_their_metadata() -> None:
    passages = documents_to_passages(DOCUMENTS)
    assert passages[0] == {
        "id": "d1",
        "text": "The Danube ends in the Black Sea.",
        "score": 0.9,
        "source": "atlas",
        "url": "https://x/danube",
        "metadata": {"page": 3},
    }
    assert passages[2]["score"] == 0.1


def test_the_runnable_returns_langchain_messages() -> None:
    runnable = CtxasmRunnable(model="gpt-4o")
    messages = runnable.invoke({"query": "Where does the Danube end?", "documents": DOCUMENTS})
    assert isinstance(messages[0], SystemMessage) and isinstance(messages[-1], HumanMessage)
    assert "[Source 1]" in messages[-1].content
    assembly = runnable.assemble(
        {"query": "Where does the Danube end?", "documents": DOCUMENTS, "min_score": 0.3}
    )
    assert [i.id for i in assembly.report.included] == ["d1"]  # d2 is a copy, d3 below 0.3
    assert assembly.report.included[0].source == "atlas"
    # a Runnable composes like any other
    chained = runnable | len
    assert chained.invoke({"query": "Danube?", "documents": DOCUMENTS}) == 2


def test_the_compressor_returns_selected_documents_in_prompt_order() -> None:
    compressor = CtxasmCompressor(max_context_tokens=200, min_score=0.3)
    kept = compressor.compress_documents(DOCUMENTS, "Where does the Danube end?")
    assert [d.id for d in kept] == ["d1"]
    assert kept[0].metadata["source"] == "atlas"
    assert kept[0].metadata["ctxasm_label"] == "Source 1"
    assert kept[0].metadata["ctxasm_tokens"] > 0
