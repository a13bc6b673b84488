"""File handling for ``ctxasm batch``: atomic output, progress on a terminal."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, BinaryIO

from ctxasm.assembler import Assembler
from ctxasm.batch.jsonl import BatchStats, assemble_lines, read_lines

__all__ = ["run_batch"]


@contextmanager
def _output(target: str) -> Iterator[IO[str]]:
    """Standard output, or a temporary file renamed over ``target`` only when all went well."""
    if target == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    path = Path(target)
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, renamed on success
        "w", encoding="utf-8", dir=path.parent or ".", prefix=f".{path.name}.", delete=False
    )
    try:
        with handle:
            yield handle
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


@contextmanager
def _input(source: str) -> Iterator[tuple[BinaryIO, int | None]]:
    if source == "-":
        yield sys.stdin.buffer, None
        return
    with open(source, "rb") as handle:
        yield handle, os.fstat(handle.fileno()).st_size


def run_batch(
    source: str, target: str, assembler: Assembler, *, max_bytes: int, progress: bool
) -> BatchStats:
    """Assemble every request line of ``source`` into ``target``."""
    with _input(source) as (stream, size), _output(target) as out:
        lines = read_lines(stream, max_bytes)
        if not progress:
            return assemble_lines(lines, out.write, assembler, max_line_bytes=max_bytes)
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        columns = [BarColumn(), DownloadColumn(), TimeRemainingColumn()]
        with Progress(*columns, transient=True) as bar:
            task = bar.add_task("assembling", total=size)
            return assemble_lines(
                lines,
                out.write,
                assembler,
                max_line_bytes=max_bytes,
                on_line=lambda n: bar.advance(task, n),
            )
