"""``check-citations`` through a local typer app.

The command is not registered in ``ctxasm.cli.main`` yet, so these tests mount
``check_citations_command`` on a tiny app of their own, under the name it will have. Once it is
registered, the real console script (``ctxasm check-citations``) is also tested in
tests/cli/test_cli.py by the maintainer.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

import ctxasm
from ctxasm.cli.citations_cmd import check_citations_command

PARIS = "https://example.org/paris"
PASSAGES = [
    {"id": "paris", "text": "Paris is the capital of France.", "score": 0.9, "url": PARIS},
    {"id": "seine", "text": "The Seine flows through Paris.", "score": 0.8},
    {"id": "eiffel", "text": "The Eiffel Tower was built in 1889.", "score": 0.6},
]
GOOD = "Paris is the capital of France [Source 1]. The Seine flows through it [2].\n"
BAD = "Paris is the capital [1]. The tower is on the moon [Source 7].\n"

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command("check-citations")(check_citations_command)


@app.callback()
def _main() -> None:
    """A group, so the command is invoked by name as in the real CLI."""


@cache
def _result() -> dict[str, Any]:
    return ctxasm.assemble(
        "What is the capital of France?", PASSAGES, strategy={"ordering": "retrieval"}
    ).to_dict()


@pytest.fixture
def result_file(tmp_path: Path) -> Path:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(_result()))
    return path


def check(*args: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner().invoke(app, ["check-citations", *args], input=stdin)


def test_valid_citations_exit_0_with_the_json_report(result_file: Path, tmp_path: Path) -> None:
    answer = tmp_path / "answer.md"
    answer.write_text(GOOD)
    done = check(str(result_file), str(answer))
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout) == {
        "citations": [
            {
                "label": "Source 1",
                "id": "paris",
                "url": PARIS,
                "valid": True,
                "raw": "[Source 1]",
                "form": "bracket",
                "link": None,
                "mislinked": False,
            },
            {
                "label": "Source 2",
                "id": "seine",
                "url": None,
                "valid": True,
                "raw": "[2]",
                "form": "bracket",
                "link": None,
                "mislinked": False,
            },
        ],
        "invalid": [],
        "cited_ids": ["paris", "seine"],
        "uncited_ids": ["eiffel"],
        "uncited_sentences": [],
        "coverage": 1.0,
        "mislinked": [],
        "forms": {"bracket": 2},
    }
    assert done.stdout.startswith('{\n  "citations"')  # indented by 2
    assert done.stderr == ""


def test_invalid_citations_exit_1_and_say_which(result_file: Path) -> None:
    done = check(str(result_file), "-", stdin=BAD)
    assert done.exit_code == 1
    report = json.loads(done.stdout)
    assert report["invalid"] == ["Source 7"]
    assert report["coverage"] == 0.5
    assert done.stderr == "ctxasm: invalid citations: Source 7\n"


def test_the_answer_defaults_to_standard_input(result_file: Path) -> None:
    done = check(str(result_file), stdin=GOOD)
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["cited_ids"] == ["paris", "seine"]


def test_the_result_may_come_from_standard_input(result_file: Path, tmp_path: Path) -> None:
    answer = tmp_path / "answer.md"
    answer.write_text(BAD)
    done = check("-", str(answer), stdin=result_file.read_text())
    assert done.exit_code == 1
    assert json.loads(done.stdout)["invalid"] == ["Source 7"]


def test_links_prints_the_rewritten_answer(result_file: Path) -> None:
    done = check(str(result_file), "--links", stdin=GOOD)
    assert done.exit_code == 0, done.stderr
    assert done.stdout == (
        f"Paris is the capital of France [Source 1]({PARIS}). The Seine flows through it [2].\n"
    )


def test_links_with_invalid_citations_still_exits_1(result_file: Path) -> None:
    done = check(str(result_file), "-", "--links", stdin=BAD)
    assert done.exit_code == 1
    assert (
        done.stdout == f"Paris is the capital [1]({PARIS}). The tower is on the moon [Source 7].\n"
    )
    assert done.stderr == "ctxasm: invalid citations: Source 7\n"


def test_text_prints_a_readable_summary(result_file: Path) -> None:
    done = check(str(result_file), "--text", stdin="Paris [1]. Rivers [9]. Towers.")
    assert done.exit_code == 1
    assert done.stdout.splitlines() == [
        "citations: 2 (1 valid)",
        "forms: bracket 2",
        "invalid: Source 9",
        "cited: paris",
        "uncited sources: seine, eiffel",
        "coverage: 33% of sentences cite a valid source",
        "uncited: Towers.",
    ]


def _bad_result(path: Path, content: bytes) -> str:
    path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"report": ', "the result is not valid JSON: Expecting value at line 1 column 12"),
        (b'{"r": "caf\xe9"}', "the result is not valid UTF-8"),
        (b"[1, 2]", "the result must be a JSON object"),
        (
            b"{}",
            "report must be an object with an 'included' list (the result JSON of ctxasm "
            "assemble, or its report); got no 'report'",
        ),
        (b'{"report": {"included": {}}}', "report.included must be a list"),
        (
            b'{"report": {"included": [{"id": "a", "label": "Doc 1"}]}}',
            "report.included[0].label must be 'Source N' with N from 1 to 999,999,999; "
            "got 'Doc 1' [report.included[0].label]",
        ),
        (  # more digits than int() reads was an internal error
            b'{"report": {"included": [{"id": "a", "label": "Source 1' + b"0" * 5000 + b'"}]}}',
            "report.included[0].label must be 'Source N' with N from 1 to 999,999,999; "
            "got 'Source 1000",
        ),
    ],
)
def test_a_bad_result_exits_2_with_one_line(tmp_path: Path, content: bytes, expected: str) -> None:
    done = check(_bad_result(tmp_path / "result.json", content), stdin=GOOD)
    assert done.exit_code == 2
    assert done.stdout == ""
    assert done.stderr.startswith("ctxasm: error: ")
    assert expected in done.stderr
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_the_arguments_swapped_are_told_the_order(result_file: Path, tmp_path: Path) -> None:
    # It said only "the result is not valid JSON".
    answer = tmp_path / "answer.txt"
    answer.write_text(GOOD, encoding="utf-8")
    done = check(str(answer), str(result_file))
    assert (done.exit_code, done.stdout) == (2, "")
    assert done.stderr == (
        "ctxasm: error: the result is not valid JSON: Expecting value at line 1 column 1, but "
        f"{result_file} is a result: the first argument is the result JSON of ctxasm assemble; "
        "the answer comes second [result]\n"
    )
    # an answer that is JSON but no result (a chat completion) is no sign of a swap
    completion = tmp_path / "completion.json"
    completion.write_text(json.dumps({"choices": [{"message": {"content": GOOD}}]}))
    done = check(str(answer), str(completion))
    assert done.stderr == (
        "ctxasm: error: the result is not valid JSON: Expecting value at line 1 column 1 [result]\n"
    )


def test_unreadable_files_exit_2(result_file: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    done = check(str(missing), stdin=GOOD)
    assert done.exit_code == 2
    assert done.stderr == (
        f"ctxasm: error: cannot read {missing}: No such file or directory [result]\n"
    )
    done = check(str(result_file), str(tmp_path / "missing.md"))
    assert done.exit_code == 2
    assert done.stderr.endswith("No such file or directory [answer]\n")


def test_an_input_over_its_limit_exits_2_unread(
    result_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # check-citations /dev/zero answer.md read until the memory ran out: MemoryError, exit 1
    monkeypatch.setattr("ctxasm.cli.citations_cmd.MAX_RESULT_BYTES", result_file.stat().st_size)
    monkeypatch.setattr("ctxasm.cli.citations_cmd.MAX_ANSWER_BYTES", len(GOOD))
    assert check(str(result_file), stdin=GOOD).exit_code == 0  # at the limits: read
    big = tmp_path / "big.json"
    big.write_bytes(result_file.read_bytes() + b" ")
    done = check(str(big), stdin=GOOD)
    size = big.stat().st_size
    assert (done.exit_code, done.stdout, done.stderr) == (
        2,
        "",
        f"ctxasm: error: the result {big} is too large: it is {size:,} bytes, more than "
        f"{size - 1:,} [result]\n",
    )
    # standard input (or a device such as /dev/zero) is read no further than the limit
    done = check(str(result_file), stdin=GOOD + " ")
    assert (done.exit_code, done.stdout, done.stderr) == (
        2,
        "",
        "ctxasm: error: the answer on standard input is too large: it holds more than "
        f"{len(GOOD):,} bytes [answer]\n",
    )


def test_an_answer_that_is_not_utf8_exits_2(result_file: Path) -> None:
    done = check(str(result_file), stdin=b"caf\xe9 [1]")
    assert done.exit_code == 2
    assert done.stderr.startswith("ctxasm: error: the answer is not valid UTF-8")
    assert done.stderr.endswith("[answer]\n")


def test_both_from_standard_input_exits_2() -> None:
    done = check("-", "-", stdin="{}")
    assert done.exit_code == 2
    assert "cannot both be standard input" in done.stderr


def test_text_names_the_spellings_it_recognised(result_file: Path) -> None:
    answer = "Paris (Source 1). Rivers [Ѕource 9]. Towers Source 3. More [2].\n"
    done = check(str(result_file), "--text", stdin=answer)
    assert done.exit_code == 1
    assert done.stdout.splitlines()[:5] == [
        "citations: 4 (3 valid)",
        "forms: parenthesis 1, confusable 1, bare 1, bracket 1",
        "recognised: '(Source 1)' as parenthesis",
        "recognised: '[Ѕource 9]' as confusable",
        "recognised: 'Source 3' as bare",
    ]
    assert done.stderr == "ctxasm: invalid citations: Source 9\n"


def test_json_reports_each_raw_spelling_and_form(result_file: Path) -> None:
    done = check(str(result_file), stdin="Old 【Source 9】 and new [Source ２].")
    assert done.exit_code == 1
    report = json.loads(done.stdout)
    assert [(c["raw"], c["form"], c["valid"]) for c in report["citations"]] == [
        ("【Source 9】", "cjk_bracket", False),
        ("[Source ２]", "fullwidth", True),
    ]
    assert report["forms"] == {"cjk_bracket": 1, "fullwidth": 1}


@pytest.mark.parametrize(
    ("saved", "checked"),
    [
        ({"id": "c", "choices": [{"message": {"role": "assistant", "content": GOOD}}]}, GOOD),
        ({"type": "message", "content": [{"type": "text", "text": BAD}]}, BAD),
        ({"choices": [{"message": {"content": [{"type": "text", "text": GOOD}]}}]}, GOOD),
        (
            {"output": [{"type": "message", "content": [{"type": "output_text", "text": BAD}]}]},
            BAD,
        ),
        ({"choices": "no list"}, None),  # not a completion: its own text is the answer
    ],
)
def test_a_chat_completion_saved_as_json_is_read_as_its_answer(
    result_file: Path, tmp_path: Path, saved: dict[str, Any], checked: str | None
) -> None:
    """An API's response saved whole (first-hour review: its JSON text was checked)."""
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(saved))
    done = check(str(result_file), str(answer), "--links")
    as_is = check(str(result_file), "-", "--links", stdin=checked or json.dumps(saved))
    assert (done.exit_code, done.stdout) == (as_is.exit_code, as_is.stdout)
    assert done.stdout == (as_is.stdout if checked else json.dumps(saved))
    assert ("no chat completion" in done.stderr) is (checked is None)


