"""Reading documents to index: ``.txt``, ``.md``, ``.html`` and ``.jsonl`` files.

A JSONL line is ``{"doc_id", "text", "title"?, "url"?, "tenant"?, "readers"?, "timestamp"?,
"authority"?, "metadata"?}``. Files of the other kinds are one document each, with the path as
``doc_id`` and the title taken from the first Markdown heading or the HTML ``<title>`` (else the
file name). Access data given on the command line applies where a document names none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from ctxasm.errors import RequestError

__all__ = ["SUFFIXES", "Document", "read_documents"]

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


class _Text(HTMLParser):
    """Visible text and the title of an HTML page."""

    _SKIP = frozenset({"script", "style", "head", "noscript", "template"})
    _BLOCK = frozenset(
        {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self._SKIP:
            self._skip += 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.parts.append(data)


def _html(raw: str) -> tuple[str, str | None]:
    parser = _Text()
    parser.feed(raw)
    parser.close()
    text = re.sub(r"[ \t]+", " ", "".join(parser.parts))
    text = re.sub(r"\s*\n\s*", "\n", text).strip()
    title = " ".join("".join(parser.title).split()) or None
    return text, title


_FENCED = re.compile(r"^(```|~~~).*?^\1[^\n]*$", flags=re.MULTILINE | re.DOTALL)


def _doc_id(path: Path) -> str:
    """A file's document id: its path relative to the working folder when it lies inside it
    (however it was typed), else its absolute path, so re-indexing finds the same document."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def _markdown_title(text: str) -> str | None:
    """The first level-one ATX heading outside fenced code blocks."""
    outside = _FENCED.sub("", text)
    match = re.search(r"^#[ \t]+(\S.*?)[ \t]*#*[ \t]*$", outside, flags=re.MULTILINE)
    return match.group(1) if match else None


def _record(raw: Any, where: str, tenant: str | None, readers: tuple[str, ...] | None) -> Document:
    if not isinstance(raw, dict):
        raise RequestError(f"{where} must be a JSON object", field=where)

    def text_field(key: str, *, required: bool = False) -> str | None:
        value = raw.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            raise RequestError(f"{where}.{key} must be a non-empty string", field=f"{where}.{key}")
        return value

    doc_readers = raw.get("readers")
    if doc_readers is None:  # absent or null: the run's default
        doc_readers = readers
    if doc_readers is not None:
        if not isinstance(doc_readers, list | tuple) or not all(
            isinstance(r, str) and r for r in doc_readers
        ):
            raise RequestError(f"{where}.readers must be a list of names", field=f"{where}.readers")
        doc_readers = tuple(doc_readers)
    authority = raw.get("authority")
    if authority is not None and (
        isinstance(authority, bool)
        or not isinstance(authority, int | float)
        or not 0 <= authority <= 1
    ):
        raise RequestError(
            f"{where}.authority must be a number from 0 to 1", field=f"{where}.authority"
        )
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RequestError(f"{where}.metadata must be an object", field=f"{where}.metadata")
    timestamp = text_field("timestamp")
    if timestamp is not None:
        from ctxasm.schema import parse_timestamp

        try:
            parse_timestamp(timestamp)
        except (ValueError, RequestError):
            raise RequestError(
                f"{where}.timestamp must be an ISO-8601 time", field=f"{where}.timestamp"
            ) from None
    return Document(
        doc_id=str(text_field("doc_id", required=True)),
        text=str(text_field("text", required=True)),
        title=text_field("title"),
        url=text_field("url"),
        tenant=text_field("tenant") or tenant,
        readers=doc_readers,
        timestamp=timestamp,
        authority=None if authority is None else float(authority),
        metadata=metadata,
    )


def read_documents(
    path: Path,
    *,
    tenant: str | None = None,
    readers: Sequence[str] | None = None,
    errors: list[tuple[str, str]] | None = None,
) -> Iterator[Document]:
    """The documents of one file (a :class:`RequestError` names the file and what is wrong).
    With ``errors``, a bad JSONL line is recorded there (``("file:line", reason)``) and skipped
    instead of ending the file."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise RequestError(
            f"{path}: unsupported file type; index {', '.join(SUFFIXES)}", field=str(path)
        )
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RequestError(f"{path}: not UTF-8 text", field=str(path)) from None
    except OSError as exc:
        raise RequestError(f"{path}: cannot read: {exc.strerror}", field=str(path)) from None
    default_readers = None if readers is None else tuple(readers)
    if suffix == ".jsonl":
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise RequestError(f"{where}: not JSON: {exc}", field=where) from None
                document = _record(record, where, tenant, default_readers)
            except RequestError as error:
                if errors is None:
                    raise
                errors.append((where, error.message))
                continue
            yield document
        return
    if suffix in (".html", ".htm"):
        text, title = _html(raw)
    else:
        text = raw
        title = _markdown_title(raw) if suffix in (".md", ".markdown") else None
    yield Document(
        doc_id=_doc_id(path),
        text=text,
        title=title or path.stem,
        tenant=tenant,
        readers=default_readers,
    )
