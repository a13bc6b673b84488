"""``ctxasm report``, ``assemble --html`` and ``ask --html`` write the page; the page's data
island and policy are what the browser tests rely on."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chromium import Browser
from pages import READY, foreign_requests

from ctxasm.errors import RequestError
from ctxasm.html import render_report_html, result_of
from ctxasm.html.page import json_island

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "request.json"
_SCRIPT = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
CTXASM = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "ctxasm"]
ISLAND = re.compile(r'<script type="application/json" id="ctxasm-data">(.*?)</script>', re.S)


def _ctxasm(
    *args: str, stdin: str | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CTXASM, *args], input=stdin, capture_output=True, text=True, check=False, cwd=cwd
    )


def _island(path: Path) -> Any:
    found = ISLAND.search(path.read_text(encoding="utf-8"))
    assert found is not None
    return json.loads(found.group(1))


def _without_timings(result: dict[str, Any]) -> dict[str, Any]:
    return {**result, "report": {**result["report"], "timings_ms": {}}}


def test_assemble_html_writes_the_result_it_prints(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = _ctxasm("assemble", str(EXAMPLE), "--html", str(page))
    assert (done.returncode, done.stderr) == (0, "")
    assert _island(page) == json.loads(done.stdout)


def test_report_reads_a_saved_result(tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    saved.write_text(_ctxasm("assemble", str(EXAMPLE)).stdout)
    tables = _ctxasm("report", str(saved))
    assert tables.returncode == 0
    assert "Included: 3 of 6" in tables.stdout and "Excluded: 3" in tables.stdout
    page = tmp_path / "report.html"
    done = _ctxasm("report", "-", "--html", str(page), stdin=saved.read_text())
    assert (done.returncode, done.stderr) == (0, f"ctxasm: wrote {page}\n")
    assert _island(page) == json.loads(saved.read_text())
    # A bare report (the "report" object alone) is drawn as well.
    bare = json.dumps(json.loads(saved.read_text())["report"])
    assert _ctxasm("report", "-", "--html", str(page), stdin=bare).returncode == 0
    assert _island(page)["report"] == json.loads(bare)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("[1, 2]", "a result must be a JSON object, got an array"),
        ('{"report": 3}', "the result's report must be an object, got a number"),
        (
            '{"query": "q", "passages": []}',
            "the result's report must be an object, it has none (this is a request: assemble "
            "it first)",
        ),
        ('{"report": {"budget": {}, "included": {}}}', "report.included must be an array"),
        ('{"report": {"included": []}}', "report.budget must be an object, got null"),
        ('{"report": ', "JSON"),
    ],
)
def test_report_refuses_what_is_not_a_result(tmp_path: Path, given: str, message: str) -> None:
    done = _ctxasm("report", "-", "--html", str(tmp_path / "x.html"), stdin=given)
    assert done.returncode == 2
    assert done.stderr.startswith("ctxasm: error: ") and message in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x.html").exists()


def test_report_html_names_the_field_a_page_would_draw_wrong(tmp_path: Path) -> None:
    saved = json.loads(_ctxasm("assemble", str(EXAMPLE)).stdout)
    saved["report"]["included"][0]["tokens"] = "many"
    page = tmp_path / "x.html"
    done = _ctxasm("report", "-", "--html", str(page), stdin=json.dumps(saved))
    assert done.returncode == 2 and not page.exists()
    assert done.stderr == (
        "ctxasm: error: - is not a report ctxasm can draw: report.included.0.tokens: Input "
        "should be a valid integer, unable to parse string as an integer\n"
    )
    # A field this release does not know (a result from another one) is drawn without it.
    saved["report"]["included"][0]["tokens"] = 12
    saved["report"]["from_a_later_release"] = {"x": 1}
    done = _ctxasm("report", "-", "--html", str(page), stdin=json.dumps(saved))
    assert done.returncode == 0 and page.exists()


def test_an_unwritable_page_is_one_line_and_exit_2(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "report.html"
    done = _ctxasm("assemble", str(EXAMPLE), "--html", str(target))
    assert done.returncode == 2
    assert done.stderr == f"ctxasm: error: cannot write {target}: No such file or directory\n"


# --indent 02 is read by Typer (the plain reader leaves a leading zero to it): both routes.
@pytest.mark.parametrize("route", [(), ("--indent", "02")], ids=["plain", "typer"])
def test_assemble_refuses_html_to_standard_output(tmp_path: Path, route: tuple[str, ...]) -> None:
    done = _ctxasm("assemble", str(EXAMPLE), "--html", "-", *route, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ctxasm: error: --html - would write the page to standard output, which carries the "
        "result JSON; give the page a file name (--html report.html) [html]\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["assemble", "report"])
def test_a_folder_or_an_empty_name_is_no_page(tmp_path: Path, command: str) -> None:
    source = tmp_path / "in.json"
    source.write_text(_ctxasm("assemble", str(EXAMPLE)).stdout if command == "report" else "{}")
    for folder, named in ((".", "report.html"), (str(tmp_path), str(tmp_path / "report.html"))):
        done = _ctxasm(command, str(source), "--html", folder, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            f"ctxasm: error: cannot write the page to {folder}: it is a folder; give a file "
            f"name (--html {named}) [html]\n"
        )
    done = _ctxasm(command, str(source), "--html", "", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.endswith(
        "Error: Invalid value for '--html': the file name is empty: name the page's file "
        "(report.html)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.json"]


def test_report_html_to_standard_output_is_the_page(tmp_path: Path) -> None:
    saved = _ctxasm("assemble", str(EXAMPLE)).stdout
    done = _ctxasm("report", "-", "--html", "-", stdin=saved, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    page = tmp_path / "page.html"
    page.write_text(done.stdout, encoding="utf-8")
    assert _island(page) == result_of(json.loads(saved))
    assert done.stdout == render_report_html(json.loads(saved))
    assert list(tmp_path.iterdir()) == [page]


# Path("./-") is Path("-"): ./- was taken as standard output, so no page could go to a file "-"
@pytest.mark.parametrize("route", [(), ("--indent", "02")], ids=["plain", "typer"])
def test_assemble_html_dot_slash_dash_writes_a_file_named_dash(
    tmp_path: Path, route: tuple[str, ...]
) -> None:
    done = _ctxasm("assemble", str(EXAMPLE), "--html", "./-", *route, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    # the result JSON alone on standard output, and the page of it in the file
    assert _island(tmp_path / "-") == result_of(json.loads(done.stdout))
    assert [p.name for p in tmp_path.iterdir()] == ["-"]


def test_report_html_dot_slash_dash_writes_a_file_named_dash(tmp_path: Path) -> None:
    saved = _ctxasm("assemble", str(EXAMPLE)).stdout
    done = _ctxasm("report", "-", "--html", "./-", stdin=saved, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "ctxasm: wrote ./-\n")
    assert (tmp_path / "-").read_text(encoding="utf-8") == render_report_html(json.loads(saved))
    (tmp_path / "-").write_text(saved, encoding="utf-8")  # the input is a file "-" now
    done = _ctxasm("report", "./-", "--html", "-", cwd=tmp_path)  # to standard output
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == render_report_html(json.loads(saved))
    done = _ctxasm("report", "./-", "--html", "./-", cwd=tmp_path)  # over its input
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ctxasm: error: the output ./- is the input ./-: the page would replace the result; "
        "choose another output file [html]\n"
    )
    assert (tmp_path / "-").read_text(encoding="utf-8") == saved


def test_ask_html_draws_what_ask_assembled(page: Browser, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    indexed = _ctxasm(
        "index",
        "examples/corpus",
        "--store",
        store,
        "--tenant",
        "demo",
        "--readers",
        "everyone",
        "--chunk-tokens",
        "64",
        "--overlap",
        "16",
        "--no-progress",
    )
    assert indexed.returncode == 0, indexed.stderr
    target = tmp_path / "ask.html"
    question = "Where does the Danube end?"
    done = _ctxasm(
        "ask",
        question,
        "--store",
        store,
        "--principal",
        "ann",
        "--tenant",
        "demo",
        "--groups",
        "everyone",
        "--budget",
        "300",
        "--json",
        "--html",
        str(target),
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    result = _island(target)
    assert _without_timings(result) == _without_timings(
        {k: printed[k] for k in ("messages", "system", "text", "report")}
    )
    page.open(target.as_uri(), ready=READY)
    ids = page.evaluate(
        "[...document.querySelectorAll('tr.passage')].map(r => r.cells[2].textContent)"
    )
    assert ids == [item["id"] for item in result["report"]["included"]] and ids
    assert foreign_requests(page, target.as_uri()) == []


def test_the_island_holds_no_character_that_ends_or_breaks_it() -> None:
    value = {"t": "</script><!-- & \u2028\u2029 \ud800 >", "n": [1, 2.5, None, True]}
    island = json_island(value)
    assert not set(island) & set("<>&\u2028\u2029")
    assert json.loads(island) == value


def test_the_policy_allows_exactly_the_inlined_script_and_style() -> None:
    page = render_report_html(json.loads(_ctxasm("assemble", str(EXAMPLE)).stdout))
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert policy is not None and len(scripts) == 1 and len(styles) == 1

    def sha(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert policy.group(1) == (
        f"default-src 'none'; script-src 'sha256-{sha(scripts[0])}'; "
        f"style-src 'sha256-{sha(styles[0])}'; connect-src 'none'; img-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def test_result_of_names_the_field() -> None:
    with pytest.raises(RequestError) as caught:
        result_of({"report": {"budget": {}, "excluded": "none"}})
    assert caught.value.field == "report.excluded"
    assert str(caught.value) == "report.excluded must be an array, got a string"
