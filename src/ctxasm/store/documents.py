"""Reading documents to index: ``.txt``, ``.md``, ``.html`` and ``.jsonl`` files.

A JSONL line is ``{"doc_id", "text", "title"?, "url"?, "tenant"?, "readers"?, "timestamp"?,
"authority"?, "metadata"?}``; another key is refused (a misspelt ``"reader"`` would leave the
run's access data in place). Files of the other kinds are one document each, with the path as
``doc_id`` (relative to the run's root folder: see :func:`file_doc_id`) and the title taken
from the first Markdown heading or the HTML ``<title>`` (else the file name). An HTML page is
read as a browser shows it (:mod:`ctxasm.store.html_text`), and so is a Markdown file that holds
raw HTML outside code, a link reference definition or a footnote, once rendered (what a comment,
a hidden element or a definition holds, and a footnote's label, are not read;
:mod:`ctxasm.store.markdown_text`); other Markdown is read as written. Access data given on the
command line applies where a document names none (the key absent or ``null``). Access data is
checked as a principal's is (:mod:`ctxasm.validation`): an empty ``tenant``, an empty or blank
reader name, a bare string for ``readers`` or a control character (NUL included) in either is
refused, so the line is reported and skipped rather than indexed as public; ``"readers": []`` is
kept and admits nobody.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxasm.errors import CtxasmError, RequestError
from ctxasm.jsonio import decode_json
from ctxasm.store.html_text import visible_text
from ctxasm.store.markdown_text import UnreadableMarkdownError, markdown_text
from ctxasm.validation import (
    invalid,
    key_path,
    name,
    names,
    number,
    relocated,
    shown,
    string,
    timestamp,
)

__all__ = ["SUFFIXES", "Document", "file_doc_id", "id_root", "read_documents"]

SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".jsonl")


@dataclass(frozen=True, slots=True)
class Document:
    """One document and its access data (``readers`` ``None``: no reader restriction)."""

    doc_id: str
    text: str
    title: str | None = None
    url: str | None = None
    tenant: str | None = None
    readers: tuple[str, ...] | None = None
    timestamp: str | None = None
    authority: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check every field (errors name it ``document.<name>``); lists become tuples."""
        set_field = object.__setattr__
        # The plain strings are kept: a str subclass may redefine what the checks and the
        # stores use ("in", encode, hashing), so its own methods would see another text.
        doc_id = string(self.doc_id, "document.doc_id", nonempty=True)
        if "\x00" in doc_id:
            raise RequestError(
                f"document.doc_id contains a NUL character; got {shown(doc_id)}",
                field="document.doc_id",
            )
        set_field(self, "doc_id", doc_id)
        set_field(self, "text", string(self.text, "document.text"))
        for key in ("title", "url"):
            set_field(self, key, string(getattr(self, key), f"document.{key}", optional=True))
        set_field(self, "timestamp", timestamp(self.timestamp, "document.timestamp"))
        set_field(self, "tenant", name(self.tenant, "document.tenant", optional=True))
        set_field(self, "readers", names(self.readers, "document.readers", optional=True))
        set_field(self, "authority", number(self.authority, "document.authority", low=0, high=1))
        if not isinstance(self.metadata, Mapping):
            raise invalid("document.metadata", "an object", self.metadata)
        # A copy of what was checked, as the stores write it: the caller's object may change
        # after the check (a lone surrogate added reached the content hash as a traceback).
        set_field(self, "metadata", _checked_metadata(self.metadata))


