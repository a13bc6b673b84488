"""``ctxasm assemble`` without Typer (:mod:`ctxasm.cli.assemble_cmd`): which command lines it
reads itself, that its flags are the ones Typer declares, and that it prints and exits exactly
as the Typer app does."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ctxasm.cli import main
from ctxasm.cli.assemble_cmd import FLAGS, REPORT_FLAG, AssembleOptions, plain_options
from ctxasm.cli.exits import echo
from ctxasm.cli.main import app, run
from ctxasm.cli.request_input import DEFAULT_MAX_BYTES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "request.json")
HITS = [{"page_content": "Aristotle taught at the Lyceum.", "similarity": 0.8}]


def _typer_params() -> dict[str, Any]:
    """The parameters Typer declares for ``assemble``, by each flag (the argument by its
    name; ``--budget`` is another flag of ``--max-context-tokens``)."""
    command = typer.main.get_command(app).commands["assemble"]  # type: ignore[attr-defined]
    return {flag: p for p in command.params for flag in p.opts}


def test_a_plain_command_line_is_read_into_options() -> None:
    argv = ["assemble", "--indent", "2", "request.json", "--report", "--query=Who?", "--model", "-"]
    assert plain_options(argv) == AssembleOptions(
        source="request.json", query="Who?", model="-", report=True, indent=2
    )
    assert plain_options(["assemble"]) == AssembleOptions()
    assert plain_options(["assemble", "-", "--config", "c.toml", "--max-bytes", "10"]) == (
        AssembleOptions(config=Path("c.toml"), max_bytes=10)
    )
    # ask's name for the cap: `assemble --budget` suggested --indent
    assert plain_options(["assemble", "-", "--budget", "300"]) == (
        AssembleOptions(max_context_tokens=300)
    )


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--version"],
        ["models"],
        ["assemble", "-h"],
        ["assemble", "--help"],
        ["assemble", "a.json", "b.json"],
        ["assemble", "--", "a.json"],
        ["assemble", "--que", "x"],
        ["assemble", "-q", "x"],
        ["assemble", "--model"],
        ["assemble", "--model", "--report"],
        ["assemble", "--report=1"],
        ["assemble", "--indent", "-1"],
        ["assemble", "--indent", "+2"],
        ["assemble", "--indent", "02"],
        ["assemble", "--indent", " 2"],
        ["assemble", "--max-context-tokens", "0"],
        ["assemble", "--max-context-tokens", "1_000"],
        ["assemble", "--max-bytes", "0"],
        ["assemble", "--max-bytes", "9" * 40],
        ["assemble", "--config", ""],
    ],
)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert plain_options(argv) is None


def test_shell_completion_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_CTXASM_COMPLETE", "bash_complete")
    assert plain_options(["assemble", "request.json"]) is None


def test_the_flags_are_the_ones_typer_declares() -> None:
    params = _typer_params()
    assert set(params) == {"source", *FLAGS, REPORT_FLAG}
    assert [flag for flag, p in params.items() if getattr(p, "is_flag", False)] == [REPORT_FLAG]
    assert params[REPORT_FLAG].name == "report"
    assert {flag: field for flag, (field, _) in FLAGS.items()} == {
        flag: params[flag].name for flag in FLAGS
    }


@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_each_value_is_read_as_typer_types_it(flag: str) -> None:
    param, (_, read) = _typer_params()[flag], FLAGS[flag]
    kind = param.type_descriptor.annotation
    assert read("5") == kind("5")
    if param.min is not None:
        assert (read(str(param.min - 1)), read(str(param.min))) == (None, param.min)
    elif kind is int:
        assert read("0") == 0


def test_the_defaults_are_the_ones_typer_declares() -> None:
    defaults = {p.name: p.default for p in _typer_params().values()}
    assert defaults == {
        "source": "-",
        "query": None,
        "model": None,
        "fmt": None,
        "max_context_tokens": None,
        "report": False,
        "html": None,
        "indent": None,
        "config": None,
        "max_bytes": DEFAULT_MAX_BYTES,
    }
    assert AssembleOptions() == AssembleOptions(**defaults)


def _without_timings(text: str) -> str:
    """Output with the measured milliseconds blanked: the one part two runs never share."""
    text = re.sub(r'"timings_ms": \{[^}]*\}', '"timings_ms": {}', text)
    return re.sub(r"timings \(ms\):.*", "timings (ms): ...", text, flags=re.DOTALL)


def _through_run(
    argv: list[str],
    stdin: bytes,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[Any, str, str]:
    monkeypatch.setattr(sys, "argv", ["ctxasm", *argv])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    with pytest.raises(SystemExit) as exited:
        run()
    out, err = capsys.readouterr()
    return exited.value.code, _without_timings(out), _without_timings(err)


def _through_typer(argv: list[str], stdin: bytes) -> tuple[Any, str, str]:
    done = CliRunner().invoke(app, argv, input=stdin)
    return done.exit_code, _without_timings(done.stdout), _without_timings(done.stderr)


@pytest.mark.parametrize(
    "argv",
    [
        ["assemble", EXAMPLE],
        ["assemble", EXAMPLE, "--indent", "2", "--format", "markdown"],
        ["assemble", "--model=claude-sonnet-4-5", EXAMPLE, "--max-context-tokens", "60"],
        ["assemble", "--report", EXAMPLE],
        ["assemble"],
        ["assemble", "-", "--query", "Who taught at the Lyceum?"],
        ["assemble", "-", "--query", ""],
        ["assemble", EXAMPLE, "--max-bytes", "10"],
        ["assemble", EXAMPLE, "--model", "no-such-model"],
        ["assemble", str(ROOT / "no-such-file.json")],
        ["assemble", EXAMPLE, "--config", str(ROOT / "no-such-config.toml")],
    ],
)
def test_run_prints_and_exits_as_the_typer_app_does(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = json.dumps(HITS).encode() if "--query" in argv else Path(EXAMPLE).read_bytes()
    assert plain_options(argv) is not None
    direct = _through_run(argv, stdin, monkeypatch, capsys)
    assert direct == _through_typer(argv, stdin)
    assert direct[0] in (0, 2)


@pytest.mark.parametrize(
    ("raised", "code"),
    [(KeyboardInterrupt(), 130), (EOFError(), 1), (BrokenPipeError(32, "Broken pipe"), 1)],
)
def test_run_ends_an_interrupted_assembly_as_typer_does(
    raised: BaseException,
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def interrupted(options: AssembleOptions) -> None:
        raise raised

    monkeypatch.setattr(main, "assemble", interrupted)
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # no descriptor to point at /dev/null
    monkeypatch.setattr(sys, "argv", ["ctxasm", "assemble", EXAMPLE])
    with pytest.raises(SystemExit) as exited:
        run()
    assert exited.value.code == code
    assert capsys.readouterr().err == ("\nAborted!\n" if isinstance(raised, EOFError) else "")


def test_a_bug_is_one_line_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(options: AssembleOptions) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(main, "assemble", broken)
    monkeypatch.delenv("CTXASM_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["ctxasm", "assemble", EXAMPLE])
    with pytest.raises(SystemExit) as exited:
        run()
    assert exited.value.code == 1
    assert capsys.readouterr().err == (
        "ctxasm: internal error: ZeroDivisionError: division by zero "
        "(set CTXASM_DEBUG=1 for the traceback, and please report it)\n"
    )


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "latin-1"])
@pytest.mark.parametrize("err", [False, True])
def test_echo_writes_the_bytes_typer_echo_writes(
    encoding: str, err: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same bytes for text; escape sequences typer.echo drops off a terminal are kept
    # (tests/cli/test_terminal_output.py: a file or a pipe gets the data as it is).
    message = "Café red — done"
    written = []
    for write in (echo, typer.echo):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors="replace")
        monkeypatch.setattr(sys, "stderr" if err else "stdout", stream)
        write(message, err=err)
        stream.flush()
        written.append(raw.getvalue())
    assert written[0] == written[1]
    assert written[0].endswith(b" done\n")
