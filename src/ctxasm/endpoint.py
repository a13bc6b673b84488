"""POST a JSON body to a provider's HTTP endpoint and read its JSON answer, within limits.

ctxasm calls two endpoints: a model's chat completions (``ctxasm ask``) and Anthropic's token
counter (``[providers.anthropic]``). Both carry an API key in a header, so the call is made
with ``http.client`` directly, not ``urllib``'s opener:

- only ``http`` and ``https`` URLs, without a user name or password in them, are called;
- a redirect is refused, never followed (``urllib`` sent the key on to the host it named);
- a header value with a control character is refused before anything is sent, without
  showing it (a key read with its line end would have been printed in the error);
- the whole call, from looking the host up to the last byte, has one deadline (the socket's
  timeout bounds each read only: an endpoint sending a byte a second never timed out), kept by
  :class:`_Deadline` however many addresses the host has and whatever a proxy or a TLS
  handshake trickles;
- the answer is read up to ``max_bytes`` and parsed as requests are (:mod:`ctxasm.jsonio`:
  a repeated key, ``NaN`` or deep nesting is refused);
- an error status (4xx, 5xx) is reported with the endpoint's own message, the ``message`` of
  the JSON body's ``error`` (OpenAI, Anthropic, vLLM, Ollama), read up to
  ``ERROR_BODY_BYTES``, shown on one line of at most ``ERROR_MESSAGE_CHARS`` characters with
  control characters replaced, and with anything like an API key masked (see
  :func:`_endpoint_message`);
- the environment's proxies are used as ``urllib`` used them (see :func:`_connection`).

Every failure is an :class:`EndpointError` whose message says what went wrong and never holds
a header value.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

from ctxasm.errors import CtxasmError
from ctxasm.jsonio import decode_json

__all__ = ["ERROR_BODY_BYTES", "ERROR_MESSAGE_CHARS", "EndpointError", "endpoint_url", "post_json"]

# The most of an error answer's body read for its message, and the most of the message shown.
ERROR_BODY_BYTES = 64 * 1024
ERROR_MESSAGE_CHARS = 300


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
    deadline = _Deadline(timeout)
    # http.client's own hook for opening its socket (its tests use it; the type stubs leave it
    # out): every socket of the call, to the host or to a proxy, is then opened by the deadline.
    connection._create_connection = deadline.connect  # type: ignore[attr-defined]
    # The message, not an error made beforehand: raised from here, one exception object would
    # hold this frame, and so the response and its socket, until the garbage collector ran.
    late = f"no whole answer within {timeout:g} s"
    try:
        connection.connect()
        if deadline.passed():  # connected as time ran out: the socket is shut already
            raise EndpointError(late)
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
            reason = _masked(_reason(response), headers)  # a reason phrase may echo the key
            status = f"the endpoint answered HTTP {response.status} {reason}"
            said = _endpoint_message(_error_body(response, deadline, max_bytes), headers)
            raise EndpointError(status if said is None else f"{status}; its message: {said}")
        data = response.read(max_bytes + 1)
        if deadline.passed():  # shut while it was read
            raise EndpointError(late)
        if response.length and len(data) <= max_bytes:  # fewer bytes than it said it sends
            raise EndpointError("the answer ended before the length it announced")
    except EndpointError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if deadline.passed():
            raise EndpointError(late) from None
        raise EndpointError(_described(exc, headers)) from None
    finally:
        deadline.close()
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


# Name lookups running at once, each on a thread that may outlive its call (see
# _Deadline._lookup).
MAX_LOOKUPS = 16
_LOOKUPS = threading.BoundedSemaphore(MAX_LOOKUPS)

# What getaddrinfo answers for a stream socket: family, type, protocol, name, address.
_Found = tuple[socket.AddressFamily, socket.SocketKind, int, str, Any]


class _Deadline:
    """The one deadline of a call, and the sockets it cuts off when it passes.

    The call's sockets are opened here (:meth:`connect`), each address the host resolves to
    tried with only the time left, never the whole timeout again (``socket.create_connection``
    gave every address all of it: four black-holed addresses took four times the deadline).
    Each socket is watched from before it connects: when the deadline passes, a timer shuts
    every socket watched, and one watched later is shut at once, so whatever http.client is
    blocked in (a connect, a proxy's CONNECT answer, whose header lines it reads without a
    count limit, a TLS handshake, the answer) ends then.

    A socket is watched through a duplicate of it: shutting the duplicate shuts the connection
    both share, and still reaches it once ``ssl`` has wrapped the socket (wrapping detaches the
    socket object http.client made: shutting that one did nothing during a handshake).
    """

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        """Seconds until the deadline (zero or less once it has passed)."""
        return self._end - time.monotonic()

    def passed(self) -> bool:
        """Whether the deadline has passed."""
        return self.left() <= 0

    def connect(self, address: tuple[str, int], *_: object) -> socket.socket:
        """A socket connected to ``address`` (host, port), as ``socket.create_connection``
        connects one but within the deadline; a TimeoutError when the time runs out first. The
        timeout and source address http.client passes are not used: the deadline replaces the
        one, and the other is never set here."""
        host, port = address
        errors: list[OSError] = []
        for family, kind, protocol, _name, where in self._lookup(host, port):
            left = self.left()
            if left <= 0:
                break
            try:
                return self._connected(socket.socket(family, kind, protocol), where, left)
            except OSError as error:
                errors.append(error)
        if errors and not self.passed():  # every address failed: the first error, as
            raise errors[0]  # socket.create_connection raises it
        raise TimeoutError(f"no connection to {host} port {port} before the deadline")

    def _connected(self, sock: socket.socket, where: Any, seconds: float) -> socket.socket:
        """``sock``, watched, connected to ``where`` within ``seconds``; closed (and no longer
        watched) when it fails to connect."""
        watched = self._watch(sock)
        try:
            sock.settimeout(seconds)
            sock.connect(where)
        except BaseException:
            sock.close()
            self._forget(watched)
            raise
        return sock

    def _lookup(self, host: str, port: int) -> Sequence[_Found]:
        """The addresses of ``host``, looked up on a thread of its own: getaddrinfo cannot be
        interrupted, so a resolver that has not answered when the deadline passes is left to
        finish alone (the thread is a daemon) while the call fails with a TimeoutError. At most
        ``MAX_LOOKUPS`` such threads run at once: while a resolver hangs, a service making a
        call per request would otherwise gain a thread per request; past that, a call fails at
        once."""
        answer: list[Sequence[_Found] | Exception] = []
        slots = _LOOKUPS  # the semaphore acquired is the one released
        if not slots.acquire(blocking=False):
            raise TimeoutError(f"{MAX_LOOKUPS} name lookups are still waiting for an answer")

        def lookup() -> None:
            try:
                answer.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
            except Exception as error:  # raised again on the caller's thread
                answer.append(error)
            finally:
                slots.release()

        thread = threading.Thread(target=lookup, name="ctxasm-endpoint-lookup", daemon=True)
        try:
            thread.start()
        except BaseException:  # no thread (RuntimeError): the slot is not held
            slots.release()
            raise
        thread.join(max(self.left(), 0.0))
        if not answer:
            raise TimeoutError(f"the address of {host} was not found before the deadline")
        if isinstance(answer[0], Exception):
            raise answer[0]
        if not answer[0]:
            raise OSError(f"no address was found for {host}")
        return answer[0]

    def _watch(self, sock: socket.socket) -> socket.socket:
        """Watch ``sock`` (shut at once if the deadline has passed); the duplicate watched."""
        duplicate = sock.dup()
        with self._lock:
            self._watched.append(duplicate)
            if self._expired:
                _shut(duplicate)
        return duplicate

    def _forget(self, duplicate: socket.socket) -> None:
        """Stop watching a socket whose connect failed, and close its duplicate."""
        with self._lock:
            self._watched.remove(duplicate)
        duplicate.close()

    def _expire(self) -> None:
        """The timer's work at the deadline: shut every socket watched, and any watched later."""
        with self._lock:
            self._expired = True
            for sock in self._watched:
                _shut(sock)

    def close(self) -> None:
        """Stop the timer and close the duplicates (the sockets are the connection's to close)."""
        self._timer.cancel()
        with self._lock:
            for sock in self._watched:
                sock.close()
            self._watched.clear()


