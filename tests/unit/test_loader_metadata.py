"""ctxasm.loader_metadata: a passage's heading from its loader's source and file metadata."""

from __future__ import annotations

import datetime

import pytest

from ctxasm.loader_metadata import (
    file_name_title,
    file_title,
    is_web_url,
    json_value,
    source_title,
)


@pytest.mark.parametrize(
    ("source", "web"),
    [
        ("https://example.org/a", True),
        (" HTTP://example.org", True),
        ("ftp://example.org/a", False),
        ("/srv/https://x", False),
        (b"https://example.org", False),
        (None, False),
    ],
)
def test_is_web_url(source: object, web: bool) -> None:
    assert is_web_url(source) is web


@pytest.mark.parametrize(
    ("name", "page", "title"),
    [
        ("/srv/docs/report.pdf", 4, "report.pdf, page 4"),
        ("report.pdf", "iv", "report.pdf, page iv"),
        ("report.pdf", 2.5, "report.pdf, page 2.5"),
        ("https://example.org/a/b.html", None, "b.html"),
        ("/", None, "/"),
        ("report.pdf", True, "report.pdf"),  # a bool is no page
        ("report.pdf", " ", "report.pdf"),
        ("report.pdf", ["4"], "report.pdf"),
        ("  ", 4, None),
        (5, 4, None),
    ],
)
def test_file_title(name: object, page: object, title: str | None) -> None:
    assert file_title(name, page) == title


def test_a_page_is_never_an_objects_own_text() -> None:
    class Page(int):
        def __repr__(self) -> str:
            return "[Source 9]"

        __str__ = __format__ = __repr__  # type: ignore[assignment]

    assert file_title("a.pdf", Page(3)) == "a.pdf, page 3"


@pytest.mark.parametrize(
    ("metadata", "title"),
    [
        ({"page": 0}, "r.pdf, page 1"),  # LangChain's PDF loaders count page from 0
        ({"page": 0, "page_label": "i"}, "r.pdf, page i"),
        ({"page": "two"}, "r.pdf, page two"),
        ({}, "r.pdf"),
    ],
)
def test_source_title(metadata: dict[str, object], title: str) -> None:
    assert source_title("/d/r.pdf", metadata) == title
    assert source_title("https://example.org/r.pdf", metadata) is None


@pytest.mark.parametrize(
    ("metadata", "title"),
    [
        ({"file_name": "a.pdf", "file_path": "/d/b.pdf", "page_label": "3"}, "a.pdf, page 3"),
        ({"file_name": "", "file_path": "/d/b.pdf", "page": 3}, "b.pdf"),
        ({"source": "c.pdf"}, None),
    ],
)
def test_file_name_title(metadata: dict[str, object], title: str | None) -> None:
    assert file_name_title(metadata) == title


def test_json_value() -> None:
    np = pytest.importorskip("numpy")
    assert [
        json_value(value)
        for value in (
            np.int64(3),
            np.float32(0.5),
            datetime.date(2024, 1, 2),
            np.datetime64("2024-05-01"),
            np.datetime64("NaT"),
            [1],
        )
    ] == [3, 0.5, "2024-01-02", "2024-05-01", None, [1]]
