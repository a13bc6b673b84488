"""Installed into the fresh environment of test_offline_install.py and imported by a ``.pth``
file there, so it runs first in every Python process of that environment (the ``ctxasm``
command included): opening an internet socket, connecting or resolving a name raises
``OSError`` and is written to ``$CTXASM_TEST_NETWORK_LOG``, so the test sees an attempt even if
the code under test swallowed the error."""

from __future__ import annotations

import os
import socket
import traceback
from typing import Any

_INTERNET = {-1, socket.AF_INET, socket.AF_INET6}  # -1: the default family, AF_INET
_open_socket = socket.socket.__init__


def _refuse(what: str) -> None:
    log = os.environ.get("CTXASM_TEST_NETWORK_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{what}\n{''.join(traceback.format_stack(limit=8))}\n")
    raise OSError(f"network access is blocked in this environment ({what})")


def _guarded_socket(
    self: socket.socket, family: int = -1, type: int = -1, proto: int = -1, fileno: Any = None
) -> None:
    if fileno is None and family in _INTERNET:
        _refuse(f"socket.socket(family={family})")
    _open_socket(self, family, type, proto, fileno)


def _refuse_call(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        _refuse(f"{name}{args[-2:]!r}")

    return refuse


socket.socket.__init__ = _guarded_socket  # type: ignore[method-assign]
socket.socket.connect = _refuse_call("socket.connect")  # type: ignore[method-assign]
socket.socket.connect_ex = _refuse_call("socket.connect_ex")  # type: ignore[method-assign]
socket.getaddrinfo = _refuse_call("socket.getaddrinfo")
socket.create_connection = _refuse_call("socket.create_connection")
