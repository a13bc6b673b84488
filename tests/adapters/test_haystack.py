"""The Haystack component with the real ``haystack-ai`` installed."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("haystack", reason="needs haystack-ai (make test)")

from haystack import Document, Pipeline

import ctxasm
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


def _pipeline() -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("prompt", CtxasmPromptBuilder(model="gpt-4o", min_score=0.3))
    return pipeline


def _run(pipeline: Pipeline) -> dict[str, Any]:
    result: dict[str, Any] = pipeline.run(
        {"prompt": {"documents": DOCUMENTS, "query": "Where does the Danube end?"}}
    )
    return result["prompt"]


def test_it_runs_inside_a_pipeline() -> None:
    out = _run(_pipeline())
    assert [m.text for m in out["messages"]][1] == (
        "Sources:\n\n[Source 1] <https://x/danube>\n```\nThe Danube ends in the Black Sea.\n```"
        "\n\nQuestion: Where does the Danube end?"
    )
    assert [i["id"] for i in out["report"]["included"]] == ["d1"]
    assert [(e["id"], e["reason"]) for e in out["report"]["excluded"]] == [
        ("d2", "below_threshold")
    ]


def test_the_component_survives_dumps_and_loads() -> None:
    pipeline = _pipeline()
    component = pipeline.get_component("prompt")
    assert component.to_dict() == {
        "type": "ctxasm.adapters.haystack.CtxasmPromptBuilder",
        "init_parameters": {"model": "gpt-4o", "min_score": 0.3},
    }
    # Haystack loads classes only from modules the caller trusts.
    reloaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["ctxasm.adapters.haystack"])
    assert reloaded.get_component("prompt").request_fields == {"model": "gpt-4o", "min_score": 0.3}
    before, after = _run(pipeline), _run(reloaded)
    assert after["messages"] == before["messages"]
    report = {k: v for k, v in after["report"].items() if k != "timings_ms"}
    assert report == {k: v for k, v in before["report"].items() if k != "timings_ms"}


def test_a_misspelt_request_field_fails_where_the_component_is_built() -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        CtxasmPromptBuilder(modle="gpt-4o")
    assert caught.value.field == "modle"


@pytest.mark.parametrize(
    ("documents", "field"),
    [
        (None, "documents"),
        ("The Danube", "documents"),
        ([Document(content="x", meta={"readers": "admins"})], "passages[0].readers"),
        ([Document(content="x", score="high")], "passages[0].score"),  # type: ignore[arg-type]
    ],
)
def test_documents_it_cannot_use_are_refused_naming_the_field(documents: Any, field: str) -> None:
    # None was a raw TypeError; "admins" as readers was read as the readers a, d, m, i, n, s
    builder = CtxasmPromptBuilder(principal={"id": "a", "groups": []})
    with pytest.raises(ctxasm.RequestError) as caught:
        builder.run(documents=documents, query="Where does the Danube end?")
    assert caught.value.field == field


def test_a_document_a_retriever_returned_twice_is_assembled_once() -> None:
    # the same content has the same id: the request refused it ("ids must be unique")
    twice = [
        Document(content="The Danube ends in the Black Sea.", score=0.4),
        Document(content="The Danube ends in the Black Sea.", score=0.9),
    ]
    assert twice[0].id == twice[1].id
    out = CtxasmPromptBuilder().run(documents=twice, query="Where does the Danube end?")
    [included] = out["report"]["included"]
    assert included["id"] == twice[0].id and included["score"] == 0.9
    # the same id with another text stays a refusal: which one is meant cannot be told
    clash = [twice[0], Document(id=twice[0].id, content="Bananas are yellow.")]
    with pytest.raises(ctxasm.RequestError, match="unique"):
        CtxasmPromptBuilder().run(documents=clash, query="Where does the Danube end?")


def test_a_haystack_document_given_as_a_passage_points_to_the_adapter() -> None:
    with pytest.raises(ctxasm.RequestError, match=r"haystack\.documents_to_passages") as caught:
        ctxasm.assemble("q?", [Document(content="The Danube ends in the Black Sea.")])
    assert caught.value.field == "passages[0]"


def _source_lines(out: dict[str, Any]) -> list[str]:
    return [line for line in out["messages"][-1].text.splitlines() if line.startswith("[Source")]


def test_sources_are_headed_by_their_file_or_position_never_by_the_hash_id() -> None:
    # Each header was "(id: <64 hex digits>)", Haystack's SHA-256 of the document (M1)
    documents = [
        Document(
            content="The Danube ends in the Black Sea.",
            score=0.9,
            meta={"file_path": "/data/atlas.pdf", "page_number": 4},
        ),
        Document(content="The Danube is 2,850 km long.", score=0.8, meta={"file_name": "r.txt"}),
        Document(content="The Danube flows through Vienna.", score=0.7),
    ]
    builder = CtxasmPromptBuilder(strategy={"ordering": "score"})
    out = builder.run(documents=documents, query="Where does the Danube end?")
    assert _source_lines(out) == [
        "[Source 1] atlas.pdf, page 4",
        "[Source 2] r.txt",
        "[Source 3] document 3",
    ]
    # the hash stays the passage's id, in the report only
    assert [i["id"] for i in out["report"]["included"]] == [d.id for d in documents]
    assert not any(d.id in out["messages"][-1].text for d in documents)


def test_headers_without_the_hash_halve_the_tokens_of_short_chunks() -> None:
    documents = [
        Document(content=f"The Danube passes city number {i} on its way to the Black Sea.")
        for i in range(10)
    ]
    out = CtxasmPromptBuilder().run(documents=documents, query="Where does the Danube end?")
    assert len(out["report"]["included"]) == 10
    # 662 tokens with "(id: <hash>)" headers; headed "document N", 291
    assert out["report"]["context_tokens"] < 300


def test_an_unknown_model_fails_where_the_component_is_built() -> None:
    # It built, and the error came at the first run, deep in a pipeline (L12)
    with pytest.raises(ctxasm.UnknownModelError, match="did you mean gpt-4o") as caught:
        CtxasmPromptBuilder(model="gpt4o")
    assert caught.value.field == "model"
