"""The HTTP service: the same JSON contract as the CLI, over FastAPI.

``POST /v1/assemble`` takes the request JSON of docs/request.md (its candidates as ``passages``,
or as a retriever's ``hits``) and returns the result JSON (with ``session_id``, the service keeps
the prompt-cache state between a session's turns: :mod:`ctxasm.service.sessions`);
``POST /v1/check-citations`` takes ``{"answer", "result"}``; ``GET /v1/models`` lists the
registry; ``GET /healthz`` says the service is up; ``GET /metrics`` is Prometheus text; the
OpenAPI schema is at ``/openapi.json``, interactive docs at ``/docs`` and the playground at
``/ui`` (both pages load nothing from outside the service).

Bodies are read by :mod:`ctxasm.jsonio`, the parser the CLI and batch use, so every input gets
the same decision and message everywhere. Errors are JSON ``{"error": {"code", "message",
"field"}}``: 413 for a request over a limit (``[limits]`` in the config: body bytes, enforced
while the body is read; passages or hits, the length of each text, history turns), 408 for a
body that arrives too slowly, 422 for an invalid request (including a ``template`` field, unless
the operator allows request templates), 401 for a missing or wrong API key when one is set
(``CTXASM_API_KEY``, sent as ``x-api-key`` or ``Authorization: Bearer``), 503
(``deadline_exceeded``) for an assembly or citation check not done within ``[service]
request_timeout_s`` of its body's arrival, and 500 with a request id, which the log shows with
the traceback, for anything unexpected. No traceback ever reaches a client. Parsing, assembly and
the result's JSON run in worker threads, off the event loop, so ``/healthz`` answers while
requests are being assembled. The work stops at its next checkpoint (:mod:`ctxasm.deadline`)
once its time limit passes, or once its client hangs up: a request whose client left gets no
answer and counts as 499, and its thread is soon free for the next.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import Receive

from ctxasm.assembler import Assembler
from ctxasm.deadline import Deadline
from ctxasm.errors import (
    CtxasmError,
    RequestError,
    RequestTooLargeError,
)
from ctxasm.hits import hit_text
from ctxasm.jsonio import decode_object
from ctxasm.schema import request_envelope
from ctxasm.service import schemas
from ctxasm.service.middleware import GuardSettings, ServiceGuard, request_id
from ctxasm.service.openapi import (
    EXAMPLE_CITATIONS,
    EXAMPLE_REQUEST,
    add_pages,
    contract,
    errors_for,
    request_body,
)
from ctxasm.service.sessions import SessionStore
from ctxasm.validation import shown

__all__ = ["ALLOW_TEMPLATES_ENV", "create_app", "create_app_from_env"]

ALLOW_TEMPLATES_ENV = "CTXASM_ALLOW_REQUEST_TEMPLATES"


def _check_limits(data: Mapping[str, Any], limits: Mapping[str, int]) -> None:
    """Refuse (413) a request over a limit of ``[limits]``: the passages, or the retriever's
    hits given for them, by their number and the length of each text; the history turns."""
    for name in ("passages", "hits"):
        items = data.get(name)
        if not isinstance(items, list):
            continue
        if len(items) > limits["max_passages"]:
            raise RequestTooLargeError(
                f"{len(items)} {name}; this service takes at most {limits['max_passages']}",
                field=name,
            )
        for index, item in enumerate(items):
            found = hit_text(item) if name == "hits" else _passage_text(item)
            if found is not None and len(found[1]) > limits["max_passage_chars"]:
                raise RequestTooLargeError(
                    f"{name[:-1]} text of {len(found[1]):,} characters; at most "
                    f"{limits['max_passage_chars']:,}",
                    field=f"{name}[{index}].{found[0]}",
                )
    history = data.get("history")
    if isinstance(history, list) and len(history) > limits["max_history_turns"]:
        raise RequestTooLargeError(
            f"{len(history)} history turns; at most {limits['max_history_turns']}",
            field="history",
        )


def _passage_text(passage: object) -> tuple[str, str] | None:
    """``("text", text)`` of a passage whose text is a string (the parser judges the rest)."""
    text = passage.get("text") if isinstance(passage, dict) else None
    return ("text", text) if isinstance(text, str) else None


def _json(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json")


def _failure(
    error: CtxasmError, request_id: str, envelope: Mapping[str, Any] | None = None
) -> Response:
    """The error as ``error.to_dict()`` (plus the request id), with the status its class
    carries, after the request's own ``id`` and ``metadata`` (``envelope``) where it gave them
    valid: a client that sends many requests joins each error back to its request, as with
    ``ctxasm batch``'s error records."""
    body = {**(envelope or {}), "error": {**error.to_dict(), "request_id": request_id}}
    return _json(body, error.http_status)