def _shut(sock: socket.socket) -> None:
    """Shut both ways of ``sock``: a read blocked on it, on any thread, returns at once."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _reason(response: http.client.HTTPResponse) -> str:
    """The status line's reason phrase, printable and short."""
    reason = "".join(c for c in str(response.reason) if c.isprintable())
    return reason[:80]


def _error_body(response: http.client.HTTPResponse, deadline: _Deadline, max_bytes: int) -> bytes:
    """At most ``ERROR_BODY_BYTES`` (and ``max_bytes``) of an error answer's body; nothing when
    it cannot be read whole in time (the status alone is then reported)."""
    limit = min(ERROR_BODY_BYTES, max_bytes)
    try:
        data = response.read(limit + 1)
    except (OSError, http.client.HTTPException, ValueError):
        return b""
    if deadline.passed() or len(data) > limit:
        return b""  # a message cut off is no JSON: nothing is made of it
    return data


# What an API key looks like in a message: OpenAI's and Anthropic's start with "sk-", whole or
# as an endpoint masks it itself ("sk-proj-****abcd").
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_*.\-]{5,}[A-Za-z0-9_*]")
_SPACES = re.compile(r"\s+")
# Headers whose values are no secret, and may well be named in a message ("anthropic-version:
# 2023-06-01 is not supported"); every other header's value is masked.
_NO_SECRET = frozenset({"anthropic-version", "anthropic-beta", "content-type", "accept"})


