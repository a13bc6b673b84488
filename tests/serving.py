"""Starting ``ctxasm serve`` for real, in a subprocess on a free loopback port: shared by the
service and browser tests (imported by name; conftest modules are not)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_service(
    config: Path | None = None, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    """``(base url, server pid)`` of a service started with ``config`` and ``args``."""
    port = free_port()
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    options = ["--config", str(config)] if config is not None else []
    environment = {k: v for k, v in os.environ.items() if k != "CTXASM_API_KEY"}
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port), *options, *args],
        env={**environment, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.time() > deadline:
                    pytest.fail("the service did not start")
                time.sleep(0.2)
        yield base, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
