"""The real console script, run as a user runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from ctxasm import __version__

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "request.json"


def ctxasm(
    *args: str, stdin: bytes | Path | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The console script's run; ``stdin`` is its input, or the file it reads (``< FILE``)."""
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    with ExitStack() as files:
        redirected = files.enter_context(stdin.open("rb")) if isinstance(stdin, Path) else None
        return subprocess.run(
            [*command, *args],
            input=stdin if isinstance(stdin, bytes) else None,
            stdin=redirected,
            capture_output=True,
            cwd=cwd,
            env=os.environ.copy(),
            timeout=120,
        )


def request(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = json.loads(EXAMPLE.read_text())
    data.update(overrides)
    return data


def test_assemble_file_writes_the_result_json() -> None:
    done = ctxasm("assemble", str(EXAMPLE))
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert set(result) == {"messages", "system", "text", "report"}
    report = result["report"]
    assert [item["id"] for item in report["included"]] == ["aristotle-1", "plato", "alexander"]
    assert {e["id"]: e["reason"] for e in report["excluded"]} == {
        "aristotle-2": "merged",
        "alexander-copy": "duplicate",
        "bananas": "below_threshold",
    }
    assert done.stderr == b""


def test_assemble_reads_stdin_and_prints_a_report() -> None:
    done = ctxasm("assemble", "-", "--report", stdin=EXAMPLE.read_bytes())
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["report"]["selected"] == 3
    shown = done.stderr.decode()
    for expected in (
        "Budget: gpt-4o-mini",
        "Included: 3 of 6",
        "Excluded: 3",
        "merged",
        "reserve_output",
        "relevance given: given scores used: nothing to check them by",
    ):
        assert expected in shown


def test_the_report_names_the_no_sources_note_as_what_the_context_holds() -> None:
    # with nothing included, the context holds the note that says so: above a tiny "context",
    # that is no overflow (first-hour review fh2 F9)
    request = {"query": "Where did Aristotle teach?", "passages": [{"text": "Bananas."}]}
    request["max_context_tokens"] = 5
    done = ctxasm("assemble", "-", "--report", stdin=json.dumps(request).encode())
    assert done.returncode == 0, done.stderr.decode()
    assert "context used (the no-sources note)" in done.stderr.decode()
    done = ctxasm("assemble", "-", "--report", stdin=EXAMPLE.read_bytes())
    assert "context used " in done.stderr.decode()
    assert "no-sources note" not in done.stderr.decode()


@pytest.mark.parametrize(
    ("payload", "message", "field"),
    [
        (b'{"query": "x", "passages": [', "not valid JSON", "[request]"),
        (b'{"query": "caf\xe9", "passages": []}', "not valid UTF-8", "[request]"),
        (b"[1, 2]", "must be a JSON object", "[request]"),
        (json.dumps({"passages": []}).encode(), "query is required", "[query]"),
        (json.dumps({"query": "  ", "passages": []}).encode(), "must not be empty", "[query]"),
        (json.dumps(request(model="gpt-4o-mnii")).encode(), "did you mean", "[model]"),
        (
            json.dumps(request(strategy={"selection": "greedy"})).encode(),
            "choose one of auto, bridge, coverage, greedy_by_score",
            "[strategy.selection]",
        ),
        (
            json.dumps({"query": "q", "passages": [{"id": "a", "text": 5}]}).encode(),
            "passages[0].text must be a string",
            "[passages[0].text]",
        ),
        (
            json.dumps({"query": "q", "passages": [{"text": "a", "score": "NaN"}]}).encode(),
            "must be a number",
            "[passages[0].score]",
        ),
        (
            b'{"query": "q", "passages": [{"text": "a", "score": NaN}]}',
            "NaN, which is not a JSON number; numbers must be finite",
            "[request]",
        ),
        (
            json.dumps({"query": "q", "passages": [], "max_context_tokens": 0}).encode(),
            "integer >= 1",
            "[max_context_tokens]",
        ),
        (
            json.dumps({"query": "q", "passages": [], "reserve_output_tokens": 10**6}).encode(),
            "exceeds gpt-4o's maximum output",
            "[reserve_output_tokens]",
        ),
        (
            json.dumps(
                {"query": "q", "passages": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}
            ).encode(),
            "must be unique",
            "[passages[1].id]",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith("[") else None,
)
def test_bad_input_exits_2_with_a_short_message(payload: bytes, message: str, field: str) -> None:
    done = ctxasm("assemble", "-", stdin=payload)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert message in err and field in err
    assert "Traceback" not in err
    assert done.stdout == b""
    assert len(err.splitlines()) == 1


def test_a_request_hundreds_of_megabytes_long_is_refused_quickly(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:  # a sparse 300 MB file: no disk is written
        handle.truncate(300 * 1024 * 1024)
    done = ctxasm("assemble", str(huge))
    err = done.stderr.decode()
    assert done.returncode == 2
    assert "more than the limit of 67,108,864" in err and "Traceback" not in err


def test_a_request_that_cannot_fit_states_every_section() -> None:
    data = {"query": "q", "passages": [], "context_window": 60, "reserve_output_tokens": 10}
    done = ctxasm("assemble", "-", stdin=json.dumps(data).encode())
    err = done.stderr.decode()
    assert done.returncode == 2
    for section in (
        "system",
        "query",
        "history",
        "overhead",
        "reserve_output 10",
        "context window 60",
    ):
        assert section in err


def test_missing_file_is_bad_input(tmp_path: Path) -> None:
    done = ctxasm("assemble", str(tmp_path / "nope.json"))
    assert done.returncode == 2
    assert b"cannot read" in done.stderr and b"Traceback" not in done.stderr


def test_batch_streams_results_and_error_records(tmp_path: Path) -> None:
    good = json.dumps(request())
    lines = [good, "{not json", "", json.dumps(request(model="no-such-model")), good]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("\n".join(lines) + "\n")
    done = ctxasm("batch", str(source), str(target), "--no-progress")
    assert done.returncode == 1
    assert b"3 assembled, 2 failed" not in done.stderr  # blank lines are skipped, not counted
    assert b"2 assembled, 2 failed" in done.stderr
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(records) == 4
    assert records[0]["report"]["selected"] == 3
    assert records[1]["line"] == 2 and records[1]["error"]["code"] == "invalid_json"
    assert records[2]["line"] == 4 and records[2]["error"]["code"] == "unknown_model"
    assert records[2]["error"]["field"] == "model"
    single = json.loads(ctxasm("assemble", str(EXAMPLE)).stdout)
    for record in (records[0], records[3]):
        record["report"]["timings_ms"] = single["report"]["timings_ms"] = {}
        assert record == single


def test_batch_all_good_exits_0_and_writes_stdout(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(request()) + "\n")
    done = ctxasm("batch", str(source), "-", "--no-progress")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["report"]["selected"] == 3


def test_batch_summary_totals_the_prompt_cache_when_requests_plan_for_it(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    lines = [request(), request(previous=None), request(previous=None, model="gpt-4o")]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = ctxasm("batch", str(source), str(tmp_path / "out.jsonl"), "--no-progress")
    assert done.returncode == 0, done.stderr.decode()
    summary = done.stderr.decode().splitlines()
    assert summary[0] == "ctxasm: 3 assembled, 0 failed"
    assert summary[1].startswith("ctxasm: prompt cache: ")
    assert "over 2 requests" in summary[1]
    source.write_text(json.dumps(request()) + "\n")
    plain = ctxasm("batch", str(source), "-", "--no-progress")
    assert plain.returncode == 0, plain.stderr.decode()
    assert "prompt cache" not in plain.stderr.decode()


def test_batch_keeps_an_existing_output_when_the_input_is_missing(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("precious\n")
    done = ctxasm("batch", str(tmp_path / "missing.jsonl"), str(target))
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    assert target.read_text() == "precious\n"


@pytest.mark.parametrize("how", ["same name", "symbolic link", "hard link"])
def test_batch_refuses_to_write_its_results_over_its_input(tmp_path: Path, how: str) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(request()) + "\n")
    target = source
    if how != "same name":
        target = tmp_path / "out.jsonl"
        (target.symlink_to if how == "symbolic link" else target.hardlink_to)(source)
    done = ctxasm("batch", str(source), str(target), "--no-progress")
    assert done.returncode == 2
    assert done.stderr.decode().startswith(f"ctxasm: error: the output {target} is the input")
    assert source.read_text() == json.dumps(request()) + "\n"


def test_batch_refuses_to_write_over_the_file_standard_input_reads(tmp_path: Path) -> None:
    # batch - in.jsonl < in.jsonl skipped the check that batch in.jsonl in.jsonl makes
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(request()) + "\n")
    done = ctxasm("batch", "-", str(source), "--no-progress", stdin=source)
    assert (done.returncode, done.stderr.decode()) == (
        2,
        f"ctxasm: error: the output {source} is the file standard input reads: the results "
        "would replace the requests; choose another output file [OUT]\n",
    )
    assert source.read_text() == json.dumps(request()) + "\n"


@pytest.mark.parametrize("how", ["same name", "symbolic link", "standard input"])
@pytest.mark.parametrize("command", ["assemble", "report"])
def test_html_is_never_written_over_the_input(tmp_path: Path, command: str, how: str) -> None:
    # assemble req.json --html req.json replaced the request with the page, exit 0
    source = tmp_path / "input.json"
    source.write_bytes(EXAMPLE.read_bytes() if command == "assemble" else _result_bytes())
    original = source.read_bytes()
    target = tmp_path / "page.html" if how == "symbolic link" else source
    if how == "symbolic link":
        target.symlink_to(source)
    argument = "-" if how == "standard input" else str(source)
    done = ctxasm(command, argument, "--html", str(target), stdin=source)
    read = "the file standard input reads" if how == "standard input" else f"the input {source}"
    lost = "request" if command == "assemble" else "result"
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        2,
        b"",
        f"ctxasm: error: the output {target} is {read}: the page would replace the {lost}; "
        "choose another output file [html]\n",
    )
    assert source.read_bytes() == original


@pytest.mark.parametrize("given", ["--config", "$CTXASM_CONFIG"])
@pytest.mark.parametrize("command", ["assemble", "batch"])
def test_no_output_is_written_over_the_config(tmp_path: Path, command: str, given: str) -> None:
    # assemble req.json --config c.toml --html c.toml replaced the config with the page, and
    # batch in.jsonl c.toml --config c.toml with the results, exit 0
    config = tmp_path / "c.toml"
    config.write_text('[defaults]\nmodel = "gpt-4o"\n')
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(request()) + "\n")
    option = ["--config", str(config)] if given == "--config" else []
    if command == "assemble":
        args, field, what = ["--html", str(config)], "html", "the page"
    else:
        args, field, what = [str(config), "--no-progress"], "OUT", "the results"
    with pytest.MonkeyPatch.context() as patch:
        if given == "$CTXASM_CONFIG":
            patch.setenv("CTXASM_CONFIG", str(config))
        done = ctxasm(command, str(source), *args, *option)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        2,
        b"",
        f"ctxasm: error: the output {config} is the input {config}: {what} would replace the "
        f"config; choose another output file [{field}]\n",
    )
    assert config.read_text() == '[defaults]\nmodel = "gpt-4o"\n'


def _result_bytes() -> bytes:
    done = ctxasm("assemble", str(EXAMPLE))
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def test_batch_names_the_output_when_writing_it_fails(tmp_path: Path) -> None:
    # A full disk or a missing folder was reported as the input's fault (exit 2), or under the
    # hidden temporary file's name.
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(request()) + "\n")
    missing = tmp_path / "no-such-folder" / "out.jsonl"
    done = ctxasm("batch", str(source), str(missing), "--no-progress")
    assert done.returncode == 2  # a path that cannot be opened is bad input, by its own name
    assert done.stderr.decode() == f"ctxasm: error: {missing}: No such file or directory\n"
    if Path("/dev/full").exists():
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "ctxasm", "batch", str(source), "-", "--no-progress"],
                stdout=full,
                stderr=subprocess.PIPE,
                timeout=120,
            )
        assert done.returncode == 1
        assert b"cannot write standard output: No space left on device [OUT]" in done.stderr


