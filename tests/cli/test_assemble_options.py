"""``ctxasm assemble``: options that replace request fields, a bare list of retriever hits,
size errors that state the real size, and what an empty input or a JSONL file is told."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
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


def test_a_budget_no_relevant_passage_fits_is_warned_of() -> None:
    # Exit 0 and not a word: the prompt told the model the information could not be found.
    code, result, err = _assemble(str(EXAMPLE), "--budget", "20")
    assert (code, result["report"]["included"]) == (0, [])
    assert err == (
        "ctxasm: warning: none of the 5 relevant passages fits the context budget of 20 tokens "
        "(over_budget in the report), so the prompt says no sources could be included; raise "
        "--budget (max_context_tokens in a request; the window leaves 126886)\n"
    )
    assert _assemble(str(EXAMPLE), "--budget", "120")[2] == ""  # some fit: nothing to say


def test_a_window_too_full_for_any_passage_is_warned_of() -> None:
    request = {**json.loads(EXAMPLE.read_text(encoding="utf-8")), "model": "gpt-4"}
    request.pop("max_context_tokens")
    request["reserve_output_tokens"] = 8080  # of gpt-4's 8,192
    code, result, err = _assemble("-", stdin=json.dumps(request).encode())
    assert (code, result["report"]["budget"]["context"]) == (0, 22)
    assert err == (
        "ctxasm: warning: none of the 5 relevant passages fits the context budget of 22 tokens "
        "(over_budget in the report), so the prompt says no sources could be included; shorten "
        "the query, history or system prompt, or lower reserve_output_tokens\n"
    )


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


def test_a_bare_list_of_llamaindex_nodes_with_scores() -> None:
    node = {
        "id_": "n1",
        "text": "Aristotle taught at the Lyceum.",
        "metadata": {"file_name": "a.pdf"},
    }
    hits = json.dumps([{"node": node, "score": 0.8, "class_name": "NodeWithScore"}]).encode()
    code, result, err = _assemble("-", "--query", "Where did Aristotle teach?", stdin=hits)
    assert code == 0, err
    assert [item["id"] for item in result["report"]["included"]] == ["n1"]
    assert "[Source 1] a.pdf\n" in result["messages"][-1]["content"]
    bad = json.dumps([{"node": {"id_": "n1"}, "score": 0.8}]).encode()
    assert _assemble("-", "--query", "q", stdin=bad)[::2] == (
        2,
        "ctxasm: error: hits[0].node needs its text as a string in text or "
        "text_resource.text; found the keys 'id_' [hits[0].node.text]\n",
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


def _console(*args: str, stdin: Any) -> subprocess.CompletedProcess[str]:
    """The console script (its fast path for ``assemble`` included), as a user runs it."""
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    return subprocess.run(
        [*command, *args], stdin=stdin, capture_output=True, text=True, timeout=120
    )


def test_a_jsonl_file_is_pointed_to_batch() -> None:
    done = _console("assemble", str(ROOT / "examples" / "requests.jsonl"), stdin=None)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ctxasm: error: the request is not valid JSON: Extra data at line 2 column 1; one "
        "request per line? use `ctxasm batch` [request]\n"
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (b'{"query": "q"} {"query": "r"}', "Extra data at line 1 column 16"),  # one line
        (b'{"query": "q"}\n]', "Extra data at line 2 column 1"),  # no second value, still more
        (b'{"query": "q",\n"passages": [}\n{}', "Expecting value at line 2 column 14"),
    ],
)
def test_only_more_json_after_a_line_end_gets_the_batch_hint(given: bytes, message: str) -> None:
    code, _, err = _assemble("-", stdin=given)
    assert code == 2
    hint = "; one request per line? use `ctxasm batch`" if given.endswith(b"]") else ""
    assert err == f"ctxasm: error: the request is not valid JSON: {message}{hint} [request]\n"


def test_empty_standard_input_is_called_empty() -> None:
    # `ctxasm assemble < /dev/null`, or a bare `ctxasm assemble` in a script
    for args in (("assemble",), ("assemble", "-")):
        done = _console(*args, stdin=subprocess.DEVNULL)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            "ctxasm: error: the request is empty: standard input held nothing [request]\n"
        )
    assert _assemble("-", stdin=b" \r\n\t\n")[::2] == (
        2,
        "ctxasm: error: the request is empty: standard input held only white space [request]\n",
    )


def test_an_empty_file_is_named(tmp_path: Path) -> None:
    empty, blank = tmp_path / "empty.json", tmp_path / "blank.json"
    empty.write_bytes(b"")
    blank.write_bytes(b"\xef\xbb\xbf\n\n")  # a byte order mark and line ends
    assert _assemble(str(empty))[::2] == (
        2,
        f"ctxasm: error: the request is empty: {empty} holds nothing [request]\n",
    )
    assert _assemble(str(blank))[::2] == (
        2,
        f"ctxasm: error: the request is empty: {blank} holds only white space [request]\n",
    )


def test_report_calls_an_empty_input_an_empty_result() -> None:
    done = _console("report", "-", stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stderr) == (
        2,
        "ctxasm: error: the result is empty: standard input held nothing [result]\n",
    )
