"""The PostgreSQL + pgvector store against a real server (see the ``postgres_url`` fixture):
the same ingestion and access semantics as the SQLite store, and hybrid ranking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm.model import Principal
from ctxasm.stages.access import check_access
from ctxasm.store import Document, chunk_text, index_paths, open_store

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


def _sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(statement)
        return cursor.fetchall() if cursor.description else []


def test_indexing_is_idempotent_and_updates_replace(postgres_url: str) -> None:
    store = open_store(postgres_url)
    first = index_paths(
        store, [CORPUS], tenant="demo", readers=["everyone"], chunk_tokens=64, overlap=16
    )
    assert first.added == 5 and not first.failed
    again = index_paths(
        store, [CORPUS], tenant="demo", readers=["everyone"], chunk_tokens=64, overlap=16
    )
    assert (again.added, again.updated, again.unchanged) == (0, 0, 5)
    before = store.stats()
    changed = Document(
        "guide-boats",
        "Boats now run on the Danube all year round.",
        tenant="demo",
        readers=("everyone",),
    )
    assert store.upsert(changed, chunk_text(changed.text, 64, 16)) == "updated"
    who = Principal("ann", "demo", ("everyone",))
    texts = [p.text for p in store.retrieve("boats danube", who, 50) if p.doc_id == "guide-boats"]
    assert texts == ["Boats now run on the Danube all year round."]
    assert store.stats().documents == before.documents
    store.close()


def test_delete_is_complete_and_a_failed_write_changes_nothing(postgres_url: str) -> None:
    store = open_store(postgres_url)
    document = Document("d", "The Danube ends in the Black Sea.", tenant="t", readers=("g",))
    store.upsert(document, chunk_text(document.text, 64, 0))
    broken = Document("d", "New text.", tenant="t", readers=("g",))
    with pytest.raises(Exception):  # noqa: B017 - any database error
        store.upsert(broken, [type(chunk_text("x y.", 64, 0)[0])(0, 3, None)])  # type: ignore[arg-type]
    who = Principal("u", "t", ("g",))
    assert [p.text for p in store.retrieve("danube", who)] == [document.text]
    assert store.delete("d") is True
    assert store.stats().documents == 0 and store.stats().chunks == 0
    assert _sql(postgres_url, "SELECT count(*) FROM readers") == [(0,)]
    assert store.delete("d") is False
    store.close()


def test_vectors_find_what_words_alone_rank_low(postgres_url: str) -> None:
    store = open_store(postgres_url)
    for doc_id, text in [
        ("a", "The river delta is home to many birds."),
        ("b", "Stock prices rose sharply on Monday."),
    ]:
        document = Document(doc_id, text, tenant="t", readers=("g",))
        store.upsert(document, chunk_text(text, 64, 0))
    found = store.retrieve("birds of the river delta", Principal("u", "t", ("g",)))
    assert [p.doc_id for p in found][:1] == ["a"]
    assert all(p.score is not None and p.score > 0 for p in found)
    store.close()


TENANTS = ["t1", "t2", None]
NAMES = ["alice", "bob", "g1", "g2"]
specs = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.one_of(st.none(), st.lists(st.sampled_from(NAMES), unique=True, max_size=3)),
    ),
    min_size=1,
    max_size=6,
)
principals = st.builds(
    Principal,
    id=st.sampled_from(["alice", "bob", "carol"]),
    tenant=st.sampled_from(TENANTS),
    groups=st.lists(st.sampled_from(["g1", "g2"]), unique=True).map(tuple),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(docs=specs, principal=principals, allow_public=st.booleans())
def test_no_principal_ever_sees_a_chunk_it_may_not_read(
    postgres_url: str, docs: list[tuple[Any, Any]], principal: Principal, allow_public: bool
) -> None:
    store = open_store(postgres_url)
    try:
        _sql(postgres_url, "TRUNCATE documents, class_terms, access_classes CASCADE")
        store.close()
        store = open_store(postgres_url)  # forgets the access classes it knew
        documents = []
        for number, (tenant, readers) in enumerate(docs):
            text = f"The river flows past marker{number}x and the old bridge."
            document = Document(
                f"doc{number}",
                text,
                tenant=tenant,
                readers=None if readers is None else tuple(readers),
            )
            store.upsert(document, chunk_text(text, 64, 0))
            documents.append(document)
        found = store.retrieve("river bridge", principal, 100, allow_public=allow_public)
        readable = {
            d.doc_id
            for d in documents
            if check_access(
                ctxasm.Passage(id=d.doc_id, text=d.text, tenant=d.tenant, readers=d.readers),
                principal,
                allow_public=allow_public,
            )
            is None
        }
        assert {p.doc_id for p in found} == readable
        if principal.tenant is None:
            assert all(p.tenant is None for p in found)
    finally:
        store.close()


def test_ask_works_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(sys.executable).parent / "ctxasm"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "ctxasm"]
    index = subprocess.run(
        [
            *command,
            "index",
            str(CORPUS),
            "--store",
            postgres_url,
            "--tenant",
            "demo",
            "--readers",
            "everyone",
            "--chunk-tokens",
            "64",
            "--overlap",
            "16",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert index.returncode == 0, index.stderr
    asked = subprocess.run(
        [
            *command,
            "ask",
            "Where does the Danube end?",
            "--store",
            postgres_url,
            "--principal",
            "ann",
            "--tenant",
            "demo",
            "--groups",
            "everyone",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert asked.returncode == 0, asked.stderr
    import json

    report = json.loads(asked.stdout)["report"]
    assert report["selected"] >= 1
    assert all(not i["id"].startswith("memo-") for i in report["included"])


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(docs=specs, principal=principals)
def test_scores_ignore_unreadable_documents(
    postgres_url: str, docs: list[tuple[Any, Any]], principal: Principal
) -> None:
    """Adding documents the principal may not read changes nothing it gets, scores included."""
    documents = [
        Document(
            f"doc{number}",
            f"The river flows past marker{number}x. " + "The old bridge. " * (number % 3 + 1),
            tenant=tenant,
            readers=None if readers is None else tuple(readers),
        )
        for number, (tenant, readers) in enumerate(docs)
    ]
    visible = [
        d
        for d in documents
        if check_access(
            ctxasm.Passage(id=d.doc_id, text=d.text, tenant=d.tenant, readers=d.readers),
            principal,
            allow_public=False,
        )
        is None
    ]
    found = []
    open_store(postgres_url).close()  # creates the tables
    for subset in (documents, visible):
        _sql(postgres_url, "TRUNCATE documents, class_terms, access_classes CASCADE")
        store = open_store(postgres_url)
        try:
            store.upsert_many([(d, chunk_text(d.text, 64, 0)) for d in subset])  # type: ignore[attr-defined]
            found.append([(p.id, p.score) for p in store.retrieve("river bridge", principal, 100)])
        finally:
            store.close()
    assert found[0] == found[1]


def test_a_nul_is_refused_before_any_sql(postgres_url: str, tmp_path: Path) -> None:
    """Issue 10, item 8: a NUL in a principal (or a document) used to reach PostgreSQL and come
    back as a driver error; it is refused with a RequestError naming the field."""
    store = open_store(postgres_url)
    document = Document("d", "The Danube ends in the Black Sea.", tenant="t", readers=("g",))
    store.upsert(document, chunk_text(document.text, 64, 0))
    for kwargs, field in (
        ({"id": "u\x00"}, "principal.id"),
        ({"id": "u", "tenant": "t\x00"}, "principal.tenant"),
        ({"id": "u", "tenant": "t", "groups": ("g\x00",)}, "principal.groups[0]"),
    ):
        with pytest.raises(ctxasm.RequestError) as caught:
            store.retrieve("danube", Principal(**kwargs))
        assert caught.value.field == field
    # A principal changed after construction is checked again by the store itself.
    tampered = Principal("u", "t", ("g",))
    object.__setattr__(tampered, "id", "u\x00")
    with pytest.raises(ctxasm.RequestError) as caught:
        store.retrieve("danube", tampered)
    assert (caught.value.field, caught.value.message) == (
        "principal.id",
        "principal.id contains the control character U+0000 at character 1; names may not "
        "contain control characters (NUL, tab, newline and the like)",
    )
    with pytest.raises(ctxasm.RequestError) as caught:
        store.upsert(Document("e", "Black\x00Sea"), chunk_text("Black\x00Sea", 64, 0))
    assert (caught.value.field, caught.value.message) == (
        "document.text",
        "document.text of 'e' contains a NUL character, which PostgreSQL cannot store; "
        "remove it before indexing",
    )
    with pytest.raises(ctxasm.RequestError) as caught:
        store.upsert(Document("e", "Sea", metadata={"k": "a\x00"}), chunk_text("Sea", 64, 0))
    assert caught.value.field == "document.metadata"
    with pytest.raises(ctxasm.RequestError) as caught:
        store.delete("d\x00")
    assert caught.value.field == "doc_id"
    lines = tmp_path / "docs.jsonl"
    lines.write_text(
        '{"doc_id": "x", "text": "Black\\u0000Sea", "tenant": "t"}\n'
        '{"doc_id": "y", "text": "Sea", "tenant": "t\\u0000"}\n',
        encoding="utf-8",
    )
    report = index_paths(store, [lines])
    # Line 2 fails when it is read; x when its batch is written, at the end of the file.
    assert sorted(report.failed) == [
        (
            f"{lines} (x)",
            "document.text of 'x' contains a NUL character, which PostgreSQL cannot store; "
            "remove it before indexing",
        ),
        (
            f"{lines}:2",
            f"{lines}:2.tenant contains the control character U+0000 at character 1; names may "
            "not contain control characters (NUL, tab, newline and the like)",
        ),
    ]
    who = Principal("u", "t", ("g",))
    assert [p.text for p in store.retrieve("danube", who)] == [document.text]
    assert store.stats().documents == 1
    store.close()
