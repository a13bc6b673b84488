"""Access through the store over random documents and principals: retrieval returns exactly the
readable matches (of the query's words and their other forms), agrees with the assembler's
access stage, and ranks them as if the unreadable documents did not exist."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm import Reason
from ctxasm.data import Passage, Principal
from ctxasm.stages.access import check_access
from ctxasm.stems import stem
from ctxasm.store import Document, SQLiteStore, chunk_text

EXAMPLES = int(os.environ.get("CTXASM_PROPERTY_EXAMPLES", "60"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# the query's words, other forms of them (which it finds too), and words it does not ask for
SHARED = ["river", "rivers", "bridge", "bridged", "harbour", "harbours", "lantern", "meadow"]
QUERY = "river bridge harbour lantern"
TENANTS = ["t1", "t2", None]
NAMES = ["alice", "bob", "g1", "g2"]
CHUNK_TOKENS, OVERLAP = 16, 4


@dataclass(frozen=True)
class Spec:
    tenant: str | None
    readers: tuple[str, ...] | None
    words: tuple[str, ...]


_SPECS = st.builds(
    Spec,
    tenant=st.sampled_from(TENANTS),
    readers=st.none() | st.lists(st.sampled_from(NAMES), unique=True).map(tuple),
    words=st.lists(st.sampled_from(SHARED), min_size=1, max_size=30).map(tuple),
)
_PRINCIPALS = st.builds(
    Principal,
    id=st.sampled_from(["alice", "bob", "carol"]),
    tenant=st.sampled_from(TENANTS),
    groups=st.lists(st.sampled_from(["g1", "g2"]), unique=True).map(tuple),
)


def _documents(specs: list[Spec]) -> list[Document]:
    documents = []
    for number, spec in enumerate(specs):
        # a marker word only this document holds, among the shared ones
        marker = f"marker{number}x"
        words = [*spec.words[: len(spec.words) // 2], marker, *spec.words[len(spec.words) // 2 :]]
        text = " ".join(words).capitalize() + ". " + " ".join(reversed(spec.words)) + "."
        documents.append(
            Document(doc_id=f"doc{number}", text=text, tenant=spec.tenant, readers=spec.readers)
        )
    return documents


@contextmanager
def _store(documents: list[Document]) -> Iterator[SQLiteStore]:
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "store.db")
        try:
            for document in documents:
                store.upsert(document, chunk_text(document.text, CHUNK_TOKENS, OVERLAP))
            yield store
        finally:
            store.close()


def _readable(document: Document, principal: Principal, *, allow_public: bool) -> bool:
    """The rule of the store's module docstring, written out independently."""
    if document.tenant is not None and document.tenant != principal.tenant:
        return False
    if document.readers is not None:
        names = {principal.id, *principal.groups}
        if names.isdisjoint(document.readers):
            return False
    if document.tenant is None and document.readers is None:
        return allow_public
    return True


def _as_passage(document: Document) -> Passage:
    return Passage(
        id=document.doc_id,
        text=document.text,
        tenant=document.tenant,
        readers=document.readers,
    )


@SETTINGS
@given(
    specs=st.lists(_SPECS, min_size=1, max_size=8),
    principal=_PRINCIPALS,
    allow_public=st.booleans(),
)
def test_retrieval_returns_exactly_the_readable_matches(
    specs: list[Spec], principal: Principal, allow_public: bool
) -> None:
    documents = _documents(specs)
    by_id = {d.doc_id: d for d in documents}
    query_stems = {stem(word) for word in QUERY.split()}  # each word finds its forms
    readable = {
        d.doc_id
        for d in documents
        if _readable(d, principal, allow_public=allow_public)
        and not query_stems.isdisjoint(map(stem, d.text.lower().replace(".", "").split()))
    }
    # the hand-written rule and the assembler's access stage agree on every document
    assert {d.doc_id: _readable(d, principal, allow_public=allow_public) for d in documents} == {
        d.doc_id: check_access(_as_passage(d), principal, allow_public=allow_public) is None
        for d in documents
    }
    with _store(documents) as store:
        passages = store.retrieve(QUERY, principal, k=1000, allow_public=allow_public)
        markers = {
            d.doc_id: store.retrieve(
                f"marker{d.doc_id[3:]}x", principal, k=1000, allow_public=allow_public
            )
            for d in documents
        }
    assert {p.doc_id for p in passages} == readable
    for passage in passages:
        document = by_id[passage.doc_id]
        readers = None if document.readers is None else tuple(sorted(document.readers))
        assert (passage.tenant, passage.readers) == (document.tenant, readers)
        assert check_access(passage, principal, allow_public=allow_public) is None
        assert document.text[passage.start : passage.end] == passage.text
    if principal.tenant is None:
        assert [p.id for p in passages if p.tenant is not None] == []
    # a word only one document holds finds that document exactly when it is readable
    assert {doc_id: {p.doc_id for p in found} for doc_id, found in markers.items()} == {
        d.doc_id: {d.doc_id} if _readable(d, principal, allow_public=allow_public) else set()
        for d in documents
    }


@SETTINGS
@given(specs=st.lists(_SPECS, min_size=1, max_size=8), principal=_PRINCIPALS)
def test_scores_ignore_unreadable_documents(specs: list[Spec], principal: Principal) -> None:
    documents = _documents(specs)
    visible = [d for d in documents if _readable(d, principal, allow_public=False)]
    with _store(documents) as everything:
        scored = everything.retrieve(QUERY, principal, k=1000)
    with _store(visible) as only_visible:
        alone = only_visible.retrieve(QUERY, principal, k=1000)
    assert [(p.id, p.score) for p in scored] == [(p.id, p.score) for p in alone]


@SETTINGS
@given(specs=st.lists(_SPECS, min_size=1, max_size=8), principal=_PRINCIPALS)
def test_the_assembler_admits_everything_the_store_returned(
    specs: list[Spec], principal: Principal
) -> None:
    with _store(_documents(specs)) as store:
        passages = store.retrieve(QUERY, principal, k=1000)
    result = ctxasm.assemble(
        QUERY,
        passages,
        principal={"id": principal.id, "tenant": principal.tenant, "groups": principal.groups},
        strategy={"dedup": "none"},
    )
    report = result.report
    assert [e.candidate_id for e in report.excluded if e.reason is Reason.ACCESS_DENIED] == []
    accounted = {item.id for item in report.included} | {e.candidate_id for e in report.excluded}
    assert accounted == {p.id for p in passages}


def test_a_principal_without_a_tenant_sees_no_tenant_documents() -> None:
    documents = [
        Document("scoped", "river bridge", tenant="t1", readers=("alice",)),
        Document("open-readers", "river bridge harbour", readers=("alice",)),
        Document("public", "river bridge lantern"),
    ]
    with _store(documents) as store:
        found = store.retrieve(QUERY, Principal("alice"), k=10)
        public = store.retrieve(QUERY, Principal("alice"), k=10, allow_public=True)
        nobody = store.retrieve(QUERY, None, k=10, allow_public=True)
    assert [p.doc_id for p in found] == ["open-readers"]
    assert sorted(p.doc_id for p in public) == ["open-readers", "public"]
    assert [p.doc_id for p in nobody] == ["public"]


def test_readers_are_returned_in_full_not_only_the_matching_name() -> None:
    document = Document("doc", "river bridge", tenant="t1", readers=("bob", "g2", "alice"))
    with _store([document]) as store:
        [passage] = store.retrieve(QUERY, Principal("alice", "t1"), k=10)
    assert passage.readers == ("alice", "bob", "g2")
