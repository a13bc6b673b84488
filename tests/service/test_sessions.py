"""Prompt-cache sessions: the store (ctxasm.service.sessions) and ``session_id`` over HTTP on
a real ``ctxasm serve``."""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

import ctxasm
from ctxasm.cache_state import CacheState
from ctxasm.errors import RequestError
from ctxasm.service.sessions import SessionStore

WORDS = "river bank city king queen war peace music art science data model sea old".split()


def _passages(count: int, start: int = 0) -> list[dict[str, Any]]:
    found = []
    for i in range(start, start + count):
        pick = random.Random(i)
        text = " ".join(f"{pick.choice(WORDS)} {pick.randrange(1000)}" for _ in range(60))
        found.append({"id": f"p{i}", "text": text, "score": 1 - i / 50, "title": f"T{i}"})
    return found


def _result(previous: object = None) -> ctxasm.Assembly:
    return ctxasm.assemble("river?", _passages(3), previous=previous)


def test_prepare_puts_in_the_sessions_state_and_remember_keeps_the_new_one() -> None:
    store = SessionStore()
    data: dict[str, Any] = {"query": "q", "passages": [], "session_id": "session-1"}
    key = store.prepare(data)
    assert key == ("null", "null", "null", "session-1")
    assert data == {"query": "q", "passages": [], "previous": None}
    result = _result()
    store.remember(key, result)
    again: dict[str, Any] = {"query": "q", "passages": [], "session_id": "session-1"}
    store.prepare(again)
    assert result.report.cache is not None
    assert again["previous"] == result.report.cache.state.to_dict()


def test_a_principal_cannot_continue_another_principals_session() -> None:
    store = SessionStore()
    mine = {"session_id": "shared-id", "principal": {"id": "ann"}}
    key = store.prepare(mine)
    assert key is not None
    store.remember(key, _result())
    theirs: dict[str, Any] = {"session_id": "shared-id", "principal": {"id": "bob"}}
    store.prepare(theirs)
    assert theirs["previous"] is None


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        ({"id": "alice"}, {"id": "alice", "tenant": "None"}),  # no tenant, and one named "None"
        (None, {"id": "None"}),  # anonymous, and a principal named "None"
        ({"id": "1"}, {"id": 1}),
    ],
)
def test_a_principal_is_never_taken_for_another_by_how_its_fields_are_written(
    mine: dict[str, object] | None, theirs: dict[str, object]
) -> None:
    store = SessionStore()
    first: dict[str, Any] = {"session_id": "shared-id"}
    if mine is not None:
        first["principal"] = mine
    key = store.prepare(first)
    assert key is not None
    store.remember(key, _result())
    second: dict[str, Any] = {"session_id": "shared-id", "principal": theirs}
    store.prepare(second)
    assert second["previous"] is None


def test_a_principal_whose_groups_changed_starts_a_new_session() -> None:
    # The state names every passage of earlier turns: ann, no longer in finance, was sent the
    # ids of the finance passages her first turn included.
    store = SessionStore()
    first: dict[str, Any] = {
        "session_id": "shared-id",
        "principal": {"id": "ann", "groups": ["finance", "staff"]},
    }
    key = store.prepare(first)
    assert key is not None
    store.remember(key, _result())
    same: dict[str, Any] = {
        "session_id": "shared-id",
        "principal": {"id": "ann", "groups": ["staff", "finance", "staff"]},
    }
    store.prepare(same)
    assert same["previous"] is not None  # the same rights, listed another way
    fewer: dict[str, Any] = {
        "session_id": "shared-id",
        "principal": {"id": "ann", "groups": ["staff"]},
    }
    store.prepare(fewer)
    assert fewer["previous"] is None