def test_batch_reads_a_pipe_once(tmp_path: Path) -> None:
    # Input that cannot be rewound was read to the end to count its lines, then nothing was left
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c", f"open({str(fifo)!r}, 'w').write({json.dumps(request())!r} + '\\n')"]
    )
    done = ctxasm("batch", str(fifo), "-", "--no-progress")
    writer.wait(timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["report"]["selected"] == 3


def test_models_lists_the_registry() -> None:
    table = ctxasm("models")
    assert table.returncode == 0
    for name in ("gpt-4o", "claude-sonnet-4-5", "llama-3.1-8b-instruct", "gemini-2.5-pro"):
        assert name in table.stdout.decode()
    listed = json.loads(ctxasm("models", "--json").stdout)
    gpt4o = next(m for m in listed if m["name"] == "gpt-4o")
    assert gpt4o["context_window"] == 128000 and gpt4o["tokenizer"] == "tiktoken:o200k_base"


def test_config_file_sets_defaults_and_adds_models(tmp_path: Path) -> None:
    config = tmp_path / "ctxasm.toml"
    config.write_text(
        '[defaults]\nmodel = "house-model"\nformat = "text"\n'
        '[models."house-model"]\ncontext_window = 4096\nmax_output = 512\n'
        'tokenizer = "tiktoken:cl100k_base"\ninput_price = 1.0\n'
    )
    data = request()
    del data["model"]
    done = ctxasm("assemble", "-", "--config", str(config), stdin=json.dumps(data).encode())
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["report"]["model"] == "house-model"
    assert result["report"]["tokenizer"] == "tiktoken:cl100k_base"
    assert result["messages"] == [] and result["text"].endswith("Answer:")


def test_bad_config_file_is_bad_input(tmp_path: Path) -> None:
    config = tmp_path / "ctxasm.toml"
    config.write_text('[defaults]\nstrategy = {selection = "nope"}\n')
    done = ctxasm("assemble", str(EXAMPLE), "--config", str(config))
    assert done.returncode == 2 and b"nope" in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("deep.json", '{"x": ' + "[" * 3000 + "]" * 3000 + "}", "nested more than 64 levels"),
        ("deep.toml", "x = " + "[" * 3000 + "]" * 3000 + "\n", "nests its values too deeply"),
        ("twice.json", '{"defaults": {}, "defaults": {"model": "x"}}', "repeats the key"),
    ],
)
def test_a_config_file_read_as_requests_are_is_bad_input(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    # deeply nested ones ended in an internal error (exit 1); a repeated key was taken silently
    config = tmp_path / name
    config.write_text(content)
    done = ctxasm("models", "--config", str(config))
    assert done.returncode == 2 and message in done.stderr.decode()
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("host", ["", " "])
def test_serve_refuses_a_blank_host(host: str) -> None:
    # --host "$HOST" with HOST unset listened on every interface (0.0.0.0 and ::)
    done = ctxasm("serve", "--host", host, "--port", "1")
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        2,
        b"",
        f"ctxasm: error: --host must be an address or a host name, got {host!r}, which would "
        "listen on every interface; give 127.0.0.1 for this machine only, or write 0.0.0.0 "
        "to listen on every interface [host]\n",
    )


