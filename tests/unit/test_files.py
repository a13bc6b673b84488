"""Files written whole or not at all (ctxasm.files): the report page and the datasets the CLI
writes, as the batch outputs."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ctxasm.batch.files import check_not_input
from ctxasm.cli.report_view import write_page
from ctxasm.errors import RequestError
from ctxasm.evaluation.dataset import load_dataset, write_dataset
from ctxasm.files import atomic_output, is_input, write_atomic


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_room(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("ctxasm.files.os.replace", no_room)


def test_a_failed_write_keeps_the_file_that_was_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "page.html"
    target.write_bytes(b"<p>the good page</p>")
    _full_disk(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"<p>half")
    assert target.read_bytes() == b"<p>the good page</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_the_report_page_is_written_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    write_page("<html>one</html>", target)
    assert target.read_text() == "<html>one</html>"
    _full_disk(monkeypatch)
    with pytest.raises(SystemExit) as exited:
        write_page("<html>two</html>", target, field="--html")
    assert exited.value.code == 2
    assert target.read_text() == "<html>one</html>"


def test_a_saved_dataset_is_written_whole(tmp_path: Path) -> None:
    questions = load_dataset(Path(__file__).resolve().parents[1] / "data" / "eval_cut_answer.jsonl")
    target = tmp_path / "subset.jsonl"
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    write_dataset(questions, link)
    assert link.is_symlink()
    assert [q.id for q in load_dataset(target)] == [q.id for q in questions]


def test_an_open_descriptor_is_written_through_as_it_was_opened(tmp_path: Path) -> None:
    """``ctxasm batch in.jsonl /dev/stdout >> results.jsonl``: the results are appended to
    what the shell opened, not put in place of the file behind the descriptor."""
    results = tmp_path / "results.jsonl"
    results.write_text("old 1\nold 2\n")
    with open(results, "a") as appended, atomic_output(f"/dev/fd/{appended.fileno()}") as out:
        out.write("new\n")
    assert results.read_text() == "old 1\nold 2\nnew\n"


def test_the_input_is_known_by_its_identity_whatever_its_name(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(source)
    (tmp_path / "hard.jsonl").hardlink_to(source)
    (tmp_path / "copy.jsonl").write_text("{}\n")
    names = ["in.jsonl", "link.jsonl", "hard.jsonl", "copy.jsonl", "missing.jsonl"]
    assert [is_input(source, tmp_path / name) for name in names] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert is_input(tmp_path / "../" / tmp_path.name / "in.jsonl", str(source))
    # writing a device replaces nothing: /dev/null as input and output is no mistake
    assert not is_input(os.devnull, os.devnull)


def test_only_the_string_dash_is_standard_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # Path("./-") is Path("-"): a file named "-" was taken for standard output, and not
    # checked against the input it would replace
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_bytes(b"{}")
    check_not_input("in.json", "-")  # standard output replaces no file
    for target in ("./-", Path("-")):
        with pytest.raises(RequestError) as error:
            check_not_input(Path("-"), target)
        assert error.value.message == (
            f"the output {target} is the input -: the results would replace the requests; "
            "choose another output file"
        )
    write_page("<p>page</p>", "./-")
    write_page("<p>again</p>", Path("-"))
    assert capsysbinary.readouterr().out == b""
    assert (tmp_path / "-").read_bytes() == b"<p>again</p>"
    write_page("<p>out</p>", "-")
    assert capsysbinary.readouterr().out == b"<p>out</p>"
