"""The Haystack component with the real ``haystack-ai`` installed."""

from __future__ import annotations

import pytest

pytest.importorskip("haystack", reason="needs haystack-ai (make test)")

from haystack import Document, Pipeline

from ctxasm.adapters.haystack import CtxasmPromptBuilder

DOCUMENTS = [
    Document(
        id="d1",
        content="The Danube ends in the Black Sea.",
        score=0.9,
        meta={"source": "atlas", "url": "https://x/danube"},
    ),
    Document(id="d2", content="Bananas are yellow.", score=0.1),
]


def test_the_component_outputs_messages_and_the_report() -> None:
    builder = CtxasmPromptBuilder(model="gpt-4o", min_score=0.3)
    out = builder.run(documents=DOCUMENTS, query="Where does the Danube end?")
    roles = [m.role.value for m in out["messages"]]
    assert roles == ["system", "user"]
    assert "[Source 1]" in out["messages"][-1].text
    report = out["report"]
    assert [i["id"] for i in report["included"]] == ["d1"]
    assert report["included"][0]["source"] == "atlas"
    assert [e["id"] for e in report["excluded"]] == ["d2"]


def test_it_runs_inside_a_pipeline() -> None:
    pipeline = Pipeline()
    pipeline.add_component("prompt", CtxasmPromptBuilder(model="gpt-4o"))
    result = pipeline.run({"prompt": {"documents": DOCUMENTS, "query": "Danube?"}})
    assert result["prompt"]["report"]["selected"] >= 1
