"""``ctxasm batch``: results that join back to their requests, normal file permissions, progress
in requests, and a clean stop on SIGINT/SIGTERM."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ctxasm.batch.files import atomic_output, new_file_mode
from ctxasm.cli.main import app
from ctxasm.cli.progress import request_columns

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "request.json"
REQUEST = json.loads(EXAMPLE.read_text())


def _batch(
    tmp_path: Path, lines: list[str], *args: str
) -> tuple[int, str, list[dict[str, object]]]:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = CliRunner().invoke(app, ["batch", str(source), str(target), "--no-progress", *args])
    records = [json.loads(line) for line in target.read_text().splitlines()]
    return done.exit_code, done.stderr, records


def test_id_and_metadata_come_back_on_results_and_error_records(tmp_path: Path) -> None:
    lines = [
        json.dumps({**REQUEST, "id": "r1", "metadata": {"user": "ann", "n": 1}}),
        json.dumps({**REQUEST, "id": 2, "model": "gpt-4o-mnii"}),
        json.dumps({"id": "r3", "metadata": {"k": [1]}, "query": "q", "passages": [{"text": 5}]}),
        json.dumps({**REQUEST, "id": ["not", "a", "key"]}),
        json.dumps(REQUEST),
    ]
    code, err, records = _batch(tmp_path, lines)
    counts, first, where = err.splitlines()
    assert (code, counts) == (1, "ctxasm: 2 assembled, 3 failed")
    # the first failure is named, and where the others are told
    assert first.startswith("ctxasm: the first failed request is on line 2: ")
    assert first.endswith(records[1]["error"]["message"])  # type: ignore[index]
    assert where == f"ctxasm: each failed line has an error record in {tmp_path / 'out.jsonl'}"
    assert list(records[0])[:3] == ["id", "metadata", "messages"]
    assert (records[0]["id"], records[0]["metadata"]) == ("r1", {"user": "ann", "n": 1})
    assert "id" not in records[4] and records[4]["report"]["selected"] == 3  # type: ignore[index]
    errors = [
        {key: value for key, value in record.items() if key != "error"} for record in records[1:4]
    ]
    assert errors == [
        {"line": 2, "id": 2},
        {"line": 3, "id": "r3", "metadata": {"k": [1]}},
        {"line": 4},
    ]
    assert [record["error"]["field"] for record in records[1:4]] == [  # type: ignore[index]
        "model",
        "passages[0].text",
        "id",
    ]
    assert records[3]["error"]["message"] == (  # type: ignore[index]
        "id must be a string or an integer (your own key for this request); "
        "got list ['not', 'a', 'key']"
    )


def test_a_line_over_the_limit_states_its_real_size(tmp_path: Path) -> None:
    long_line = json.dumps({**REQUEST, "system_prompt": "x" * 5000})
    code, _, records = _batch(tmp_path, [long_line, json.dumps(REQUEST)], "--max-bytes", "3000")
    assert code == 1
    assert records[0] == {
        "error": {
            "code": "too_large",
            "message": f"the request is {len(long_line):,} bytes, more than the limit of "
            "3,000 bytes",
            "field": "request",
        },
        "line": 1,
    }
    assert records[1]["report"]["selected"] == 3  # type: ignore[index]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b""])
def test_a_request_of_the_limit_is_read_whatever_ends_its_line(tmp_path: Path, end: bytes) -> None:
    request = json.dumps(REQUEST).encode()
    over = json.dumps({**REQUEST, "query": REQUEST["query"] + "?"}).encode()
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(request + (end or b"\n") + over + end)  # the last line may have no end
    limit = str(len(request))
    done = CliRunner().invoke(app, ["batch", str(source), str(target), "--max-bytes", limit])
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert done.exit_code == 1
    assert "report" in records[0]
    assert records[1]["error"]["message"] == (  # type: ignore[index]
        f"the request is {len(over):,} bytes, more than the limit of {len(request):,} bytes"
    )


class _Endless(io.RawIOBase):
    """A request line, then one that never ends (as /dev/zero); it keeps the largest read."""

    def __init__(self) -> None:
        self.first, self.read_bytes, self.largest = b'{"query": "q"}\n', 0, 0

    def readline(self, size: int | None = -1) -> bytes:
        assert size is not None and size > 0  # a bounded read, never "to the end"
        self.largest = max(self.largest, size)
        if self.first:
            line, self.first = self.first, b""
            return line
        self.read_bytes += size
        return b"x" * size


def test_a_line_that_never_ends_stops_the_batch_after_a_bounded_read() -> None:
    # The rest of an over-long line was read to its end to state its size: /dev/zero, forever.
    from ctxasm.batch import jsonl
    from ctxasm.errors import RequestTooLargeError

    stream = _Endless()
    lines = jsonl.read_lines(stream, 1000, name="in.jsonl")  # type: ignore[arg-type]
    assert next(lines) == (b'{"query": "q"}', 14)
    with pytest.raises(RequestTooLargeError) as caught:
        next(lines)
    assert (caught.value.field, caught.value.message) == (
        "IN",
        "line 2 of in.jsonl runs on for more than 1 GiB past the limit of 1,000 bytes without "
        "a line end: the batch stops, as an input with no line ends (a device such as "
        "/dev/zero, JSON without newlines) would be read forever. A line over the limit is "
        "skipped, with an error record, when it ends within 1 GiB; give one request per line",
    )
    # read up to the longest line skipped and its "\r\n", never more, a megabyte at a time
    assert (stream.read_bytes, stream.largest) == (1000 + 2**30 + 2, 2**20)


@pytest.mark.parametrize(("rest", "stops"), [(4096, False), (4097, True)])
def test_an_over_long_line_is_skipped_when_it_ends_within_the_bound(
    monkeypatch: pytest.MonkeyPatch, rest: int, stops: bool
) -> None:
    from ctxasm.batch import jsonl
    from ctxasm.errors import RequestTooLargeError

    monkeypatch.setattr(jsonl, "MAX_SKIPPED_BYTES", 4096)
    monkeypatch.setattr(jsonl, "_SKIP_CHUNK", 100)
    stream = io.BytesIO(b"x" * (1000 + rest) + b"\r\n{}\n")
    if stops:
        with pytest.raises(RequestTooLargeError, match=r"^line 1 of standard input runs on"):
            list(jsonl.read_lines(stream, 1000, name="standard input"))
    else:
        assert list(jsonl.read_lines(stream, 1000)) == [(b"x" * 1001, 1000 + rest), (b"{}", 2)]


@pytest.mark.parametrize("named", [True, False])
def test_batch_of_dev_zero_ends_with_exit_2_and_no_output(tmp_path: Path, named: bool) -> None:
    # batch /dev/zero out.jsonl and batch - out.jsonl < /dev/zero ran at full CPU until killed
    target = tmp_path / "out.jsonl"
    target.write_text("precious\n")
    source = "/dev/zero" if named else "-"
    with open(os.devnull if named else "/dev/zero", "rb") as stdin:
        done = subprocess.run(
            [*_ctxasm(), "batch", source, str(target), "--max-bytes", "1000", "--no-progress"],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
    name = "/dev/zero" if named else "standard input"
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(
        f"ctxasm: error: line 1 of {name} runs on for more than 1 GiB past the limit of 1,000 "
        "bytes without a line end: the batch stops"
    )
    assert done.stderr.endswith(" [IN]\n") and done.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    assert target.read_text() == "precious\n"


@pytest.fixture()
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("umask")
def test_a_new_output_gets_the_mode_the_umask_allows(tmp_path: Path) -> None:
    _batch(tmp_path, [json.dumps(REQUEST)])
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o644
    os.umask(0o027)
    assert new_file_mode(tmp_path / "new.jsonl") == 0o640


@pytest.mark.usefixtures("umask")
def test_an_overwritten_output_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    target.chmod(0o664)
    _batch(tmp_path, [json.dumps(REQUEST)])
    assert stat.S_IMODE(target.stat().st_mode) == 0o664
    assert target.read_text().startswith('{"messages"')


def test_a_failed_write_leaves_neither_target_nor_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("precious\n")
    with pytest.raises(RuntimeError), atomic_output(target) as out:
        out.write("half\n")
        raise RuntimeError("stop")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    assert target.read_text() == "precious\n"


def test_an_output_link_stays_a_link_and_its_file_is_replaced(tmp_path: Path) -> None:
    real = tmp_path / "results" / "out.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    with atomic_output(link) as out:
        out.write("new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n"
    assert sorted(p.name for p in real.parent.iterdir()) == ["out.jsonl"]


def test_an_output_that_is_a_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    """A FIFO (or /dev/stdout, a process substitution) cannot be replaced: the results go
    into it (as root, a device such as /dev/full was replaced by a file)."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    import threading

    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    with atomic_output(fifo) as out:
        out.write("new\n")
    reader.join(timeout=10)
    assert received == ["new\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_an_output_that_is_a_folder_is_refused_before_any_request_runs(tmp_path: Path) -> None:
    # It ran the whole batch, then named a hidden temporary file.
    source, folder = tmp_path / "in.jsonl", tmp_path / "out"
    source.write_text(json.dumps(REQUEST) + "\n", encoding="utf-8")
    folder.mkdir()
    done = CliRunner().invoke(app, ["batch", str(source), str(folder), "--no-progress"])
    assert done.exit_code == 2
    assert done.stderr == f"ctxasm: error: {folder}: Is a directory\n"
    assert set(tmp_path.iterdir()) == {source, folder}


def test_progress_counts_requests_with_the_rate_and_the_failures() -> None:
    console = Console(file=io.StringIO(), width=150, color_system=None)
    bar = request_columns(console)
    task = bar.add_task("assembling", total=4, failed=0)
    for failed in (0, 1, 1):
        bar.update(task, advance=1, failed=failed)
        time.sleep(0.01)
    console.print(bar.make_tasks_table(bar.tasks))
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert re.search(r"3/4 requests [\d,.]+ req/s 1 failed \d:\d\d:\d\d", shown), shown


def _ctxasm() -> list[str]:
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "ctxasm"]


