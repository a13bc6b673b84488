"""Issue 11, item 4: real requests and responses of every endpoint, validated against the
service's own ``/openapi.json`` with ``jsonschema`` (the OpenAPI 3.1 dialect is JSON Schema
2020-12), on a real ``ctxasm serve`` over loopback."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

Start = Callable[..., AbstractContextManager[tuple[str, int]]]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "request.json"
KEY = "k3y"
CONFIG = """
[limits]
max_passages = 6
max_body_bytes = 100000
[service]
body_timeout_s = 1
"""


class Answer:
    """One HTTP exchange: what was sent and what came back."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.raw = status, headers, body

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, start_service: Start) -> Iterator[str]:
    config = tmp_path_factory.mktemp("openapi") / "ctxasm.toml"
    config.write_text(CONFIG, encoding="utf-8")
    with start_service(config, env={"CTXASM_API_KEY": KEY}) as (base, _):
        yield base


@pytest.fixture(scope="module")
def document(served: str) -> dict[str, Any]:
    answer = _call(served, "GET", "/openapi.json", key=None)
    assert answer.status == 200
    found: dict[str, Any] = answer.json
    return found


def _call(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    key: str | None = KEY,
    raw: bytes | None = None,
    request_id: str | None = None,
) -> Answer:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(f"{base}{path}", data=data, method=method)
    request.add_header("content-type", "application/json")
    if key is not None:
        request.add_header("x-api-key", key)
    if request_id is not None:
        request.add_header("x-request-id", request_id)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return Answer(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, dict(error.headers), error.read())


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    # the components travel with the schema, so its "#/components/..." references resolve
    return Draft202012Validator({**schema, "components": document["components"]})


