"""The document store: reading files, idempotent ingestion, replacement, complete deletion,
crash consistency and store URLs, checked against the SQLite tables themselves."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxasm import ConfigError, RequestError
from ctxasm.model import Principal
from ctxasm.store import (
    Chunk,
    Document,
    IndexReport,
    SQLiteStore,
    StoreStats,
    chunk_text,
    index_paths,
    open_store,
)
from ctxasm.store.documents import read_documents

ALICE = Principal("alice", "t1", ("g1",))
SENTENCES = [
    "The Danube flows east through Vienna and Budapest.",
    "Its delta on the Black Sea is a large wetland.",
    "Barges carry grain and steel along the river.",
    "Old stone bridges cross it in every capital city.",
]


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        yield opened
    finally:
        opened.close()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _rows(store: SQLiteStore, sql: str, *params: object) -> list[tuple[object, ...]]:
    return list(store._db.execute(sql, params).fetchall())


def _count(store: SQLiteStore, sql: str, *params: object) -> int:
    return int(store._db.execute(sql, params).fetchone()[0])


def _fts_matches(store: SQLiteStore, word: str) -> int:
    return _count(store, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", f'"{word}"')


def _snapshot(store: SQLiteStore) -> dict[str, object]:
    """Every row of every table, and what the full-text index finds."""
    return {
        "documents": _rows(store, "SELECT * FROM documents ORDER BY doc_id"),
        "readers": _rows(store, "SELECT * FROM readers ORDER BY doc_id, reader"),
        "chunks": _rows(store, "SELECT * FROM chunks ORDER BY id"),
        "fts": _count(store, "SELECT count(*) FROM chunks_fts"),
        "danube": _fts_matches(store, "danube"),
        "stats": store.stats(),
    }


# reading files


def test_a_text_file_is_one_document_titled_by_its_stem(tmp_path: Path) -> None:
    path = _write(tmp_path / "notes" / "river-notes.txt", "# not a title\nThe Danube.\n")
    assert list(read_documents(path, tenant="t1", readers=["g1", "bob"])) == [
        Document(
            doc_id=path.as_posix(),
            text="# not a title\nThe Danube.\n",
            title="river-notes",
            tenant="t1",
            readers=("g1", "bob"),
        )
    ]


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Intro.\n## Second level\n#hashtag\n# The Danube #\n\nText.\n# Later\n", "The Danube"),
        ("# Rivers of Europe\nText.", "Rivers of Europe"),
        ("No heading at all.\n", "guide"),
        ("#\nA line after a bare hash.\n", "guide"),
        ("```sh\n# a shell comment\n```\n# Real Title\n", "Real Title"),
    ],
    ids=["first-h1", "first-line", "none", "bare-hash", "in-code-fence"],
)
def test_markdown_title_is_the_first_level_one_heading(
    tmp_path: Path, text: str, title: str
) -> None:
    path = _write(tmp_path / "guide.md", text)
    [document] = read_documents(path)
    assert (document.title, document.text) == (title, text)


def test_html_keeps_visible_text_and_the_title(tmp_path: Path) -> None:
    page = (
        "<html><head><title> The  Danube </title><style>p { color: red }</style>"
        "<script>var secret = 'hidden';</script></head><body><h1>Rivers</h1>"
        "<p>The Danube &amp; the Rhine.</p><script>track('x')</script>"
        "<noscript>enable scripts</noscript><div>Both   flow to the sea.</div></body></html>"
    )
    path = _write(tmp_path / "page.html", page)
    [document] = read_documents(path, tenant="t1")
    assert document.title == "The Danube"
    assert document.text == "Rivers\nThe Danube & the Rhine.\nBoth flow to the sea."
    assert (document.doc_id, document.tenant, document.readers) == (path.as_posix(), "t1", None)


def test_html_without_a_title_is_titled_by_its_stem(tmp_path: Path) -> None:
    path = _write(tmp_path / "index.htm", "<body><p>Only text.</p></body>")
    [document] = read_documents(path)
    assert (document.title, document.text) == ("index", "Only text.")


def test_jsonl_lines_are_documents_with_defaults_for_access(tmp_path: Path) -> None:
    lines = [
        {
            "doc_id": "full",
            "text": "The Danube.",
            "title": "Danube",
            "url": "https://example.org/danube",
            "tenant": "t2",
            "readers": ["bob"],
            "timestamp": "2024-05-01T12:00:00Z",
            "authority": 1,
            "metadata": {"lang": "en"},
        },
        {"doc_id": "defaults", "text": "The Rhine."},
        {"doc_id": "nobody", "text": "The Seine.", "readers": []},
    ]
    path = _write(tmp_path / "docs.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    documents = list(read_documents(path, tenant="t1", readers=["g1"]))
    assert documents == [
        Document(
            doc_id="full",
            text="The Danube.",
            title="Danube",
            url="https://example.org/danube",
            tenant="t2",
            readers=("bob",),
            timestamp="2024-05-01T12:00:00Z",
            authority=1.0,
            metadata={"lang": "en"},
        ),
        Document(doc_id="defaults", text="The Rhine.", tenant="t1", readers=("g1",)),
        Document(doc_id="nobody", text="The Seine.", tenant="t1", readers=()),
    ]


def test_jsonl_null_access_fields_take_the_defaults(tmp_path: Path) -> None:
    # "names none" must not turn into "anyone may read it" for readers when it does not for
    # the tenant: an explicit null is no reader list, so the default reader list applies
    path = _write(
        tmp_path / "docs.jsonl", '{"doc_id": "a", "text": "x", "tenant": null, "readers": null}\n'
    )
    [document] = read_documents(path, tenant="t1", readers=["g1"])
    assert (document.tenant, document.readers) == ("t1", ("g1",))


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("{not json", "{path}:2", "not JSON"),
        ("[1, 2]", "{path}:2", "must be a JSON object"),
        ('{"text": "x"}', "{path}:2.doc_id", "must be a non-empty string"),
        ('{"doc_id": "b", "text": "  "}', "{path}:2.text", "must be a non-empty string"),
        ('{"doc_id": 7, "text": "x"}', "{path}:2.doc_id", "must be a non-empty string"),
        ('{"doc_id": "b", "text": "x", "title": 3}', "{path}:2.title", "a string or null"),
        ('{"doc_id": "b", "text": "x", "readers": "bob"}', "{path}:2.readers", "pass a list"),
        ('{"doc_id": "b", "text": "x", "readers": [""]}', "{path}:2.readers[0]", "not be empty"),
        ('{"doc_id": "b", "text": "x", "readers": ["a", " "]}', "{path}:2.readers[1]", "empty"),
        ('{"doc_id": "b", "text": "x", "readers": ["a", 1]}', "{path}:2.readers[1]", "a string"),
        ('{"doc_id": "b", "text": "x", "readers": {"a": 1}}', "{path}:2.readers", "list of"),
        ('{"doc_id": "b", "text": "x", "readers": ["a\\u0000"]}', "{path}:2.readers[0]", "U+0000"),
        ('{"doc_id": "b", "text": "x", "tenant": ""}', "{path}:2.tenant", "not be empty"),
        ('{"doc_id": "b", "text": "x", "tenant": "a\\u0000"}', "{path}:2.tenant", "U+0000"),
        ('{"doc_id": "b", "text": "x", "tenant": "a\\nb"}', "{path}:2.tenant", "U+000A"),
        ('{"doc_id": "b", "text": "x", "tenant": 5}', "{path}:2.tenant", "a string or null"),
        ('{"doc_id": "b\\u0000", "text": "x"}', "{path}:2.doc_id", "NUL character"),
        ('{"doc_id": "b", "text": "x", "authority": 2}', "{path}:2.authority", "between 0 and 1"),
        ('{"doc_id": "b", "text": "x", "authority": true}', "{path}:2.authority", "a number"),
        ('{"doc_id": "b", "text": "x", "metadata": [1]}', "{path}:2.metadata", "an object"),
        ('{"doc_id": "b", "text": "x", "timestamp": "soon"}', "{path}:2.timestamp", "ISO-8601"),
    ],
)
def test_a_bad_jsonl_line_names_the_file_line_and_field(
    tmp_path: Path, line: str, field: str, message: str
) -> None:
    path = _write(tmp_path / "docs.jsonl", '{"doc_id": "a", "text": "fine"}\n' + line + "\n")
    with pytest.raises(RequestError) as caught:
        list(read_documents(path))
    expected = field.format(path=path)
    assert caught.value.field == expected
    assert caught.value.message.startswith(expected)
    assert message in caught.value.message


def test_unsupported_file_types_are_refused_with_the_supported_list(tmp_path: Path) -> None:
    path = _write(tmp_path / "report.pdf", "%PDF-1.7")
    with pytest.raises(RequestError) as caught:
        list(read_documents(path))
    assert caught.value.field == str(path)
    assert caught.value.message == (
        f"{path}: unsupported file type; index .txt, .md, .markdown, .html, .htm, .jsonl"
    )


def test_non_utf8_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Café au lait".encode("latin-1"))
    with pytest.raises(RequestError) as caught:
        list(read_documents(path))
    assert (caught.value.field, caught.value.message) == (str(path), f"{path}: not UTF-8 text")


# ingestion


def _corpus(root: Path) -> list[Path]:
    return [
        _write(root / "docs" / f"{name}.md", f"# {name.title()}\n\n" + " ".join(SENTENCES * 3))
        for name in ("alpha", "beta", "gamma")
    ]


def test_indexing_twice_writes_nothing_the_second_time(tmp_path: Path, store: SQLiteStore) -> None:
    _corpus(tmp_path)
    first = index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    assert (first.added, first.updated, first.unchanged, first.failed) == (3, 0, 0, [])
    assert first.chunks == store.stats().chunks > 3
    before, changes = _snapshot(store), store._db.total_changes
    second = index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    assert second == IndexReport(unchanged=3)
    assert _snapshot(store) == before
    assert store._db.total_changes == changes


def test_a_changed_document_replaces_all_its_chunks(tmp_path: Path, store: SQLiteStore) -> None:
    alpha, *_ = _corpus(tmp_path)
    index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    assert _fts_matches(store, "barges") > 0
    new_text = "# Alpha\n\n" + " ".join(["The Zambezi plunges over Victoria Falls."] * 12)
    alpha.write_text(new_text, encoding="utf-8")
    report = index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    assert (report.added, report.updated, report.unchanged) == (0, 1, 2)
    expected = chunk_text(new_text, 32, 8)
    doc_id = alpha.as_posix()
    stored = _rows(
        store,
        'SELECT seq, start, "end", text FROM chunks WHERE doc_id = ? ORDER BY seq',
        doc_id,
    )
    assert stored == [(i, c.start, c.end, c.text) for i, c in enumerate(expected)]
    assert report.chunks == len(expected)
    # the old text is gone from alpha but still in beta and gamma
    passages = store.retrieve("barges grain steel", ALICE, k=500)
    assert passages
    assert doc_id not in {p.doc_id for p in passages}
    assert {p.doc_id for p in store.retrieve("zambezi", ALICE, k=500)} == {doc_id}
    assert _count(store, "SELECT count(*) FROM chunks_fts") == store.stats().chunks


def test_changed_access_data_replaces_theDocument(tmp_path: Path, store: SQLiteStore) -> None:
    _corpus(tmp_path)
    first = index_paths(store, [tmp_path / "docs"], tenant="t1", readers=["alice"], overlap=8)
    assert (first.added, first.failed) == (3, [])
    assert len({p.doc_id for p in store.retrieve("danube", ALICE)}) == 3
    report = index_paths(store, [tmp_path / "docs"], tenant="t1", readers=["bob"], overlap=8)
    assert (report.updated, report.unchanged, report.failed) == (3, 0, [])
    assert store.retrieve("danube", ALICE) == []
    assert _rows(store, "SELECT DISTINCT reader FROM readers") == [("bob",)]


def test_other_chunk_sizes_rechunk_theDocument(tmp_path: Path, store: SQLiteStore) -> None:
    _corpus(tmp_path)
    index_paths(store, [tmp_path / "docs"], chunk_tokens=32, overlap=8)
    report = index_paths(store, [tmp_path / "docs"], chunk_tokens=64, overlap=8)
    assert (report.updated, report.unchanged) == (3, 0)
    text = (tmp_path / "docs" / "beta.md").read_text()
    assert store.stats().chunks == 3 * len(chunk_text(text, 64, 8))


def test_a_file_that_cannot_be_parsed_is_reported_and_the_rest_indexed(
    tmp_path: Path, store: SQLiteStore
) -> None:
    _corpus(tmp_path)
    docs = tmp_path / "docs"
    _write(docs / "lines.jsonl", '{"doc_id": "ok", "text": "The Danube."}\n{"doc_id": "bad"}\n')
    (docs / "latin1.txt").write_bytes("Café Danube".encode("latin-1"))
    _write(docs / "ignored.pdf", "a folder walk skips unsupported types")
    pdf = _write(tmp_path / "named.pdf", "a file named explicitly is reported")
    report = index_paths(store, [docs, pdf], tenant="t1")
    assert report.failed == [
        (str(docs / "latin1.txt"), f"{docs / 'latin1.txt'}: not UTF-8 text"),
        (f"{docs / 'lines.jsonl'}:2", f"{docs / 'lines.jsonl'}:2.text must be a non-empty string"),
        (
            str(pdf),
            f"{pdf}: unsupported file type; index .txt, .md, .markdown, .html, .htm, .jsonl",
        ),
    ]
    assert report.added == 4
    # the bad line is skipped, the good line of the same file indexed
    assert sorted(r[0] for r in _rows(store, "SELECT doc_id FROM documents")) == sorted(
        [*((docs / f"{name}.md").as_posix() for name in ("alpha", "beta", "gamma")), "ok"]
    )


def test_retrieved_passages_are_slices_of_their_documents(
    tmp_path: Path, store: SQLiteStore
) -> None:
    paths = _corpus(tmp_path)
    index_paths(store, paths, tenant="t1", readers=["g1"], chunk_tokens=32, overlap=8)
    texts = {p.as_posix(): p.read_text() for p in paths}
    passages = store.retrieve("Danube delta", ALICE, k=500)
    assert passages
    assert [texts[p.doc_id][p.start : p.end] for p in passages] == [p.text for p in passages]
    assert {(p.tenant, p.readers, p.title) for p in passages} == {
        ("t1", ("g1",), "Alpha"),
        ("t1", ("g1",), "Beta"),
        ("t1", ("g1",), "Gamma"),
    }
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)
    assert [p.id for p in passages] == [f"{p.doc_id}#{p.id.rsplit('#', 1)[1]}" for p in passages]


# deletion


def test_delete_removes_every_row_of_theDocument(store: SQLiteStore) -> None:
    keep = Document("keep", " ".join(SENTENCES * 4), tenant="t1", readers=("g1", "bob"))
    gone = Document(
        "gone", " ".join(["The quokka hops across Rottnest."] * 20), tenant="t1", readers=("g1",)
    )
    for document in (keep, gone):
        store.upsert(document, chunk_text(document.text, 16, 4))
    assert _fts_matches(store, "quokka") > 0
    assert store.delete("gone") is True
    for table in ("documents", "readers", "chunks"):
        assert _count(store, f"SELECT count(*) FROM {table} WHERE doc_id = ?", "gone") == 0
    assert _count(store, "SELECT count(*) FROM chunks_fts") == store.stats().chunks
    assert _fts_matches(store, "quokka") == 0
    assert store.retrieve("quokka", ALICE) == []
    assert store.stats() == StoreStats(1, len(chunk_text(keep.text, 16, 4)))
    assert _count(store, "SELECT count(*) FROM readers") == 2
    assert store.delete("gone") is False
    assert store.delete("never-there") is False


def test_an_upsert_after_delete_starts_clean(store: SQLiteStore) -> None:
    document = Document("doc", " ".join(SENTENCES), tenant="t1", readers=("g1",))
    chunks = chunk_text(document.text, 16, 4)
    assert store.upsert(document, chunks) == "added"
    assert store.delete("doc") is True
    assert store.upsert(document, chunks) == "added"
    assert store.stats() == StoreStats(1, len(chunks))
    assert _count(store, "SELECT count(*) FROM chunks_fts") == len(chunks)


# crash consistency


class _Exploding:
    """A chunk whose text cannot be read: the write fails after earlier rows went in."""

    start, end = 0, 5

    @property
    def text(self) -> str:
        raise RuntimeError("disk on fire")


def _old_and_new(store: SQLiteStore) -> tuple[Document, list[Chunk], Document]:
    old = Document("doc", " ".join(SENTENCES * 3), tenant="t1", readers=("g1",))
    old_chunks = chunk_text(old.text, 16, 4)
    assert store.upsert(old, old_chunks) == "added"
    new = Document("doc", " ".join(["The quokka hops."] * 30), tenant="t2", readers=("bob",))
    return old, old_chunks, new


@pytest.mark.parametrize("failure", ["none-text", "raising-attribute", "sql-abort"])
def test_a_failed_upsert_leaves_the_previous_version(store: SQLiteStore, failure: str) -> None:
    _, old_chunks, new = _old_and_new(store)
    before = _snapshot(store)
    chunks: list[object] = list(chunk_text(new.text, 16, 4))
    if failure == "none-text":
        chunks[2] = Chunk(chunks[2].start, chunks[2].end, None)  # type: ignore[arg-type, attr-defined]
    elif failure == "raising-attribute":
        chunks[2] = _Exploding()
    else:
        store._db.execute(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON chunks WHEN new.seq = 2 "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    with pytest.raises((TypeError, AttributeError, RuntimeError, sqlite3.DatabaseError)):
        store.upsert(new, chunks)  # type: ignore[arg-type]
    assert _snapshot(store) == before
    assert store.stats() == StoreStats(1, len(old_chunks))
    assert store.retrieve("quokka", Principal("bob", "t2")) == []
    assert {p.doc_id for p in store.retrieve("danube", ALICE)} == {"doc"}
    # the store is usable afterwards: no transaction was left open
    assert not store._db.in_transaction
    store._db.execute("DROP TRIGGER IF EXISTS temp.refuse")
    assert store.upsert(new, chunk_text(new.text, 16, 4)) == "updated"


def test_a_process_killed_mid_upsert_leaves_the_previous_version(
    tmp_path: Path, store: SQLiteStore
) -> None:
    _, old_chunks, _ = _old_and_new(store)
    before = _snapshot(store)
    script = textwrap.dedent(
        f"""
        import os
        from ctxasm.store import Document, chunk_text, open_store

        class Dying:
            start, end = 0, 5

            @property
            def text(self):
                os._exit(3)  # no rollback, no close: as if the machine lost power

        store = open_store({f"sqlite:///{tmp_path / 'store.db'}"!r})
        new = Document("doc", "The quokka hops. " * 30, tenant="t2", readers=("bob",))
        store.upsert(new, [*chunk_text(new.text, 16, 4)[:2], Dying()])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 3, done.stderr.decode()
    reopened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        assert _snapshot(reopened) == before
        assert reopened.stats() == StoreStats(1, len(old_chunks))
    finally:
        reopened.close()