def _interrupt(tmp_path: Path, signum: int, *args: str) -> tuple[int, str]:
    """Start a long batch, wait until it has written some lines, then send ``signum``."""
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps({**REQUEST, "id": f"q{i}"}) + "\n" for i in range(20_000)),
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [*_ctxasm(), "batch", "in.jsonl", "out.jsonl", "--no-progress", *args],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    partial = tmp_path / "out.jsonl.partial"
    while time.monotonic() < deadline:
        if partial.exists() and partial.stat().st_size > 50_000:
            break
        time.sleep(0.05)
    else:
        process.kill()
        pytest.fail("the batch wrote nothing within 60 s")
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_keeps_the_lines_written_and_resume_goes_on_after_them(
    tmp_path: Path, signum: int, code: int
) -> None:
    # An interrupted batch used to remove everything it had written.
    if signum == signal.SIGTERM:
        (tmp_path / "out.jsonl").write_text("precious\n")
    returncode, err = _interrupt(tmp_path, signum)
    name = signal.Signals(signum).name
    match = re.fullmatch(
        rf"ctxasm: interrupted by {name} after ([\d,]+) result lines; out.jsonl was not "
        r"written, the lines are kept in out.jsonl.partial: run the same command with --resume "
        r"to go on after them\n",
        err,
    )
    assert (returncode, bool(match)) == (code, True), err
    assert match is not None
    done = int(match.group(1).replace(",", ""))
    partial = tmp_path / "out.jsonl.partial"
    assert done > 0 and len(partial.read_text().splitlines()) == done
    if signum == signal.SIGTERM:
        assert (tmp_path / "out.jsonl").read_text() == "precious\n"
    else:
        assert not (tmp_path / "out.jsonl").exists()

    again = subprocess.run(
        [*_ctxasm(), "batch", "in.jsonl", "out.jsonl", "--no-progress", "--resume"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (again.returncode, again.stderr) == (0, "ctxasm: 20000 assembled, 0 failed\n")
    ids = [json.loads(line)["id"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert ids == [f"q{i}" for i in range(20_000)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def _requests(count: int, *, blank_every: int = 0) -> list[str]:
    lines = []
    for i in range(count):
        lines.append(json.dumps({**REQUEST, "id": f"q{i}"}))
        if blank_every and i % blank_every == 0:
            lines.append("")
    return lines


def _interrupted_run(tmp_path: Path, lines: list[str], done: int) -> Path:
    """``out.jsonl.partial`` as a run of ``lines`` stopped after ``done`` results leaves it."""
    first = tmp_path / "first"
    first.mkdir()
    requests = [line for line in lines if line.strip()][:done]
    _batch(first, requests)
    partial = tmp_path / "out.jsonl.partial"
    (first / "out.jsonl").rename(partial)
    return partial


def test_resume_assembles_only_the_requests_after_the_kept_lines(tmp_path: Path) -> None:
    lines = _requests(12, blank_every=4)
    lines[9] = '{"id": "bad", "query": 5}'  # an error record past the kept lines
    partial = _interrupted_run(tmp_path, lines, 5)
    kept = partial.read_text()
    code, err, records = _batch(tmp_path, lines, "--resume")
    assert (code, err.splitlines()[0]) == (1, "ctxasm: 11 assembled, 1 failed")
    assert "the first failed request is on line 10: " in err
    assert (tmp_path / "out.jsonl").read_text().startswith(kept)  # not assembled again
    assert [r.get("id") for r in records] == [f"q{i}" for i in range(7)] + ["bad"] + [
        f"q{i}" for i in range(8, 12)
    ]
    assert records[7]["line"] == 10  # the input's line number, blank lines counted
    assert not partial.exists()


def test_resume_names_a_failure_among_the_kept_lines(tmp_path: Path) -> None:
    lines = _requests(6)
    lines[2] = '{"id": "bad", "query": 5}'
    _interrupted_run(tmp_path, lines, 4)
    code, err, records = _batch(tmp_path, lines, "--resume")
    assert (code, err.splitlines()[0]) == (1, "ctxasm: 5 assembled, 1 failed")
    assert "ctxasm: the first failed request is on line 3: " in err
    assert records[2]["line"] == 3


def test_the_first_failure_is_shown_on_one_line_without_escapes(tmp_path: Path) -> None:
    # an error message may quote the input: a key with a line break or a terminal escape
    bad = json.dumps({**REQUEST, "\u001b[2J\nfake: line" * 40: 1})
    code, err, _ = _batch(tmp_path, [json.dumps(REQUEST), bad])
    counts, first, _where = err.splitlines()
    assert (code, counts) == (1, "ctxasm: 1 assembled, 1 failed")
    assert first.startswith("ctxasm: the first failed request is on line 2: unknown request field")
    assert "\x1b" not in err
    assert len(first) < 400 and first.endswith("…")


def test_a_last_line_cut_short_is_assembled_again(tmp_path: Path) -> None:
    lines = _requests(6)
    partial = _interrupted_run(tmp_path, lines, 3)
    with partial.open("a") as handle:
        handle.write('{"id": "q3", "messa')  # killed while it wrote
    code, err, records = _batch(tmp_path, lines, "--resume")
    assert (code, err) == (0, "ctxasm: 6 assembled, 0 failed\n")
    assert [r["id"] for r in records] == [f"q{i}" for i in range(6)]


def test_resume_with_no_partial_file_runs_the_whole_batch(tmp_path: Path) -> None:
    code, err, records = _batch(tmp_path, _requests(3), "--resume")
    assert (code, err, len(records)) == (0, "ctxasm: 3 assembled, 0 failed\n", 3)


def test_lines_kept_from_an_interrupted_run_are_never_written_over(tmp_path: Path) -> None:
    lines = _requests(4)
    partial = _interrupted_run(tmp_path, lines, 2)
    kept = partial.read_text()
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    done = CliRunner().invoke(
        app, ["batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), "--no-progress"]
    )
    assert done.exit_code == 2
    assert done.stderr == (
        f"ctxasm: error: {partial} holds 2 result lines of an interrupted batch: add --resume "
        "to go on after them, or delete it to start over [OUT]\n"
    )
    assert partial.read_text() == kept and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("other", ["ids", "fewer"])
def test_resume_refuses_lines_kept_from_another_input(tmp_path: Path, other: str) -> None:
    lines = _requests(6)
    partial = _interrupted_run(tmp_path, lines, 4)
    kept = partial.read_text()
    if other == "ids":
        lines = [json.dumps({**REQUEST, "id": f"other{i}"}) for i in range(6)]
        why = "its last result is not that of request 4 (line 4) of"
    else:
        lines = lines[:3]
        why = "holds 4 result lines but"
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    done = CliRunner().invoke(
        app, ["batch", str(source), str(tmp_path / "out.jsonl"), "--no-progress", "--resume"]
    )
    assert done.exit_code == 2
    assert why in done.stderr and done.stderr.endswith("delete it to start over [OUT]\n")
    assert partial.read_text() == kept and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-", "--resume"], "--resume needs an output file"),
        (["out.jsonl", "--resume", "--engine", "ray"], "--resume works with the local engine"),
    ],
)
def test_resume_needs_a_local_batch_writing_a_file(
    tmp_path: Path, args: list[str], message: str
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(REQUEST) + "\n")
    done = CliRunner().invoke(app, ["batch", str(source), *args, "--no-progress"])
    assert done.exit_code == 2 and message in done.stderr, done.stderr


def test_a_full_disk_is_named_as_the_output_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closing the half-written file failed again and that second error, with no file name,
    # was reported as the input's fault (exit 2).
    import errno
    from contextlib import contextmanager

    from ctxasm.cli import batch_run

    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    @contextmanager
    def full_disk(target: str, append: bool = False):  # type: ignore[no-untyped-def]
        handle = Full()
        try:
            yield handle
        finally:
            handle.close()  # as a real file is closed: and the flush fails again

    monkeypatch.setattr(batch_run, "kept_output", full_disk)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(REQUEST) + "\n", encoding="utf-8")
    target = tmp_path / "out.jsonl"
    done = CliRunner().invoke(app, ["batch", str(source), str(target), "--no-progress"])
    assert done.exit_code == 1
    assert done.stderr == f"ctxasm: error: cannot write {target}: No space left on device [OUT]\n"


def test_a_signal_ends_a_ray_batch_as_it_ends_a_local_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ray's own SIGTERM handler aborted the process (exit 134, a C stack dump); ctxasm's is
    # set after Ray starts. Ray itself is replaced here: tests/batch/test_ray_batch.py runs it.
    from ctxasm.batch import ray_engine
    from ctxasm.cli.batch_run import BatchInterruptedError, run_ray_batch

    started: list[bool] = []

    def start() -> None:
        started.append(True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as Ray's would be: replaced after this

    def run(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        pytest.fail("SIGTERM was not handled")

    monkeypatch.setattr(ray_engine, "start_ray", start)
    monkeypatch.setattr(ray_engine, "run_batch", run)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(REQUEST) + "\n", encoding="utf-8")
    with pytest.raises(BatchInterruptedError) as caught:
        run_ray_batch(str(source), str(tmp_path / "out.jsonl"), None, max_bytes=1 << 20)
    assert (started, caught.value.signum) == ([True], signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the caller's handler is back


@pytest.mark.parametrize("parquet", ["IN", "OUT"])
def test_the_local_engine_refuses_parquet_naming_the_ray_engine(
    tmp_path: Path, parquet: str
) -> None:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(REQUEST) + "\n", encoding="utf-8")
    if parquet == "IN":
        source = source.rename(tmp_path / "in.parquet")
    else:
        target = tmp_path / "out.parquet"
    done = CliRunner().invoke(app, ["batch", str(source), str(target), "--no-progress"])
    assert done.exit_code == 2
    assert "Parquet needs --engine ray" in done.stderr and f"[{parquet}]" in done.stderr
    assert not target.exists()


@pytest.mark.parametrize("resume", [False, True])
def test_a_second_batch_writing_the_same_output_is_refused(tmp_path: Path, resume: bool) -> None:
    # Two runs of one cron job wrote OUT.partial at once: their lines would interleave.
    import fcntl

    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(_requests(2)) + "\n")
    partial = tmp_path / "out.jsonl.partial"
    with partial.open("a") as running:
        fcntl.flock(running.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # the other batch
        args = ["batch", str(source), str(tmp_path / "out.jsonl"), "--no-progress"]
        done = CliRunner().invoke(app, [*args, *(["--resume"] if resume else [])])
        assert done.exit_code == 2
        assert done.stderr == (
            f"ctxasm: error: another batch is writing {partial} now: wait for it to end, or "
            "give another output file [OUT]\n"
        )
        assert partial.exists() and not (tmp_path / "out.jsonl").exists()


def test_a_signal_whose_exception_python_ignored_still_stops_the_batch() -> None:
    # A SIGINT that landed while Python ran a weak reference's callback raised there, was
    # ignored ("Exception ignored in: <function WeakSet...>"), and the batch ran to its end with
    # exit 0 (a flaky failure of the test above)
    from ctxasm.cli import batch_run

    with batch_run._signals_raise() as received:
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        with pytest.raises(batch_run._Signalled):
            handler(signal.SIGINT, None)  # as if its exception had been lost
        lines = batch_run._until_signalled(iter([(b"{}", 1), (b"{}", 2)]), received)
        with pytest.raises(batch_run._Signalled) as stopped:
            next(lines)
    assert stopped.value.signum == signal.SIGINT
    assert signal.getsignal(signal.SIGINT) is not handler  # the caller's handler is back
    finished = batch_run._until_signalled(iter([(b"{}", 1)]), [])
    assert list(finished) == [(b"{}", 1)]


def test_a_lost_signal_stops_a_ray_batch_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # rv46-5: the Ray path ignored the signals recorded, and exited 0
    import types

    from ctxasm.batch.jsonl import BatchStats
    from ctxasm.cli import batch_run

    def run_batch(source: str, target: str, config: object, *, max_bytes: int) -> BatchStats:
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler)
        with pytest.raises(batch_run._Signalled):
            handler(signal.SIGTERM, None)  # as if its exception had been lost
        return BatchStats()

    engine = types.ModuleType("ctxasm.batch.ray_engine")
    engine.start_ray = lambda: None  # type: ignore[attr-defined]
    engine.run_batch = run_batch  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ctxasm.batch.ray_engine", engine)
    with pytest.raises(batch_run.BatchInterruptedError) as stopped:
        batch_run.run_ray_batch("in.jsonl", "out.jsonl", None, max_bytes=1 << 20)
    assert stopped.value.signum == signal.SIGTERM