def test_help_and_version() -> None:
    page = ctxasm("--help").stdout.decode()
    assert re.match(r"Usage: \S*ctxasm \[OPTIONS\] COMMAND \[ARGS\]\.\.\.\n", page), page
    commands = page.split("\nCommands:\n", 1)[1]
    assert re.findall(r"^  (\S+) ", commands, flags=re.MULTILINE) == [
        "assemble",
        "batch",
        "models",
        "report",
        "eval",
        "check-citations",
        "index",
        "delete",
        "ask",
        "serve",
    ]
    assert ctxasm("--version").stdout.decode() == f"ctxasm {__version__}\n"


def test_batch_progress_bar_can_be_forced(tmp_path: Path) -> None:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text((json.dumps(request()) + "\n") * 3)
    done = ctxasm("batch", str(source), str(target), "--progress")
    assert done.returncode == 0, done.stderr.decode()
    assert len(target.read_text().splitlines()) == 3
    assert b"3 assembled, 0 failed" in done.stderr


def test_an_unknown_guard_lists_the_choices() -> None:
    data = request(strategy={"guard": "firewall"})
    done = ctxasm("assemble", "-", stdin=json.dumps(data).encode())
    assert done.returncode == 2
    assert b"unknown guard strategy 'firewall'; choose one of scan" in done.stderr
    assert b"[strategy.guard]" in done.stderr