def _envelope(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request's ``id`` and ``metadata`` to return on an error, or none where either is
    itself invalid (the error names it)."""
    try:
        return request_envelope(data)
    except CtxasmError:
        return {}


def _refuse_model_paths(strategy: Any) -> None:
    """Refuse a request whose strategy names an embedder read from a path on this machine
    (``sentence-transformers:/path``): which model files the service loads is the operator's
    choice, not a client's (a client could load any model folder it knows of, probe which
    folders exist, and keep many models in memory). ``hashing`` embedders are always fine.
    Each value is reached with the path to it as links to its parent's, written out only for
    the error: a long key over a long list would otherwise be copied once per item."""
    pending: list[tuple[_Path, Any]] = [(None, strategy)]
    while pending:  # the body's depth is bounded by decode_object
        where, value = pending.pop()
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key == "embedder" and isinstance(item, str) and not _offline(item):
                    raise RequestError(
                        "this service does not load embedders named in a request from its own "
                        "files; use 'hashing' or 'hashing:N', or the operator can allow it with "
                        "[service] allow_request_model_paths = true, or set one in [defaults]",
                        field=_field_name((where, key)),
                    )
                pending.append(((where, key), item))
        elif isinstance(value, list):
            pending.extend(((where, i), item) for i, item in enumerate(value))


# A place in the strategy: None for the strategy itself, else (its parent's place, key or index).
_Path = tuple[Any, str | int] | None


def _field_name(path: _Path) -> str:
    """``strategy.relevance.embedder``, ``strategy.dedup[1].embedder``: the field at ``path``."""
    steps: list[str | int] = []
    while path is not None:
        path, step = path
        steps.append(step)
    return "strategy" + "".join(
        f"[{s}]" if isinstance(s, int) else f".{s}" for s in reversed(steps)
    )


def _offline(spec: str) -> bool:
    return spec.partition(":")[0] == "hashing"


class _Endpoints:
    """The work behind the routes, run in worker threads."""

    def __init__(self, assembler: Assembler, *, allow_request_templates: bool) -> None:
        self.assembler = assembler
        self.limits = assembler.config.service_limits
        self.allow_request_templates = allow_request_templates
        self.allow_model_paths = bool(assembler.config.service["allow_request_model_paths"])
        self.timeout_s = float(assembler.config.service["request_timeout_s"])
        self.sessions = SessionStore()

    def assemble(self, raw: bytes, request_id: str) -> Response:
        data: Mapping[str, Any] = {}
        try:
            data = decode_object(raw, max_bytes=self.limits["max_body_bytes"])
            _check_limits(data, self.limits)
            # null is no template: the same as none given (the schema has it nullable)
            if data.get("template") is not None and not self.allow_request_templates:
                raise RequestError(
                    "this service does not accept a template in the request; the operator can "
                    "allow it with [service] allow_request_templates = true or "
                    "ctxasm serve --allow-request-templates, or set one in [defaults]",
                    field="template",
                )
            if not self.allow_model_paths:
                _refuse_model_paths(data.get("strategy"))
            session = self.sessions.prepare(data)
            result = self.assembler.assemble(data)
            if session is not None:
                self.sessions.remember(session, result)
            # the request's own id and metadata come back first, as from ctxasm assemble
            return _json({**request_envelope(data), **result.to_dict()})
        except CtxasmError as error:
            return _failure(error, request_id, _envelope(data))

    def check_citations(self, raw: bytes, request_id: str) -> Response:
        from ctxasm.citations import check_citations

        try:
            data = decode_object(raw, max_bytes=self.limits["max_body_bytes"])
            unknown = sorted(set(data) - {"answer", "result"})
            if unknown:
                raise RequestError(
                    f"unknown field {shown(unknown[0])}; send {_CITATIONS_BODY}", field=unknown[0]
                )
            for name, kind, wanted in (
                ("answer", (str, dict), "a string or a chat completion response"),
                ("result", dict, "an object"),
            ):
                if not isinstance(data.get(name), kind):
                    got = f"got {shown(data[name])}" if name in data else "it is missing"
                    raise RequestError(
                        f"{name} must be {wanted}, {got}; send {_CITATIONS_BODY}", field=name
                    )
            # to_dict refuses a report out of proportion to the request (a long url cited
            # many times), before it is built
            report = check_citations(data["answer"], data["result"]).to_dict()
        except CtxasmError as error:
            return _failure(error, request_id)
        return _json(report)


_CITATIONS_BODY = '{"answer": "...", "result": {...}}, the result being the assembly\'s result JSON'


def _http_error(request: Request, exc: Exception) -> Response:
    """404, 405 and any other HTTP error from routing, in the one error shape."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    headers = getattr(exc, "headers", None) or {}
    path = request.url.path
    if status == 404:
        code = "not_found"
        message = f"no endpoint at {path}; the endpoints are listed at /docs and /openapi.json"
        bare = path.rstrip("/")
        if bare != path and bare and _routed(request, bare):
            if request.method in ("GET", "HEAD"):  # a browser at /docs/ or /ui/: the page
                query = f"?{request.url.query}" if request.url.query else ""
                return RedirectResponse(f"{bare}{query}", status_code=307)
            message = f"no endpoint at {path}; did you mean {bare} (no trailing slash)?"
    elif status == 405:
        code = "method_not_allowed"
        allowed = next((v for k, v in headers.items() if k.lower() == "allow"), "other methods")
        message = f"{request.method} is not allowed on {path}; it takes {allowed}"
    else:
        code, message = "http_error", HTTPStatus(status).phrase
    error = {"code": code, "message": message, "field": None, "request_id": request_id(request)}
    return JSONResponse({"error": error}, status_code=status, headers=headers)


