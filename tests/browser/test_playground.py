"""``ctxasm serve``'s pages in a real headless Chromium: the playground at ``/ui`` runs its
examples through ``/v1/assemble`` (with the API key when one is set) and draws the report's
view; ``/docs`` draws Swagger UI from the service's own assets. Neither asks another host."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from chromium import Browser
from pages import contrast_failures, foreign_requests, shoot

from ctxasm.service.openapi import PLAYGROUND_EXAMPLES

Serve = Callable[..., AbstractContextManager[str]]


def _run(page: Browser) -> None:
    """Press Run and wait for the answer (drawn, or an error said)."""
    page.evaluate("document.getElementById('status').textContent = ''")
    page.evaluate("document.getElementById('run').click()")
    page.wait("!['', 'Assembling…'].includes(document.getElementById('status').textContent)")


def test_each_example_runs_and_is_drawn(page: Browser, serve: Serve, artifacts: Path) -> None:
    with serve() as base:
        page.open(f"{base}/ui")
        assert page.evaluate("document.getElementById('key-row').hidden") is True
        names = page.evaluate("[...document.querySelectorAll('#example option')].map(o => o.value)")
        assert names == list(PLAYGROUND_EXAMPLES)
        reasons: set[str] = set()
        for name in names:
            page.evaluate(
                "(() => {const s = document.getElementById('example'); "
                f"s.value = {json.dumps(name)}; s.dispatchEvent(new Event('change'))}})()"
            )
            shown = json.loads(page.evaluate("document.getElementById('request').value"))
            assert shown == PLAYGROUND_EXAMPLES[name]
            page.evaluate("document.getElementById('view').replaceChildren()")
            _run(page)
            status = page.evaluate("document.getElementById('status').textContent")
            assert status.startswith("Assembled: "), status
            assert page.evaluate("document.querySelectorAll('#view tr.passage').length") > 0
            reasons |= set(
                page.evaluate(
                    "[...document.querySelectorAll('details.group')].map(d => d.dataset.reason)"
                )
            )
        assert reasons == {"below_threshold", "duplicate", "over_budget", "access_denied"}
        assert foreign_requests(page, base) == []
        assert page.events.exceptions == [] and page.events.dialogs == []
        assert contrast_failures(page) == []
        shoot(page, artifacts, "playground.png")


def test_an_edited_request_and_its_error(page: Browser, serve: Serve) -> None:
    with serve() as base:
        page.open(f"{base}/ui")
        request = {"query": "Who?", "passages": [{"id": "a", "text": "Ann.", "score": "high"}]}
        page.evaluate(
            f"document.getElementById('request').value = {json.dumps(json.dumps(request))}"
        )
        _run(page)
        assert page.evaluate("document.getElementById('status').className") == "error"
        message = page.evaluate("document.getElementById('status').textContent")
        assert message.startswith("422: ") and message.endswith("[passages[0].score]")
        # The editor keeps the focus order of a form: Tab leaves it for the Run button.
        page.evaluate("document.getElementById('request').focus()")
        page.press("Tab", "Tab", 9)
        assert page.evaluate("document.activeElement.id") == "run"


def test_the_api_key_is_asked_for_and_sent(page: Browser, serve: Serve) -> None:
    with serve(api_key="s3cret") as base:
        page.open(f"{base}/ui")
        assert page.evaluate("document.getElementById('key-row').hidden") is False
        assert "s3cret" not in page.evaluate("document.documentElement.outerHTML")
        _run(page)
        assert page.evaluate("document.getElementById('status').textContent").startswith("401: ")
        page.evaluate("document.getElementById('api-key').value = 's3cret'")
        _run(page)
        assert page.evaluate("document.getElementById('status').textContent").startswith(
            "Assembled: "
        )
        assert foreign_requests(page, base) == []


def test_docs_draws_swagger_from_the_service_itself(
    page: Browser, serve: Serve, artifacts: Path
) -> None:
    with serve() as base:
        page.open(f"{base}/docs")
        page.wait("document.querySelectorAll('.opblock').length > 0")
        paths = page.evaluate(
            "[...document.querySelectorAll('.opblock-summary-path')].map(p => p.textContent)"
        )
        assert "/v1/assemble" in "".join(paths)
        assert foreign_requests(page, base) == []
        assert any(
            url.endswith("/docs/assets/swagger-ui-bundle.js") for url in page.events.requests
        )
        shoot(page, artifacts, "docs.png")
