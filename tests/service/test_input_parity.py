"""Issue 10, item 7: the Python parser, the CLI and the HTTP service agree on every input.

Each bad input goes through ``ctxasm.jsonio`` (the one parser), ``ctxasm assemble -`` and a real
``ctxasm serve`` on loopback; all three must refuse it with the same code, field and message:
the CLI with exit 2 and ``ctxasm: error: MESSAGE [FIELD]``, the service with 413 (too large) or
422 and the same JSON error. The one difference: standard input over the limit is not read to its
end, so the CLI does not state its size.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from typer.testing import CliRunner

import ctxasm
from ctxasm.cli.main import HITS_HINT, app
from ctxasm.errors import CtxasmError
from ctxasm.jsonio import decode_object

LIMIT = 200_000
GOOD = {
    "query": "Where did Aristotle teach?",
    "passages": [{"id": "a", "text": "Aristotle taught at the Lyceum.", "score": 0.9}],
}
_GOOD = json.dumps(GOOD).encode()

CASES: list[tuple[str, bytes, str, str]] = [
    (
        "deep nesting (recursion)",
        b'{"query": "q", "passages": ' + b"[" * 100_000,
        "invalid_json",
        "the request is nested more than 64 levels deep (arrays and objects)",
    ),
    (
        "nesting over the limit, valid JSON",
        b'{"query": "q", "passages": [], "strategy": ' + b"[" * 70 + b"]" * 70 + b"}",
        "invalid_json",
        "the request is nested more than 64 levels deep (arrays and objects)",
    ),
    (
        "5,000-digit integer",
        b'{"query": "q", "passages": [], "top_k": ' + b"7" * 5000 + b"}",
        "invalid_json",
        "the request has a number of 5,000 characters; at most 100 are allowed",
    ),
    (
        "UTF-16 with a byte order mark",
        json.dumps(GOOD).encode("utf-16"),
        "invalid_json",
        "the request is UTF-16 (it starts with a UTF-16 byte order mark); send UTF-8",
    ),
    (
        "UTF-16 without a byte order mark",
        json.dumps(GOOD).encode("utf-16-le"),
        "invalid_json",
        "the request starts with NUL bytes, as UTF-16 or UTF-32 text does; send UTF-8",
    ),
    (
        "NaN",
        b'{"query": "q", "passages": [{"text": "a", "score": NaN}]}',
        "invalid_json",
        "the request has NaN, which is not a JSON number; numbers must be finite",
    ),
    (
        "a float that overflows",
        b'{"query": "q", "passages": [{"text": "a", "score": 1e999}]}',
        "invalid_json",
        "the request has the number 1e999, which is too large for a float; numbers must be finite",
    ),
    (
        "a repeated key",
        b'{"query": "q", "passages": [], "query": "other"}',
        "invalid_json",
        "the request repeats the key 'query' in one object; each key may appear once",
    ),
    (
        "a lone surrogate",
        b'{"query": "q\\ud800", "passages": []}',
        "invalid_json",
        "the request has a string with a lone UTF-16 surrogate escape (\\ud800 to \\udfff "
        "without its pair), which is not text",
    ),
    (
        "not UTF-8",
        b'{"query": "caf\xe9", "passages": []}',
        "invalid_json",
        "the request is not valid UTF-8 (byte 14: invalid continuation byte)",
    ),
    (
        "not JSON",
        b"{not json",
        "invalid_json",
        "the request is not valid JSON: Expecting property name enclosed in double quotes at "
        "line 1 column 2",
    ),
    ("empty", b"", "invalid_json", "the request is empty"),
    ("white space", b" \r\n\t", "invalid_json", "the request is empty"),
    ("an array", b"[1, 2]", "invalid_json", "the request must be a JSON object, got an array"),
    (
        "over the size limit",
        b'{"query": "q", "passages": [], "system_prompt": "' + b"x" * LIMIT + b'"}',
        "too_large",
        f"the request is {LIMIT + 51:,} bytes, more than the limit of 200,000 bytes",
    ),
]


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory,
    start_service: Callable[..., AbstractContextManager[tuple[str, int]]],
) -> Iterator[str]:
    config = tmp_path_factory.mktemp("parity") / "ctxasm.toml"
    config.write_text(f"[limits]\nmax_body_bytes = {LIMIT}\n", encoding="utf-8")
    with start_service(config) as (base, _):
        yield base


def _http(base: str, raw: bytes) -> tuple[int, Any]:
    """The status and body; an error's request id (the service's, not the parser's) is checked
    against the x-request-id header and taken out, so the rest compares with the parser's."""
    request = urllib.request.Request(f"{base}/v1/assemble", data=raw, method="POST")
    request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = json.loads(error.read())
        assert body["error"].pop("request_id") == error.headers["x-request-id"]
        return error.code, body


