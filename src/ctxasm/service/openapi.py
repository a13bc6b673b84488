"""The OpenAPI document of the service, built from :mod:`ctxasm.service.schemas`.

The routes read raw bytes (the one parser, :mod:`ctxasm.jsonio`), so FastAPI cannot see their
request bodies; each POST route names its body model here instead, and :func:`contract` adds
those models to ``components/schemas``. Every documented error answer uses ``ErrorResponse``
and carries the ``x-request-id`` header. With an API key, the ``/v1/`` operations declare it,
so the ``Authorize`` button of ``/docs`` sends it with every request tried there.

:func:`add_pages` serves the two pages for people: ``/docs`` (Swagger UI, its script and style
served from the ``swagger-ui-bundle-v2`` package, never a CDN, so it works offline) and ``/ui``,
the playground, which picks from :data:`PLAYGROUND_EXAMPLES` and draws the answer of
``/v1/assemble`` with the view of the HTML report.
"""

from __future__ import annotations

from functools import cache
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, Response
from starlette.exceptions import HTTPException

from ctxasm.service import schemas

__all__ = [
    "EXAMPLE_CITATIONS",
    "EXAMPLE_REQUEST",
    "PLAYGROUND_EXAMPLES",
    "add_pages",
    "contract",
    "errors_for",
    "request_body",
]

EXAMPLE_REQUEST: dict[str, Any] = {
    "query": "Where did Aristotle teach?",
    "model": "gpt-4o-mini",
    "passages": [
        {"id": "a1", "text": "Aristotle taught at the Lyceum in Athens.", "score": 0.82},
        {"id": "b1", "text": "Bananas are rich in potassium.", "score": 0.1},
    ],
    "min_score": 0.3,
}
_LYCEUM = "Aristotle taught at the Lyceum in Athens, which he founded after leaving the Academy."
PLAYGROUND_EXAMPLES: dict[str, dict[str, Any]] = {
    "A relevance threshold": EXAMPLE_REQUEST,
    "Near duplicates": {
        "query": "Where did Aristotle teach, and who was his most famous student?",
        "model": "gpt-4o-mini",
        "passages": [
            {"id": "lyceum", "title": "Aristotle", "text": _LYCEUM, "score": 0.82},
            {"id": "lyceum-copy", "title": "Aristotle (mirror)", "text": _LYCEUM, "score": 0.8},
            {
                "id": "alexander",
                "title": "Alexander the Great",
                "url": "https://en.wikipedia.org/wiki/Alexander_the_Great",
                "text": "Alexander the Great was tutored by Aristotle until the age of 16.",
                "score": 0.77,
            },
            {
                "id": "alexander-2",
                "title": "Alexander the Great",
                "text": "Alexander the great was tutored by Aristotle until the age of 16!",
                "score": 0.75,
            },
        ],
    },
    "A tight budget": {
        "query": "Which rivers flow through Vienna and Budapest?",
        "model": "gpt-4o-mini",
        "max_context_tokens": 60,
        "passages": [
            {
                "id": f"danube-{n}",
                "title": "Danube",
                "text": f"Part {n}: the Danube flows through Vienna, Bratislava, Budapest and "
                "Belgrade before it reaches the Black Sea in a wide delta.",
                "score": round(0.9 - n / 20, 2),
            }
            for n in range(1, 6)
        ],
    },
    "Access control": {
        "query": "What is the travel budget for 2026?",
        "model": "gpt-4o-mini",
        "principal": {"id": "ann", "tenant": "acme", "groups": ["group:staff"]},
        "passages": [
            {
                "id": "travel",
                "text": "The 2026 travel budget is 40,000 euros for the whole team.",
                "tenant": "acme",
                "readers": ["group:staff"],
                "score": 0.9,
            },
            {
                "id": "salaries",
                "text": "The 2026 salary budget, travel excluded, is confidential.",
                "tenant": "acme",
                "readers": ["group:finance"],
                "score": 0.7,
            },
        ],
    },
    "A conversation": {
        "query": "And who taught Aristotle?",
        "model": "claude-sonnet-4-5",
        "format": "anthropic",
        "history": [
            {"role": "user", "content": "Who tutored Alexander the Great?"},
            {"role": "assistant", "content": "Aristotle tutored him [Source 1]."},
        ],
        "passages": [
            {
                "id": "plato",
                "title": "Plato",
                "text": "Plato taught Aristotle at the Academy in Athens for twenty years.",
                "score": 0.8,
            }
        ],
    },
}
EXAMPLE_CITATIONS: dict[str, Any] = {
    "answer": "He taught at the Lyceum [Source 1].",
    "result": {"report": {"included": [{"id": "a1", "label": "Source 1", "url": None}]}},
}
_WHEN = {
    401: "Missing or wrong API key (when the service has one).",
    408: "The request body did not arrive in time ([service] body_timeout_s).",
    413: "The request is over a limit ([limits]); the connection is closed.",
    422: "The request is invalid; field names the part to fix.",
    500: "Unexpected error; the log has the traceback under the request id.",
    503: "Over [service] max_connections (unavailable): try again later; or, for assembly and "
    "citation checks, the work took longer than [service] request_timeout_s "
    "(deadline_exceeded): send fewer or shorter passages.",
}
_REQUEST_ID = {
    "x-request-id": {
        "description": "The request's id: the client's own, when it sends a short one, or new.",
        "schema": {"type": "string"},
    }
}


