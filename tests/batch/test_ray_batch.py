"""Batch on a real local Ray cluster gives exactly the single-process results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="needs ray (installed by make test)")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "request.json"


def _ctxasm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=os.environ.copy(),
        timeout=300,
    )


def _without_timings(path: Path) -> list[dict[str, Any]]:
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "report" in record:
            record["report"].pop("timings_ms")
        records.append(record)
    return records


def test_ray_batch_matches_the_single_process_batch(tmp_path: Path) -> None:
    request = json.loads(EXAMPLE.read_text())
    lines = [
        json.dumps(request),
        "",
        "{not json",
        json.dumps({"query": "q", "passages": [{"text": 5}]}),
        json.dumps({**request, "id": "r-9", "metadata": {"user": "ann"}}),
        json.dumps({**request, "id": 10, "metadata": {"k": 1}, "model": "no-such-model"}),
        *(
            json.dumps({**request, "query": f"Who taught Alexander, question {i}?"})
            for i in range(20)
        ),
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    local = _ctxasm("batch", "in.jsonl", "local.jsonl", "--no-progress", cwd=tmp_path)
    on_ray = _ctxasm("batch", "in.jsonl", "ray.jsonl", "--engine", "ray", cwd=tmp_path)
    assert local.returncode == on_ray.returncode == 1  # three bad lines
    summary = "ctxasm: 22 assembled, 3 failed\nctxasm: the first failed request is on line 3: "
    assert summary in on_ray.stderr and summary in local.stderr
    records = _without_timings(tmp_path / "ray.jsonl")
    assert records == _without_timings(tmp_path / "local.jsonl")
    assert (records[3]["id"], records[3]["metadata"]) == ("r-9", {"user": "ann"})
    assert {k: v for k, v in records[4].items() if k != "error"} == {
        "line": 6,
        "id": 10,
        "metadata": {"k": 1},
    }


def test_parquet_in_and_out(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ctxasm import Assembler
    from ctxasm.batch.ray_engine import run_batch

    request = json.loads(EXAMPLE.read_text())
    table = pa.table({"request": [json.dumps(request), json.dumps({"query": "q"}), None]})
    pq.write_table(table, tmp_path / "in.parquet")
    stats = run_batch(
        str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet"), None, max_bytes=1 << 20
    )
    assert (stats.ok, stats.failed) == (1, 2)
    out = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert sorted(row["line"] for row in out) == [1, 2, 3]
    # a null cell is a request that is not an object (its repr "None" was called invalid JSON)
    null = json.loads(next(row["result"] for row in out if row["line"] == 3))
    assert null["error"]["message"] == "the request must be a JSON object, got null"
    first = json.loads(next(row["result"] for row in out if row["line"] == 1))
    local = Assembler().assemble(request).to_dict()
    assert first["messages"] == local["messages"]
    assert first["report"]["included"] == local["report"]["included"]
    assert first["report"]["selected"] == len(local["report"]["included"]) > 0
    # A second run replaces the folder (Ray added its files beside the first run's, so reading
    # it back gave both runs' rows); a binary column is read as UTF-8, not as its repr.
    binary = pa.table({"request": pa.array([json.dumps(request).encode()], pa.binary())})
    pq.write_table(binary, tmp_path / "binary.parquet")
    stats = run_batch(
        str(tmp_path / "binary.parquet"), str(tmp_path / "out.parquet"), None, max_bytes=1 << 20
    )
    assert (stats.ok, stats.failed) == (1, 0)
    out = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [row["line"] for row in out] == [1]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing left over


def test_a_parquet_input_without_a_request_column_names_it(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ctxasm.batch.ray_engine import run_batch
    from ctxasm.errors import RequestError

    pq.write_table(pa.table({"req": ["{}"]}), tmp_path / "in.parquet")
    with pytest.raises(RequestError, match="has no 'request' column") as caught:
        run_batch(str(tmp_path / "in.parquet"), str(tmp_path / "o.jsonl"), None, max_bytes=99)
    assert caught.value.field == "request"


def test_engine_errors_are_bad_input(tmp_path: Path) -> None:
    done = _ctxasm("batch", "in.jsonl", "out.jsonl", "--engine", "spark", cwd=tmp_path)
    assert done.returncode == 2 and "local or ray" in done.stderr
    missing = _ctxasm("batch", "nope.jsonl", "out.jsonl", "--engine", "ray", cwd=tmp_path)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_an_output_ray_cannot_write_is_bad_input_by_its_own_name(tmp_path: Path) -> None:
    # it was an internal error (OSError), naming the hidden temporary file
    (tmp_path / "in.jsonl").write_text(EXAMPLE.read_text().replace("\n", " ") + "\n")
    done = _ctxasm("batch", "in.jsonl", "missing/out.jsonl", "--engine", "ray", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "ctxasm: error: missing/out.jsonl: No such file or directory" in done.stderr


def _parquet_requests(folder: Path, files: int) -> list[str]:
    """``files`` Parquet files of one request each in ``folder``, the query naming the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    request = json.loads(EXAMPLE.read_text())
    folder.mkdir()
    names = []
    for number in range(files):
        name = f"part-{number:02d}.parquet"
        query = {**request, "id": name}
        pq.write_table(pa.table({"request": [json.dumps(query)]}), folder / name)
        names.append(name)
    return names


