"""The HTTP service: the same JSON contract as the CLI, over FastAPI.

``POST /v1/assemble`` takes the request JSON of DESIGN.md and returns the result JSON;
``POST /v1/check-citations`` takes ``{"answer", "result"}``; ``GET /v1/models`` lists the
registry; ``GET /healthz`` says the service is up; ``GET /metrics`` is Prometheus text; the
OpenAPI schema is at ``/openapi.json`` and interactive docs at ``/docs``.

Errors are JSON ``{"error": {"code", "message", "field"}}``: 413 for a request over a limit
(``[limits]`` in the config: body bytes, passages, passage length, history turns), 422 for an
invalid one, 401 for a missing or wrong API key when one is set (``CTXASM_API_KEY``, sent as
``x-api-key`` or ``Authorization: Bearer``), and 500 with a request id, which the log shows with
the traceback, for anything unexpected. No traceback ever reaches a client.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from ctxasm.assembler import Assembler
from ctxasm.errors import BudgetError, ConfigError, CtxasmError, RequestError

__all__ = ["create_app", "create_app_from_env"]

log = logging.getLogger("ctxasm.service")


def _error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message, "field": field}}, status_code=status
    )


def _check_limits(data: Mapping[str, Any], limits: Mapping[str, int]) -> JSONResponse | None:
    passages = data.get("passages")
    if isinstance(passages, list):
        if len(passages) > limits["max_passages"]:
            return _error(
                413,
                "too_large",
                f"{len(passages)} passages; this service takes at most {limits['max_passages']}",
                "passages",
            )
        for index, passage in enumerate(passages):
            text = passage.get("text") if isinstance(passage, dict) else None
            if isinstance(text, str) and len(text) > limits["max_passage_chars"]:
                return _error(
                    413,
                    "too_large",
                    f"passage text of {len(text):,} characters; at most "
                    f"{limits['max_passage_chars']:,}",
                    f"passages[{index}].text",
                )
    history = data.get("history")
    if isinstance(history, list) and len(history) > limits["max_history_turns"]:
        return _error(
            413,
            "too_large",
            f"{len(history)} history turns; at most {limits['max_history_turns']}",
            "history",
        )
    return None


def create_app(  # noqa: PLR0915 - the routes are closures over one assembler and its metrics
    config: Any = None, *, api_key: str | None = None, assembler: Assembler | None = None
) -> FastAPI:
    """The service for one configuration (a config mapping, file path or ``None``)."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    assembler = assembler or Assembler(config)
    limits = assembler.config.service_limits
    metrics = CollectorRegistry()
    requests = Counter("ctxasm_requests", "HTTP requests", ["endpoint", "status"], registry=metrics)
    latency = Histogram("ctxasm_request_seconds", "Request latency", ["endpoint"], registry=metrics)
    app = FastAPI(
        title="ctxasm",
        summary="The context assembler for RAG: prompts that fit, with a full report.",
        version=_version(),
    )

    @app.middleware("http")
    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        endpoint = request.url.path
        if api_key and endpoint.startswith("/v1/"):
            given = request.headers.get("x-api-key") or ""
            bearer = request.headers.get("authorization", "")
            if bearer.lower().startswith("bearer "):
                given = given or bearer[7:]
            if not hmac.compare_digest(given.encode(), api_key.encode()):
                response: Response = _error(401, "unauthorized", "missing or wrong API key")
                requests.labels(endpoint, "401").inc()
                return response
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limits["max_body_bytes"]:
            response = _error(
                413, "too_large", f"body over {limits['max_body_bytes']:,} bytes", "body"
            )
        else:
            request_id = uuid.uuid4().hex[:12]
            try:
                response = await call_next(request)
            except Exception:  # a bug: logged with the traceback, never shown to the client
                log.exception("request %s to %s failed", request_id, endpoint)
                response = _error(
                    500, "internal_error", f"unexpected error; request id {request_id}"
                )
        requests.labels(endpoint, str(response.status_code)).inc()
        latency.labels(endpoint).observe(time.perf_counter() - started)
        return response

    async def _json_body(request: Request) -> Any:
        raw = await request.body()
        if len(raw) > limits["max_body_bytes"]:
            return _error(413, "too_large", f"body over {limits['max_body_bytes']:,} bytes", "body")
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(422, "invalid_json", f"the body is not JSON: {exc}", "body")

    @app.post("/v1/assemble", summary="Assemble one request (DESIGN.md request and result JSON)")
    async def assemble(request: Request) -> Response:
        data = await _json_body(request)
        if isinstance(data, Response):
            return data
        if not isinstance(data, dict):
            return _error(422, "invalid_request", "the request must be a JSON object", "request")
        over = _check_limits(data, limits)
        if over is not None:
            return over
        try:
            result = await run_in_threadpool(assembler.assemble, data)
        except (RequestError, BudgetError, ConfigError) as error:
            return _error(422, error.code, error.message, error.field)
        except CtxasmError as error:
            return _error(500, error.code, error.message, error.field)
        return JSONResponse(result.to_dict())

    @app.post("/v1/check-citations", summary="Check the citations of an answer")
    async def check(request: Request) -> Response:
        from ctxasm.citations import check_citations

        data = await _json_body(request)
        if isinstance(data, Response):
            return data
        if not isinstance(data, dict) or not isinstance(data.get("answer"), str):
            return _error(422, "invalid_request", 'send {"answer": str, "result": {...}}', "answer")
        try:
            report = check_citations(data["answer"], data.get("result") or {})
        except (RequestError, TypeError) as error:
            field = getattr(error, "field", "result")
            return _error(422, "invalid_request", str(getattr(error, "message", error)), field)
        return JSONResponse(report.to_dict())

    @app.get("/v1/models", summary="The model registry")
    async def models() -> Response:
        return JSONResponse([spec.to_dict() for spec in assembler.config.models])

    @app.get("/healthz", summary="Liveness")
    async def health() -> Response:
        return JSONResponse({"status": "ok"})

    @app.get("/metrics", summary="Prometheus metrics")
    async def prometheus() -> Response:
        return PlainTextResponse(generate_latest(metrics).decode("utf-8"))

    return app


def _version() -> str:
    from ctxasm import __version__

    return __version__


def create_app_from_env() -> FastAPI:
    """The app ``ctxasm serve`` runs: config from ``CTXASM_CONFIG``, key from
    ``CTXASM_API_KEY`` (uvicorn workers each build their own)."""
    return create_app(
        os.environ.get("CTXASM_CONFIG") or None, api_key=os.environ.get("CTXASM_API_KEY") or None
    )
