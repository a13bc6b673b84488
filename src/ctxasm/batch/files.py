"""Batch outputs: written whole or not at all (:func:`ctxasm.files.atomic_output`: a hidden
temporary file beside the target, renamed over it at the end), and never over the input.

:func:`check_not_input` is the rule for every command that writes a file from what it read:
``assemble --html``, ``report --html`` and ``eval``'s outputs apply it too."""

from __future__ import annotations

import os
from pathlib import Path

from ctxasm.errors import RequestError
from ctxasm.files import atomic_output, is_input, new_file_mode

__all__ = ["atomic_output", "check_not_input", "new_file_mode"]


def check_not_input(
    source: str | Path,
    target: str | Path,
    *,
    field: str = "OUT",
    replaced: str = "the results would replace the requests",
) -> None:
    """Refuse a ``target`` that is the input ``source``, by name, link or path (the string
    ``-``: the file standard input reads, as in ``< in.jsonl``; a ``Path`` is always a file's
    name), or a folder that holds it. Writing the target
    would destroy the input. ``field`` names the option in the error, and ``replaced`` says
    what would be lost."""
    if str(target) == "-":
        return
    same = is_input(source, target)
    if not same and source != "-" and os.path.isdir(target):  # a folder output replaces its files
        inside = Path(os.path.realpath(source))
        same = Path(os.path.realpath(target)) in inside.parents
    if same:
        read = "the file standard input reads" if source == "-" else f"the input {source}"
        raise RequestError(
            f"the output {target} is {read}: {replaced}; choose another output file", field=field
        )