def errors_for(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` entry of a route for the error statuses it can answer."""
    return {
        status: {
            "model": schemas.ErrorResponse,
            "description": _WHEN.get(status, HTTPStatus(status).phrase),
            "headers": _REQUEST_ID,
        }
        for status in statuses
    }


def request_body(model: str, example: dict[str, Any]) -> dict[str, Any]:
    """The ``openapi_extra`` that documents a route's JSON body as the schema ``model``."""
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{model}"},
                    "example": example,
                }
            },
        }
    }


def contract(app: FastAPI, *, secured: bool) -> dict[str, Any]:
    """The app's OpenAPI document, with the request models (built once, then cached)."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description="The same JSON contract as `ctxasm assemble`. Every error is "
        '`{"error": {"code", "message", "field", "request_id"}}`.',
        routes=app.routes,
    )
    components = document.setdefault("components", {})
    found = components.setdefault("schemas", {})
    for name, schema in schemas.components().items():
        found.setdefault(name, schema)
    for operation in _operations(document):
        operation["responses"].get("200", {}).setdefault("headers", _REQUEST_ID)
    if secured:
        components["securitySchemes"] = {
            "ApiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
            "Bearer": {"type": "http", "scheme": "bearer"},
        }
        for path, item in document["paths"].items():
            if path.startswith("/v1/"):
                for operation in item.values():
                    operation["security"] = [{"ApiKey": []}, {"Bearer": []}]
    app.openapi_schema = document
    return document


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [operation for item in document["paths"].values() for operation in item.values()]


_SWAGGER_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


@cache
def _swagger_asset(name: str) -> bytes:
    """A Swagger UI file shipped by ``swagger-ui-bundle-v2`` (read once; names are fixed)."""
    from swagger_ui_bundle import swagger_ui_path

    found: bytes = (swagger_ui_path / name).read_bytes()
    return found


def add_pages(app: FastAPI, *, key_required: bool) -> None:
    """``GET /docs`` with its assets under ``/docs/assets/``, and ``GET /ui``, the playground
    (left out of the OpenAPI document: they are pages, not the contract)."""
    playground: list[str] = []

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title}: API docs",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Response:
        kind = _SWAGGER_ASSETS.get(name)
        if kind is None:
            raise HTTPException(404)
        headers = {"cache-control": "public, max-age=86400"}
        return Response(_swagger_asset(name), media_type=kind, headers=headers)

    @app.get("/ui", include_in_schema=False)
    async def ui() -> HTMLResponse:
        from ctxasm.html import render_playground_html

        if not playground:
            playground.append(
                render_playground_html(
                    PLAYGROUND_EXAMPLES, key_required=key_required, endpoint="v1/assemble"
                )
            )
        # The page's own policy (a meta tag) forbids loading anything; this adds what a meta
        # tag cannot say: no other site may frame it.
        headers = {"content-security-policy": "frame-ancestors 'none'"}
        return HTMLResponse(playground[0], headers=headers)
