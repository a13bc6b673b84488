"""The pages in a real headless Chromium: one browser for the session, a screenshot folder, and
``ctxasm serve`` started for real for the playground.

Without Chromium the page tests skip, saying how to install it, except in CI (``CI`` set), where
``make unit`` installs it: there a missing browser fails them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from chromium import Browser, chromium_missing

from serving import running_service

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


@contextmanager
def serving(api_key: str | None = None) -> Iterator[str]:
    """The base url of ``ctxasm serve`` on a free loopback port (with ``api_key`` required)."""
    key = {} if api_key is None else {"CTXASM_API_KEY": api_key}
    with running_service(env=key) as (base, _):
        yield base


@pytest.fixture(scope="session")
def serve() -> Callable[..., AbstractContextManager[str]]:
    """:func:`serving`, for test modules (conftest is not imported by name)."""
    return serving