def test_check_citations_console_script(tmp_path: Path) -> None:
    assembled = ctxasm("assemble", str(EXAMPLE))
    assert assembled.returncode == 0, assembled.stderr.decode()
    result = tmp_path / "result.json"
    result.write_bytes(assembled.stdout)
    good = ctxasm("check-citations", str(result), "-", stdin=b"Aristotle taught there [Source 1].")
    assert good.returncode == 0, good.stderr.decode()
    assert json.loads(good.stdout)["invalid"] == []
    bad = ctxasm("check-citations", str(result), "-", stdin=b"X [Source 1]. Y [Source 9].")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["invalid"] == ["Source 9"]
    (tmp_path / "broken.json").write_text("{not json")
    broken = ctxasm("check-citations", str(tmp_path / "broken.json"), "-", stdin=b"X [1].")
    assert broken.returncode == 2
    assert broken.stderr.decode().startswith("ctxasm: error: ")
    assert b"Traceback" not in broken.stderr


@pytest.mark.parametrize("fmt", ["anthropic", "markdown"])
def test_assemble_every_format_from_the_command_line(fmt: str) -> None:
    done = ctxasm("assemble", "-", stdin=json.dumps(request(format=fmt)).encode())
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    if fmt == "anthropic":
        assert result["system"] and "<documents>" in result["messages"][-1]["content"]
    else:
        assert result["text"].startswith("## Instructions")


