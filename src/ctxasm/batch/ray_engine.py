"""Batch assembly on Ray (the ``ray`` extra): the same results as the
single-process ``ctxasm batch``, line for line, computed by Ray tasks.

:func:`assemble_dataset` maps a Ray Dataset of ``{"line": int, "request": bytes | str}`` rows
to ``{"line": int, "result": str}`` rows, where ``result`` is exactly the JSON line the
single-process batch writes (an error record for a bad line; blank lines are dropped).
:func:`run_batch` does it for files: JSONL in (one request per line) or Parquet in (a
``request`` column of JSON text); JSONL out (in input order, written atomically) or Parquet out
(a folder of files with ``line`` and ``result`` columns, which replaces the folder of an earlier
run whole when the run succeeds).

``ray.init()`` joins the cluster in ``RAY_ADDRESS`` when it is set (for example
``ray://head:10001``, or ``auto`` on a cluster node), else starts a local one; every worker
builds its own assembler from the same config, so results do not depend on where a line runs.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctxasm.batch.files import atomic_output, check_not_input, new_file_mode
from ctxasm.batch.jsonl import DEFAULT_MAX_LINE_BYTES, BatchStats, assemble_line, read_lines
from ctxasm.errors import RequestError

__all__ = ["assemble_dataset", "run_batch", "start_ray"]

_ASSEMBLERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _assembler(config: dict[str, Any] | str | None) -> Any:
    from ctxasm.assembler import Assembler

    key = json.dumps(config, sort_keys=True, default=str)
    with _LOCK:
        if key not in _ASSEMBLERS:
            _ASSEMBLERS[key] = Assembler(config)
        return _ASSEMBLERS[key]


def _request_value(value: Any) -> str | bytes:
    """A Parquet cell of the ``request`` column as the line it stands for: text, or UTF-8
    bytes as they are (a binary column was read as the text of its ``repr``); a null cell as
    JSON's ``null`` (refused as "not an object", where its repr "None" read as invalid JSON)."""
    if value is None:
        return "null"
    return value if isinstance(value, bytes | str) else str(value)