# store URLs


def test_open_store_creates_the_file_and_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "store.db"
    opened = open_store(f"sqlite:///{path}")
    try:
        assert path.is_file()
        assert opened.stats() == StoreStats(0, 0)
    finally:
        opened.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://user@localhost:1/db", "cannot open the PostgreSQL store"),
        ("postgres://localhost:1/db", "cannot open the PostgreSQL store"),
        ("mysql://localhost/db", "unknown store URL 'mysql://localhost/db'"),
        ("store.db", "unknown store URL 'store.db'"),
        ("sqlite://store.db", "unknown store URL 'sqlite://store.db'"),
        ("sqlite:///", "names no database file"),
        ("sqlite:///some/folder/", "names no database file"),
    ],
)
def test_bad_store_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_store(url)
    assert caught.value.field == "store"
    assert message in caught.value.message
    hint = ("sqlite:///path.db", "database file", "PostgreSQL")
    assert any(h in caught.value.message for h in hint)


# --- issue 10, items 6 and 8: access data and principals are checked before any SQL -----------


def test_groups_given_as_a_string_never_widen_what_the_store_returns(
    store: SQLiteStore,
) -> None:
    """Reproducer: Principal("ann", "acme", "staff") used to read a document whose only reader
    is "s" through the SQLite store."""
    document = Document("s-only", "The Danube delta plan.", tenant="acme", readers=("s",))
    store.upsert(document, chunk_text(document.text, 64, 0))
    with pytest.raises(RequestError) as caught:
        store.retrieve("danube", Principal("ann", "acme", "staff"))  # type: ignore[arg-type]
    assert caught.value.field == "principal.groups"
    assert store.retrieve("danube", Principal("ann", "acme", ("staff",))) == []
    assert [p.id for p in store.retrieve("danube", Principal("ann", "acme", ("s",)))] == [
        "s-only#0"
    ]


