"""POST a JSON body to a provider's HTTP endpoint and read its JSON answer, within limits.

ctxasm calls two endpoints: a model's chat completions (``ctxasm ask``) and Anthropic's token
counter (``[providers.anthropic]``). Both carry an API key in a header, so the call is made
with ``http.client`` directly, not ``urllib``'s opener:

- only ``http`` and ``https`` URLs, without a user name or password in them, are called;
- a redirect is refused, never followed (``urllib`` sent the key on to the host it named);
- a header value with a control character is refused before anything is sent, without
  showing it (a key read with its line end would have been printed in the error);
- the whole call, from connecting to the last byte, has one deadline (the socket's timeout
  bounds each read only: an endpoint sending a byte a second never timed out);
- the answer is read up to ``max_bytes`` and parsed as requests are (:mod:`ctxasm.jsonio`:
  a repeated key, ``NaN`` or deep nesting is refused);
- the environment's proxies are used as ``urllib`` used them (see :func:`_connection`).

Every failure is an :class:`EndpointError` whose message says what went wrong and never holds
a header value.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

from ctxasm.errors import CtxasmError
from ctxasm.jsonio import decode_json

__all__ = ["EndpointError", "endpoint_url", "post_json"]


class EndpointError(Exception):
    """A call to an endpoint that failed, with a message safe to print."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def endpoint_url(base: str, path: str, *, name: str) -> str:
    """``path`` appended to the path of ``base`` (the query kept after it, a fragment dropped),
    or an :class:`EndpointError` naming ``name`` (where the base URL came from) when ``base`` is
    no http or https URL or holds credentials. The URL itself is not shown: it may hold them."""
    base = base.strip()
    try:
        parts = urlsplit(base)
        port = parts.port  # a port that is no number raises here
    except ValueError:
        raise EndpointError(f"{name} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(
            f"{name} must be an http:// or https:// URL with a host (such as "
            "https://api.example.com/v1)"
        )
    if parts.username is not None or parts.password is not None:
        raise EndpointError(
            f"{name} must not hold a user name or password; give the API key in its variable"
        )
    del port
    return urlunsplit(
        (parts.scheme, parts.netloc, f"{parts.path.rstrip('/')}/{path}", parts.query, "")
    )


def post_json(
    url: str,
    body: object,
    headers: Mapping[str, str],
    *,
    timeout: float,
    max_bytes: int,
) -> Any:
    """The JSON value an endpoint answers to ``body`` (an :class:`EndpointError` for anything
    else: see the module). ``url`` comes from :func:`endpoint_url`."""
    for name, value in headers.items():
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise EndpointError(
                f"the {name} header (the API key) contains a control character, such as a "
                "line end left from the file it was read from; remove it"
            )
    parts = urlsplit(url)
    connection, target, extra = _connection(parts, timeout)
    headers = {**headers, **extra}
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    deadline = time.monotonic() + timeout
    # At the deadline the socket is shut: a read then ends, whatever the endpoint trickles.
    # (It is held here: the connection lets go of it once the response has it.)
    held: list[socket.socket] = []
    watchdog = threading.Timer(timeout, _shut, (connection, held))
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.connect()
        if connection.sock is not None:
            held.append(connection.sock)
        if time.monotonic() >= deadline:  # the watchdog fired while connecting: nothing to shut
            raise EndpointError(f"no whole answer within {timeout:g} s")
        connection.request(
            "POST", target, body=payload, headers={**headers, "content-type": "application/json"}
        )
        response = connection.getresponse()
        if 300 <= response.status < 400:
            raise EndpointError(
                f"the endpoint answered HTTP {response.status}, a redirect; redirects are not "
                "followed (the API key would go where it points): give the URL it names"
            )
        if response.status >= 400:
            raise EndpointError(f"the endpoint answered HTTP {response.status} {_reason(response)}")
        data = response.read(max_bytes + 1)
        if time.monotonic() >= deadline:  # shut by the watchdog while it was read
            raise EndpointError(f"no whole answer within {timeout:g} s")
        if response.length and len(data) <= max_bytes:  # fewer bytes than it said it sends
            raise EndpointError("the answer ended before the length it announced")
    except EndpointError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if time.monotonic() >= deadline:
            raise EndpointError(f"no whole answer within {timeout:g} s") from None
        raise EndpointError(_described(exc, headers)) from None
    finally:
        watchdog.cancel()
        connection.close()
    if len(data) > max_bytes:
        raise EndpointError(f"the answer is larger than {max_bytes:,} bytes")
    try:
        return decode_json(data, what="answer")
    except CtxasmError as error:
        raise EndpointError(error.message) from None


def _connection(
    parts: SplitResult, timeout: float
) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """The connection for a URL, the request target and the headers to add: straight to the
    host, or through the proxy the environment names for its scheme (``HTTPS_PROXY``,
    ``HTTP_PROXY``; not for a host ``NO_PROXY`` names), as ``urllib`` went: a tunnel for
    https, the whole URL as the target for http, and ``Proxy-Authorization`` from the proxy
    URL's user and password."""
    import urllib.request

    # The port given, never left to http.client: it reads an IPv6 host's last group as one.
    https = parts.scheme == "https"
    host, port = parts.hostname or "", parts.port or (443 if https else 80)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    proxy = (
        None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(parts.scheme)
    )
    if not proxy:
        kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
        return kind(host, port, timeout=timeout), path, {}
    try:
        via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        via_port = via.port or 80
    except ValueError:
        raise EndpointError(f"the {parts.scheme} proxy of the environment is not a URL") from None
    # An https:// proxy is spoken to as urllib spoke to it: in plain text.
    if via.scheme not in ("http", "https") or not via.hostname:
        raise EndpointError(
            f"the {parts.scheme} proxy of the environment must be an http:// URL with a host"
        )
    auth: dict[str, str] = {}
    if via.username is not None:
        import base64
        from urllib.parse import unquote

        pair = f"{unquote(via.username)}:{unquote(via.password or '')}".encode()
        auth["Proxy-Authorization"] = f"Basic {base64.b64encode(pair).decode('ascii')}"
    if https:  # a tunnel to the host, and TLS with the host inside it
        tunnel = http.client.HTTPSConnection(via.hostname, via_port, timeout=timeout)
        tunnel.set_tunnel(host, port, headers=auth)
        return tunnel, path, {}
    return (
        http.client.HTTPConnection(via.hostname, via_port, timeout=timeout),
        urlunsplit(parts),
        auth,
    )


def _shut(connection: http.client.HTTPConnection, held: list[socket.socket]) -> None:
    for sock in (*held, connection.sock):
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _reason(response: http.client.HTTPResponse) -> str:
    """The status line's reason phrase, printable and short."""
    reason = "".join(c for c in str(response.reason) if c.isprintable())
    return reason[:80]


def _described(error: BaseException, headers: Mapping[str, str]) -> str:
    """What failed, in one printable line without a header value."""
    text = " ".join(str(error).split()) or type(error).__name__
    for value in headers.values():
        if len(value) >= 8:
            text = text.replace(value, "***")
    return f"{type(error).__name__}: {text[:200]}"
