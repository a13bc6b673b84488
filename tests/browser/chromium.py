"""A headless Chromium driven over the DevTools protocol (websocket-client), for the page tests
and ``benchmarks/report_html.py``.

It records what a page does that a test must see: every network request, every JavaScript
dialog (answered at once, so a page cannot hang), uncaught exceptions and console messages,
including Content-Security-Policy violations.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

__all__ = ["CHROMIUM", "Browser", "Events", "chromium_missing"]

CHROMIUM = Path(os.environ.get("CTXASM_CHROMIUM", "/usr/bin/chromium"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
)


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or ``None`` when they can."""
    if CHROMIUM.exists():
        return None
    return (
        f"{CHROMIUM} is not installed: `make unit` installs Debian's chromium with apt-get when "
        "it runs as root (or: apt-get install -y chromium)"
    )


@dataclass
class Events:
    """What the page did since the last :meth:`Browser.open`."""

    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 900) -> None:
        self.width, self.height = width, height
        self.events = Events()
        self._ids = itertools.count(1)
        self._profile = tempfile.mkdtemp(prefix="ctxasm-chromium-")
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: websocket.WebSocket | None = None

    def __enter__(self) -> Browser:
        self._process = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = self._port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            pages = [t for t in json.load(answer) if t["type"] == "page"]
        self._socket = websocket.create_connection(
            pages[0]["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.resize(self.width, self.height)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._socket is not None:
            self._socket.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _port(self) -> int:
        marker = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if marker.exists() and (lines := marker.read_text().splitlines()):
                return int(lines[0])
            time.sleep(0.05)
        raise RuntimeError(f"{CHROMIUM} did not open its DevTools port within 30 s")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run one DevTools command and return its result, recording events meanwhile."""
        assert self._socket is not None
        ident = next(self._ids)
        self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._record(message)

    def _wait_for(self, method: str) -> None:
        """Read events until ``method`` arrives (the socket's timeout bounds the wait)."""
        assert self._socket is not None
        while True:
            message = json.loads(self._socket.recv())
            self._record(message)
            if message.get("method") == method:
                return

    def _record(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            self.events.requests.append(params["request"]["url"])
        elif method == "Page.javascriptDialogOpening":
            self.events.dialogs.append(params.get("message", ""))
            self._socket_send("Page.handleJavaScriptDialog", accept=False)
        elif method == "Runtime.exceptionThrown":
            self.events.exceptions.append(json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled":
            self.events.console.append(" ".join(str(a.get("value")) for a in params["args"]))
        elif method == "Log.entryAdded":
            self.events.console.append(params["entry"].get("text", ""))

    def _socket_send(self, method: str, **params: Any) -> None:
        """A command whose answer is not awaited (from inside the event loop of :meth:`send`)."""
        assert self._socket is not None
        self._socket.send(json.dumps({"id": next(self._ids), "method": method, "params": params}))

    def resize(self, width: int, height: int) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def open(self, url: str, *, ready: str = "document.readyState === 'complete'") -> None:
        """Load ``url`` and wait until the expression ``ready`` holds (30 s at most)."""
        self.events = Events()
        self.send("Page.navigate", url=url)
        self._wait_for("Page.loadEventFired")
        self.wait(ready)

    def wait(self, condition: str, timeout: float = 30) -> None:
        """Poll until the JavaScript expression ``condition`` is true."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"!!({condition})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{condition} did not hold within {timeout:g} s")
            time.sleep(0.02)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        found = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression[:80]}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def press(self, key: str, code: str, key_code: int, text: str = "") -> None:
        """One key press, sent as a user's (``text``: what it types, "\\r" for Enter)."""
        typed = {"text": text} if text else {}
        for kind in ("keyDown", "keyUp"):
            self.send(
                "Input.dispatchKeyEvent",
                type=kind,
                key=key,
                code=code,
                windowsVirtualKeyCode=key_code,
                **(typed if kind == "keyDown" else {}),
            )

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page, saved at ``path``."""
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