@pytest.mark.parametrize(
    ("args", "kwargs", "field", "message"),
    [
        (
            ("danube", {"id": "ann", "groups": ["s"]}),
            {},
            "principal",
            "principal must be a ctxasm.Principal or None; got dict {'id': 'ann', 'groups': ['s']}",
        ),
        (("danube", ALICE, 0), {}, "k", "k must be an integer >= 1; got int 0"),
        (("danube", ALICE, "5"), {}, "k", "k must be an integer >= 1; got str '5'"),
        (
            ("danube", ALICE),
            {"allow_public": 1},
            "allow_public",
            "allow_public must be true or false; got int 1",
        ),
        ((None, ALICE), {}, "query", "query must be a string; got null None"),
    ],
)
def test_retrieve_refuses_bad_arguments_before_any_sql(
    store: SQLiteStore,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    field: str,
    message: str,
) -> None:
    with pytest.raises(RequestError) as caught:
        store.retrieve(*args, **kwargs)  # type: ignore[arg-type]
    assert (caught.value.field, caught.value.message) == (field, message)


def test_a_nul_in_a_principal_is_refused_before_the_store(store: SQLiteStore) -> None:
    for kwargs, field in (
        ({"id": "ann\x00"}, "principal.id"),
        ({"id": "ann", "tenant": "t1\x00"}, "principal.tenant"),
        ({"id": "ann", "groups": ("g1", "\x00")}, "principal.groups[1]"),
    ):
        with pytest.raises(RequestError) as caught:
            store.retrieve("danube", Principal(**kwargs))  # type: ignore[arg-type]
        assert caught.value.field == field
        assert "control character U+0000" in caught.value.message


