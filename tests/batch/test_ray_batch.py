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
    assert on_ray.stderr.strip().endswith("ctxasm: 22 assembled, 3 failed")
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
    table = pa.table({"request": [json.dumps(request), json.dumps({"query": "q"})]})
    pq.write_table(table, tmp_path / "in.parquet")
    stats = run_batch(
        str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet"), None, max_bytes=1 << 20
    )
    assert (stats.ok, stats.failed) == (1, 1)
    out = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert sorted(row["line"] for row in out) == [1, 2]
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
