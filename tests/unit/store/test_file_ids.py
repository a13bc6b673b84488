"""Files' document ids (``ctxasm.store.documents``: ``file_doc_id``, ``id_root``, the ``root``
of ``read_documents`` and ``index_paths``) and the files a store holds twice under ids from
two working folders (``ctxasm.store.duplicates``), against a real SQLite store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxasm import RequestError
from ctxasm.store import Document, SQLiteStore, chunk_text, file_doc_id, index_paths, open_store
from ctxasm.store.documents import id_root, read_documents
from ctxasm.store.duplicates import other_ids, stored_twice

OLD = "# Salt\n\nSalt was traded along the amber road."
NEW = "# Salt\n\nSalt was carried over the Alps on mules."


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A project folder with ``docs/sal.md``; the store lies outside it."""
    docs = tmp_path / "project" / "docs"
    docs.mkdir(parents=True)
    (docs / "sal.md").write_text(OLD, encoding="utf-8")
    return docs.parent


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    assert isinstance(opened, SQLiteStore)
    try:
        yield opened
    finally:
        opened.close()


def _ids(store: SQLiteStore) -> list[str]:
    return [row[0] for row in store._db.execute("SELECT doc_id FROM documents ORDER BY doc_id")]


def _texts(store: SQLiteStore) -> list[tuple[str, str]]:
    return [(p.doc_id, p.text) for p in store.retrieve("salt", None, 10, allow_public=True)]


