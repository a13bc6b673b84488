"""ctxasm.errors: one root, and each class's HTTP status and exit code, rendered alike by the
Python API, batch, the HTTP service and the CLI."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ctxasm import check_citations, errors
from ctxasm.assembler import Assembler
from ctxasm.batch.jsonl import assemble_line
from ctxasm.cli.exits import error_line
from ctxasm.cli.main import app as cli
from ctxasm.errors import CtxasmError
from ctxasm.service.app import create_app
from ctxasm.strategy import ParamError, require_int

PASSAGE = {"id": "a", "text": "Aristotle taught at the Lyceum.", "score": 0.9}


def _subclasses(cls: type[CtxasmError]) -> list[type[CtxasmError]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_every_error_carries_its_code_status_and_exit_code() -> None:
    table = {
        cls.__name__: (cls.code, cls.http_status, cls.exit_code)
        for cls in [CtxasmError, *_subclasses(CtxasmError)]
        if cls.__module__.startswith("ctxasm.")
    }
    assert table == {
        "CtxasmError": ("error", 500, 1),
        "RequestError": ("invalid_request", 422, 2),
        "InvalidJSONError": ("invalid_json", 422, 2),
        "RequestTooLargeError": ("too_large", 413, 2),
        "UnknownModelError": ("unknown_model", 422, 2),
        "UnknownStrategyError": ("unknown_strategy", 422, 2),
        "AccessPolicyError": ("principal_required", 422, 2),
        "UntokenizableError": ("untokenizable", 422, 2),
        "ArgumentTypeError": ("invalid_request", 422, 2),
        "BudgetError": ("over_budget", 422, 2),
        "ConfigError": ("invalid_config", 422, 2),
        "PluginError": ("invalid_plugin", 422, 2),
        "StoreUnavailableError": ("store_unavailable", 503, 1),
        "DeadlineError": ("deadline_exceeded", 503, 1),
        "TokenizerError": ("tokenizer_unavailable", 500, 1),
        "TokenizerFileError": ("invalid_tokenizer_file", 500, 2),
        "ParamError": ("invalid_parameter", 422, 2),
    }
    assert errors.EXIT_FAILED == 1
    assert errors.EXIT_BAD_INPUT == 2


def test_errors_that_escaped_the_root_now_descend_from_it() -> None:
    with pytest.raises(ParamError) as param:
        require_int("max_candidates", 0, low=1)
    assert isinstance(param.value, CtxasmError | ValueError)
    assert param.value.to_dict() == {
        "code": "invalid_parameter",
        "message": "must be an integer >= 1, got 0",
        "field": "max_candidates",
    }
    with pytest.raises(errors.ArgumentTypeError) as wrong:
        check_citations("See [Source 1].", 42)  # type: ignore[arg-type]
    assert isinstance(wrong.value, CtxasmError | TypeError)
    assert wrong.value.to_dict() == {
        "code": "invalid_request",
        "message": "assembly must be an Assembly, its report, or the JSON of either; got int",
        "field": "result",
    }


# Bad requests of every kind the pipeline refuses after parsing: the error JSON must be the
# same from the Python API, a batch line and the HTTP service, and the CLI prints it as a line.
BAD_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("over budget", {"query": "q " * 300, "passages": [PASSAGE], "context_window": 200}),
    ("unknown model", {"query": "q", "passages": [PASSAGE], "model": "gpt-4p"}),
    ("unknown strategy", {"query": "q", "passages": [PASSAGE], "strategy": {"ordering": "best"}}),
    (
        "bad parameter",
        {"query": "q", "passages": [PASSAGE], "strategy": {"selection": {"name": "mmr", "lam": 2}}},
    ),
    ("bad field", {"query": "q", "passages": [{**PASSAGE, "score": "high"}]}),
]


@pytest.fixture(scope="module")
def assembler() -> Assembler:
    return Assembler()


@pytest.mark.parametrize(("case", "request_data"), BAD_REQUESTS, ids=[c for c, _ in BAD_REQUESTS])
def test_one_error_json_everywhere(
    case: str, request_data: dict[str, Any], assembler: Assembler
) -> None:
    with pytest.raises(CtxasmError) as raised:
        assembler.assemble(request_data)
    expected = raised.value.to_dict()
    assert set(expected) >= {"code", "message", "field"}
    assert ("sections" in expected) == (case == "over budget")

    raw = json.dumps(request_data).encode()
    outcome, line = assemble_line(raw, 1, assembler)
    assert outcome == "failed"
    assert line is not None
    assert json.loads(line) == {"error": expected, "line": 1}

    client = TestClient(create_app(assembler=assembler), raise_server_exceptions=False)
    answer = client.post("/v1/assemble", content=raw)
    assert answer.status_code == type(raised.value).http_status == 422
    body = answer.json()["error"]
    assert body.pop("request_id") == answer.headers["x-request-id"]
    assert body == expected

    done = CliRunner().invoke(cli, ["assemble", "-"], input=raw)
    assert done.exit_code == type(raised.value).exit_code == 2
    assert done.stderr == f"ctxasm: error: {error_line(expected)}\n"
