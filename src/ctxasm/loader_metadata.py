"""Where a document loader says a text came from, read as a heading for its passage: the
conventions of LangChain's and LlamaIndex's loaders, shared by the adapters (which read
framework objects) and by a retriever's hits given as JSON (:mod:`ctxasm.hits`).

- LangChain's loaders put a file path or a url in ``source``: an http(s) url
  (:func:`is_web_url`) is where the passage came from; any other source is titled by its file
  and page (:func:`source_title`), the page being ``page_label``, else ``page`` counted from 1
  (the PDF loaders count ``page`` from 0).
- LlamaIndex's readers set ``file_name`` or ``file_path``, and ``page_label``
  (:func:`file_name_title`).

A page is written only when it is a number or text, by the built-in types' own methods: a
title is never an object's ``str``. This module is a leaf: it imports nothing of ctxasm.
"""

from __future__ import annotations

import datetime
import numbers
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

__all__ = ["file_name_title", "file_title", "is_web_url", "json_value", "source_title"]


def json_value(value: object) -> object:
    """``value`` as JSON carries it where a loader gave another type for it: numpy's integers
    and reals (what metadata built from arrays or data frames holds) as ``int`` and ``float``,
    a ``date``, ``datetime`` or numpy ``datetime64`` as ISO-8601 text (a missing one, NaT, as
    ``None``); anything else as given."""
    if value is None or isinstance(value, bool | str | int | float):
        return value
    if isinstance(value, datetime.date):
        # pandas' NaT (a missing date) is a datetime that is not equal to itself
        return value.isoformat() if value == value else None  # noqa: PLR0124
    if type(value).__name__ == "datetime64":  # numpy's, as a data frame's values hold it
        return _datetime64(value)
    try:
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
    except (TypeError, ValueError, OverflowError):  # a number that is none (numpy's timedelta64)
        pass
    return value


def is_web_url(source: object) -> bool:
    """Whether ``source`` is an http(s) url, as web loaders set it."""
    return isinstance(source, str) and source.strip().lower().startswith(("http://", "https://"))


def source_title(source: object, metadata: Mapping[str, Any]) -> str | None:
    """A LangChain source's heading: its file and page (``report.pdf, page 4``), the page being
    ``metadata``'s ``page_label``, else its ``page`` counted from 1; None for a url or a source
    that is no text."""
    return None if is_web_url(source) else file_title(source, _page(metadata))


def file_name_title(metadata: Mapping[str, Any]) -> str | None:
    """A LlamaIndex node's heading: its ``file_name`` (else ``file_path``) and ``page_label``;
    None when it has neither as text."""
    return file_title(
        metadata.get("file_name") or metadata.get("file_path"), metadata.get("page_label")
    )


def file_title(name: object, page: object = None) -> str | None:
    """A heading from a source's file: the last part of ``name`` (a path's file name, a url's
    last segment), with ``page`` when it is a number or text (``report.pdf, page 4``); None
    when ``name`` is no text."""
    if not isinstance(name, str) or not name.strip():
        return None
    title = PurePath(name).name or name
    number = _page_text(json_value(page))
    return title if number is None else f"{title}, page {number}"


def _page(metadata: Mapping[str, Any]) -> object:
    """The page to show: ``page_label``, as the PDF loaders set it, else ``page`` counted from 1
    (the loaders count it from 0); a ``page`` that is no integer as given."""
    label = metadata.get("page_label")
    if label is not None:
        return label
    page = json_value(metadata.get("page"))
    return page + 1 if isinstance(page, int) and not isinstance(page, bool) else page


def _page_text(page: object) -> str | None:
    """``page`` written by the built-in types' own methods (no object's ``str``, no subclass's
    ``format``), or None for a value that is no page number or label."""
    if isinstance(page, bool):
        return None
    if isinstance(page, str):
        text = str.__str__(page)
        return text if text.strip() else None
    if isinstance(page, float):
        return float.__repr__(page)
    if isinstance(page, int):
        try:
            return int.__repr__(page)
        except ValueError:  # more digits than Python writes (4,300 by default)
            return None
    return None


def _datetime64(value: Any) -> str | None:
    """A numpy ``datetime64`` as ISO-8601 (a day as a date, a finer one as a date and time, to
    the microsecond), ``None`` for NaT, its own text where Python has no such date (year 0 or
    10000, which the core then refuses by name); read without importing numpy."""
    try:
        found = value.item()
        if isinstance(found, int):  # finer than microseconds: numpy gives an int
            found = value.astype("datetime64[us]").item()
    except (AttributeError, TypeError, ValueError, OverflowError):
        return str(value)
    if found is None:
        return None
    return found.isoformat() if isinstance(found, datetime.date) else str(value)
