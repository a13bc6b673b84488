"""Calls to a provider's endpoint (:mod:`ctxasm.endpoint`) against a real local HTTP server
that misbehaves: redirects are refused and never followed, the whole call has one deadline,
the answer is bounded and read strictly, and no message shows the API key."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from ctxasm.endpoint import (
    ERROR_BODY_BYTES,
    ERROR_MESSAGE_CHARS,
    EndpointError,
    endpoint_url,
    post_json,
)
from ctxasm.errors import TokenizerError
from ctxasm.formatting.base import Rendered
from ctxasm.providers import AnthropicCounter

KEY = "sk-secret-key-12345"


class _Misbehaving(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str | None]]] = []
    count: ClassVar[Any] = 7
    refusal: ClassVar[tuple[int, bytes]] = (400, b"")
    reason: ClassVar[str | None] = None  # the refusal's reason phrase, where not the usual

    def _answer(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status, _Misbehaving.reason if status >= 400 else None)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_CONNECT(self) -> None:  # as a proxy asked for a tunnel: refuses it
        _Misbehaving.seen.append(("CONNECT", self.path, self.headers.get("proxy-authorization")))
        self._answer(407, b"", content_length="0")

    def do_GET(self) -> None:
        _Misbehaving.seen.append(("GET", self.path, self.headers.get("authorization")))
        self._answer(200, b'{"choices": []}', content_length="15")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        _Misbehaving.seen.append(("POST", self.path, self.headers.get("authorization")))
        if self.headers.get("proxy-authorization"):
            _Misbehaving.seen.append(("PROXY", "", self.headers["proxy-authorization"]))
        path = self.path.split("?")[0]
        if path.endswith("/redirect/x"):
            self._answer(302, b"", location=f"http://localhost:{self.server.server_address[1]}/x")
        elif path.endswith("/trickle/x"):
            self.send_response(200)
            self.send_header("content-length", "1000")
            self.end_headers()
            for _ in range(100):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
        elif path.endswith("/huge/x"):
            body = b'{"a": "' + b"x" * 5000 + b'"}'
            self._answer(200, body, content_length=str(len(body)))
        elif path.endswith("/short/x"):
            self._answer(200, b'{"a": ', content_length="100")
        elif path.endswith("/repeated/x"):
            body = b'{"a": 1, "a": 2}'
            self._answer(200, body, content_length=str(len(body)))
        elif path.endswith("/status/x"):
            self._answer(503, b"down", content_length="4")
        elif path.endswith("/refused/x"):
            status, body = _Misbehaving.refusal
            self._answer(
                status, body, content_type="application/json", content_length=str(len(body))
            )
        elif path.endswith("/count/v1/messages/count_tokens"):
            body = json.dumps({"input_tokens": _Misbehaving.count}).encode()
            self._answer(200, body, content_length=str(len(body)))
        else:
            body = json.dumps({"ok": True, "path": self.path}).encode()
            self._answer(200, body, content_length=str(len(body)))

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Misbehaving)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Misbehaving.seen.clear()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _post(url: str, *, timeout: float = 10.0, max_bytes: int = 1000, key: str = KEY) -> Any:
    return post_json(
        url, {"q": 1}, {"authorization": f"Bearer {key}"}, timeout=timeout, max_bytes=max_bytes
    )


def test_a_plain_answer_is_read_and_the_query_stays_after_the_path(server: str) -> None:
    url = endpoint_url(f"{server}/v1/?api-version=2024", "chat/completions", name="BASE")
    assert _post(url) == {"ok": True, "path": "/v1/chat/completions?api-version=2024"}
    assert _Misbehaving.seen == [("POST", "/v1/chat/completions?api-version=2024", f"Bearer {KEY}")]


def test_a_redirect_is_refused_and_the_key_goes_nowhere_else(server: str) -> None:
    with pytest.raises(EndpointError, match="HTTP 302, a redirect; redirects are not followed"):
        _post(f"{server}/redirect/x")
    assert [method for method, _, _ in _Misbehaving.seen] == ["POST"]


def test_the_whole_call_has_one_deadline(server: str) -> None:
    # A byte every 0.1 s: each read is quick, the whole answer would take 10 s.
    started = time.monotonic()
    with pytest.raises(EndpointError, match="no whole answer within 1 s"):
        _post(f"{server}/trickle/x", timeout=1.0)
    assert time.monotonic() - started < 5


def test_a_call_that_runs_out_of_time_leaves_no_socket_open(server: str) -> None:
    # One error made before the call and raised from it held the call's frame, and so its
    # socket, until the garbage collector ran: 30 late calls left 30 descriptors open.
    import gc
    import os

    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(5):
            with pytest.raises(EndpointError, match="no whole answer"):
                _post(f"{server}/trickle/x", timeout=0.2)
        time.sleep(0.5)  # the test server's own side of each connection closes meanwhile
        assert len(os.listdir("/proc/self/fd")) <= before + 1  # (the last error is still held)
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/huge/x", "larger than 1,000 bytes"),
        ("/short/x", "ended before the length it announced"),
        ("/repeated/x", "repeats the key 'a'"),
        ("/status/x", "HTTP 503"),
    ],
)
def test_bad_answers_are_one_line_errors(server: str, path: str, message: str) -> None:
    with pytest.raises(EndpointError, match=message) as caught:
        _post(f"{server}{path}")
    assert "\n" not in caught.value.message


def _refused(status: int, body: Any, server: str, max_bytes: int = 1000) -> str:
    _Misbehaving.refusal = (status, body if isinstance(body, bytes) else json.dumps(body).encode())
    with pytest.raises(EndpointError) as caught:
        _post(f"{server}/refused/x", max_bytes=max_bytes)
    message: str = caught.value.message
    assert "\n" not in message and message.isprintable()
    return message


@pytest.mark.parametrize(
    ("status", "body", "shown"),
    [
        # OpenAI
        (
            404,
            {
                "error": {
                    "message": "The model `gpt-4o-typo` does not exist or you do not have "
                    "access to it.",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
            "HTTP 404 Not Found; its message: The model `gpt-4o-typo` does not exist or you do "
            "not have access to it.",
        ),
        (
            400,
            {
                "error": {
                    "message": "Unsupported parameter: 'max_tokens' is not supported with this "
                    "model. Use 'max_completion_tokens' instead.",
                    "param": "max_tokens",
                }
            },
            "HTTP 400 Bad Request; its message: Unsupported parameter: 'max_tokens' is not "
            "supported with this model. Use 'max_completion_tokens' instead.",
        ),
        # Anthropic
        (
            429,
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "message": "Number of request tokens has exceeded your rate limit.",
                },
            },
            "HTTP 429 Too Many Requests; its message: Number of request tokens has exceeded your "
            "rate limit.",
        ),
        # Ollama, vLLM, FastAPI
        (
            404,
            {"error": 'model "llama9" not found'},
            'HTTP 404 Not Found; its message: model "llama9" not found',
        ),
        (
            400,
            {"object": "error", "message": "too long", "code": 400},
            "HTTP 400 Bad Request; its message: too long",
        ),
        (422, {"detail": "bad field"}, "HTTP 422 Unprocessable Entity; its message: bad field"),
    ],
)
def test_an_error_status_shows_the_endpoints_own_message(
    server: str, status: int, body: Any, shown: str
) -> None:
    assert _refused(status, body, server) == f"the endpoint answered {shown}"


def test_the_endpoints_message_never_shows_a_key(server: str) -> None:
    # OpenAI's 401 names the key it was given (masked its own way); a careless server echoes it.
    said = (
        f"Incorrect API key provided: {KEY}. Bearer {KEY} was refused; "
        "sk-proj-********************************abcd is not valid, nor sk-ant-api03-AbCdEf_12-x."
    )
    message = _refused(401, {"error": {"message": said}}, server)
    assert message == (
        "the endpoint answered HTTP 401 Unauthorized; its message: Incorrect API key provided: "
        "***. *** was refused; *** is not valid, nor ***."
    )
    assert "secret" not in message and "sk-" not in message


@pytest.mark.parametrize("key", [KEY, "s3cr3t7"])
def test_a_reason_phrase_that_echoes_the_key_is_masked(server: str, key: str) -> None:
    """A careless server puts the key in its status line too (review: the body's message was
    masked and the reason phrase before it was not; keys under 8 characters never were)."""
    _Misbehaving.refusal = (401, json.dumps({"error": {"message": f"bad key {key}"}}).encode())
    _Misbehaving.reason = f"Invalid key {key}"
    try:
        with pytest.raises(EndpointError) as caught:
            _post(f"{server}/refused/x", key=key)
    finally:
        _Misbehaving.reason = None
    assert caught.value.message == (
        "the endpoint answered HTTP 401 Invalid key ***; its message: bad key ***"
    )


def test_the_anthropic_version_is_shown_and_its_key_is_not(server: str) -> None:
    said = f"anthropic-version: 2023-06-01 is not supported with the key {KEY}"
    _Misbehaving.refusal = (400, json.dumps({"error": {"message": said}}).encode())
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with pytest.raises(EndpointError) as caught:
        post_json(f"{server}/refused/x", {}, headers, timeout=10.0, max_bytes=1000)
    assert caught.value.message.endswith(
        "its message: anthropic-version: 2023-06-01 is not supported with the key ***"
    )


def test_the_endpoints_message_is_one_bounded_line(server: str) -> None:
    # (the call reads at most 1,000 bytes)
    said = "first line\nsecond\r\n\x1b[31mred\x1b[0m \u202eevil\u202c\tend " + "x" * 600
    message = _refused(400, {"error": {"message": said}}, server)
    assert message.startswith(
        "the endpoint answered HTTP 400 Bad Request; its message: first line second [31mred [0m "
        "evil end xxx"
    )
    assert message.endswith("x...")
    assert len(message.partition("; its message: ")[2]) == ERROR_MESSAGE_CHARS


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>502 Bad Gateway</body></html>",  # a proxy's page: no message in it
        b'{"error": {"code": 5}}',
        b'["no", "object"]',
        b"",
        # more than the part of an error's body read (whatever the answer's limit): cut off
        json.dumps({"error": {"message": "m" * ERROR_BODY_BYTES}}).encode(),
    ],
    ids=["html", "no-message", "array", "empty", "too-large"],
)
def test_an_error_without_a_readable_message_shows_the_status(server: str, body: bytes) -> None:
    refused = _refused(400, body, server, max_bytes=10 * ERROR_BODY_BYTES)
    assert refused == "the endpoint answered HTTP 400 Bad Request"


def test_a_key_with_a_line_end_is_refused_without_being_shown(server: str) -> None:
    with pytest.raises(EndpointError, match="contains a control character") as caught:
        _post(f"{server}/x", key=KEY + "\r")
    assert KEY not in caught.value.message
    assert _Misbehaving.seen == []


@pytest.mark.parametrize(
    ("base", "message"),
    [
        ("https://admin:SECRET-PASSWORD@llm.example/v1", "must not hold a user name or password"),
        ("127.0.0.1:8000/v1", "must be an http:// or https:// URL"),
        ("file:///etc/passwd", "must be an http:// or https:// URL"),
        ("ftp://example.com/v1", "must be an http:// or https:// URL"),
        ("http://example.com:port/v1", "is not a valid URL"),
    ],
)
def test_base_urls_other_than_http_without_credentials_are_refused(base: str, message: str) -> None:
    with pytest.raises(EndpointError, match=message) as caught:
        endpoint_url(base, "chat/completions", name="CTXASM_LLM_BASE_URL")
    assert "SECRET" not in caught.value.message


@pytest.mark.parametrize("count", [-5, 0, True, 1e300, "12", None])
def test_the_anthropic_counter_takes_only_a_count(server: str, count: Any) -> None:
    _Misbehaving.count = count
    counter = AnthropicCounter(KEY, f"{server}/count", timeout=5.0)
    rendered = Rendered(messages=({"role": "user", "content": "hi"},), system=None, text=None)
    with pytest.raises(TokenizerError, match="no input_tokens count"):
        counter.count("claude-sonnet-4", rendered)
    _Misbehaving.count = 42
    assert counter.count("claude-sonnet-4", rendered) == 42


def test_the_proxies_of_the_environment_are_used_as_urllib_used_them(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = server.replace("http://", "http://user:pw@")
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    # http: the whole URL goes to the proxy, with its credentials
    assert _post("http://llm.example/v1/x")["path"] == "http://llm.example/v1/x"
    assert ("PROXY", "", "Basic dXNlcjpwdw==") in _Misbehaving.seen
    # https: a tunnel is asked for (this proxy refuses it)
    with pytest.raises(EndpointError, match="407"):
        _post("https://llm.example/v1/x")
    assert ("CONNECT", "llm.example:443", "Basic dXNlcjpwdw==") in _Misbehaving.seen
    # a host NO_PROXY names is called directly
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert _post(f"{server}/v1/x")["path"] == "/v1/x"


def test_the_deadline_holds_when_connecting_takes_it_all(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watchdog fired while no socket was there to shut (a slow DNS lookup, an address that
    # drops packets), and the trickling answer then ran on unbounded.
    import http.client

    real = http.client.HTTPConnection.connect

    def slow(self: http.client.HTTPConnection) -> None:
        time.sleep(1.5)
        real(self)

    monkeypatch.setattr(http.client.HTTPConnection, "connect", slow)
    started = time.monotonic()
    with pytest.raises(EndpointError, match="no whole answer within 1 s"):
        _post(f"{server}/trickle/x", timeout=1.0)
    assert time.monotonic() - started < 5


def test_an_ipv6_host_without_a_port_keeps_its_address() -> None:
    # http.client read the last group of "::1" as the port
    from urllib.parse import urlsplit

    from ctxasm.endpoint import _connection

    for url, port in (("http://[::1]/v1", 80), ("https://[2001:db8::5]/v1", 443)):
        connection, _, _ = _connection(urlsplit(url), 1.0)
        assert (connection.host, connection.port) == (urlsplit(url).hostname, port)


def test_an_https_proxy_url_is_spoken_to_as_urllib_did(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", server.replace("http://", "https://"))
    with pytest.raises(EndpointError, match="407"):
        _post("https://llm.example/v1/x")
    assert ("CONNECT", "llm.example:443", None) in _Misbehaving.seen


# The one deadline against hosts with several addresses, proxies and TLS handshakes that
# trickle. A name's addresses are what a patched socket.getaddrinfo answers (as a resolver
# with several records would); each call runs on a thread given a few seconds, so a call that
# would never end fails the test instead of hanging it.

_NAME = "llm.example.test"


def _black_hole() -> tuple[int, list[socket.socket]]:
    """A local port whose accept queue is full: a connect to it hangs (its SYNs are dropped),
    as to an address whose packets a firewall drops. The sockets to close afterwards."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.2)  # the handshakes that fill the queue complete
    return port, [listener, *fillers]