def test_with_a_root_the_same_file_is_one_document_from_any_working_folder(
    project: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    first = index_paths(store, "docs/sal.md", root=project)
    (project / "docs" / "sal.md").write_text(NEW, encoding="utf-8")
    monkeypatch.chdir(project / "docs")
    again = index_paths(store, "sal.md", root="..")  # a relative root: from the working folder
    assert (first.added, again.added, again.updated, again.duplicates) == (1, 0, 1, [])
    assert _ids(store) == ["docs/sal.md"]
    assert _texts(store) == [("docs/sal.md", NEW)]


def test_without_a_root_ids_follow_the_working_folder_and_the_twin_is_reported(
    project: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As before: `index docs/sal.md` in the project, then `index sal.md` in docs/, keeps both.
    monkeypatch.chdir(project)
    first = index_paths(store, "docs/sal.md")
    (project / "docs" / "sal.md").write_text(NEW, encoding="utf-8")
    monkeypatch.chdir(project / "docs")
    again = index_paths(store, "sal.md")
    assert (first.duplicates, again.added, again.duplicates) == ([], 1, [("sal.md", "docs/sal.md")])
    assert _ids(store) == ["docs/sal.md", "sal.md"]
    assert sorted(_texts(store)) == [("docs/sal.md", OLD), ("sal.md", NEW)]
    monkeypatch.chdir(project)  # and the other way round
    back = index_paths(store, "docs")
    assert (back.unchanged, back.updated, back.duplicates) == (0, 1, [("docs/sal.md", "sal.md")])


def test_a_stored_id_that_is_another_files_own_is_no_twin(
    project: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/README.md's id from docs/ is README.md, the id of the project's own README.md.
    (project / "README.md").write_text("# Project\n\nAbout salt.", encoding="utf-8")
    (project / "docs" / "README.md").write_text("# Docs\n\nSalt documents.", encoding="utf-8")
    monkeypatch.chdir(project)
    report = index_paths(store, ["README.md", "docs"])
    again = index_paths(store, ["README.md", "docs"])
    assert (report.added, report.duplicates, again.unchanged, again.duplicates) == (3, [], 3, [])


def test_a_file_stored_under_its_absolute_path_is_a_twin(
    project: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    absolute = (project / "docs" / "sal.md").resolve()
    (project.parent / "elsewhere").mkdir()
    monkeypatch.chdir(project.parent / "elsewhere")  # outside the project: ids are absolute
    index_paths(store, project / "docs")
    monkeypatch.chdir(project)
    report = index_paths(store, "docs")
    assert report.duplicates == [("docs/sal.md", absolute.as_posix())]


def test_twins_are_not_looked_for_with_a_root_or_in_a_store_that_cannot_tell(
    project: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    index_paths(store, "docs")
    monkeypatch.chdir(project / "docs")
    # a root says which ids are meant: the twin it stores (sal.md) is not looked for
    assert index_paths(store, "sal.md", root=".").duplicates == []

    class Blind:  # a store without stored_ids
        pass

    assert stored_twice(Blind(), ["docs/sal.md"]) == []
    assert stored_twice(store, ["sal.md"]) == [("sal.md", "docs/sal.md")]
    assert stored_twice(store, []) == []


def test_jsonl_ids_are_never_taken_for_files(
    project: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A line's id is whatever it says: notes/salt.md is no path, so salt.md is no twin of it.
    lines = project / "docs" / "lines.jsonl"
    lines.write_text('{"doc_id": "notes/salt.md", "text": "Salt."}\n', encoding="utf-8")
    monkeypatch.chdir(project / "docs")
    store.upsert(Document("salt.md", "Salt."), chunk_text("Salt.", 16, 4))
    assert index_paths(store, "lines.jsonl").duplicates == []


def test_other_ids_are_the_path_from_each_folder_above_and_the_absolute_path() -> None:
    assert other_ids("docs/a.md", Path("/p/q")) == [
        "a.md",
        "q/docs/a.md",
        "p/q/docs/a.md",
        "/p/q/docs/a.md",
    ]
    assert other_ids("/elsewhere/a.md", Path("/p")) == ["a.md", "elsewhere/a.md"]


def test_file_doc_id_is_relative_to_the_root_when_inside_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "docs")
    here = Path("sal.md")
    absolute = (project / "docs" / "sal.md").resolve().as_posix()
    assert [
        file_doc_id(here),
        file_doc_id(here, project),
        file_doc_id(here, ".."),
        file_doc_id(Path("../docs/./sal.md"), str(project)),
        file_doc_id(here, project / "docs" / "."),
        file_doc_id(here, project.parent),
    ] == ["sal.md", "docs/sal.md", "docs/sal.md", "docs/sal.md", "sal.md", "project/docs/sal.md"]
    (project / "other").mkdir()
    assert file_doc_id(here, project / "other") == absolute  # outside the root: absolute
    assert file_doc_id(Path("gone.md"), "..") == "docs/gone.md"  # the file need not exist


def test_read_documents_takes_the_root_for_a_files_id_only(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "docs")
    [document] = read_documents(Path("sal.md"), root=project)
    assert (document.doc_id, document.title) == ("docs/sal.md", "Salt")
    lines = project / "docs" / "lines.jsonl"
    lines.write_text('{"doc_id": "own-id", "text": "Salt."}\n', encoding="utf-8")
    assert [d.doc_id for d in read_documents(lines, root=project)] == ["own-id"]


def _bad_roots(tmp_path: Path) -> list[tuple[object, str]]:
    """Bad roots, relative to ``tmp_path`` (the working folder: a long path would be shown
    shortened in the message)."""
    (tmp_path / "file.txt").write_text("not a folder", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe")
    advice = "give the folder that files' document ids are relative to"
    return [
        (Path("missing"), f"root 'missing' does not exist; {advice}"),
        ("file.txt/x", f"root 'file.txt/x' does not exist; {advice}"),
        (Path("file.txt"), f"root 'file.txt' is a file, not a folder; {advice}"),
        (Path("pipe"), f"root 'pipe' is a named pipe, not a folder; {advice}"),
        ("a\x00b", f"root 'a\\x00b' does not exist; {advice}"),
        (b"/tmp", "root must be a folder's path; got bytes b'/tmp'"),
        (3, "root must be a folder's path; got int 3"),
    ]


def test_a_root_that_is_no_folder_is_refused_naming_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for root, message in _bad_roots(tmp_path):
        with pytest.raises(RequestError) as caught:
            id_root(root)  # type: ignore[arg-type]
        assert (caught.value.field, caught.value.message) == ("root", message)
        assert isinstance(caught.value, ValueError)
    with pytest.raises(RequestError) as caught:
        id_root(tmp_path / "missing", "--root")
    assert caught.value.message.startswith("--root ")


def test_every_entry_point_refuses_a_bad_root_before_any_file(
    project: Path, store: SQLiteStore
) -> None:
    missing = project / "missing"
    sal = project / "docs" / "sal.md"
    calls = [
        lambda: index_paths(store, [sal], root=missing),
        lambda: list(read_documents(sal, root=missing)),
        lambda: file_doc_id(sal, missing),
        lambda: index_paths(store, [sal], root=sal),
    ]
    for call in calls:
        with pytest.raises(RequestError) as caught:
            call()
        assert caught.value.field == "root"
    assert _ids(store) == []


def test_a_store_holds_each_id_once_whatever_the_root(
    project: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The root changes the id, never what a document holds: the same chunks either way.
    monkeypatch.chdir(project)
    index_paths(store, "docs", root=project / "docs", chunk_tokens=16, overlap=4)
    assert _ids(store) == ["sal.md"]
    assert [row[0] for row in store._db.execute("SELECT text FROM chunks ORDER BY seq")] == [
        chunk.text for chunk in chunk_text(OLD, 16, 4)
    ]