def _checked_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` as the stores write it, JSON's values only (others as their ``str``, keys
    sorted), or a :class:`RequestError` naming the field where they cannot write it as JSON
    (keys that cannot be sorted included: ``1`` and ``"1"`` would be one key)."""
    if not metadata:
        return {}
    try:
        # keys sorted, as a store's content hash sorts them ({1: ..., None: ...} cannot be)
        written = json.dumps(
            dict(metadata), ensure_ascii=False, allow_nan=False, default=str, sort_keys=True
        )
        written.encode()
    except UnicodeEncodeError:
        raise RequestError(
            "document.metadata holds a lone surrogate (half of a UTF-16 pair), which no store "
            "can write as UTF-8",
            field="document.metadata",
        ) from None
    except (ValueError, TypeError, RecursionError) as exc:  # NaN, a cycle, keys, depth
        raise RequestError(
            f"document.metadata cannot be written as JSON: {' '.join(str(exc).split())[:200]}",
            field="document.metadata",
        ) from None
    copy: dict[str, Any] = json.loads(written)
    return copy


def file_doc_id(path: Path, root: str | os.PathLike[str] | None = None) -> str:
    """A file's document id: its path relative to ``root`` (by default the working folder)
    when it lies inside it (however it was typed), else its absolute path, so re-indexing finds
    the same document. ``ctxasm delete`` resolves a path argument with it too. The file need
    not exist; ``root`` must be a folder (see :func:`id_root`)."""
    return _relative_id(path, id_root(root))


def id_root(root: str | os.PathLike[str] | None, field: str = "root") -> Path:
    """The folder that files' document ids are relative to, resolved: ``root``, or the working
    folder for ``None``. A :class:`RequestError` naming ``field`` when ``root`` is not the path
    of a folder (ids relative to a mistyped folder would all be absolute paths)."""
    if root is None:
        return Path.cwd().resolve()
    given = os.fspath(root) if isinstance(root, (str, os.PathLike)) else None
    if not isinstance(given, str):  # bytes, or a PathLike of bytes, are no text to show
        raise invalid(field, "a folder's path", root)
    why = None
    try:
        mode = os.stat(given).st_mode
    except ValueError:  # a NUL in the path
        why = "does not exist"
    except OSError as exc:
        missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
        why = "does not exist" if missing else f"cannot be used ({exc.strerror})"
    else:
        if not stat.S_ISDIR(mode):
            why = f"is {'a file' if stat.S_ISREG(mode) else file_kind(mode)}, not a folder"
    if why is not None:
        advice = "give the folder that files' document ids are relative to"
        raise RequestError(f"{field} {shown(given)} {why}; {advice}", field=field)
    return Path(given).resolve()


def _relative_id(path: Path, folder: Path) -> str:
    """The id of the file at ``path``: relative to ``folder`` (resolved) when inside it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(folder).as_posix()
    except ValueError:
        return resolved.as_posix()


_FIELDS = (
    "doc_id",
    "text",
    "title",
    "url",
    "tenant",
    "readers",
    "timestamp",
    "authority",
    "metadata",
)


def _record(raw: Any, where: str, tenant: str | None, readers: tuple[str, ...] | None) -> Document:
    """One JSONL line as a document; the run's ``tenant`` and ``readers`` fill in where the line
    has the key absent or ``null``. Errors name the field as ``<file>:<line>.<name>``."""
    if not isinstance(raw, dict):
        raise RequestError(f"{where} must be a JSON object", field=where)
    unknown = sorted(key for key in raw if key not in _FIELDS)
    if unknown:
        # A misspelt access key ("reader", "Tenant") must not leave the run's defaults in place.
        field = key_path(where, unknown[0])  # a key of a megabyte comes back shortened
        raise RequestError(
            f"{field} is not a field of a line; a line has {', '.join(_FIELDS)} "
            "(put anything else under metadata)",
            field=field,
        )
    for key in ("doc_id", "text"):
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise RequestError(f"{where}.{key} must be a non-empty string", field=f"{where}.{key}")
    doc_tenant = raw.get("tenant")
    doc_readers = raw.get("readers")
    metadata = raw.get("metadata")
    try:
        return Document(
            doc_id=raw["doc_id"],
            text=raw["text"],
            title=raw.get("title"),
            url=raw.get("url"),
            tenant=tenant if doc_tenant is None else doc_tenant,
            readers=readers if doc_readers is None else doc_readers,
            timestamp=raw.get("timestamp"),
            authority=raw.get("authority"),
            metadata={} if metadata is None else metadata,
        )
    except RequestError as error:
        raise relocated(error, "document", where) from None


def _read_text(
    path: Path, *, lines: str | None = None, expected: tuple[int, int] | None = None
) -> str:
    """The text of the regular file at ``path``, read as ``Path.read_text`` reads it (UTF-8
    without a byte order mark before it; universal newlines, or ``lines`` as ``open``'s
    ``newline``); a :class:`RequestError` for anything else, before a byte is read: a named
    pipe blocked the run forever, a device such as /dev/zero would fill its memory. The file is
    opened without waiting for a pipe's writer and what was opened is checked, so nothing can
    take its place in between; with ``expected`` (device and inode), the file opened must be
    that one (a folder walk's file, its name or a folder on its way swapped for a link to
    another file before it was read, is refused)."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        opened = os.fstat(handle)
        if expected is not None and (opened.st_dev, opened.st_ino) != expected:
            raise RequestError(
                f"{path}: names another file than when the folder was read (a link or a "
                "folder swapped in meanwhile); not read",
                field=str(path),
            )
        mode = opened.st_mode
        if not stat.S_ISREG(mode):
            raise RequestError(
                f"{path}: {not_regular(mode)} (write what it holds to a file and index that)",
                field=str(path),
            )
        with open(os.dup(handle), encoding="utf-8-sig", newline=lines) as stream:
            return stream.read()
    finally:
        os.close(handle)


def not_regular(mode: int) -> str:
    """Why a file of ``mode`` (not a regular one) is not read, for a message."""
    return f"not a regular file but {file_kind(mode)}; only regular files are read"


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message."""
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def read_documents(
    path: Path,
    *,
    tenant: str | None = None,
    readers: Sequence[str] | None = None,
    errors: list[tuple[str, str]] | None = None,
    expected: tuple[int, int] | None = None,
    root: str | os.PathLike[str] | None = None,
    seen: dict[str, str] | None = None,
) -> Iterator[Document]:
    """The documents of one file (a :class:`RequestError` names the file and what is wrong).
    With ``errors``, a bad JSONL line is recorded there (``("file:line", reason)``) and skipped
    instead of ending the file. With ``expected`` (device and inode), ``path`` must still name
    that file when it is opened. A file that is one document has the id :func:`file_doc_id`
    gives it from ``root`` (by default the working folder). With ``seen`` (the ids a run has
    read, each with where it was), a document whose id was read before is refused (a JSONL line
    recorded in ``errors`` and skipped): an id names one document, and the later one would
    silently replace the earlier."""
    tenant = name(tenant, "tenant", optional=True)  # the run's defaults, checked before any file
    default_readers = names(readers, "readers", optional=True)
    folder = None if root is None else id_root(root)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise RequestError(
            f"{path}: unsupported file type; index {', '.join(SUFFIXES)}", field=str(path)
        )
    try:
        # JSONL lines end at "\n" alone: a bare "\r" is white space inside a line's JSON.
        raw = _read_text(path, lines="" if suffix == ".jsonl" else None, expected=expected)
    except UnicodeDecodeError:
        raise RequestError(f"{path}: not UTF-8 text", field=str(path)) from None
    except OSError as exc:
        raise RequestError(f"{path}: cannot read: {exc.strerror}", field=str(path)) from None
    if suffix == ".jsonl":
        # Lines end at "\n" only: JSON writes it escaped inside a string, while U+2028, U+0085
        # and the like, at which str.splitlines also splits, may stand in a string unescaped.
        for number, line in enumerate(raw.split("\n"), start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                try:
                    # The reader requests go through: repeated keys, NaN, nesting over 64
                    # levels and lone surrogates are refused, as they are in a request.
                    record = decode_json(line.encode("utf-8"), what="line")
                except CtxasmError as error:
                    raise RequestError(f"{where}: not JSON: {error.message}", field=where) from None
                document = _record(record, where, tenant, default_readers)
                _first(document.doc_id, where, seen)
            except RequestError as error:
                if errors is None:
                    raise
                errors.append((where, error.message))
                continue
            yield document
        return
    if suffix in (".html", ".htm"):
        try:
            text, title = visible_text(raw)
        except (ValueError, RecursionError) as exc:  # whatever a page makes the reader fail on
            raise RequestError(
                f"{path}: cannot read as HTML ({type(exc).__name__})", field=str(path)
            ) from None
    elif suffix in (".md", ".markdown"):
        try:
            text, title = markdown_text(raw)
        except UnreadableMarkdownError as exc:
            raise RequestError(f"{path}: cannot read as Markdown: {exc}", field=str(path)) from None
        except Exception as exc:  # a foreign parser's failure, of whatever kind, on one file
            raise RequestError(
                f"{path}: cannot read as Markdown ({type(exc).__name__})", field=str(path)
            ) from None
    else:
        text, title = raw, None
    document = Document(
        doc_id=_relative_id(path, id_root(None) if folder is None else folder),
        text=text,
        title=title or path.stem,
        tenant=tenant,
        readers=default_readers,
    )
    _first(document.doc_id, str(path), seen)
    yield document


def _first(doc_id: str, where: str, seen: dict[str, str] | None) -> None:
    """Record that ``doc_id`` was read at ``where``; a :class:`RequestError` when the run read
    it before (``seen``: the ids read so far, each with where)."""
    if seen is None:
        return
    before = seen.setdefault(doc_id, where)
    if before != where:
        raise RequestError(
            f"doc_id {shown(doc_id)} was given before, at {before}: an id names one document "
            "in a store, so this one is not indexed (give each document its own doc_id)",
            field=where,
        )
