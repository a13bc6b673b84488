"""The pages in a real headless Chromium: one browser for the session, a screenshot folder, and
``ctxasm serve`` started for real for the playground.

Without Chromium the page tests skip, saying how to install it, except in CI (``CI`` set), where
``make unit`` installs it: there a missing browser fails them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from chromium import Browser, chromium_missing

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "browser"


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    missing = chromium_missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {missing}")
        pytest.skip(missing)
    with Browser() as opened:
        yield opened


@pytest.fixture
def page(browser: Browser) -> Iterator[Browser]:
    """The session's browser at the desktop size, and no page-level state from a test before."""
    browser.resize(1280, 900)
    yield browser
    browser.resize(1280, 900)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (git-ignored); each test prints the path of what it saved."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(api_key: str | None = None) -> Iterator[str]:
    """The base url of ``ctxasm serve`` on a free loopback port (with ``api_key`` required)."""
    port = _free_port()
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    environment = {k: v for k, v in os.environ.items() if k != "CTXASM_API_KEY"}
    if api_key is not None:
        environment["CTXASM_API_KEY"] = api_key
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port)],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("ctxasm serve did not start")
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def serve() -> Callable[..., AbstractContextManager[str]]:
    """:func:`serving`, for test modules (conftest is not imported by name)."""
    return serving
