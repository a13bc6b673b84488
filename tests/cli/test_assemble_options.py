"""``ctxasm assemble``: options that replace request fields, a bare list of retriever hits, and
size errors that state the real size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ctxasm.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "request.json"
HITS = [
    {
        "page_content": "Aristotle taught at the Lyceum in Athens.",
        "metadata": {"source": "wiki/aristotle", "title": "Aristotle", "page": 3},
        "similarity": 0.82,
    },
    {"content": "Plato founded the Academy.", "score": 0.6, "id": 7},
    {"text": "Bananas are rich in potassium.", "score": 0.1, "url": "https://example.org/b"},
]


def _assemble(*args: str, stdin: bytes | None = None) -> tuple[int, Any, str]:
    done = CliRunner().invoke(app, ["assemble", *args], input=stdin)
    output = json.loads(done.stdout) if done.exit_code == 0 else done.stdout
    return done.exit_code, output, done.stderr


def test_options_replace_the_request_fields() -> None:
    code, result, err = _assemble(
        str(EXAMPLE),
        "--model",
        "claude-sonnet-4-5",
        "--format",
        "markdown",
        "--max-context-tokens",
        "120",
        "--query",
        "Who taught Alexander?",
    )
    assert code == 0, err
    report = result["report"]
    assert (report["model"], report["budget"]["context"]) == ("claude-sonnet-4-5", 120)
    assert result["messages"] == [] and result["text"].startswith("## Instructions")
    assert "Who taught Alexander?" in result["text"]


def test_budget_is_another_name_for_max_context_tokens() -> None:
    code, result, err = _assemble(str(EXAMPLE), "--report", "--budget", "120")
    assert code == 0, err
    assert result["report"]["budget"]["context"] == 120


def test_a_bad_override_names_the_field() -> None:
    assert _assemble(str(EXAMPLE), "--format", "html")[::2] == (
        2,
        "ctxasm: error: unknown format 'html'; choose one of anthropic, markdown, openai, text, "
        "template [format]\n",
    )


def test_indent_is_bounded() -> None:
    # --indent 100000000 wrote gigabytes of spaces
    assert _assemble(str(EXAMPLE), "--indent", "16")[0] == 0
    for value in ("17", "-1", "100000000"):
        code, _, err = _assemble(str(EXAMPLE), "--indent", value)
        assert code == 2 and "--indent" in err


def test_a_bare_list_of_hits_with_query() -> None:
    code, result, err = _assemble(
        "-", "--query", "Where did Aristotle teach?", stdin=json.dumps(HITS).encode()
    )
    assert code == 0, err
    included = {item["id"]: item for item in result["report"]["included"]}
    excluded = {item["id"]: item["reason"] for item in result["report"]["excluded"]}
    assert sorted([*included, *excluded]) == ["7", "hit-ba939aa432", "hit-fc9c94a322"]
    first = included["hit-fc9c94a322"]
    assert (first["score"], first["source"]) == (0.82, "wiki/aristotle")


def test_a_list_of_hits_needs_query() -> None:
    assert _assemble("-", stdin=json.dumps(HITS).encode())[::2] == (
        2,
        "ctxasm: error: the request must be a JSON object, got an array; for a list of "
        "retriever hits, give the question with --query [request]\n",
    )


def test_a_hit_without_text_is_named() -> None:
    hits = json.dumps([{"body": "x"}]).encode()
    assert _assemble("-", "--query", "q", stdin=hits)[::2] == (
        2,
        "ctxasm: error: hits[0] needs its text as a string in one of text, content, "
        "page_content; found the keys 'body' [hits[0].text]\n",
    )


def test_a_scalar_is_refused_as_every_entry_point_refuses_it() -> None:
    assert _assemble("-", "--query", "q", stdin=b'"text"')[::2] == (
        2,
        "ctxasm: error: the request must be a JSON object, got a string [request]\n",
    )


def test_id_and_metadata_come_back_on_the_result() -> None:
    data = {**json.loads(EXAMPLE.read_text()), "id": "q-17", "metadata": {"user": "ann"}}
    code, result, err = _assemble("-", stdin=json.dumps(data).encode())
    assert code == 0, err
    assert list(result)[:2] == ["id", "metadata"]
    assert (result["id"], result["metadata"]) == ("q-17", {"user": "ann"})


def test_too_large_states_the_real_size_of_a_file(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 5000)
    assert _assemble(str(big), "--max-bytes", "1000")[::2] == (
        2,
        "ctxasm: error: the request is 5,000 bytes, more than the limit of 1,000 bytes [request]\n",
    )


def test_too_large_on_a_stream_is_refused_at_the_limit() -> None:
    # a pipe is not read to its end to state its size: yes | ctxasm assemble - never ended
    assert _assemble("-", "--max-bytes", "1000", stdin=b" " * 3_000_123)[::2] == (
        2,
        "ctxasm: error: the request is more than the limit of 1,000 bytes [request]\n",
    )
