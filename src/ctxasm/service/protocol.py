"""uvicorn's h11 protocol with a deadline on request headers.

uvicorn times out idle keep-alive connections but not a client that sends its request headers
slowly (or never finishes them): each such connection would stay open for ever. This protocol
closes a connection whose request line and headers are not complete within
``CTXASM_HEADER_TIMEOUT_S`` seconds (default 10; ``ctxasm serve`` sets it from
``[service] header_timeout_s``), counted from the connection or, on a kept-alive connection,
from the first byte of the next request. Body reads are bounded by the ASGI middleware, and a
body that comes in more than ``MAX_BODY_PIECES`` pieces averaging under ``MIN_PIECE_BYTES``
bytes (one-byte chunks, or a few bytes per read) closes the connection: each piece costs the
server about 15 microseconds, so a megabyte in one-byte chunks held a core for 15 seconds.

A client that stops reading its response (a full socket buffer, pipelined requests it never
reads) would hold its connection, and a place under ``max_connections``, for ever: uvicorn waits
for the buffer to drain with no deadline. A response that makes no progress for
``CTXASM_SEND_TIMEOUT_S`` seconds (default 30; ``ctxasm serve`` sets it from ``[service]
body_timeout_s``) aborts the connection.

Beyond ``limit_concurrency`` uvicorn answers 503 itself, before the app (and its middleware)
sees the request, with a plain-text body. Importing this module replaces that answer with the
service's JSON error, so that a 503 has the documented shape and a request id too.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import h11
from uvicorn.protocols.http import h11_impl
from uvicorn.protocols.http.h11_impl import H11Protocol

from ctxasm.service.middleware import error_body

__all__ = [
    "HEADER_TIMEOUT_ENV",
    "MAX_BODY_PIECES",
    "MIN_PIECE_BYTES",
    "SEND_TIMEOUT_ENV",
    "HeaderTimeoutProtocol",
]

HEADER_TIMEOUT_ENV = "CTXASM_HEADER_TIMEOUT_S"
SEND_TIMEOUT_ENV = "CTXASM_SEND_TIMEOUT_S"
_DEFAULT_TIMEOUT_S = 10.0
_DEFAULT_SEND_TIMEOUT_S = 30.0


def _timeout(variable: str, default: float) -> float:
    try:
        value = float(os.environ.get(variable, default))
    except ValueError:
        return default
    return value if value > 0 else default


# A body read in more than MAX_BODY_PIECES pieces (h11 events: chunks of a chunked body, or
# reads of a body sent a few bytes at a time) that average under MIN_PIECE_BYTES closes the
# connection: each piece costs the server about 15 us, so a megabyte in one-byte chunks held a
# core for 15 s. Up to the bound that is at most about 60 ms.
MAX_BODY_PIECES = 4096
MIN_PIECE_BYTES = 256


class HeaderTimeoutProtocol(H11Protocol):
    """H11Protocol that closes connections whose request headers arrive too slowly, whose
    body comes in too many small pieces, or whose response the client stops reading."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_timeout = _timeout(HEADER_TIMEOUT_ENV, _DEFAULT_TIMEOUT_S)
        self._send_timer: asyncio.TimerHandle | None = None
        self._send_timeout = _timeout(SEND_TIMEOUT_ENV, _DEFAULT_SEND_TIMEOUT_S)
        self._pieces = 0
        self._piece_bytes = 0
        next_event = self.conn.next_event

        def counted() -> Any:  # uvicorn reads every event through this one method
            event = next_event()
            if type(event) is h11.Data:
                self._count_piece(len(event.data))
            elif type(event) is h11.Request:
                self._pieces = self._piece_bytes = 0
            return event

        self.conn.next_event = counted  # type: ignore[method-assign]

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse (a malformed request line, header or Content-Length), as
        the service's JSON error rather than uvicorn's plain text; the connection closes."""
        message = (
            "the HTTP request could not be read (its request line, a header or Content-Length "
            "is malformed); send valid HTTP/1.1"
        )
        headers, body = _closing_error("invalid_request", message)
        try:
            response = h11.Response(status_code=400, headers=headers, reason=b"Bad Request")
            for event in (response, h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
        except h11.LocalProtocolError:  # h11 can no longer answer on this connection
            pass
        self.transport.close()

    def _count_piece(self, size: int) -> None:
        self._pieces += 1
        self._piece_bytes += size
        if (
            self._pieces > MAX_BODY_PIECES
            and self._piece_bytes < self._pieces * MIN_PIECE_BYTES
            and not self.transport.is_closing()
        ):
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        self._stop_send_timer()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client reads slower than the response is written: from now on it has the send
        timeout to read some of it."""
        super().pause_writing()
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(self._send_timeout, self._send_late)

    def resume_writing(self) -> None:
        self._stop_send_timer()
        super().resume_writing()

    def _stop_send_timer(self) -> None:
        _cancel(self._send_timer)
        self._send_timer = None

    def _send_late(self) -> None:
        # abort, not close: close waits for the buffer to drain, which is what never happens
        self._send_timer = None
        self.transport.abort()

    def _waiting_for_headers(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _watch_headers(self) -> None:
        if not self._waiting_for_headers():
            self._stop_header_timer()
        elif self._header_timer is None and not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self._header_timeout, self._headers_late)

    def _stop_header_timer(self) -> None:
        _cancel(self._header_timer)
        self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._waiting_for_headers() and not self.transport.is_closing():
            self.transport.close()


def _cancel(timer: asyncio.TimerHandle | None) -> None:
    if timer is not None:
        timer.cancel()


def _closing_error(code: str, message: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and body of a JSON error answered before the app, with a new request id;
    the connection closes after it."""
    request_id = uuid.uuid4().hex
    body = error_body(code, message, None, request_id)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        (b"connection", b"close"),
        (b"x-request-id", request_id.encode("ascii")),
    ]
    return headers, body


async def _service_unavailable(scope: Any, receive: Any, send: Any) -> None:
    """uvicorn's answer beyond ``limit_concurrency``, as the service's JSON error."""
    message = "the service is at its limit of connections and requests; try again shortly"
    headers, body = _closing_error("unavailable", message)
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


# h11_impl looks the function up by this module-level name for every request over the limit.
h11_impl.service_unavailable = _service_unavailable  # type: ignore[attr-defined]
