"""The service's prompt-cache sessions: the last cache state of each ``session_id``.

A request to ``POST /v1/assemble`` may carry ``session_id`` instead of sending the previous
turn's state back itself: the service then plans the prompt for the cache with the state it
kept for that session (``previous``, unless the request gives one) and keeps the new one. The
store is bounded three ways, so no client can grow it without limit: at most
:data:`MAX_SESSIONS` sessions and :data:`MAX_BYTES` of state in all (the least recently used
go first), each forgotten :data:`TTL_SECONDS` after its last use. A session is keyed by the
request's principal (id, tenant and groups) as well, so one principal cannot continue another's
session, and a principal whose groups changed starts a new one (the state names the passages of
earlier turns, which the new groups may not read); ids should be unguessable all the same (a
random 16 bytes, say).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, MutableMapping
from sys import getsizeof
from typing import Any

from ctxasm.cache_state import CacheState
from ctxasm.data import Assembly
from ctxasm.errors import RequestError
from ctxasm.validation import shown

__all__ = ["MAX_BYTES", "MAX_SESSIONS", "TTL_SECONDS", "SessionStore"]

MAX_SESSIONS = 10_000
MAX_BYTES = 64 * 1024 * 1024
TTL_SECONDS = 30 * 60.0
FIELD = "session_id"
_SESSION_ID = re.compile(r"[A-Za-z0-9._:-]{8,128}")

Key = tuple[str, str, str, str]


def _owner(value: object) -> str:
    """A principal's tenant, id or groups as a session key part: as JSON, so that no tenant is taken
    for another (``str()`` wrote an absent tenant as ``"None"``, the name a tenant may have)."""
    return json.dumps(value, sort_keys=True, default=repr)


def _size(key: Key, state: CacheState) -> int:
    """About the bytes a session holds: its key, the state's ids and digests as Python holds
    them (up to 4 bytes a character: an id of emoji takes four times its length), the sentence
    numbers of its compressed sources (8 bytes each), and a fixed cost per entry."""
    ids = sum(map(getsizeof, state.labels)) + sum(
        getsizeof(i) + getsizeof(d) for i, d in state.sources
    )
    kept = sum(8 * len(sentences) for sentences in state.compressed.values())
    entries = len(state.labels) + len(state.sources) + len(state.compressed)
    return 256 + sum(map(getsizeof, key)) + ids + kept + 64 * entries


class SessionStore:
    """Cache states by session, least recently used first; safe to share between threads."""

    def __init__(
        self,
        *,
        max_sessions: int = MAX_SESSIONS,
        max_bytes: int = MAX_BYTES,
        ttl_seconds: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_sessions, self.max_bytes, self.ttl = max_sessions, max_bytes, ttl_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._states: OrderedDict[Key, tuple[float, int, CacheState]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._states)

    def prepare(self, data: MutableMapping[str, Any]) -> Key | None:
        """Take ``session_id`` out of request JSON ``data`` and, unless the request gives
        ``previous``, put in the session's state (``null`` for a new session). Returns the
        session's key, or ``None`` when the request names no session."""
        if FIELD not in data:
            return None
        session = data.pop(FIELD)
        if not isinstance(session, str) or not _SESSION_ID.fullmatch(session):
            raise RequestError(
                f"{FIELD} must be 8 to 128 characters of A-Z, a-z, 0-9 and . _ : -; got "
                f"{shown(session)}",
                field=FIELD,
            )
        principal = data.get("principal")
        owner = principal if isinstance(principal, dict) else {}
        groups = owner.get("groups")
        if isinstance(groups, list) and all(isinstance(group, str) for group in groups):
            groups = sorted(set(groups))  # the same read rights, however they are listed
        key = (_owner(owner.get("tenant")), _owner(owner.get("id")), _owner(groups), session)
        if "previous" not in data:
            state = self.get(key)
            data["previous"] = None if state is None else state.to_dict()
        return key

    def get(self, key: Key) -> CacheState | None:
        """The session's state, or ``None`` when there is none or it expired."""
        now = self._clock()
        with self._lock:
            found = self._states.get(key)
            if found is None:
                return None
            if now - found[0] > self.ttl:
                self._drop(key)
                return None
            self._states.move_to_end(key)
            return found[2]

    def remember(self, key: Key, result: Assembly) -> None:
        """Keep the cache state of ``result`` (the session's newest turn)."""
        cache = result.report.cache
        if cache is None:
            return
        size = _size(key, cache.state)
        now = self._clock()
        with self._lock:
            if key in self._states:
                self._drop(key)
            self._states[key] = (now, size, cache.state)
            self._bytes += size
            while self._states and (
                len(self._states) > self.max_sessions or self._bytes > self.max_bytes
            ):
                self._drop(next(iter(self._states)))
            self._expire(now)

    def _expire(self, now: float) -> None:
        """Forget the least recently used sessions that have expired (under the lock)."""
        while self._states:
            key, (used, _, _) = next(iter(self._states.items()))
            if now - used <= self.ttl:
                return
            self._drop(key)

    def _drop(self, key: Key) -> None:
        _, size, _ = self._states.pop(key)
        self._bytes -= size
