"""The HTTP service, started for real (``ctxasm serve`` in a subprocess), over loopback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

import ctxasm
from ctxasm.hits import passages_from_hits
from serving import free_port

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "request.json"
KEY = "s3cret"


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory,
    start_service: Callable[..., AbstractContextManager[tuple[str, int]]],
) -> Iterator[str]:
    config = tmp_path_factory.mktemp("service") / "ctxasm.toml"
    config.write_text(
        "[limits]\nmax_passages = 20\nmax_body_bytes = 200000\nmax_passage_chars = 100000\n",
        encoding="utf-8",
    )
    with start_service(config, env={"CTXASM_API_KEY": KEY}) as (base, _):
        yield base


def _call(
    base: str, path: str, body: Any = None, *, key: str | None = KEY, raw: bytes | None = None
) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(f"{base}{path}", data=data, method="POST" if data else "GET")
    request.add_header("content-type", "application/json")
    if key is not None:
        request.add_header("x-api-key", key)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as error:
        text, status = error.read().decode(), error.code
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def test_assemble_returns_what_the_library_returns(service: str) -> None:
    request = json.loads(EXAMPLE.read_text())
    status, result = _call(service, "/v1/assemble", request)
    assert status == 200
    expected = ctxasm.assemble(**request).to_dict()
    result["report"].pop("timings_ms")
    expected["report"].pop("timings_ms")
    assert result == expected


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"query": "q", "passages": [{"text": 5}]}, 422, "passages[0].text"),
        ({"query": "q", "passages": [], "model": "gpt-9"}, 422, "model"),
        ({"query": "q", "passages": [{"text": "x"}] * 21}, 413, "passages"),
        ([1, 2], 422, "request"),
        # a retriever's hits in place of passages: named as the hits, under the same limits
        ({"query": "q", "hits": [{"content": 5}]}, 422, "hits[0].text"),
        ({"query": "q", "hits": [{"text": "x", "similarity": "high"}]}, 422, "hits[0].similarity"),
        ({"query": "q", "hits": [{"text": "x"}] * 21}, 413, "hits"),
        ({"query": "q", "hits": [{"page_content": "x" * 100_001}]}, 413, "hits[0].page_content"),
        ({"query": "q", "hits": [{"node": {"text": "x" * 100_001}}]}, 413, "hits[0].node.text"),
        ({"query": "q", "hits": [{"node": ["x"], "score": 0.5}]}, 422, "hits[0].node"),
        ({"query": "q", "passages": [{"text": "x" * 100_001}]}, 413, "passages[0].text"),
        ({"query": "q", "hits": {"text": "x"}}, 422, "hits"),
        ({"query": "q", "passages": [], "hits": []}, 422, "hits"),
        ({"query": "q"}, 422, "passages"),
    ],
)
def test_bad_requests_get_json_errors_naming_the_field(
    service: str, body: Any, status: int, field: str
) -> None:
    got, error = _call(service, "/v1/assemble", body)
    assert got == status
    assert set(error["error"]) == {"code", "message", "field", "request_id"}
    assert error["error"]["field"] == field
    assert "Traceback" not in json.dumps(error)


HITS = [
    {
        "page_content": "Aristotle taught at the Lyceum in Athens.",
        "similarity": 0.82,
        "metadata": {"source": "wiki/aristotle", "title": "Aristotle", "page": 3},
    },
    {"content": "Plato founded the Academy.", "score": 0.41, "id": 7},
    {"text": "Alexander was tutored by Aristotle.", "url": "https://example.org/alexander"},
]


def test_hits_are_taken_in_place_of_passages(service: str) -> None:
    request = {"query": "Where did Aristotle teach?", "hits": HITS, "id": "r1"}
    status, result = _call(service, "/v1/assemble", request)
    assert status == 200, result
    result["report"].pop("timings_ms")
    assert result.pop("id") == "r1"  # the request's own id comes back, as from the CLI
    # what the library makes of the same hits, and of the passages they map to
    for expected in (
        ctxasm.assemble(request["query"], hits=HITS).to_dict(),
        ctxasm.assemble(request["query"], passages_from_hits(HITS)).to_dict(),
    ):
        expected["report"].pop("timings_ms")
        assert result == expected
    # ids made from the texts; the title and source lifted from the metadata; an id of 7 as "7"
    report = result["report"]
    assert [(i["id"], i["source"], i["url"]) for i in report["included"]] == [
        ("hit-fc9c94a322", "wiki/aristotle", None),
        ("hit-5a7f16cb6d", None, "https://example.org/alexander"),
    ]
    assert [(e["id"], e["reason"]) for e in report["excluded"]] == [("7", "below_threshold")]
    assert "[Source 1] Aristotle" in result["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"query": "q", "passages": [], "hits": HITS},
            422,
            "the request has both passages and hits; give the candidates once, as passages or "
            "as a retriever's hits",
        ),
        (
            {"query": "q"},
            422,
            "passages is required (an empty list is allowed), or hits: a retriever's hits",
        ),
        (
            {"query": "q", "hits": [*HITS, {"text": "again", "id": "7"}]},
            422,
            "hits[3].id '7' repeats hits[1].id; the ids of hits must be unique (leave a hit's "
            "id out for one made from its text)",
        ),
        (
            {"query": "q", "hits": [{"content": "x" * 100_001}]},
            413,
            "hit text of 100,001 characters; at most 100,000",
        ),
    ],
    ids=["both", "neither", "repeated-id", "hit-text-too-long"],
)
def test_hits_get_the_parsers_messages(service: str, body: Any, status: int, message: str) -> None:
    got, error = _call(service, "/v1/assemble", body)
    assert (got, error["error"]["message"]) == (status, message)


def test_malformed_and_oversized_bodies(service: str) -> None:
    status, error = _call(service, "/v1/assemble", raw=b"{not json")
    assert (status, error["error"]["field"]) == (422, "request")
    big = json.dumps({"query": "q", "passages": [{"text": "x" * 250_000}]}).encode()
    status, error = _call(service, "/v1/assemble", raw=big)
    assert (status, error["error"]["code"]) == (413, "too_large")


def test_the_api_key_is_required(service: str) -> None:
    assert _call(service, "/v1/models", key=None)[0] == 401
    assert _call(service, "/v1/models", key="wrong")[0] == 401
    status, models = _call(service, "/v1/models")
    assert status == 200 and any(m["name"] == "gpt-4o" for m in models)
    assert _call(service, "/healthz", key=None) == (200, {"status": "ok"})
    # load balancers often check with HEAD: the same status, no body
    head = urllib.request.Request(f"{service}/healthz", method="HEAD")
    with urllib.request.urlopen(head, timeout=30) as response:
        assert (response.status, response.read()) == (200, b"")


def test_check_citations_over_http(service: str) -> None:
    _, result = _call(service, "/v1/assemble", json.loads(EXAMPLE.read_text()))
    status, report = _call(
        service,
        "/v1/check-citations",
        {"answer": "Yes [Source 1]. No [Source 9].", "result": result},
    )
    assert status == 200 and report["invalid"] == ["Source 9"]
    # the provider's response as the answer, as ctxasm check-citations reads a saved one
    completion = {"choices": [{"message": {"content": "Yes [Source 1]. No [Source 9]."}}]}
    status, again = _call(service, "/v1/check-citations", {"answer": completion, "result": result})
    assert (status, again) == (200, report)
    status, error = _call(
        service, "/v1/check-citations", {"answer": {"text": "Yes"}, "result": result}
    )
    assert (status, error["error"]["field"]) == (422, "answer")
    status, error = _call(service, "/v1/check-citations", {"answer": 3})
    assert (status, error["error"]["field"]) == (422, "answer")
    # a key the endpoint does not take is refused, as /v1/assemble refuses one, and a missing
    # result is named as such
    body = {"answer": "Yes [Source 1].", "result": result, "links": True}
    status, error = _call(service, "/v1/check-citations", body)
    assert (status, error["error"]["field"]) == (422, "links")
    status, error = _call(service, "/v1/check-citations", {"answer": "Yes [Source 1]."})
    assert (status, error["error"]["field"]) == (422, "result")
    assert error["error"]["message"].startswith("result must be an object, it is missing; send ")
    # a 1 MB url cited 150 times made a 150 MB response (hundreds of MB of server memory);
    # here a 150 kB url cited 1,000 times, under this service's 200 kB body limit
    result["report"]["included"][0]["url"] = "https://example.org/" + "a" * 150_000
    status, error = _call(
        service, "/v1/check-citations", {"answer": "[Source 1] " * 1000, "result": result}
    )
    assert (status, error["error"]["field"]) == (422, "answer")


def test_openapi_docs_and_metrics(service: str) -> None:
    # an assembly of its own, so that the counter it looks for exists when run alone
    assert _call(service, "/v1/assemble", json.loads(EXAMPLE.read_text()))[0] == 200
    status, schema = _call(service, "/openapi.json", key=None)
    assert status == 200 and "/v1/assemble" in schema["paths"]
    status, page = _call(service, "/docs", key=None)
    assert status == 200 and "swagger" in page.lower()
    status, metrics = _call(service, "/metrics", key=None)
    assert (
        status == 200 and 'ctxasm_requests_total{endpoint="/v1/assemble",status="200"}' in metrics
    )


def test_requests_in_flight_finish_on_shutdown(tmp_path: Path) -> None:
    import signal
    import threading

    port = free_port()
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port)],
        env={k: v for k, v in os.environ.items() if k != "CTXASM_API_KEY"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                    break
            except OSError:
                assert time.time() < deadline, "the service did not start"
                time.sleep(0.2)
        words = " ".join(f"word{i}" for i in range(200))
        heavy = {
            "query": "word1 word2 word3",
            "passages": [{"id": f"p{i}", "text": f"{words} {i}"} for i in range(1500)],
        }
        outcome: dict[str, Any] = {}

        def send() -> None:
            outcome["status"] = _call(base, "/v1/assemble", heavy, key=None)[0]

        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(0.3)  # the request is being assembled
        process.send_signal(signal.SIGTERM)
        sender.join(timeout=60)
        assert outcome.get("status") == 200  # the request in flight finished
        # uvicorn shuts down gracefully, then re-raises the signal it caught
        assert process.wait(timeout=60) in (0, -signal.SIGTERM)
    finally:
        if process.poll() is None:
            process.kill()