def _cli(raw: bytes) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, ["assemble", "-", "--max-bytes", str(LIMIT)], input=raw)
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return done.exit_code, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("raw", "code", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_parser_cli_and_service_refuse_alike(
    service: str, raw: bytes, code: str, message: str
) -> None:
    with pytest.raises(CtxasmError) as caught:
        decode_object(raw, max_bytes=LIMIT)
    expected = {"code": code, "message": message, "field": "request"}
    assert caught.value.to_dict() == expected
    # the CLI also takes a bare list of retriever hits (with --query), and says so
    hint = f"; {HITS_HINT}" if raw.startswith(b"[") else ""
    said = message
    if code == "too_large":  # standard input is not read past the limit: its size is unknown
        said = f"the request is more than the limit of {LIMIT:,} bytes"
    if message == "the request is empty":  # the CLI names what was empty
        said += ": standard input held " + ("nothing" if not raw else "only white space")
    assert _cli(raw) == (2, "", f"ctxasm: error: {said}{hint} [request]\n")
    status = 413 if code == "too_large" else 422
    assert _http(service, raw) == (status, {"error": expected})


def test_a_utf8_byte_order_mark_is_accepted_everywhere(service: str) -> None:
    raw = b"\xef\xbb\xbf" + _GOOD
    assert decode_object(raw) == GOOD
    status, result = _http(service, raw)
    exit_code, stdout, _ = _cli(raw)
    assert (status, exit_code) == (200, 0)
    from_cli = json.loads(stdout)
    for output in (result, from_cli):
        output["report"].pop("timings_ms")
    assert result == from_cli
    assert [item["id"] for item in result["report"]["included"]] == ["a"]


def test_batch_lines_get_the_same_errors() -> None:
    from ctxasm.assembler import Assembler
    from ctxasm.batch.jsonl import assemble_line

    assembler = Assembler()
    for _, raw, code, message in CASES:
        if not raw.strip():
            continue  # a blank line is skipped, not an error
        outcome, line = assemble_line(raw.replace(b"\n", b" "), 7, assembler, max_line_bytes=LIMIT)
        assert (outcome, json.loads(line or "{}")) == (
            "failed",
            {"error": {"code": code, "message": message, "field": "request"}, "line": 7},
        )


HITS = [
    {"page_content": "Aristotle taught at the Lyceum.", "similarity": 0.8, "metadata": {"x": 1}},
    {"content": "Plato founded the Academy.", "score": 0.3, "id": 7},
]


def _same(*results: dict[str, Any]) -> dict[str, Any]:
    """The one result all of ``results`` are, timings aside."""
    for result in results:
        result["report"].pop("timings_ms")
    assert all(result == results[0] for result in results[1:])
    return results[0]


def test_a_request_of_hits_is_taken_alike_everywhere(service: str) -> None:
    # the hits the CLI took as a bare list are a request field: the service takes them too
    from ctxasm.assembler import Assembler
    from ctxasm.batch.jsonl import assemble_line

    request = {"query": "Where did Aristotle teach?", "hits": HITS}
    raw = json.dumps(request).encode()
    status, by_service = _http(service, raw)
    code, by_cli, _ = _cli(raw)
    bare = CliRunner().invoke(
        app, ["assemble", "-", "--query", request["query"]], input=json.dumps(HITS)
    )
    outcome, line = assemble_line(raw, 1, Assembler())
    assert (status, code, bare.exit_code, outcome) == (200, 0, 0, "ok")
    result = _same(
        by_service,
        json.loads(by_cli),
        json.loads(bare.stdout),
        json.loads(line or "{}"),
        ctxasm.assemble(**request).to_dict(),
    )
    assert [item["id"] for item in result["report"]["included"]] == ["hit-f333e016ef", "7"]


def test_a_bad_hit_is_refused_alike_everywhere(service: str) -> None:
    from ctxasm.assembler import Assembler
    from ctxasm.batch.jsonl import assemble_line

    raw = json.dumps({"query": "q", "hits": [HITS[0], {"content": "x", "score": "0.9"}]}).encode()
    error = {
        "code": "invalid_request",
        "message": "hits[1].score must be a number or null; got str '0.9'",
        "field": "hits[1].score",
    }
    assert _http(service, raw) == (422, {"error": error})
    assert _cli(raw) == (2, "", f"ctxasm: error: {error['message']} [{error['field']}]\n")
    assert assemble_line(raw, 3, Assembler()) == (
        "failed",
        json.dumps({"error": error, "line": 3}),
    )
