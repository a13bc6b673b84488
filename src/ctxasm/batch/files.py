"""Batch outputs: written whole or not at all (:func:`ctxasm.files.atomic_output`: a hidden
temporary file beside the target, renamed over it at the end), and never over the input."""

from __future__ import annotations

import os
from pathlib import Path

from ctxasm.errors import RequestError
from ctxasm.files import atomic_output, new_file_mode

__all__ = ["atomic_output", "check_not_input", "new_file_mode"]


def check_not_input(source: str, target: str) -> None:
    """Refuse a ``target`` that is the input ``source`` (by name, link or path): the results
    would replace the requests they came from."""
    if source == "-" or target == "-":
        return
    try:
        same = os.path.samefile(source, target)
    except (OSError, ValueError):  # either missing (or unnamable): not the same file
        return
    if not same and os.path.isdir(target):  # a folder output replaces what is in it
        inside = Path(os.path.realpath(source))
        same = Path(os.path.realpath(target)) in inside.parents
    if same:
        raise RequestError(
            f"the output {target} is the input {source}: the results would replace the "
            "requests; write them to another file",
            field="OUT",
        )