def test_an_output_folder_that_holds_the_input_is_refused(tmp_path: Path) -> None:
    # It was replaced whole: the run deleted the input folder's twelve files.
    from ctxasm.batch.ray_engine import run_batch
    from ctxasm.errors import RequestError

    names = _parquet_requests(tmp_path / "data.parquet", 3)
    source = str(tmp_path / "data.parquet" / names[0])
    with pytest.raises(RequestError, match="is the input") as caught:
        run_batch(source, str(tmp_path / "data.parquet"), None, max_bytes=1 << 20)
    assert caught.value.field == "OUT"
    assert sorted(p.name for p in (tmp_path / "data.parquet").iterdir()) == names


def test_an_output_folder_with_other_files_is_refused(tmp_path: Path) -> None:
    from ctxasm.batch.ray_engine import run_batch
    from ctxasm.errors import RequestError

    (tmp_path / "in.jsonl").write_text(EXAMPLE.read_text().replace("\n", " ") + "\n")
    (tmp_path / "out.parquet").mkdir()
    (tmp_path / "out.parquet" / "notes.txt").write_text("mine")
    with pytest.raises(RequestError, match=r"holds other files than a Parquet output's \(notes"):
        run_batch(str(tmp_path / "in.jsonl"), str(tmp_path / "out.parquet"), None, max_bytes=99999)
    assert (tmp_path / "out.parquet" / "notes.txt").read_text() == "mine"


def test_a_parquet_folder_is_numbered_in_file_order_every_run(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from ctxasm.batch.ray_engine import run_batch

    names = _parquet_requests(tmp_path / "in", 6)
    for run in range(2):
        target = tmp_path / f"out{run}.jsonl"
        run_batch(str(tmp_path / "in"), str(target), None, max_bytes=1 << 20)
        ids = [json.loads(line)["id"] for line in target.read_text().splitlines()]
        assert ids == names
    # a folder output gets a new folder's mode (mkdtemp's was 0700), and an empty input a
    # folder that reads back as no rows (it was a 0-byte file)
    (tmp_path / "empty.jsonl").write_text("\n\n")
    stats = run_batch(str(tmp_path / "empty.jsonl"), str(tmp_path / "e.parquet"), None, max_bytes=9)
    assert (stats.ok, stats.failed) == (0, 0)
    assert pq.read_table(tmp_path / "e.parquet").num_rows == 0
    umask = os.umask(0o022)
    os.umask(umask)
    assert (tmp_path / "e.parquet").stat().st_mode & 0o777 == 0o777 & ~umask


def test_a_config_named_relatively_reaches_the_workers_from_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Workers opened the relative name from their own folder (a cluster's): a whole-job error.
    from ctxasm.batch import ray_engine

    seen: list[Any] = []
    real = ray_engine.assemble_dataset

    def recorded(dataset: Any, config: Any, **options: Any) -> Any:
        seen.append(config)
        return real(dataset, config, **options)

    monkeypatch.setattr(ray_engine, "assemble_dataset", recorded)
    monkeypatch.chdir(tmp_path)
    Path("cfg.toml").write_text('[defaults]\nmodel = "gpt-4o"\n')
    Path("in.jsonl").write_text(EXAMPLE.read_text().replace("\n", " ") + "\n")
    stats = ray_engine.run_batch("in.jsonl", "out.jsonl", "cfg.toml", max_bytes=1 << 20)
    assert (stats.ok, seen) == (1, [str(tmp_path / "cfg.toml")])


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("garbage", "is not host:port"),
        ("127.0.0.1:notaport", "is not host:port"),
        ("127.0.0.1:1", "no Ray cluster answers there"),  # nothing listens: Ray retried forever
    ],
)
def test_a_ray_address_that_cannot_be_used_is_named(address: str, message: str) -> None:
    from ctxasm.batch.ray_engine import _check_address
    from ctxasm.errors import RequestError

    with pytest.raises(RequestError, match=message) as caught:
        _check_address(address)
    assert caught.value.field == "RAY_ADDRESS"


def test_a_cluster_that_refuses_the_connection_is_not_blamed_on_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ray's ConnectionError is an OSError: it was reported as the output file's error (exit 2).
    from typer.testing import CliRunner

    from ctxasm.cli import batch_run
    from ctxasm.cli.main import app

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.5:6379")

    monkeypatch.setattr(batch_run, "run_ray_batch", refused)
    (tmp_path / "in.jsonl").write_text(EXAMPLE.read_text().replace("\n", " ") + "\n")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["batch", "in.jsonl", "out.jsonl", "--engine", "ray"])
    assert done.exit_code == 1
    assert done.stderr == (
        "ctxasm: error: cannot join the Ray cluster (RAY_ADDRESS): Failed to connect to Ray "
        "cluster at 10.0.0.5:6379\n"
    )
