"""Files a store holds twice: under the id indexing gives them now and under the one it gave
them from another working folder.

Without a root, a file's id is its path relative to the folder indexing runs in: ``ctxasm index
docs/a.md`` in a project and ``ctxasm index a.md`` in its ``docs`` folder store ``docs/a.md``
and ``a.md``, and ``ask`` returns the old text and the new side by side. The ids a file had from
other folders are its path relative to each folder above it and its absolute path; the store is
asked which of them it holds in one query per batch of documents (``stored_ids``: each looked
up in the documents' key), so the check costs next to nothing. A stored id that names another
file from the working folder is that file's (``README.md`` beside ``docs/README.md``), not a
duplicate.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ctxasm.validation import encodable

__all__ = ["other_ids", "stored_twice"]


def other_ids(doc_id: str, folder: Path) -> list[str]:
    """The ids that the file whose id from ``folder`` (resolved) is ``doc_id`` has from the
    folders above it and outside them (its absolute path), ``doc_id`` left out, as are ids no
    store can hold (not valid Unicode: a file name of undecodable bytes)."""
    # With strings: pathlib, once per folder above, cost more than the look-up in the store.
    path = doc_id if os.path.isabs(doc_id) else f"{folder.as_posix().rstrip('/')}/{doc_id}"
    parts = path.split("/")  # the first is the root's: "" (or a drive, "C:")
    ids = ["/".join(parts[start:]) for start in range(len(parts) - 1, 0, -1)]
    ids.append(path)
    whole = encodable(path)  # then so is every part of it
    return [other for other in ids if other != doc_id and (whole or encodable(other))]


def stored_twice(store: object, doc_ids: Sequence[str]) -> list[tuple[str, str]]:
    """``(id, stored id)`` for each of ``doc_ids`` (files' ids from the working folder) that
    ``store`` also holds under an id from another folder, in the order of ``doc_ids``; none
    where the store cannot tell (it has no ``stored_ids``) or the working folder is gone."""
    stored_ids = getattr(store, "stored_ids", None)
    if not callable(stored_ids) or not doc_ids:
        return []
    try:
        folder = Path.cwd().resolve()
    except OSError:
        return []
    candidates = {doc_id: other_ids(doc_id, folder) for doc_id in doc_ids}
    held = stored_ids([other for others in candidates.values() for other in others])
    return [
        (doc_id, other)
        for doc_id, others in candidates.items()
        for other in others
        if other in held and _same_or_none(folder / other, folder / doc_id)
    ]


def _same_or_none(named: Path, file: Path) -> bool:
    """Whether the path a stored id names from the working folder is ``file`` or no file (an
    id given from another folder), rather than another file, whose own id it is."""
    try:
        return not named.is_file() or named.resolve() == file
    except (OSError, RuntimeError):  # a link loop: no file
        return True