@contextmanager
def _replaced_folder(target: str) -> Iterator[str]:
    """A new folder to write into that becomes ``target`` when the block succeeds, replacing
    what was there (Ray adds its files to a folder: an earlier run's rows stayed beside the
    new ones), and is removed when it fails."""
    path = Path(os.path.realpath(target))  # a link stays one: what it names is replaced
    if path.is_dir():
        others = sorted(p.name for p in path.iterdir() if not _written_by_ray(p))
        if others:
            raise RequestError(
                f"the output {target} is a folder that holds other files than a Parquet "
                f"output's ({', '.join(others[:3])}): it would be replaced whole; write the "
                "results to another folder",
                field="OUT",
            )
    folder = tempfile.mkdtemp(dir=path.resolve().parent, prefix=f".{path.name}.", suffix=".part")
    # the earlier folder's mode, else a new folder's (mkdtemp makes it 0700)
    os.chmod(folder, new_file_mode(path, folder=True))
    try:
        yield folder
        old = None
        if path.is_dir():
            old = tempfile.mkdtemp(
                dir=path.resolve().parent, prefix=f".{path.name}.", suffix=".old"
            )
            os.replace(path, Path(old) / path.name)
        elif path.exists():
            path.unlink()
        os.replace(folder, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _written_by_ray(path: Path) -> bool:
    """Whether ``path`` is one of the files a Parquet output holds (Ray writes ``.parquet``
    files; other writers add ``_SUCCESS`` and ``.crc`` files)."""
    name = path.name
    return path.is_file() and (
        name.endswith((".parquet", ".crc")) or name in ("_SUCCESS", "_common_metadata", "_metadata")
    )


def _parquet_files(source: str) -> list[str]:
    """The Parquet files of ``source`` (a file, or a folder's, walked), in path order: rows
    are numbered in that order whatever order Ray lists them in."""
    path = Path(source)
    if not path.is_dir():
        return [source]
    found = sorted(str(p) for p in path.rglob("*.parquet") if p.is_file())
    if not found:
        raise RequestError(f"{source} holds no .parquet file", field="IN")
    return found


def _batch(
    batch: dict[str, Any], config: dict[str, Any] | str | None, max_bytes: int
) -> dict[str, Any]:
    import numpy as np

    assembler = _assembler(config)
    lines, results = [], []
    sizes = batch.get("size")
    for index, (number, request) in enumerate(zip(batch["line"], batch["request"], strict=True)):
        raw = request if isinstance(request, bytes) else str(request).encode("utf-8")
        size = None if sizes is None else int(sizes[index])
        _, line = assemble_line(raw, int(number), assembler, max_line_bytes=max_bytes, size=size)
        if line is not None:
            lines.append(int(number))
            results.append(line)
    return {"line": np.array(lines, dtype=np.int64), "result": np.array(results, dtype=object)}


def assemble_dataset(
    dataset: Any,
    config: dict[str, Any] | str | None = None,
    *,
    batch_size: int = 64,
    max_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Any:
    """A Ray Dataset of ``{"line", "result"}`` rows from one of ``{"line", "request"}`` rows
    (and ``size``, a request's real length when ``request`` was cut at ``max_bytes + 1``)."""
    return dataset.map_batches(
        _batch,
        fn_kwargs={"config": config, "max_bytes": max_bytes},
        batch_size=batch_size,
        batch_format="numpy",
    )


def start_ray() -> None:
    """Join the cluster in ``RAY_ADDRESS``, else start a local one, unless Ray runs already.
    Ray sets its own SIGTERM handler here: a caller that handles signals sets its own after.
    An address that is malformed, or where nothing answers within ``CONNECT_SECONDS``, is a
    :class:`RequestError` on ``RAY_ADDRESS`` (Ray itself retried an unreachable one forever)."""
    import logging

    import ray

    logging.getLogger("ray.data").setLevel(logging.WARNING)
    if ray.is_initialized():
        return
    address = os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        _check_address(address)
    try:
        ray.init(
            logging_level=logging.WARNING,
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
        )
    except ValueError as exc:  # a malformed address, or ray:// without Ray's client
        raise RequestError(
            f"RAY_ADDRESS {address!r} cannot be used: {' '.join(str(exc).split())[:300]}",
            field="RAY_ADDRESS",
        ) from None


CONNECT_SECONDS = 10.0  # how long a cluster's address may take to accept a connection


def _check_address(address: str) -> None:
    """Refuse a ``host:port`` address where nothing accepts a connection (``auto``, ``local``
    and ``ray://`` addresses are left to Ray)."""
    import socket

    if address in ("auto", "local") or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RequestError(
            f"RAY_ADDRESS {address!r} is not host:port (the head's GCS address, such as "
            "10.0.0.5:6379), auto, local or ray://host:10001",
            field="RAY_ADDRESS",
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise RequestError(
            f"RAY_ADDRESS {address!r}: no Ray cluster answers there ({exc.strerror or exc}); "
            "start one (ray start --head) or unset RAY_ADDRESS to run Ray locally",
            field="RAY_ADDRESS",
        ) from None


def run_batch(
    source: str, target: str, config: dict[str, Any] | str | None = None, *, max_bytes: int
) -> BatchStats:
    """Assemble ``source`` into ``target`` on Ray (see the module docstring)."""
    check_not_input(source, target)
    import ray.data

    if isinstance(config, str):  # workers open it from their own folder
        config = os.path.abspath(config)
    start_ray()
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True  # rows numbered in file order, every run
    rows: list[dict[str, Any]]
    if source.endswith(".parquet") or Path(source).is_dir():
        # a ``request`` column of JSON text (or its UTF-8 bytes); rows are numbered in file order
        table = ray.data.read_parquet(_parquet_files(source))
        if "request" not in table.columns():
            raise RequestError(
                f"{source} has no 'request' column (it has: {', '.join(table.columns())[:200]}); "
                "a Parquet input holds one request per row as JSON text in 'request'",
                field="request",
            )
        rows = [
            {"line": number, "request": _request_value(row["request"])}
            for number, row in enumerate(table.iter_rows(), start=1)
        ]
    else:
        with open(source, "rb") as stream:
            rows = [
                {"line": number, "request": raw, "size": size}
                for number, (raw, size) in enumerate(
                    read_lines(stream, max_bytes, name=source), start=1
                )
            ]
    dataset: Any = ray.data.from_items(rows) if rows else None
    stats = BatchStats()
    if dataset is None:
        if target.endswith(".parquet"):  # a folder with one file of no rows, which reads back
            import pyarrow as pa
            import pyarrow.parquet as pq

            empty = pa.table(
                {"line": pa.array([], pa.int64()), "result": pa.array([], pa.string())}
            )
            with _replaced_folder(target) as folder:
                pq.write_table(empty, str(Path(folder) / "empty.parquet"))
            return stats
        with atomic_output(target):
            return stats
    results = assemble_dataset(dataset, config, max_bytes=max_bytes).sort("line")
    if target.endswith(".parquet"):
        results = results.materialize()  # assembled once: written, then counted
        with _replaced_folder(target) as folder:
            results.write_parquet(folder)
        for row in results.iter_rows():
            _count(stats, row["result"])
        return stats
    with atomic_output(target) as out:
        for row in results.iter_rows():
            out.write(row["result"] + "\n")
            _count(stats, row["result"])
    return stats


def _count(stats: BatchStats, line: str) -> None:
    if line.startswith('{"error"'):  # error records put the error first; results never do
        stats.failed += 1
        stats.failed_line(line)
        return
    stats.ok += 1
    if '"cache":' in line:  # only results that planned for the prompt cache carry one
        report = json.loads(line).get("report") or {}
        if isinstance(report.get("cache"), dict):
            stats.cache.add_section(report["cache"], int(report.get("total_tokens") or 0))