def _trickler(first: bytes, each: bytes) -> tuple[int, Callable[[], None]]:
    """A local server that reads what a client sends first, answers ``first``, then ``each``
    every 0.05 s until stopped (or the client goes); its port and what stops it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    stop = threading.Event()

    def answer(client: socket.socket) -> None:
        with client, contextlib.suppress(OSError):
            client.recv(65536)
            client.sendall(first)
            while not stop.wait(0.05):
                client.sendall(each)

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                threading.Thread(target=answer, args=(listener.accept()[0],), daemon=True).start()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], stop.set


def _resolve(monkeypatch: pytest.MonkeyPatch, name: str, ports: list[int]) -> None:
    """Make ``name`` resolve to 127.0.0.1 at each of ``ports``, in order."""
    real = socket.getaddrinfo

    def fake(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != name:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", p)) for p in ports]

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def _timed(url: str, timeout: float) -> tuple[str, float]:
    """What a call to ``url`` ended with (an error's message, or "answered") and the seconds
    it took; "still running" when it had not ended after 6 s."""
    outcome: list[str] = []

    def call() -> None:
        try:
            _post(url, timeout=timeout)
            outcome.append("answered")
        except EndpointError as error:
            outcome.append(error.message)

    started = time.monotonic()
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(6.0)
    return (outcome[0] if outcome else "still running"), time.monotonic() - started


@pytest.fixture()
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_addresses_that_drop_packets_share_the_one_deadline(
    monkeypatch: pytest.MonkeyPatch, no_proxy: None, scheme: str
) -> None:
    # socket.create_connection gave each of the four addresses the whole second: 4 s.
    port, sockets = _black_hole()
    _resolve(monkeypatch, _NAME, [port] * 4)
    try:
        outcome, took = _timed(f"{scheme}://{_NAME}:{port}/v1/x", timeout=1.0)
    finally:
        for sock in sockets:
            sock.close()
    assert outcome == "no whole answer within 1 s"
    assert took < 2.5


def test_an_address_that_refuses_is_followed_by_the_next(
    server: str, monkeypatch: pytest.MonkeyPatch, no_proxy: None
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: a connect to it is refused
    open_port = int(server.rsplit(":", 1)[1])
    _resolve(monkeypatch, _NAME, [closed.getsockname()[1], open_port])
    try:
        assert _post(f"http://{_NAME}:{open_port}/v1/x") == {"ok": True, "path": "/v1/x"}
    finally:
        closed.close()


def test_the_deadline_holds_through_a_proxy_whose_first_address_drops_packets(
    monkeypatch: pytest.MonkeyPatch, no_proxy: None
) -> None:
    # The one-shot watchdog fired while the first address was tried (no socket to shut yet),
    # and the second, a proxy sending a header line at a time, then held the call forever.
    hole, sockets = _black_hole()
    proxy, stop = _trickler(b"HTTP/1.1 200 Connection established\r\n", b"X-Wait: 1\r\n")
    _resolve(monkeypatch, "proxy.example.test", [hole, proxy])
    monkeypatch.setenv("HTTPS_PROXY", f"http://proxy.example.test:{proxy}")
    try:
        outcome, took = _timed(f"https://{_NAME}/v1/x", timeout=1.0)
    finally:
        stop()
        for sock in sockets:
            sock.close()
    assert outcome == "no whole answer within 1 s"
    assert took < 2.5


def _timed_beside_trickler(first: bytes, then: bytes, url: Callable[[int], str]) -> None:
    """Call ``url(port)`` of a server that sends ``first`` and then ``then`` again and again,
    with a deadline of 1 s: the call must end by it."""
    port, stop = _trickler(first, then)
    try:
        outcome, took = _timed(url(port), timeout=1.0)
    finally:
        stop()
    assert outcome == "no whole answer within 1 s"
    assert took < 2.5


def test_the_deadline_holds_through_a_proxy_that_trickles_its_answer(
    monkeypatch: pytest.MonkeyPatch, no_proxy: None
) -> None:
    def through_proxy(port: int) -> str:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
        return f"https://{_NAME}/v1/x"

    _timed_beside_trickler(
        b"HTTP/1.1 200 Connection established\r\n", b"X-Wait: 1\r\n", through_proxy
    )


def test_the_deadline_holds_through_a_tls_handshake_that_trickles(no_proxy: None) -> None:
    # A handshake record of 16 kB announced, then a byte at a time. (ssl detaches the socket
    # object http.client made, so the watchdog reaches the handshake through its duplicate.)
    _timed_beside_trickler(
        b"\x16\x03\x03\x40\x00", b"\x00", lambda port: f"https://127.0.0.1:{port}/v1/x"
    )


def test_the_deadline_holds_while_the_name_is_looked_up(
    monkeypatch: pytest.MonkeyPatch, no_proxy: None
) -> None:
    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(3.0)
        raise socket.gaierror("no answer")

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    outcome, took = _timed(f"http://{_NAME}/v1/x", timeout=1.0)
    assert outcome == "no whole answer within 1 s"
    assert took < 2.5


def test_calls_whose_lookups_hang_gain_no_thread_past_the_cap(
    monkeypatch: pytest.MonkeyPatch, no_proxy: None
) -> None:
    # Each call left its lookup thread behind while the resolver hung: 50 calls, 52 threads.
    from ctxasm import endpoint

    release = threading.Event()

    def hung(*args: Any, **kwargs: Any) -> Any:
        release.wait(10)
        raise socket.gaierror("no answer")

    monkeypatch.setattr(socket, "getaddrinfo", hung)
    monkeypatch.setattr(endpoint, "_LOOKUPS", threading.BoundedSemaphore(3))
    monkeypatch.setattr(endpoint, "MAX_LOOKUPS", 3)
    before = threading.active_count()
    try:
        outcomes = [_timed(f"http://{_NAME}/v1/x", timeout=0.05)[0] for _ in range(10)]
        time.sleep(0.2)  # the calls' own timers, cancelled, end meanwhile
        assert threading.active_count() <= before + 3  # the three lookups still hanging
        assert outcomes[:3] == ["no whole answer within 0.05 s"] * 3
        assert all("3 name lookups are still waiting for an answer" in o for o in outcomes[3:])
    finally:
        release.set()
