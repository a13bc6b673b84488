"""The typed HTTP contract (ctxasm.service.schemas) cannot drift from the dataclasses and the
parser, and a bug is answered 500 in the documented error shape."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, get_args

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

import ctxasm
from ctxasm.citations import Citation, CitationReport
from ctxasm.data import Budget, Compression, Included, Passage, Principal, Report, Request
from ctxasm.formatting import FORMATS
from ctxasm.models import ModelSpec
from ctxasm.query_class import QUERY_CLASSES
from ctxasm.schema import ENVELOPE_FIELDS, INPUT_FIELDS, PASSAGE_FIELDS, REQUEST_FIELDS
from ctxasm.service import schemas
from ctxasm.service.app import create_app
from ctxasm.service.openapi import EXAMPLE_REQUEST
from ctxasm.service.sessions import FIELD


def _names(cls: Any) -> list[str]:
    """The public fields (a private one, such as CitationReport._given, is no JSON field)."""
    return [field.name for field in dataclasses.fields(cls) if not field.name.startswith("_")]


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        # and hits, read in place of passages
        # and the envelope every entry point returns, and the service's own session_id
        (schemas.AssembleRequest, [*_names(Request), *INPUT_FIELDS, *ENVELOPE_FIELDS, FIELD]),
        (schemas.AssembleRequest, [*REQUEST_FIELDS, *INPUT_FIELDS, *ENVELOPE_FIELDS, FIELD]),
        (schemas.Passage, _names(Passage)),
        (schemas.Passage, list(PASSAGE_FIELDS)),
        (schemas.Principal, _names(Principal)),
        (schemas.Report, _names(Report)),
        (schemas.Budget, _names(Budget)),
        (schemas.Included, _names(Included)),
        (schemas.Compression, _names(Compression)),
        (schemas.Citation, [*_names(Citation), "mislinked"]),
        (schemas.CitationReport, [*_names(CitationReport), "forms"]),
        (schemas.ModelInfo, _names(ModelSpec)),
    ],
)
def test_model_fields_are_the_dataclass_fields(model: Any, fields: list[str]) -> None:
    assert list(model.model_fields) == fields


def test_enumerations_match_the_library() -> None:
    assert sorted(get_args(schemas.FormatName)) == sorted([*FORMATS, "template"])
    assert get_args(schemas.QueryClass) == ("auto", *QUERY_CLASSES)
    assert list(schemas.Excluded.model_fields) == list(_exclusion_dict())


def _exclusion_dict() -> dict[str, Any]:
    result = ctxasm.assemble("q", [{"id": "a", "text": "x", "score": 0.1}], min_score=0.5)
    excluded: dict[str, Any] = result.to_dict()["report"]["excluded"][0]
    return excluded


def test_a_real_result_validates_against_the_result_model() -> None:
    result = ctxasm.assemble(**EXAMPLE_REQUEST).to_dict()
    assert schemas.AssembleResult.model_validate(result).model_dump(mode="json") == result


def test_request_models_are_valid_json_schemas() -> None:
    found = schemas.components()
    assert sorted(found) == [
        "AssembleRequest",
        "CheckCitationsRequest",
        "HistoryPolicy",
        "HistoryTurn",
        "Passage",
        "Principal",
        "Strategy",
        "StrategyChoice",
    ]
    for schema in found.values():
        Draft202012Validator.check_schema(schema)
    request = found["AssembleRequest"]
    assert (request["required"], request["oneOf"]) == (
        ["query"],
        [{"required": ["passages"]}, {"required": ["hits"]}],  # exactly one of the two
    )
    validator = Draft202012Validator(
        {"$ref": "#/components/schemas/AssembleRequest", "components": {"schemas": found}}
    )
    hits = [{"content": "Aristotle taught at the Lyceum."}]
    for body, valid in (
        ({"query": "q", "passages": []}, True),
        ({"query": "q", "hits": hits}, True),
        ({"query": "q", "passages": [], "hits": hits}, False),
        ({"query": "q"}, False),
    ):
        assert validator.is_valid(body) is valid, body
    assert found["Passage"]["properties"]["score"]["description"] == (
        "Retriever or reranker score (finite)."
    )


def test_a_bug_is_a_documented_500_with_the_request_id() -> None:
    app = create_app()

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret detail")

    client = TestClient(app, raise_server_exceptions=False)
    answer = client.get("/boom", headers={"x-request-id": "r-500"})
    assert (answer.status_code, answer.json()) == (
        500,
        {
            "error": {
                "code": "internal_error",
                "message": "unexpected error; request id r-500",
                "field": None,
                "request_id": "r-500",
            }
        },
    )
    assert answer.headers["x-request-id"] == "r-500"
    document = client.get("/openapi.json").json()
    validator = Draft202012Validator(
        {"$ref": "#/components/schemas/ErrorResponse", "components": document["components"]}
    )
    assert list(validator.iter_errors(answer.json())) == []


def test_a_broken_tokenizer_file_of_the_operator_is_a_500_naming_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the request is fine, the service's file is not: 500 (not the client's to fix), with the
    # variable that led to the file, in the documented shape
    import ctxasm.tokens
    from ctxasm.tokens import PINNED

    original = PINNED["mistral-v1"].file.locate()
    (tmp_path / original.name).write_bytes(b"junk")
    monkeypatch.setenv("CTXASM_TOKENIZER_DIR", str(tmp_path))
    monkeypatch.setattr(ctxasm.tokens, "_COUNTERS", {})  # no counter loaded by another test
    client = TestClient(create_app(), raise_server_exceptions=False)
    body = {"query": "q", "passages": [{"id": "a", "text": "t"}], "model": "mixtral-8x7b-instruct"}
    answer = client.post("/v1/assemble", json=body)
    error = answer.json()["error"]
    assert (answer.status_code, error["code"], error["field"]) == (
        500,
        "invalid_tokenizer_file",
        "CTXASM_TOKENIZER_DIR",
    )
    assert error["message"].startswith(
        f"CTXASM_TOKENIZER_DIR: {tmp_path / original.name} is not the expected tokenizer file"
    )
