"""ctxasm.schema builds passages in the common plain form in one pass, and every other one with
the checked constructor; the two accept and refuse the same input, build the same passages and
give the same errors, from a dict and from JSON bytes alike."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxasm import CtxasmError, Passage, Request, jsonio, parse_request, schema
from ctxasm.data import passage_from_checked
from ctxasm.jsonio import decode_object
from ctxasm.validation import MAX_INTEGER

EXAMPLES = int(os.environ.get("CTXASM_PROPERTY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class Tagged(str):
    """A string subclass: the constructor takes it, the plain form leaves it to it."""


class Rounded(float):
    """A float subclass whose conversion to float differs from its value."""

    def __float__(self) -> float:
        return float(round(self.real))


def _careful_passage(fields: object, index: int) -> Passage | None:
    return None


def _outcome(parse: Any, *args: Any) -> tuple[Any, ...]:
    """What parsing gives: the passages or request fields, by repr (which tells 1, 1.0 and
    True apart) and by the type of every passage field (a Tagged string from a str), or the
    error as data."""
    try:
        result = parse(*args)
    except CtxasmError as error:
        return ("refused", type(error).__name__, error.to_dict())
    if isinstance(result, Request):
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(Request)}
        return ("parsed", repr(fields), [_types(p) for p in result.passages])
    return ("parsed", repr(result), _types(result))


def _types(passage: Passage) -> list[str]:
    return [type(getattr(passage, f.name)).__name__ for f in dataclasses.fields(Passage)]


def _both_ways(parse: Any, *args: Any) -> Iterator[tuple[Any, ...]]:
    """The outcome with the one-pass builder and the fast JSON reader, then without them."""
    yield _outcome(parse, *args)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema, "_plain_passage", _careful_passage)
        patch.setattr(jsonio, "_USE_JITER", False)
        yield _outcome(parse, *args)


def _assert_one_answer(parse: Any, *args: Any) -> None:
    fast, careful = _both_ways(parse, *args)
    assert fast == careful


PLAIN = {
    "id": "doc-1#3",
    "text": "Aristotle taught at the Lyceum. " * 20,
    "score": 0.75,
    "doc_id": "doc-1",
    "title": "Aristotle",
    "url": "https://example.org/aristotle",
    "start": 100,
    "end": 740,
    "metadata": {"rank": 3, "tags": ["a"]},
}


# --- the plain form is built in one pass --------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        PLAIN,
        {"text": "no id"},
        {"id": None, "text": "a null id"},
        {**PLAIN, "text": "café — “quoted” 😀", "title": "Zürich"},
        {**PLAIN, "score": 3},
        {**PLAIN, "score": -MAX_INTEGER},
        {**PLAIN, "score": np.float64(0.25)},
        {**PLAIN, "score": Rounded(2.75)},
        {**PLAIN, "start": 0, "end": 0},
        {**PLAIN, "metadata": {}},
        {"id": "a", "text": "", "source": "wiki"},
    ],
)
def test_a_plain_passage_is_built_in_one_pass_as_the_constructor_builds_it(
    fields: dict[str, Any],
) -> None:
    passage = schema._plain_passage(fields, 7)
    assert passage is not None
    assert _outcome(lambda: passage) == _outcome(schema.parse_passage, fields, 7)


@pytest.mark.parametrize(
    "fields",
    [
        {**PLAIN, "colour": "red"},
        {**PLAIN, "title": None},
        {**PLAIN, "metadata": None},
        {**PLAIN, "start": None, "end": None},
        {**PLAIN, "tenant": "acme"},
        {**PLAIN, "timestamp": "2024-01-01"},
        {**PLAIN, "score": True},
        {**PLAIN, "score": float("nan")},
        {**PLAIN, "score": MAX_INTEGER + 1},
        {**PLAIN, "score": np.float32(0.5)},
        {**PLAIN, "score": np.float64("inf")},
        {**PLAIN, "start": 5, "end": 4},
        {**PLAIN, "start": True, "end": 4},
        {**PLAIN, "end": 4},
        {**PLAIN, "id": ""},
        {**PLAIN, "id": 5},
        {**PLAIN, "text": Tagged("a subclass")},
        {**PLAIN, "url": "bad\ud800"},
        {**PLAIN, "text": "bad \udc80"},
        {**PLAIN, "metadata": ["a"]},
        {"id": "a"},
    ],
)
def test_anything_else_goes_to_the_constructor(fields: dict[str, Any]) -> None:
    assert schema._plain_passage(fields, 0) is None
    _assert_one_answer(schema.parse_request, {"query": "q", "passages": [PLAIN, fields]})


def test_the_metadata_is_copied_as_the_constructor_copies_it() -> None:
    given_metadata: dict[str, Any] = {"rank": 1}
    empty: dict[str, Any] = {}
    passage = schema._plain_passage({**PLAIN, "metadata": given_metadata}, 0)
    assert passage is not None and passage.metadata == given_metadata
    assert passage.metadata is not given_metadata
    kept = schema._plain_passage({**PLAIN, "metadata": empty}, 0)
    assert kept is not None and kept.metadata is empty  # an empty mapping is kept, as it is
    fresh = [schema._plain_passage({"id": str(i), "text": "t"}, i) for i in range(2)]
    assert fresh[0] is not None and fresh[1] is not None
    assert fresh[0].metadata == {} and fresh[0].metadata is not fresh[1].metadata


def test_a_passage_built_from_checked_values_is_a_passage() -> None:
    passage = passage_from_checked("a", "text", 0.5, "T", None, "u", "d", 1, 5, {"k": 1})
    same = Passage("a", "text", 0.5, "T", None, "u", "d", 1, 5, metadata={"k": 1})
    assert type(passage) is Passage and passage == same and repr(passage) == repr(same)
    with pytest.raises(dataclasses.FrozenInstanceError):
        passage.id = "b"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(passage)) == same
    assert copy.deepcopy(passage) == same
    assert dataclasses.replace(passage, score=0.1).score == 0.1
    assert dataclasses.astuple(passage) == dataclasses.astuple(same)


def test_errors_name_the_first_bad_passage() -> None:
    passages = [PLAIN, {**PLAIN, "id": "b", "score": "high"}, {"id": "c"}]
    with pytest.raises(CtxasmError) as caught:
        parse_request({"query": "q", "passages": passages})
    assert caught.value.to_dict() == {
        "code": "invalid_request",
        "message": "passages[1].score must be a number or null; got str 'high'",
        "field": "passages[1].score",
    }


# --- differential: arbitrary passages and requests ----------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([0, -1, MAX_INTEGER, MAX_INTEGER + 1, -MAX_INTEGER - 1, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats().map(np.float64),
    st.floats(width=32).map(np.float32),
    st.floats(-1e6, 1e6).map(Rounded),
    st.text(max_size=6),
    st.sampled_from(["", " ", "é", "“q”", "a\ud800", "\udfff", "2024-05-01", "x" * 40]),
    st.builds(Tagged, st.text(max_size=3)),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=6,
)
STRINGS = st.one_of(st.text(max_size=8), st.sampled_from(["doc", "é", "x\ud800"]))
OFFSETS = st.one_of(st.integers(-2, 2000), VALUES)
FIELDS = {
    "id": st.one_of(STRINGS, VALUES),
    "text": st.one_of(STRINGS, STRINGS, VALUES),
    "score": st.one_of(st.floats(), st.integers(-5, 5), VALUES),
    "title": st.one_of(STRINGS, VALUES),
    "source": st.one_of(STRINGS, VALUES),
    "url": st.one_of(STRINGS, VALUES),
    "doc_id": st.one_of(STRINGS, VALUES),
    "start": OFFSETS,
    "end": OFFSETS,
    "metadata": st.one_of(st.dictionaries(st.text(max_size=3), VALUES, max_size=2), VALUES),
    "timestamp": st.one_of(st.none(), st.sampled_from(["2024-05-01", "soon"])),
    "tenant": st.one_of(st.none(), STRINGS),
    "colour": VALUES,
}
PASSAGES = st.fixed_dictionaries(
    {"text": FIELDS["text"]}, optional={k: v for k, v in FIELDS.items() if k != "text"}
)
# Mostly plain passages, so that a request gets past its first one often.
PLAIN_PASSAGES = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=5), "text": st.text(max_size=20)},
    optional={
        "score": st.floats(-1, 1),
        "title": st.text(max_size=5),
        "url": st.text(max_size=5),
        "metadata": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    },
)
ITEMS = st.one_of(PLAIN_PASSAGES, PLAIN_PASSAGES, PASSAGES, VALUES)


@SETTINGS
@given(PASSAGES, st.integers(0, 3))
def test_a_passage_gets_one_answer(fields: dict[str, Any], index: int) -> None:
    plain = schema._plain_passage(fields, index)
    careful = _outcome(schema.parse_passage, fields, index)
    if plain is not None:
        assert _outcome(lambda: plain) == careful


@SETTINGS
@given(st.lists(ITEMS, max_size=5))
def test_a_request_gets_one_answer(items: list[Any]) -> None:
    _assert_one_answer(parse_request, {"query": "q", "passages": items})


@SETTINGS
@given(st.lists(PLAIN_PASSAGES, max_size=5), st.integers(0, 2))
def test_repeated_ids_get_one_answer(items: list[dict[str, Any]], copies: int) -> None:
    items = items + [dict(item) for item in items[:copies]]
    _assert_one_answer(parse_request, {"query": "q", "passages": items})


@SETTINGS
@given(st.lists(st.one_of(PLAIN_PASSAGES, PASSAGES), max_size=4))
def test_json_bytes_get_one_answer(items: list[Any]) -> None:
    try:
        raw = json.dumps({"query": "q", "passages": items}).encode()
    except (TypeError, ValueError, UnicodeEncodeError):
        return  # not JSON (a tuple key, NaN is fine, a surrogate is not): nothing to compare
    _assert_one_answer(lambda: parse_request(decode_object(raw)))


def test_an_integer_id_is_taken_as_its_decimal_string() -> None:
    # FAISS and Milvus return row numbers: context_for_chat and the CLI's hits took them,
    # ctxasm.assemble refused them (second first-hour review)
    request = parse_request({"query": "Danube?", "passages": [{"id": 7, "text": "x"}]})
    assert [p.id for p in request.passages] == ["7"]
    assert Passage(id=7, text="x").id == "7"  # type: ignore[arg-type]
    for bad in (True, 2**60):
        with pytest.raises(CtxasmError) as error:
            parse_request({"query": "Danube?", "passages": [{"id": bad, "text": "x"}]})
        assert error.value.field == "passages[0].id"


def test_integer_ids_are_read_alike_in_passages_hits_and_context_for_chat() -> None:
    # numpy's int64 (what FAISS returns) was refused everywhere, and hits took integers past
    # 2**53 that passages refused
    import numpy as np

    from ctxasm import context_for_chat

    for field in ("passages", "hits"):
        request = parse_request({"query": "Danube?", field: [{"id": np.int64(7), "text": "x"}]})
        assert [p.id for p in request.passages] == ["7"]
        with pytest.raises(CtxasmError) as error:
            parse_request({"query": "Danube?", field: [{"id": 2**60, "text": "x"}]})
        assert error.value.field == f"{field}[0].id"
        assert "2**53" in error.value.message
    with pytest.raises(CtxasmError) as error:  # 7 and "7" are one id
        parse_request({"query": "q", "hits": [{"id": 7, "text": "a"}, {"id": "7", "text": "b"}]})
    assert error.value.field == "hits[1].id"

    class Store:
        def retrieve(self, query: str, k: int) -> list[dict[str, object]]:
            return [{"id": np.int64(3), "text": "The Danube ends in the Black Sea.", "score": 1.0}]

    built = context_for_chat(Store(), "Where does the Danube end?", 500)
    assert list(built.included) == ["3"]