def _routed(request: Request, path: str) -> bool:
    """Whether a route of the app serves ``path`` (with any method)."""
    scope = {**request.scope, "path": path}
    return any(route.matches(scope)[0] is not Match.NONE for route in request.app.router.routes)


def create_app(
    config: Any = None,
    *,
    api_key: str | None = None,
    assembler: Assembler | None = None,
    allow_request_templates: bool | None = None,
) -> FastAPI:
    """The service for one configuration (a config mapping, file path or ``None``).

    A configuration that would fail every request (an unknown default model, a tokenizer that
    cannot load) raises :class:`~ctxasm.errors.ConfigError` here, before anything is served.
    ``allow_request_templates`` overrides ``[service] allow_request_templates`` when given.
    """
    assembler = assembler or Assembler(config)
    assembler.warm_up()  # no request waits for a dictionary or a table to load
    settings = assembler.config.service
    if allow_request_templates is None:
        allow_request_templates = bool(settings["allow_request_templates"])
    work = _Endpoints(assembler, allow_request_templates=allow_request_templates)
    metrics = _Metrics()
    app = FastAPI(
        title="ctxasm",
        summary="The context assembler for RAG: prompts that fit, with a full report.",
        version=_version(),
        docs_url=None,  # served by add_pages with local assets, not a CDN's
        redoc_url=None,
        # A path with a trailing slash gets the JSON 404 (which names the path without it), not
        # a bare 307 redirect with an empty body that most clients do not follow with a POST.
        redirect_slashes=False,
    )
    app.openapi = lambda: contract(app, secured=api_key is not None)  # type: ignore[method-assign]
    _add_error_handlers(app)
    _add_middleware(app, work, settings, api_key=api_key, observe=metrics.observe)
    _add_work_routes(app, work)
    _add_info_routes(app, assembler, metrics)
    add_pages(app, key_required=api_key is not None)
    app.state.service_settings = dict(settings)
    return app


