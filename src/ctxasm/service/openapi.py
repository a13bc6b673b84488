"""The OpenAPI document of the service, built from :mod:`ctxasm.service.schemas`.

The routes read raw bytes (the one parser, :mod:`ctxasm.jsonio`), so FastAPI cannot see their
request bodies; each POST route names its body model here instead, and :func:`contract` adds
those models to ``components/schemas``. Every documented error answer uses ``ErrorResponse``
and carries the ``x-request-id`` header. With an API key, the ``/v1/`` operations declare it,
so the ``Authorize`` button of ``/docs`` sends it with every request tried there.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ctxasm.service import schemas

__all__ = ["EXAMPLE_CITATIONS", "EXAMPLE_REQUEST", "contract", "errors_for", "request_body"]

EXAMPLE_REQUEST: dict[str, Any] = {
    "query": "Where did Aristotle teach?",
    "model": "gpt-4o-mini",
    "passages": [
        {"id": "a1", "text": "Aristotle taught at the Lyceum in Athens.", "score": 0.82},
        {"id": "b1", "text": "Bananas are rich in potassium.", "score": 0.1},
    ],
    "min_score": 0.3,
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
    503: "Over [service] max_connections; try again later.",
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
