"""The progress bar of the long commands (``eval``, ``batch``, ``index``), on standard error.

The library reports progress through plain callbacks (``evaluate(progress=...)``,
``assemble_lines(on_request=...)``, ``index_paths(progress=...)``); this module alone turns
them into a bar, so that nothing below the CLI imports rich. A hidden bar takes the same calls
and draws nothing, so a command never branches on whether it shows one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["ProgressBar", "progress_bar", "request_columns", "shown"]


def shown(progress: bool | None) -> bool:
    """``--progress/--no-progress`` as given, else whether standard error is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


class _RateColumn(ProgressColumn):
    """Requests per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-- req/s" if speed is None else f"{speed:,.1f} req/s")


def request_columns(console: Console | None = None) -> Progress:
    """A bar that counts requests (of the total, when known), with the rate and the failures
    (the task's ``failed`` field)."""
    return Progress(
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("requests"),
        _RateColumn(),
        TextColumn("{task.fields[failed]:,} failed"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


class ProgressBar:
    """One task on a bar, or nothing at all when the bar is hidden."""

    def __init__(self, bar: Progress | None = None, task: TaskID | None = None) -> None:
        self._bar = bar
        self._task = task

    def advance(self, steps: int = 1, **fields: Any) -> None:
        """``steps`` more done; ``fields`` replace the task's extra fields (``failed``)."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=steps, **fields)

    def update(self, done: int, total: int | None) -> None:
        """``done`` of ``total`` done (``None``: a total not known yet)."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, total=total)


@contextmanager
def progress_bar(
    description: str,
    *,
    show: bool,
    total: int | None = None,
    requests: bool = False,
) -> Iterator[ProgressBar]:
    """A transient bar for one task on standard error while the block runs, when ``show``.

    ``requests`` counts requests with their rate and failures (``advance(failed=n)``);
    otherwise the bar shows the description, the share done and the time left.
    """
    if not show:
        yield ProgressBar()
        return
    console = Console(stderr=True)
    if requests:
        bar = request_columns(console)
        fields: dict[str, Any] = {"failed": 0}
    else:
        bar = Progress(console=console, transient=True)
        fields = {}
    with bar:
        yield ProgressBar(bar, bar.add_task(description, total=total, **fields))
