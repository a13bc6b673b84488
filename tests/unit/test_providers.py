"""Anthropic's counting endpoint, served for real on loopback by a small HTTP server that speaks
its request and response shape (the real API needs a key and the network, which tests have not)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import pytest

import ctxasm
from ctxasm import ConfigError, TokenizerError
from ctxasm.formatting.base import Rendered
from ctxasm.providers import AnthropicCounter

PASSAGES = [
    {"id": f"p{i}", "title": "Danube", "text": f"The Danube passes city {i}. " * 5}
    for i in range(5)
]


class _Endpoint(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []
    fail: ClassVar[bool] = False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        headers = {key.lower(): value for key, value in self.headers.items()}
        _Endpoint.seen.append({"path": self.path, "headers": headers, "body": body})
        if _Endpoint.fail:
            self.send_response(529, "Overloaded")
            self.end_headers()
            return
        text = (body.get("system") or "") + "".join(m["content"] for m in body["messages"])
        payload = json.dumps({"input_tokens": len(text) // 4 + 7}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass


@pytest.fixture()
def endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Endpoint.seen.clear()
    _Endpoint.fail = False
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _assembler(base_url: str) -> ctxasm.Assembler:
    return ctxasm.Assembler(
        {"providers": {"anthropic": {"count_tokens": True, "base_url": base_url, "timeout": 5}}}
    )


def test_the_final_request_is_counted_by_the_endpoint(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    result = _assembler(endpoint).assemble(
        query="Where does the Danube go?",
        passages=PASSAGES,
        model="claude-sonnet-4-5",
        format="anthropic",
    )
    report = result.report
    assert report.exact_count is True
    last = _Endpoint.seen[-1]
    assert last["path"] == "/v1/messages/count_tokens"
    assert last["headers"]["x-api-key"] == "test-key"
    assert last["headers"]["anthropic-version"] == "2023-06-01"
    # the registry's short name becomes an API model id (one of its aliases)
    assert last["body"]["model"] == "claude-sonnet-4-5-20250929"
    assert last["body"]["system"] == result.system
    assert last["body"]["messages"] == [dict(m) for m in result.messages]
    text = result.system + "".join(m["content"] for m in result.messages)
    assert report.total_tokens == len(text) // 4 + 7


def test_without_a_key_nothing_is_sent(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = _assembler(endpoint).assemble(
        query="Where?", passages=PASSAGES, model="claude-sonnet-4-5", format="anthropic"
    )
    assert result.report.exact_count is False
    assert _Endpoint.seen == []


def test_a_failing_endpoint_falls_back_to_the_estimate_with_a_warning(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    _Endpoint.fail = True
    with pytest.warns(UserWarning, match="HTTP 529"):
        result = _assembler(endpoint).assemble(
            query="Where?", passages=PASSAGES, model="claude-sonnet-4-5", format="anthropic"
        )
    assert result.report.exact_count is False
    assert len(_Endpoint.seen) == 1  # tried once, then the estimate for the rest


def test_other_formats_never_call_it(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    _assembler(endpoint).assemble(query="Where?", passages=PASSAGES, model="claude-sonnet-4-5")
    assert _Endpoint.seen == []


def test_an_unreachable_endpoint_is_a_tokenizer_error() -> None:
    counter = AnthropicCounter("k", "http://127.0.0.1:9", timeout=2)
    with pytest.raises(TokenizerError, match="Anthropic token counting failed"):
        counter.count(
            "claude-sonnet-4-5", Rendered(({"role": "user", "content": "hi"},), "s", None)
        )


@pytest.mark.parametrize(
    "providers",
    [
        {"openai": {}},
        {"anthropic": {"count_tokens": "yes"}},
        {"anthropic": {"key": "x"}},
        {"anthropic": {"timeout": 0}},
        "anthropic",
    ],
)
def test_bad_provider_config_is_refused(providers: Any) -> None:
    with pytest.raises(ConfigError):
        ctxasm.Assembler({"providers": providers})