_NO_TEXT = [
    {  # OpenAI: a refusal
        "object": "chat.completion",
        "choices": [{"message": {"role": "assistant", "content": None, "refusal": "I can't."}}],
    },
    {  # OpenAI: a tool call
        "choices": [
            {"message": {"role": "assistant", "content": None, "tool_calls": [{"id": "t"}]}}
        ]
    },
    {"type": "message", "role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
    {"object": "response", "output": [{"type": "function_call", "name": "f"}]},
    # review rv16: empty content, as servers send beside tool calls and reasoning models when
    # they run out of tokens, passed with coverage 1.0
    {"choices": [{"message": {"role": "assistant", "content": "", "tool_calls": [{"id": "t"}]}}]},
    {"choices": [{"message": {"role": "assistant", "content": " \n"}}]},
    {"type": "message", "role": "assistant", "content": [{"type": "text", "text": ""}]},
    # review rv17: text of characters that draw nothing is no text either
    {"choices": [{"message": {"role": "assistant", "content": "\u200b\ufeff \u2800"}}]},
]


@pytest.mark.parametrize("saved", _NO_TEXT)
def test_a_completion_with_no_text_exits_2_as_the_library_and_the_service_refuse_it(
    result_file: Path, tmp_path: Path, saved: dict[str, Any]
) -> None:
    """Review rv14: its JSON was checked as the answer's text, found no citation and passed."""
    from fastapi.testclient import TestClient

    from ctxasm.citations import NO_TEXT
    from ctxasm.service.app import create_app

    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(saved))
    done = check(str(result_file), str(answer))
    assert (done.exit_code, done.stderr) == (2, f"ctxasm: error: {NO_TEXT}\n")
    with pytest.raises(ctxasm.RequestError) as caught:
        ctxasm.check_citations(saved, _result())
    assert (caught.value.field, caught.value.message) == ("answer", NO_TEXT)
    served = TestClient(create_app()).post(
        "/v1/check-citations", json={"answer": saved, "result": _result()}
    )
    assert served.status_code == 422
    assert (served.json()["error"]["field"], served.json()["error"]["message"]) == (
        "answer",
        NO_TEXT,
    )