@pytest.mark.parametrize(
    "command",
    [("assemble", "-"), ("report", "-"), ("batch", "-", "-")],
)
@pytest.mark.parametrize("size", ["9223372036854775807", "99999999999999999999999999"])
def test_max_bytes_over_its_limit_is_a_usage_error(command: tuple[str, ...], size: str) -> None:
    # An internal OverflowError when a read was sized from it.
    done = ctxasm(*command, "--max-bytes", size, stdin=b"{}")
    assert done.returncode == 2
    assert "--max-bytes" in done.stderr.decode()
    assert "9007199254740992" in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()


def test_report_calls_its_input_a_result() -> None:
    failed = ctxasm("report", "-", stdin=b'{"report": ')
    assert failed.returncode == 2
    assert failed.stderr.decode().endswith("[result]\n")
    assert "the result is not valid JSON" in failed.stderr.decode()
    too_big = ctxasm("report", "-", "--max-bytes", "5", stdin=b'{"report": {}}')
    assert too_big.stderr.decode() == (
        "ctxasm: error: the result is more than the limit of 5 bytes [result]\n"
    )


@pytest.mark.parametrize(("command", "what"), [("assemble", "request"), ("report", "result")])
def test_standard_input_over_the_limit_is_read_no_further(
    tmp_path: Path, command: str, what: str
) -> None:
    # assemble - < /dev/zero read on to state the size of an input that never ends: it hung
    done = ctxasm(command, "-", "--max-bytes", "1000", stdin=Path("/dev/zero"))
    assert (done.returncode, done.stderr.decode()) == (
        2,
        f"ctxasm: error: the {what} is more than the limit of 1,000 bytes [{what}]\n",
    )
    big = tmp_path / "big.json"  # a file on standard input has a size to state
    big.write_bytes(b" " * 3_000_123)
    done = ctxasm(command, "-", "--max-bytes", "1000", stdin=big)
    assert (done.returncode, done.stderr.decode()) == (
        2,
        f"ctxasm: error: the {what} is 3,000,123 bytes, more than the limit of 1,000 bytes "
        f"[{what}]\n",
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"budget": {"context_window": "x"}}, "report.budget.context_window: Input should be"),
        ({"timings_ms": "x"}, "report.timings_ms: Input should be a valid dictionary"),
        ({"included": ["x"]}, "report.included.0: Input should be"),
    ],
)
def test_report_names_the_field_it_cannot_print(change: dict[str, object], message: str) -> None:
    result = json.loads(ctxasm("assemble", "-", stdin=EXAMPLE.read_bytes()).stdout)
    for key, value in change.items():
        if isinstance(value, dict):
            result["report"][key].update(value)
        else:
            result["report"][key] = value
    failed = ctxasm("report", "-", stdin=json.dumps(result).encode())
    assert failed.returncode == 2
    assert message in failed.stderr.decode() and b"Traceback" not in failed.stderr