def _endpoint_message(body: bytes, headers: Mapping[str, str]) -> str | None:
    """The message an error answer's JSON body gives (``error.message``, as OpenAI and
    Anthropic send it; ``error`` or ``message`` or ``detail`` as a string, as other servers
    do), on one printable line of at most ``ERROR_MESSAGE_CHARS`` characters, with every
    header value that may be secret (the API key), each word of one (the key after
    ``Bearer``) and anything like a key (``sk-...``) masked as ``***``; ``None`` when the
    body holds no such message."""
    if not body:
        return None
    try:
        value = decode_json(body, what="answer")
    except CtxasmError:
        return None
    if not isinstance(value, dict):
        return None
    error = value.get("error")
    candidates = (
        error.get("message") if isinstance(error, dict) else None,
        error,
        value.get("message"),
        value.get("detail"),
    )
    text = next((c for c in candidates if isinstance(c, str) and c.strip()), None)
    if text is None:
        return None
    # Control and other unprintable characters (line ends, escapes, bidirectional controls)
    # become spaces, runs of white space one space: one line that shows what it holds.
    text = _SPACES.sub(" ", "".join(c if c.isprintable() else " " for c in text)).strip()
    text = _masked(text, headers)
    if len(text) > ERROR_MESSAGE_CHARS:
        text = text[: ERROR_MESSAGE_CHARS - 3].rstrip() + "..."
    return text


def _masked(text: str, headers: Mapping[str, str]) -> str:
    """``text`` with every header value that may be secret (the API key), each word of one
    (the key after ``Bearer``) and anything like a key (``sk-...``) written ``***``."""
    secrets = {
        word
        for name, value in headers.items()
        if name.lower() not in _NO_SECRET
        for word in (value, *value.split())
        if len(word) >= _SHORTEST_SECRET and word.lower() not in _SCHEMES
    }
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _KEY_LIKE.sub("***", text)


# A header's word this long or longer is masked (shorter ones would mask common words);
# the authorization schemes before a key are no secret.
_SHORTEST_SECRET = 6
_SCHEMES = frozenset({"bearer", "basic", "token", "apikey"})


def _described(error: BaseException, headers: Mapping[str, str]) -> str:
    """What failed, in one printable line without a header value."""
    text = _masked(" ".join(str(error).split()) or type(error).__name__, headers)
    return f"{type(error).__name__}: {text[:200]}"