def test_an_empty_tenant_in_a_jsonl_line_is_reported_not_indexed_as_public(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """Reproducer: {"tenant": ""} used to fall back to no tenant, making the document public."""
    path = _write(
        tmp_path / "docs.jsonl",
        '{"doc_id": "ok", "text": "The Danube.", "tenant": "t1"}\n'
        '{"doc_id": "empty", "text": "The secret Danube plan.", "tenant": ""}\n'
        '{"doc_id": "blank-reader", "text": "The Danube ferry.", "readers": ["g1", ""]}\n',
    )
    report = index_paths(store, [path])
    assert report.failed == [
        (
            f"{path}:2",
            f"{path}:2.tenant must not be empty; leave it out (null) for none; got ''",
        ),
        (f"{path}:3", f"{path}:3.readers[1] must not be empty; got ''"),
    ]
    assert (report.added, report.public) == (1, 0)
    assert _rows(store, "SELECT doc_id, tenant FROM documents") == [("ok", "t1")]
    assert store.retrieve("danube", Principal("anyone"), allow_public=True) == []


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        (
            {"tenant": ""},
            "tenant",
            "tenant must not be empty; leave it out (null) for none; got ''",
        ),
        (
            {"readers": "staff"},
            "readers",
            "readers must be a list of strings; got the string 'staff', which would be read as "
            "its characters: pass a list, ['staff']",
        ),
        (
            {"readers": ["g1", "a\x00"]},
            "readers[1]",
            "readers[1] contains the control character "
            "U+0000 at character 1; names may not contain control characters (NUL, tab, newline "
            "and the like)",
        ),
    ],
)
def test_index_paths_refuses_bad_run_access_data_before_any_file(
    tmp_path: Path, store: SQLiteStore, kwargs: dict[str, object], field: str, message: str
) -> None:
    path = _write(tmp_path / "a.txt", "The Danube.")
    with pytest.raises(RequestError) as caught:
        index_paths(store, [path], **kwargs)  # type: ignore[arg-type]
    assert (caught.value.field, caught.value.message) == (field, message)
    assert store.stats() == StoreStats(0, 0)


def test_delete_refuses_a_doc_id_that_is_not_a_plain_string(store: SQLiteStore) -> None:
    for doc_id, message in (
        (3, "doc_id must be a string; got int 3"),
        ("a\x00", "doc_id contains a NUL character; got 'a\\x00'"),
    ):
        with pytest.raises(RequestError) as caught:
            store.delete(doc_id)  # type: ignore[arg-type]
        assert (caught.value.field, caught.value.message) == ("doc_id", message)
