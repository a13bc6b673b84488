"""The service's one ASGI middleware: request ids, API key, body limits while reading,
metrics, errors.

Every request gets an id: the client's ``x-request-id`` when it is a short token (letters,
digits, ``._:-``, at most 64), else a new one. Every response carries it in ``x-request-id``,
and every error body in ``error.request_id``; the log names it for a 500.

It wraps ``receive`` so that a body is never held beyond the limit: a ``Content-Length`` over
the limit is answered 413 before anything is read, and a body sent in chunks is counted as it
arrives and answered 413 as soon as it passes the limit (both close the connection). A body
that is not complete within ``body_timeout_s`` of the first read is answered 408. Metrics are
labelled by route template (``/v1/assemble``), with one label, ``unmatched``, for every path
no route serves, so that requests for random paths cannot grow them. An unexpected exception
is logged with its traceback and answered 500 with a request id, never with the traceback.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.routing import BaseRoute, Match

from ctxasm.jsonio import too_large

__all__ = ["GuardSettings", "ServiceGuard", "error_body", "request_id"]

log = logging.getLogger("ctxasm.service")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNMATCHED = "unmatched"
_REQUEST_ID_KEY = "ctxasm.request_id"
_CLIENT_ID = re.compile(rb"[A-Za-z0-9._:-]{1,64}")


class _BodyRefusedError(Exception):
    """Raised from ``receive`` to abandon a body; carries the answer to send."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class _BodyMeter:
    """How much of one body has been read, and by when the rest must arrive (mutable)."""

    read: int = 0
    deadline: float | None = None
    done: bool = False


@dataclass(frozen=True)
class GuardSettings:
    """What :class:`ServiceGuard` enforces."""

    api_key: str | None
    max_body_bytes: int
    body_timeout_s: float


def error_body(code: str, message: str, field: str | None, request_id: str) -> bytes:
    """The JSON error every answer that is not a result uses."""
    error = {"code": code, "message": message, "field": field, "request_id": request_id}
    return json.dumps({"error": error}, ensure_ascii=False).encode("utf-8")


def request_id(request: Request) -> str:
    """The id :class:`ServiceGuard` gave ``request`` (a new one outside the guard)."""
    found = request.scope.get(_REQUEST_ID_KEY)
    return found if isinstance(found, str) else uuid.uuid4().hex


def _assign_request_id(scope: Scope) -> str:
    given = next((value for key, value in scope.get("headers", ()) if key == b"x-request-id"), b"")
    chosen = given.decode("ascii") if _CLIENT_ID.fullmatch(given) else uuid.uuid4().hex
    scope[_REQUEST_ID_KEY] = chosen
    return chosen


class ServiceGuard:
    """Pure ASGI middleware; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: GuardSettings,
        routes: Sequence[BaseRoute],
        observe: Callable[[str, int, float], None],
    ) -> None:
        self.app = app
        self.settings = settings
        self.routes = routes
        self.observe = observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await _refuse_websocket(scope, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        endpoint = self._route(scope)
        status = [500]
        header = (b"x-request-id", _assign_request_id(scope).encode("ascii"))

        async def tracked_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        await self._handle(scope, receive, tracked_send, status)
        self.observe(endpoint, status[0], time.perf_counter() - started)

    async def _handle(self, scope: Scope, receive: Receive, send: Send, status: list[int]) -> None:
        refusal = self._refuse_early(scope)
        if refusal is not None:
            await _answer(send, scope, *refusal)
            return
        started_response = [False]

        async def marking_send(message: Message) -> None:
            started_response[0] = True
            await send(message)

        try:
            await self.app(scope, self._bounded_receive(receive), marking_send)
        except _BodyRefusedError as refused:
            if not started_response[0]:
                refusal = (refused.status, refused.code, refused.message, "request")
                await _answer(send, scope, *refusal)
        except ClientDisconnect:
            # The client hung up before its body arrived, or while its work ran (which then
            # stopped): nothing to answer and no bug, so no traceback (any client could flood
            # the error log and the 5xx rate with them). Counted as 499, the status proxies
            # log for a request the client closed.
            status[0] = 499
            log.info(
                "request %s to %s: the client disconnected",
                scope[_REQUEST_ID_KEY],
                scope.get("path"),
            )
        except Exception:  # a bug: logged with the traceback, never shown to the client
            log.exception("request %s to %s failed", scope[_REQUEST_ID_KEY], scope.get("path"))
            if not started_response[0]:
                message = f"unexpected error; request id {scope[_REQUEST_ID_KEY]}"
                await _answer(send, scope, 500, "internal_error", message, None)

    def _refuse_early(self, scope: Scope) -> tuple[int, str, str, str | None] | None:
        headers = {key.lower(): value for key, value in scope.get("headers", ())}
        key = self.settings.api_key
        if key and str(scope.get("path", "")).startswith("/v1/"):
            given = headers.get(b"x-api-key", b"")
            bearer = headers.get(b"authorization", b"")
            if not given and bearer.lower().startswith(b"bearer "):
                given = bearer[7:]
            if not hmac.compare_digest(given, key.encode()):
                return 401, "unauthorized", "missing or wrong API key", None
        length = headers.get(b"content-length", b"")
        limit = self.settings.max_body_bytes
        if length.isdigit() and int(length) > limit:
            return 413, "too_large", too_large(limit, size=int(length)).message, "request"
        return None

    def _bounded_receive(self, receive: Receive) -> Receive:
        limit = self.settings.max_body_bytes
        timeout = self.settings.body_timeout_s
        meter = _BodyMeter()

        async def bounded() -> Message:
            if meter.done:  # after the body, receive waits for a disconnect: not bounded
                return await receive()
            loop = asyncio.get_running_loop()
            if meter.deadline is None:
                meter.deadline = loop.time() + timeout
            try:
                message = await asyncio.wait_for(receive(), meter.deadline - loop.time())
            except TimeoutError:
                raise _BodyRefusedError(
                    408, "timeout", f"the request body did not arrive within {timeout:g} s"
                ) from None
            if message["type"] == "http.request":
                meter.read += len(message.get("body", b""))
                if meter.read > limit:
                    raise _BodyRefusedError(413, "too_large", too_large(limit).message)
                meter.done = not message.get("more_body", False)
            return message

        return bounded

    def _route(self, scope: Scope) -> str:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is not Match.NONE:
                return str(getattr(route, "path", UNMATCHED))
        return UNMATCHED


async def _refuse_websocket(scope: Scope, send: Send) -> None:
    """The service has no WebSocket endpoint: an upgrade gets the JSON 404 of any unknown
    path, with a request id, where the server lets an app answer it in HTTP (else a close,
    which the server answers 403)."""
    request_id = _assign_request_id(scope)
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    path = scope.get("path", "")
    message = f"no WebSocket endpoint at {path}; the service speaks HTTP (see /docs)"
    body = error_body("not_found", message, None, request_id)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        (b"x-request-id", request_id.encode("ascii")),
    ]
    await send({"type": "websocket.http.response.start", "status": 404, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


async def _answer(
    send: Send, scope: Scope, status: int, code: str, message: str, field: str | None
) -> None:
    body = error_body(code, message, field, scope[_REQUEST_ID_KEY])
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status in (408, 413):  # the rest of the body is not read: the connection cannot be reused
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