def test_report_prints_markup_in_a_saved_result_as_text() -> None:
    # A result file is input: "[/b]" in a model name was read as rich markup (an internal
    # error, exit 1) and "[link=...]" as a terminal hyperlink.
    result = json.loads(ctxasm("assemble", "-", stdin=EXAMPLE.read_bytes()).stdout)
    report = result["report"]
    report["model"] = "gpt[/bold]x"
    report["query_class"] = "[link=https://evil.example/]click[/link]"
    report["timings_ms"] = {"[red]access": 1.0}
    shown = ctxasm("report", "-", stdin=json.dumps(result).encode())
    assert shown.returncode == 0, shown.stderr.decode()
    out = (shown.stdout + shown.stderr).decode()
    assert "gpt[/bold]x" in out
    assert "[link=https://evil.example/]click[/link]" in out and "\x1b]8;" not in out
    assert "[red]access 1.0" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"selected": "\x1b]8;;https://evil.example/\x07x"}, "report.selected: Input should be"),
        ({"considered": "[/b]"}, "report.considered: Input should be"),
    ],
)
def test_report_refuses_a_count_that_is_text(change: dict[str, object], message: str) -> None:
    # The counts were printed as they came: terminal escapes reached the terminal (exit 0),
    # and "[/b]" was read as markup (an internal error, exit 1).
    result = json.loads(ctxasm("assemble", "-", stdin=EXAMPLE.read_bytes()).stdout)
    result["report"].update(change)
    failed = ctxasm("report", "-", stdin=json.dumps(result).encode())
    assert failed.returncode == 2
    assert message in failed.stderr.decode() and b"\x1b" not in failed.stdout


def test_a_piped_report_keeps_each_row_on_one_line(tmp_path: Path) -> None:
    # At rich's 80 columns a "why chosen" cell wrapped ("link from / Source 1 via ..."), so
    # `ctxasm report result.json | grep -c Source` counted 5 rows for 3, and urls were cut.
    result = tmp_path / "result.json"
    result.write_bytes(ctxasm("assemble", str(EXAMPLE)).stdout)
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [*command, "report", str(result)], capture_output=True, text=True, env=env, timeout=120
    )
    rows = [line for line in done.stdout.splitlines() if "Source" in line]
    assert len(rows) == 3, done.stdout
    assert "https://en.wikipedia.org/wiki/Aristotle" in done.stdout


def test_assemble_on_a_terminal_says_it_reads_standard_input() -> None:
    # A bare `ctxasm assemble` waited silently for typed JSON.
    import pty

    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    main, terminal = pty.openpty()
    try:
        with subprocess.Popen(
            [*command, "assemble"], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as process:
            os.write(main, json.dumps(request()).encode() + b"\n\x04")
            out, err = process.communicate(timeout=120)
    finally:
        os.close(main)
        os.close(terminal)
    assert process.returncode == 0, err.decode()
    assert "reading the request from standard input (end it with Ctrl-D)" in err.decode()
    assert json.loads(out)["report"]["included"]


@pytest.mark.parametrize(
    ("args", "closed", "message"),
    [
        (["assemble", "-"], 0, "standard input is closed"),
        (["assemble", str(EXAMPLE)], 1, "standard output is closed"),
    ],
)
def test_a_closed_standard_stream_is_named(args: list[str], closed: int, message: str) -> None:
    """Started with stdin or stdout closed (``<&-``, ``>&-``): one line naming it, exit 2
    (it was an internal error, or the result went nowhere with exit 0)."""
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    done = subprocess.run(
        [*command, *args],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(closed),  # in the child, before ctxasm starts
        env=os.environ.copy(),
        timeout=120,
    )
    assert done.returncode == 2
    assert message in done.stderr.decode()
    assert "internal error" not in done.stderr.decode()


@pytest.mark.parametrize(
    ("change", "header"),
    [({}, None), ({"relevance": {"name": "bm25"}}, "score (bm25)")],
)
def test_the_score_column_names_the_scale_of_its_scores(
    change: dict[str, object], header: str | None
) -> None:
    # First-hour M1: utility 2, BM25 5.535 and a retriever's 0.69 all read "score"; the column
    # now names the method that ranked the passages (the report's relevance.method).
    body = {**json.loads(EXAMPLE.read_text()), "strategy": change} if change else None
    stdin = json.dumps(body).encode() if body else EXAMPLE.read_bytes()
    result = json.loads(ctxasm("assemble", "-", stdin=stdin).stdout)
    method = result["report"]["relevance"]["method"]
    assert header is None or header == f"score ({method})"
    shown = ctxasm("report", "-", stdin=json.dumps(result).encode()).stdout.decode()
    assert f"score ({method})" in shown
