"""ctxasm.jsonio's two readers give one answer: the fast one (``jiter`` plus a linear check)
accepts only what the careful one (the standard library with a check per object and number)
accepts, with the same value, and hands everything else to it, so every refusal carries the
careful reader's message."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxasm import jsonio
from ctxasm.errors import CtxasmError
from ctxasm.jsonio import MAX_DEPTH, MAX_NUMBER_CHARS, decode_json, decode_object

EXAMPLES = int(os.environ.get("CTXASM_PROPERTY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

pytestmark = pytest.mark.skipif(not jsonio._USE_JITER, reason="the fast reader needs jiter")


def _outcome(read: Any, raw: bytes) -> tuple[Any, ...]:
    """What reading ``raw`` gives: the value (its repr tells 1, 1.0 and True apart), or the
    error as data."""
    try:
        value = read(raw)
    except CtxasmError as error:
        return ("refused", type(error).__name__, error.to_dict())
    return ("read", repr(value))


def _careful(raw: bytes) -> Any:
    return jsonio._read_checked(raw, "request")


def _assert_one_answer(raw: bytes) -> None:
    assert _outcome(decode_json, raw) == _outcome(_careful, raw)


def _request(n: int) -> bytes:
    passages = [
        {
            "id": f"doc-{i}",
            "text": "Aristotle taught at the Lyceum, “a school” — in Athens. " * 12,
            "score": 0.25 + i / 1000,
            "doc_id": "doc",
            "title": "Aristotle",
            "url": "https://example.org/aristotle",
            "start": 10 * i,
            "end": 10 * i + 700,
            "metadata": {"rank": i, "tags": ["a", "b"], "weight": -1.5e-7},
        }
        for i in range(n)
    ]
    return json.dumps({"query": "Where did Aristotle teach?", "passages": passages}).encode()


# --- the fast reader is the one that reads ordinary input ---------------------------------------


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_an_ordinary_request_is_read_by_the_fast_reader(ensure_ascii: bool) -> None:
    raw = json.dumps(json.loads(_request(50)), ensure_ascii=ensure_ascii).encode()
    value = jsonio._read_plain(raw)
    assert value is not jsonio._NOT_PLAIN
    assert repr(value) == repr(_careful(raw))


def test_a_utf8_byte_order_mark_is_skipped_by_the_fast_reader() -> None:
    raw = b"\xef\xbb\xbf" + _request(2)
    assert repr(jsonio._read_plain(raw)) == repr(_careful(raw))


# --- each refusal: the fast reader declines, the careful reader's message is given -------------

DEEP_OK = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
DEEP_BAD = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
OBJECTS_OK = b'{"a":' * (MAX_DEPTH - 1) + b"{}" + b"}" * (MAX_DEPTH - 1)
OBJECTS_BAD = b'{"a":' * MAX_DEPTH + b"{}" + b"}" * MAX_DEPTH
LONGEST = b"0." + b"1" * (MAX_NUMBER_CHARS - 2)

CASES: list[tuple[str, bytes, str | None]] = [
    ("repeated key", b'{"a": 1, "b": 2, "a": 3}', "the request repeats the key 'a'"),
    ("repeated key, deep", b'{"x": [{"k": 1}, {"k": 1, "k": 2}]}', "repeats the key 'k'"),
    ("repeated key, escaped", b'{"a": 1, "\\u0061": 2}', "repeats the key 'a'"),
    (
        "repeated long key",  # shortened: the message carried the whole key
        b'{"' + b"k" * 100_000 + b'": 1, "' + b"k" * 100_000 + b'": 2}',
        "repeats the key '" + "k" * 60 + "...' in one object",
    ),
    ("NaN", b'{"s": NaN}', "the request has NaN"),
    ("Infinity", b"[1, Infinity]", "the request has Infinity"),
    ("-Infinity", b"[-Infinity]", "the request has -Infinity"),
    ("overflow", b'{"a": [[1e999]]}', "the number 1e999, which is too large"),
    ("negative overflow", b"-1E+400", "the number -1E+400, which is too large"),
    ("long float", b"[" + LONGEST + b"1]", "a number of 101 characters"),
    ("long float, exponent", b"[1e" + b"0" * 99 + b"1]", "a number of 102 characters"),
    ("long integer", b"[" + b"7" * 101 + b"]", "a number of 101 characters"),
    ("huge integer", b"[" + b"7" * 5000 + b"]", "a number of 5,000 characters"),
    ("lone surrogate", b'["\\ud800"]', "a lone UTF-16 surrogate"),
    ("lone low surrogate in a key", b'{"\\udc00": 1}', "a lone UTF-16 surrogate"),
    ("surrogates out of order", b'["\\udc00\\ud800"]', "a lone UTF-16 surrogate"),
    ("nested too deep", DEEP_BAD, f"nested more than {MAX_DEPTH} levels"),
    ("objects nested too deep", OBJECTS_BAD, f"nested more than {MAX_DEPTH} levels"),
    ("far too deep", b"[" * 100_000, f"nested more than {MAX_DEPTH} levels"),
    ("not UTF-8", b'["caf\xe9"]', "not valid UTF-8"),
    ("encoded surrogate", b'["\xed\xa0\x80"]', "not valid UTF-8"),
    ("two byte order marks", b"\xef\xbb\xbf\xef\xbb\xbf{}", "not valid JSON"),
    ("UTF-16", '{"a": 1}'.encode("utf-16"), "the request is UTF-16"),
    ("UTF-32", '{"a": 1}'.encode("utf-32"), "the request is UTF-32"),
    ("trailing comma", b"[1,]", "not valid JSON"),
    ("trailing data", b"{} {}", "not valid JSON"),
    ("form feed", b"\x0c{}", "not valid JSON"),
    ("empty", b"", "the request is empty"),
    ("white space", b" \n\t", "the request is empty"),
    ("leading zero", b"[01]", "not valid JSON"),
    ("control character", b'["a\x01b"]', "not valid JSON"),
    # accepted by both, with one value
    ("nested to the limit", DEEP_OK, None),
    ("objects nested to the limit", OBJECTS_OK, None),
    ("longest float", b"[" + LONGEST + b"]", None),
    ("longest integer", b"[-" + b"9" * (MAX_NUMBER_CHARS - 1) + b"]", None),
    ("integer beyond 64 bits", b"[18446744073709551616, -9223372036854775809]", None),
    ("long digit run in a string", b'["' + b"7" * 5000 + b'"]', None),
    ("a run of exponent letters", b'{"e": "' + b"e" * 3000 + b'"}', None),
    ("largest float", b"[1.7976931348623157e308, 5e-324, -0.0, 1e-400]", None),
    ("surrogate pair", b'["\\ud83d\\ude00"]', None),
    ("escapes", b'["\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000"]', None),
    ("one byte order mark", b"\xef\xbb\xbf[1]", None),
    ("top-level scalar", b" 3.5 ", None),
]


@pytest.mark.parametrize(("raw", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_both_readers_give_one_answer(raw: bytes, message: str | None) -> None:
    _assert_one_answer(raw)
    outcome = _outcome(decode_json, raw)
    if message is None:
        assert outcome[0] == "read"
    else:
        assert outcome[0] == "refused"
        assert message in outcome[2]["message"]


def test_decode_object_keeps_its_messages() -> None:
    with pytest.raises(CtxasmError) as caught:
        decode_object(b"[1, 2]", what="result")
    assert caught.value.to_dict() == {
        "code": "invalid_json",
        "message": "the result must be a JSON object, got an array",
        "field": "result",
    }


# --- the long-number scan ----------------------------------------------------------------------

NUMBER_BYTES = re.compile(rb"[0-9+\-.eE]{%d}" % (MAX_NUMBER_CHARS + 1))


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from('0e.-+ax "'), st.integers(1, 150)), max_size=30))
@example([("7", 101)])
@example([("7", 100)])
@example([("1", 50), (".", 1), ("2", 49), ("e", 1), ("3", 1)])
def test_the_long_number_scan_finds_exactly_the_long_runs(runs: list[tuple[str, int]]) -> None:
    raw = "".join(char * count for char, count in runs).encode()
    expected = NUMBER_BYTES.search(raw) is not None
    assert jsonio._may_hold_a_long_number(raw) is expected


# --- differential: arbitrary JSON, written many ways, and broken ------------------------------


def _float_literals(value: float) -> st.SearchStrategy[str]:
    text = repr(value)
    mantissa, _, exponent = f"{value:.17e}".partition("e")
    return st.sampled_from(
        [
            text,
            text.upper(),
            f"{mantissa}e{int(exponent)}",
            f"{mantissa}E+{int(exponent):03d}" if int(exponent) >= 0 else text,
            f"{value:.25f}",
        ]
    )


def _string_literal(text: str, draw: Any) -> str:
    parts = ['"']
    for char in text:
        code = ord(char)
        how = draw(st.integers(0, 3))
        if char in '"\\' or code < 0x20 or how == 0:
            if code > 0xFFFF:
                high, low = divmod(code - 0x10000, 0x400)
                parts.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04X}")
            else:
                parts.append(f"\\u{code:04x}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


@st.composite
def json_texts(draw: Any, value: Any) -> str:
    """``value`` as JSON text, with varied spacing, escapes and number forms."""
    space = draw(st.sampled_from(["", " ", "\n  ", "\t", "\r\n"]))
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(draw(_float_literals(value)))
    if isinstance(value, str):
        return _string_literal(value, draw)
    if isinstance(value, list):
        items = [draw(json_texts(item)) for item in value]
        return "[" + space + ("," + space).join(items) + space + "]"
    members = [
        _string_literal(key, draw) + space + ":" + space + draw(json_texts(item))
        for key, item in value.items()
    ]
    return "{" + space + ("," + space).join(members) + space + "}"


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=2**63 - 2, max_value=2**64 + 2),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(["é", "“quoted”", "😀", "日本", "e1", "1e999"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=25,
)

FRAGMENTS = st.sampled_from(
    [
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e999",
        b"-1E400",
        b"0." + b"5" * 120,
        b"9" * 130,
        b'"\\ud800"',
        b'"\\udfff"',
        b'"\xed\xa0\x80"',
        b'"\xff"',
        b"[" * 70 + b"]" * 70,
        b'{"k": 1, "k": 2}',
        b'{"\\u006b": 1, "k": 2}',
        b"\xef\xbb\xbf",
        b"\x00",
        b",",
        b"]",
        b"}",
        b'"',
        b"\\",
        b"01",
        b"-",
        b"1.",
        b".5",
        b"1e",
        b"tru",
        b"nul",
    ]
)


@st.composite
def hostile_bytes(draw: Any) -> bytes:
    """JSON text, then maybe a few bytes or hostile fragments spliced in at random places."""
    raw = draw(JSON_VALUES.flatmap(json_texts)).encode(draw(st.sampled_from(["utf-8"] * 6)))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(raw)))
        cut = draw(st.integers(0, 2))
        insert = draw(st.one_of(FRAGMENTS, st.binary(max_size=3)))
        raw = raw[:at] + insert + raw[at + cut :]
    if draw(st.booleans()):
        raw = draw(st.sampled_from([b"", b"\xef\xbb\xbf", b" ", b"\xfe\xff"])) + raw
    return raw


@SETTINGS
@given(JSON_VALUES.flatmap(json_texts))
def test_json_written_any_way_gets_one_answer(text: str) -> None:
    _assert_one_answer(text.encode())


@SETTINGS
@given(hostile_bytes())
def test_broken_json_gets_one_answer(raw: bytes) -> None:
    _assert_one_answer(raw)


@SETTINGS
@given(JSON_VALUES, st.integers(1, 3))
def test_a_repeated_key_anywhere_is_refused_by_both(value: Any, copies: int) -> None:
    text = json.dumps({"wrap": [value, {"dup": 1, **{"other": 2}}]})
    text = text.replace('{"dup": 1', '{"dup": 1' + ', "dup": 0' * copies, 1)
    _assert_one_answer(text.encode())
    assert _outcome(decode_json, text.encode())[0] == "refused"
