"""The service tests' fixture for starting ``ctxasm serve`` (see ``tests/serving.py``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest

from serving import running_service


@pytest.fixture(scope="session")
def start_service() -> Callable[..., AbstractContextManager[tuple[str, int]]]:
    """:func:`running_service`, for test modules (conftest is not imported by name)."""
    return running_service
