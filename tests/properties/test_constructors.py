"""Constructors from arbitrary Python objects (issue 10, item 6): ``Principal``, ``Passage``,
``Message`` and ``Document`` either raise a ctxasm error or hold fields of the declared types,
never a TypeError or AttributeError, and never a string split into its characters."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm import CtxasmError, Message, Passage, Principal
from ctxasm.store import Document

EXAMPLES = int(os.environ.get("CTXASM_PROPERTY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
CONTROL = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))}


class Tagged(str):
    """A string subclass (one that overrides equality is tested in tests/unit/test_validation.py;
    here it would confuse hypothesis's own bookkeeping)."""


NAMES = st.sampled_from(["ann", "staff", "s", "acme", "", " ", "a\x00", "g\n", "\ud800", "é"])
TEXT = st.one_of(NAMES, st.text(max_size=8), st.builds(Tagged, st.text(max_size=4)))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
    st.binary(max_size=4),
    st.builds(object),
    st.builds(Tagged, TEXT),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.frozensets(st.text(max_size=3), max_size=3),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=8,
)


# Mostly well-formed where one bad field would hide the others, arbitrary otherwise.
IDS = st.one_of(st.sampled_from(["ann", "p", "s"]), VALUES)
GROUPS = st.one_of(TEXT, st.lists(TEXT, max_size=4), st.lists(TEXT, max_size=4).map(tuple), VALUES)


def _is_name(value: object) -> bool:
    return (
        type(value) is str
        and bool(value.strip())
        and not (CONTROL & set(value))
        and value.encode("utf-8", "surrogatepass") == value.encode("utf-8", "ignore")
    )


def _names_from(given: object, kept: tuple[str, ...]) -> bool:
    """``kept`` is ``given`` item for item: a list was given, never a string split up."""
    return (
        isinstance(given, list | tuple)
        and not isinstance(given, str)
        and len(kept) == len(given)
        and all(
            _is_name(name) and name == str.__str__(item)
            for name, item in zip(kept, given, strict=True)
        )
    )


def _number(value: object) -> bool:
    return value is None or (type(value) is float and math.isfinite(value))


@SETTINGS
@given(IDS, st.one_of(st.none(), NAMES, VALUES), GROUPS)
def test_a_principal_is_refused_or_holds_names(id_: Any, tenant: Any, groups: Any) -> None:
    try:
        who = Principal(id_, tenant, groups)
    except CtxasmError as error:
        assert isinstance(error, ctxasm.RequestError)
        assert error.field is not None and error.field.startswith("principal.")
        assert error.message.startswith(error.field)
        return
    assert _is_name(who.id)
    assert who.tenant is None or _is_name(who.tenant)
    assert type(who.groups) is tuple
    assert who.groups == () if groups is None else _names_from(groups, who.groups)


PASSAGE_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        name: st.none() | VALUES
        for name in (
            "score",
            "title",
            "url",
            "start",
            "end",
            "timestamp",
            "authority",
            "graph_distance",
            "priority",
            "embedding",
            "tenant",
            "readers",
            "metadata",
        )
    },
)


@SETTINGS
@given(IDS, IDS, PASSAGE_FIELDS)
def test_a_passage_is_refused_or_holds_typed_fields(
    id_: Any, text: Any, fields: dict[str, Any]
) -> None:
    try:
        passage = Passage(id_, text, **fields)
    except CtxasmError as error:
        assert isinstance(error, ctxasm.RequestError)
        assert error.field is not None and error.field.startswith("passage")
        return
    assert type(passage.id) in (str, Tagged) and passage.id and type(passage.text) in (str, Tagged)
    assert all(_number(v) for v in (passage.score, passage.priority, passage.authority))
    assert passage.tenant is None or _is_name(passage.tenant)
    readers = fields.get("readers")
    assert (
        passage.readers is None if readers is None else _names_from(readers, passage.readers or ())
    )
    for key in ("start", "end", "graph_distance"):
        value = getattr(passage, key)
        assert value is None or (type(value) is int and value >= 0)
    assert passage.embedding is None or all(_number(v) for v in passage.embedding)
    assert isinstance(passage.metadata, Mapping)


@SETTINGS
@given(st.one_of(st.none(), NAMES, VALUES), GROUPS)
def test_passage_access_data_is_refused_or_holds_names(tenant: Any, readers: Any) -> None:
    try:
        passage = Passage("p", "text", tenant=tenant, readers=readers)
    except CtxasmError as error:
        assert error.field is not None and error.field.startswith(
            ("passage.tenant", "passage.readers")
        )
        return
    assert passage.tenant is None or _is_name(passage.tenant)
    assert (
        passage.readers is None if readers is None else _names_from(readers, passage.readers or ())
    )


@SETTINGS
@given(st.one_of(st.sampled_from(["user", "assistant"]), VALUES), st.one_of(TEXT, VALUES))
def test_a_message_is_refused_or_holds_a_role_and_text(role: Any, content: Any) -> None:
    try:
        message = Message(role, content)
    except CtxasmError as error:
        assert error.field in ("message.role", "message.content")
        return
    assert type(message.role) is str and message.role in ("user", "assistant")
    assert isinstance(message.content, str) and message.content.strip()


@SETTINGS
@given(st.one_of(st.none(), NAMES, VALUES), GROUPS)
def test_a_document_is_refused_or_holds_access_names(tenant: Any, readers: Any) -> None:
    try:
        document = Document("d", "text", tenant=tenant, readers=readers)
    except CtxasmError as error:
        assert error.field is not None and error.field.startswith("document.")
        return
    assert document.tenant is None or _is_name(document.tenant)
    assert (
        document.readers is None
        if readers is None
        else _names_from(readers, document.readers or ())
    )