def test_sessions_are_bounded_and_expire() -> None:
    now = [0.0]
    store = SessionStore(max_sessions=2, ttl_seconds=10, clock=lambda: now[0])
    result = _result()
    for name in ("aaaaaaaa", "bbbbbbbb", "cccccccc"):
        store.remember(("", "", name), result)
    assert len(store) == 2
    assert store.get(("", "", "aaaaaaaa")) is None  # the least recently used went first
    now[0] = 11.0
    assert store.get(("", "", "cccccccc")) is None
    tiny = SessionStore(max_bytes=1)
    tiny.remember(("", "", "dddddddd"), result)
    assert len(tiny) == 0


def test_a_session_is_counted_by_the_memory_its_ids_take() -> None:
    """An id of emoji takes four bytes a character (review G: a 7.6 MB state was counted
    as 2 MB, so the 64 MiB cap let about 250 MiB stay)."""
    from ctxasm.service.sessions import _size

    ids = ["\U0001f600" * 1000 + str(n) for n in range(100)]
    state = CacheState(
        sources=tuple((i, "0" * 32) for i in ids),
        labels={i: n for n, i in enumerate(ids)},
        next_label=101,
    )
    assert _size(("", "", "", "s" * 8), state) >= 2 * 100 * 4 * 1000


@pytest.mark.parametrize("session", ["short", "x" * 129, "has space!", 12345678, None])
def test_a_bad_session_id_is_refused(session: object) -> None:
    with pytest.raises(RequestError, match="session_id must be 8 to 128") as caught:
        SessionStore().prepare({"session_id": session})
    assert caught.value.field == "session_id"


@pytest.fixture(scope="module")
def base(
    start_service: Callable[..., AbstractContextManager[tuple[str, int]]],
) -> Iterator[str]:
    with start_service() as (url, _):
        yield url


def _post(base: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{base}/v1/assemble",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_service_keeps_the_state_of_a_session(base: str) -> None:
    body = {"query": "river?", "passages": _passages(8), "session_id": "test-session-1"}
    status, first = _post(base, body)
    assert status == 200
    assert first["report"]["cache"]["prefix_sources"] == 0
    status, second = _post(base, {**body, "query": "river bank?"})
    assert status == 200
    cache = second["report"]["cache"]
    assert cache["prefix_sources"] == 8
    assert cache["cached_tokens"] > 0
    assert [i["label"] for i in second["report"]["included"]] == [
        i["label"] for i in first["report"]["included"]
    ]


def test_a_follow_up_keeps_the_sources_it_shares_no_word_with(base: str) -> None:
    passages = [{k: v for k, v in p.items() if k != "score"} for p in _passages(4)]
    passages.append({"id": "z", "text": "zebra stripes 12."})
    body = {"query": "river?", "passages": passages[:4], "session_id": "test-session-2"}
    status, first = _post(base, body)
    assert status == 200
    status, second = _post(base, {**body, "query": "zebra?", "passages": passages})
    assert status == 200
    shown = [i["id"] for i in first["report"]["included"]]
    assert [i["id"] for i in second["report"]["included"]] == [*shown, "z"]
    assert second["report"]["cache"]["prefix_sources"] == len(shown)


def test_the_service_refuses_a_stickiness_out_of_range(base: str) -> None:
    ordering = {"name": "cache_stable", "stickiness": 11}
    status, body = _post(base, {"query": "q", "passages": [], "strategy": {"ordering": ordering}})
    assert status == 422
    assert body["error"]["field"] == "strategy.ordering.stickiness"


def test_the_service_refuses_a_bad_session_id(base: str) -> None:
    status, body = _post(base, {"query": "q", "passages": [], "session_id": "no"})
    assert status == 422
    assert body["error"]["field"] == "session_id"


def test_a_state_with_long_passage_ids_is_read_back() -> None:
    passages = [{"id": "x" * 5_000, "title": "River", "text": "The river has a bank."}]
    first = ctxasm.assemble("river?", passages, previous=None)
    second = ctxasm.assemble("river?", passages, previous=first.to_dict())
    assert second.report.cache is not None and second.report.cache.prefix_sources == 1