class _Metrics:
    """The Prometheus counters of one app: requests by endpoint and status, and latency."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ctxasm_requests", "HTTP requests", ["endpoint", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "ctxasm_request_seconds", "Request latency", ["endpoint"], registry=self.registry
        )

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def text(self) -> str:
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode("utf-8")


def _add_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, _http_error)


def _add_middleware(
    app: FastAPI,
    work: _Endpoints,
    settings: Mapping[str, Any],
    *,
    api_key: str | None,
    observe: Callable[[str, int, float], None],
) -> None:
    """The guard in front of every route: API key, body size and pace, metrics."""
    guard = GuardSettings(
        api_key=api_key,
        max_body_bytes=work.limits["max_body_bytes"],
        body_timeout_s=float(settings["body_timeout_s"]),
    )
    app.add_middleware(ServiceGuard, settings=guard, routes=app.router.routes, observe=observe)


def _add_work_routes(app: FastAPI, work: _Endpoints) -> None:
    """``POST /v1/assemble`` and ``POST /v1/check-citations``, run in worker threads under the
    time limit, and stopped when the client hangs up (see :func:`_run_watched`)."""

    @app.post(
        "/v1/assemble",
        summary="Assemble one request",
        description="The request JSON in, the prompt and its report out: the same as "
        "`ctxasm assemble`.",
        response_model=schemas.AssembleResult,
        responses=errors_for(401, 408, 413, 422, 500, 503),
        openapi_extra=request_body("AssembleRequest", EXAMPLE_REQUEST),
    )
    async def assemble(request: Request) -> Response:
        body = await request.body()
        return await _run_watched(request, work.assemble, body, work.timeout_s)

    @app.post(
        "/v1/check-citations",
        summary="Check the citations of an answer",
        description="Which [Source N] markers of an answer name a source of the assembly.",
        response_model=schemas.CitationReport,
        responses=errors_for(401, 408, 413, 422, 500, 503),
        openapi_extra=request_body("CheckCitationsRequest", EXAMPLE_CITATIONS),
    )
    async def check(request: Request) -> Response:
        body = await request.body()
        return await _run_watched(request, work.check_citations, body, work.timeout_s)


async def _run_watched(
    request: Request, run: Callable[[bytes, str], Response], body: bytes, seconds: float
) -> Response:
    """``run(body, request id)`` in a worker thread under a deadline ``seconds`` from now (the
    body has arrived; time spent waiting for a thread counts), which its work checks at its
    checkpoints (past it, the answer is the 503 of :class:`~ctxasm.errors.DeadlineError`). A
    client that hangs up meanwhile cancels the deadline: the work stops at its next
    checkpoint, the thread is free again, and the request ends as a :class:`ClientDisconnect`
    (no answer; the metrics count it as 499). A thread cannot be stopped from outside, and
    without this the work of a client long gone held one for its whole length."""
    deadline = Deadline(seconds, setting=_TIMEOUT_SETTING)
    watcher = asyncio.create_task(_cancel_on_disconnect(request.receive, deadline))
    try:
        answer = await run_in_threadpool(_applying, deadline, run, body, request_id(request))
    finally:
        watcher.cancel()
    if deadline.cancelled:
        raise ClientDisconnect
    return answer


_TIMEOUT_SETTING = "[service] request_timeout_s"


async def _cancel_on_disconnect(receive: Receive, deadline: Deadline) -> None:
    """Cancel ``deadline`` once the client disconnects (the body has been read: what
    ``receive`` has left to say is that the client is gone)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    deadline.cancel()


def _applying(deadline: Deadline, run: Callable[[bytes, str], Response], *args: Any) -> Response:
    """``run(*args)`` with ``deadline`` applied to its checkpoints (in the worker thread)."""
    with deadline.applied():
        return run(*args)


def _add_info_routes(app: FastAPI, assembler: Assembler, metrics: _Metrics) -> None:
    """``GET /v1/models``, ``GET /healthz`` (``HEAD`` too) and ``GET /metrics``."""

    @app.get(
        "/v1/models",
        summary="The model registry",
        response_model=list[schemas.ModelInfo],
        responses=errors_for(401, 500, 503),
    )
    async def models() -> Response:
        return JSONResponse([spec.to_dict() for spec in assembler.config.models])

    @app.get(
        "/healthz",
        summary="Liveness",
        response_model=schemas.Health,
        responses=errors_for(500, 503),
    )
    async def health() -> Response:
        return JSONResponse({"status": "ok"})

    # Load balancers often check with HEAD: the same answer, without its body.
    @app.head("/healthz", include_in_schema=False)
    async def health_head() -> Response:
        return JSONResponse({"status": "ok"})

    @app.get(
        "/metrics",
        summary="Prometheus metrics",
        response_class=PlainTextResponse,
        responses=errors_for(500, 503),
    )
    async def prometheus() -> Response:
        return PlainTextResponse(metrics.text())


def _version() -> str:
    from ctxasm import __version__

    return __version__


def create_app_from_env() -> FastAPI:
    """The app ``ctxasm serve`` runs: config from ``CTXASM_CONFIG``, key from
    ``CTXASM_API_KEY``, ``CTXASM_ALLOW_REQUEST_TEMPLATES=1`` to accept request templates
    (uvicorn workers each build their own)."""
    allow = os.environ.get(ALLOW_TEMPLATES_ENV) == "1" or None
    return create_app(
        os.environ.get("CTXASM_CONFIG") or None,
        api_key=os.environ.get("CTXASM_API_KEY") or None,
        allow_request_templates=allow,
    )
