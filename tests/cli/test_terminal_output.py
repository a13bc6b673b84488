"""What the CLI writes to a terminal: control characters that come with data (a stored
document's title or text, a saved report) are shown as escapes, never acted on. ``ctxasm ask``
runs on a real pseudo-terminal here."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxasm.cli.exits import echo, visible

# Set the terminal's title, write its clipboard (OSC 52), colour, ring, reorder, return
HOSTILE = "\x1b]0;owned\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[31mred \x9b31m \u202eevil \rover"


def _ctxasm_on_a_terminal(*args: str, cwd: Path) -> tuple[int, bytes]:
    """Run the console script with stdout and stderr on a pseudo-terminal: its exit code and
    every byte it wrote."""
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    main, side = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("CTXASM_STORE", "CTXASM_CONFIG")}
    process = subprocess.Popen(
        [*command, *args], stdin=subprocess.DEVNULL, stdout=side, stderr=side, cwd=cwd, env=env
    )
    os.close(side)
    output = b""
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(main)
    return process.wait(timeout=120), output


def test_visible_writes_terminal_controls_as_json_escapes() -> None:
    assert visible("a\x1b[31mb\x07\x00\x7f\x9b\u202e\u2066c\td\ne\r\nf\rg") == (
        "a\\u001b[31mb\\u0007\\u0000\\u007f\\u009b\\u202e\\u2066c\td\ne\nf\\u000dg"
    )
    # JSON with such characters in its strings stays JSON, with the same strings
    data = {"title": HOSTILE}
    assert json.loads(visible(json.dumps(data, ensure_ascii=False))) == data


def test_echo_shows_controls_on_a_terminal_and_keeps_them_in_a_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    echo("x\x1b]0;t\x07y \x1b[31mred")
    # a file gets the data as it is (a CSI sequence, alone, was dropped)
    assert capsys.readouterr().out == "x\x1b]0;t\x07y \x1b[31mred\n"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    echo("x\x1b]0;t\x07y")
    assert capsys.readouterr().out == "x\\u001b]0;t\\u0007y\n"


def test_ask_on_a_terminal_shows_a_documents_escape_sequences_without_acting_on_them(
    tmp_path: Path,
) -> None:
    line = {"doc_id": "river", "text": f"The Danube flows. {HOSTILE}", "title": f"Dan{HOSTILE}"}
    (tmp_path / "docs.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    store = "sqlite:///store.db"
    code, _ = _ctxasm_on_a_terminal("index", "docs.jsonl", "--store", store, cwd=tmp_path)
    assert code == 0
    code, output = _ctxasm_on_a_terminal(
        "ask", "Where does the Danube flow?", "--store", store, "--allow-public", cwd=tmp_path
    )
    assert code == 0, output
    shown = output.decode("utf-8")
    assert "The Danube flows." in shown and "\\u001b]0;owned\\u0007" in shown
    for control in ("\x1b]", "\x07", "\x9b", "\u202e"):
        assert control not in shown
    # the report's table (rich, on stderr) draws the title escaped too; its own colours stay
    assert "\\u001b]52;c;ZXZpbA==" in shown


def test_report_tables_show_controls_as_escapes(tmp_path: Path) -> None:
    source = Path(__file__).parents[2] / "examples" / "request.json"
    request = json.loads(source.read_text(encoding="utf-8"))
    request["passages"][0]["id"] = f"p{HOSTILE}"
    (tmp_path / "request.json").write_text(json.dumps(request), encoding="utf-8")
    code, output = _ctxasm_on_a_terminal(
        "assemble", "request.json", "--report", "--format", "text", cwd=tmp_path
    )
    assert code == 0, output
    shown = output.decode("utf-8")
    assert "\\u001b]0;owned" in shown
    for control in ("\x1b]", "\x07", "\x9b", "\u202e"):
        assert control not in shown
