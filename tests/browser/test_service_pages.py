"""The service's pages as HTTP answers (no browser): ``/docs`` names only the service's own
assets, they are served, ``/ui`` may not be framed and never holds the API key, and every
playground example is a request the service assembles."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from ctxasm.service.app import create_app
from ctxasm.service.openapi import PLAYGROUND_EXAMPLES


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(api_key="s3cret"))


def test_docs_loads_only_the_services_own_assets(client: TestClient) -> None:
    page = client.get("/docs").text
    assert re.findall(r'(?:src|href)="([^"]*)"', page) == [
        "/docs/assets/swagger-ui.css",
        "/docs/assets/favicon-32x32.png",
        "/docs/assets/swagger-ui-bundle.js",
    ]
    assert "//" not in page.replace("// ", "")  # no url of another host anywhere
    for name, kind in [("swagger-ui-bundle.js", "text/javascript"), ("swagger-ui.css", "text/css")]:
        answer = client.get(f"/docs/assets/{name}")
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(kind)
        assert len(answer.content) > 100_000
    missing = client.get("/docs/assets/..%2fapp.py")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert client.get("/redoc").status_code == 404


def test_the_playground_page(client: TestClient) -> None:
    answer = client.get("/ui")
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"] == "frame-ancestors 'none'"
    assert "connect-src 'self'" in answer.text and "s3cret" not in answer.text
    assert "/ui" not in json.dumps(client.get("/openapi.json").json()["paths"])


# What each example shows: the passages kept, and why the others were left out.
SHOWN = {
    "A relevance threshold": (["a1"], ["below_threshold"]),
    "Near duplicates": (["lyceum", "alexander"], ["duplicate", "duplicate"]),
    "A tight budget": (["danube-1"], ["over_budget"] * 4),
    "Access control": (["travel"], ["access_denied"]),
    "A conversation": (["plato"], []),
}


def test_every_example_shows_what_its_name_says(client: TestClient) -> None:
    assert list(SHOWN) == list(PLAYGROUND_EXAMPLES)
    for name, (kept, reasons) in SHOWN.items():
        answer = client.post(
            "/v1/assemble",
            content=json.dumps(PLAYGROUND_EXAMPLES[name]),
            headers={"x-api-key": "s3cret"},
        )
        assert answer.status_code == 200, answer.text
        report = answer.json()["report"]
        assert [item["id"] for item in report["included"]] == kept, name
        assert [item["reason"] for item in report["excluded"]] == reasons, name