def _operation(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    found: dict[str, Any] = document["paths"][path][method.lower()]
    return found


def _errors(document: dict[str, Any], schema: dict[str, Any], value: Any) -> list[str]:
    return [error.message for error in _validator(document, schema).iter_errors(value)]


def _request_schema(document: dict[str, Any], path: str) -> dict[str, Any]:
    body = _operation(document, "POST", path)["requestBody"]
    assert body["required"] is True
    found: dict[str, Any] = body["content"]["application/json"]["schema"]
    return found


def _check_response(document: dict[str, Any], method: str, path: str, answer: Answer) -> None:
    """The answer is one the operation documents, with its schema and its headers."""
    documented = _operation(document, method, path)["responses"][str(answer.status)]
    media = answer.headers["content-type"].split(";")[0]
    schema = documented["content"][media]["schema"]
    body = answer.json if media == "application/json" else answer.raw.decode()
    assert _errors(document, schema, body) == []
    assert set(documented["headers"]) == {"x-request-id"}
    assert answer.headers["x-request-id"]
    if answer.status >= 400:
        assert answer.json["error"]["request_id"] == answer.headers["x-request-id"]


def test_the_document_is_openapi_3_1_with_valid_json_schemas(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    assert sorted(document["paths"]) == [
        "/healthz",
        "/metrics",
        "/v1/assemble",
        "/v1/check-citations",
        "/v1/models",
    ]
    assert sorted(_operation(document, "POST", "/v1/assemble")["responses"]) == [
        "200",
        "401",
        "408",
        "413",
        "422",
        "500",
        "503",
    ]
    assert _operation(document, "GET", "/v1/models")["security"] == [{"ApiKey": []}, {"Bearer": []}]
    assert "security" not in _operation(document, "GET", "/healthz")


def test_assemble_request_and_result_match_the_contract(served: str, document: Any) -> None:
    request = json.loads(EXAMPLE.read_text())
    assert _errors(document, _request_schema(document, "/v1/assemble"), request) == []
    answer = _call(served, "POST", "/v1/assemble", request)
    assert answer.status == 200
    _check_response(document, "POST", "/v1/assemble", answer)
    assert [item["id"] for item in answer.json["report"]["included"]] == [
        "aristotle-1",
        "plato",
        "alexander",
    ]


def test_a_session_request_with_its_own_id_and_metadata_matches_the_contract(
    served: str, document: Any
) -> None:
    # The service takes session_id, and every entry point takes the request's own id and
    # metadata and returns them first on the result: the contract declares all three.
    request = {
        **json.loads(EXAMPLE.read_text()),
        "id": "q-7",
        "metadata": {"user": "ann", "trace": [1, 2]},
        "session_id": "session-openapi-1",
    }
    assert _errors(document, _request_schema(document, "/v1/assemble"), request) == []
    for _ in range(2):  # the second turn reads the session's state
        answer = _call(served, "POST", "/v1/assemble", request)
        assert answer.status == 200, answer.raw
        _check_response(document, "POST", "/v1/assemble", answer)
        assert list(answer.json)[:2] == ["id", "metadata"]
        assert (answer.json["id"], answer.json["metadata"]) == ("q-7", request["metadata"])
    assert answer.json["report"]["cache"]["prefix_tokens"] > 0
    # null is no value for any of the three: the schema and the service refuse it alike
    for name in ("id", "metadata", "session_id"):
        nulled = {**request, name: None}
        assert _errors(document, _request_schema(document, "/v1/assemble"), nulled) != []
        refused = _call(served, "POST", "/v1/assemble", nulled)
        assert (refused.status, refused.json["error"]["field"]) == (422, name)
    # while template, nullable in the schema, is taken as null by a service that refuses
    # templates (review rv17: it answered 422)
    untemplated = _call(served, "POST", "/v1/assemble", {**request, "template": None})
    assert untemplated.status == 200, untemplated.raw
    alone = {key: value for key, value in request.items() if key != "session_id"}
    numbered = _call(served, "POST", "/v1/assemble", {**alone, "id": 42})
    assert (numbered.status, numbered.json.get("id")) == (200, 42)
    _check_response(document, "POST", "/v1/assemble", numbered)


def test_a_refused_request_gets_its_own_id_and_metadata_back_on_the_error(
    served: str, document: Any
) -> None:
    # A client sending many requests joins each answer back to its request by its own id,
    # errors included, as ctxasm batch's error records carry it (the error body had none).
    request = {
        **json.loads(EXAMPLE.read_text()),
        "id": "q-8",
        "metadata": {"user": "ann"},
        "max_context_tokens": -1,
    }
    answer = _call(served, "POST", "/v1/assemble", request, request_id="err.8")
    assert answer.status == 422, answer.raw
    assert list(answer.json) == ["id", "metadata", "error"]
    assert (answer.json["id"], answer.json["metadata"]) == ("q-8", {"user": "ann"})
    assert answer.json["error"]["field"] == "max_context_tokens"
    assert answer.json["error"]["request_id"] == "err.8"
    schema = {"$ref": "#/components/schemas/ErrorResponse"}
    assert _errors(document, schema, answer.json) == []
    # an id that is itself the mistake is not echoed; the error names it
    bad_id = _call(served, "POST", "/v1/assemble", {**request, "id": [1]})
    assert (bad_id.status, list(bad_id.json), bad_id.json["error"]["field"]) == (
        422,
        ["error"],
        "id",
    )
    # a body that is no JSON object has no id to give back
    broken = _call(served, "POST", "/v1/assemble", raw=b'{"id": "q-9", "query": ')
    assert (broken.status, list(broken.json)) == (422, ["error"])


def test_a_request_of_hits_matches_the_contract(served: str, document: Any) -> None:
    request = {
        "query": "Where did Aristotle teach?",
        "hits": [{"page_content": "Aristotle taught at the Lyceum.", "similarity": 0.8}],
    }
    assert _errors(document, _request_schema(document, "/v1/assemble"), request) == []
    answer = _call(served, "POST", "/v1/assemble", request)
    assert answer.status == 200, answer.raw
    _check_response(document, "POST", "/v1/assemble", answer)
    assert [item["id"] for item in answer.json["report"]["included"]] == ["hit-f333e016ef"]


def test_the_documented_examples_are_real_requests(served: str, document: Any) -> None:
    """What the Try it out button of /docs sends is answered 200."""
    for path in ("/v1/assemble", "/v1/check-citations"):
        body = _operation(document, "POST", path)["requestBody"]["content"]["application/json"]
        assert _errors(document, body["schema"], body["example"]) == []
        answer = _call(served, "POST", path, body["example"])
        assert answer.status == 200, answer.raw
        _check_response(document, "POST", path, answer)


def test_check_citations_request_and_report(served: str, document: Any) -> None:
    result = _call(served, "POST", "/v1/assemble", json.loads(EXAMPLE.read_text())).json
    request = {"answer": "The Lyceum [Source 1]. Macedon [Source 9].", "result": result}
    assert _errors(document, _request_schema(document, "/v1/check-citations"), request) == []
    answer = _call(served, "POST", "/v1/check-citations", request)
    _check_response(document, "POST", "/v1/check-citations", answer)
    assert (answer.status, answer.json["invalid"], answer.json["cited_ids"]) == (
        200,
        ["Source 9"],
        ["aristotle-1"],
    )


@pytest.mark.parametrize("path", ["/v1/models", "/healthz", "/metrics"])
def test_get_endpoints_match_the_contract(served: str, document: Any, path: str) -> None:
    answer = _call(served, "GET", path)
    assert answer.status == 200
    _check_response(document, "GET", path, answer)


@pytest.mark.parametrize(
    ("path", "body", "status", "error"),
    [
        (
            "/v1/assemble",
            {"query": "q", "passages": [{"text": 5}]},
            422,
            {
                "code": "invalid_request",
                "message": "passages[0].text must be a string; got int 5",
                "field": "passages[0].text",
            },
        ),
        (
            "/v1/assemble",
            {"query": "q", "passages": [{"text": "x"}] * 7},
            413,
            {
                "code": "too_large",
                "message": "7 passages; this service takes at most 6",
                "field": "passages",
            },
        ),
        (
            "/v1/assemble",
            {"query": "q", "hits": [{"content": "x"}] * 7},
            413,
            {
                "code": "too_large",
                "message": "7 hits; this service takes at most 6",
                "field": "hits",
            },
        ),
        (
            "/v1/assemble",
            {"query": "q", "passages": [], "hits": [{"content": "x"}]},
            422,
            {
                "code": "invalid_request",
                "message": "the request has both passages and hits; give the candidates once, "
                "as passages or as a retriever's hits",
                "field": "hits",
            },
        ),
        (
            "/v1/check-citations",
            {"answer": 3},
            422,
            {
                "code": "invalid_request",
                "message": "answer must be a string or a chat completion response, got 3; "
                'send {"answer": "...", "result": {...}}, the result being the assembly\'s '
                "result JSON",
                "field": "answer",
            },
        ),
    ],
)
def test_refused_requests_fail_the_schema_too_and_get_documented_errors(
    served: str, document: Any, path: str, body: Any, status: int, error: dict[str, Any]
) -> None:
    if status == 422:  # what the parser refuses, the documented request schema refuses too
        assert _errors(document, _request_schema(document, path), body) != []
    answer = _call(served, "POST", path, body, request_id="req-1")
    _check_response(document, "POST", path, answer)
    assert (answer.status, answer.json) == (status, {"error": {**error, "request_id": "req-1"}})
    assert answer.headers["x-request-id"] == "req-1"


def test_oversized_body_and_missing_key(served: str, document: Any) -> None:
    big = json.dumps({"query": "q", "passages": [{"text": "x" * 150_000}]}).encode()
    answer = _call(served, "POST", "/v1/assemble", raw=big)
    _check_response(document, "POST", "/v1/assemble", answer)
    assert (answer.status, answer.json["error"]["code"]) == (413, "too_large")
    for path in ("/v1/assemble", "/v1/models"):
        method = "POST" if path == "/v1/assemble" else "GET"
        answer = _call(served, method, path, {} if method == "POST" else None, key="wrong")
        _check_response(document, method, path, answer)
        assert (answer.status, answer.json["error"]["code"]) == (401, "unauthorized")


@pytest.mark.parametrize(
    ("method", "path", "status", "code", "message"),
    [
        (
            "GET",
            "/v1/nowhere",
            404,
            "not_found",
            "no endpoint at /v1/nowhere; the endpoints are listed at /docs and /openapi.json",
        ),
        (
            "GET",
            "/v1/assemble",
            405,
            "method_not_allowed",
            "GET is not allowed on /v1/assemble; it takes POST",
        ),
        (
            "DELETE",
            "/healthz",
            405,
            "method_not_allowed",
            "DELETE is not allowed on /healthz; it takes GET",
        ),
    ],
)
def test_unknown_paths_and_methods_get_the_error_shape(
    served: str, document: Any, method: str, path: str, status: int, code: str, message: str
) -> None:
    answer = _call(served, method, path, request_id="abc.123")
    error = {"code": code, "message": message, "field": None, "request_id": "abc.123"}
    assert (answer.status, answer.json) == (status, {"error": error})
    assert answer.headers["x-request-id"] == "abc.123"
    schema = {"$ref": "#/components/schemas/ErrorResponse"}
    assert _errors(document, schema, answer.json) == []


@pytest.mark.parametrize("path", ["/v1/assemble/", "/v1/check-citations/", "/v1/assemble//"])
def test_a_trailing_slash_gets_the_json_404_naming_the_path_without_it(
    served: str, document: Any, path: str
) -> None:
    # It was a bare 307 with an empty body, which a client does not follow with its POST.
    body = json.loads(EXAMPLE.read_text())
    answer = _call(served, "POST", path, body, request_id="slash.1")
    bare = path.rstrip("/")
    message = f"no endpoint at {path}; did you mean {bare} (no trailing slash)?"
    error = {"code": "not_found", "message": message, "field": None, "request_id": "slash.1"}
    assert (answer.status, answer.json) == (404, {"error": error})
    assert _errors(document, {"$ref": "#/components/schemas/ErrorResponse"}, answer.json) == []


@pytest.mark.parametrize("path", ["/v1/models/", "/healthz/", "/ui/", "/docs//", "/ui/?x=1"])
def test_a_page_read_with_a_trailing_slash_is_redirected_to_it(served: str, path: str) -> None:
    """A browser at /ui/ or /docs/ reaches the page (review: the JSON 404 meant for POST
    clients had stopped them)."""
    request = urllib.request.Request(f"{served}{path}", method="GET")
    request.add_header("x-api-key", KEY)
    with urllib.request.urlopen(request, timeout=30) as response:  # follows the 307
        assert response.status == 200
        page, mark, query = path.partition("?")
        assert response.url == f"{served}{page.rstrip('/')}{mark}{query}"


def test_an_unknown_path_with_a_trailing_slash_gets_the_plain_404(served: str) -> None:
    answer = _call(served, "POST", "/v1/nowhere/", {"query": "q"})
    assert (answer.status, answer.json["error"]["message"]) == (
        404,
        "no endpoint at /v1/nowhere/; the endpoints are listed at /docs and /openapi.json",
    )


def test_a_client_request_id_that_is_not_a_short_token_is_replaced(served: str) -> None:
    answer = _call(served, "GET", "/nowhere", request_id="x" * 65)
    assert len(answer.headers["x-request-id"]) == 32
    assert answer.json["error"]["request_id"] == answer.headers["x-request-id"]


def _raw_exchange(base: str, head: bytes, wait: float = 10) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _parse(raw: bytes) -> Answer:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return Answer(int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body)


def test_a_slow_body_gets_a_documented_408(served: str, document: Any) -> None:
    head = (
        b"POST /v1/assemble HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"x-api-key: " + KEY.encode() + b"\r\ncontent-length: 100\r\n\r\n{"
    )
    answer = _parse(_raw_exchange(served, head))
    _check_response(document, "POST", "/v1/assemble", answer)
    assert answer.json["error"]["code"] == "timeout"


def test_beyond_max_connections_a_documented_503(
    tmp_path: Path, start_service: Start, document: Any
) -> None:
    config = tmp_path / "ctxasm.toml"
    config.write_text("[service]\nmax_connections = 2\n", encoding="utf-8")
    with start_service(config) as (base, _):
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))):  # holds one of the two
            time.sleep(0.2)
            raw = _raw_exchange(base, b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
    answer = _parse(raw)
    _check_response(document, "GET", "/healthz", answer)
    assert answer.status == 503
    assert answer.json["error"] == {
        "code": "unavailable",
        "message": "the service is at its limit of connections and requests; try again shortly",
        "field": None,
        "request_id": answer.headers["x-request-id"],
    }
