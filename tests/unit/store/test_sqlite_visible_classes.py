"""The SQLite store's visible access classes: found from the principal's names (through
``class_readers``' key) and its tenant's class without a reader list (by its key), they are
exactly the classes a scan of every class by the access rule finds, for any principal, and the
work follows the principal's names, not the store's classes times the names."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ctxasm.data import Principal
from ctxasm.store import Document, SQLiteStore, chunk_text

# The rule as a scan of every class, probing the names for each (the query before the store
# drove it from the names): the reference the store's own query must agree with.
SCANNED = """
    SELECT k.id FROM access_classes k
    WHERE (k.tenant IS NULL OR k.tenant = :tenant)
    AND (k.has_readers = 0 OR EXISTS (
        SELECT 1 FROM class_readers r WHERE r.class_id = k.id
        AND r.reader IN (SELECT value FROM json_each(:names))))
    AND (k.tenant IS NOT NULL OR k.has_readers = 1 OR :public)
    ORDER BY k.id
"""
TENANTS = [None, "t1", "t2", "T1", "é", "🦜"]
NAMES = ["ann", "bob", "g1", "g2", "G1", "staff", "é", "e\u0301", "🦜", "null", "[]"]


def _scanned(store: SQLiteStore, principal: Principal | None, allow_public: bool) -> list[int]:
    names = [] if principal is None else [principal.id, *principal.groups]
    params = {
        "names": json.dumps(names),
        "tenant": None if principal is None else principal.tenant,
        "public": int(allow_public),
    }
    return [int(c) for (c,) in store._db.execute(SCANNED, params)]


def _random_documents(draw: random.Random, count: int) -> list[Document]:
    documents = []
    for i in range(count):
        readers = None
        if draw.random() < 0.7:  # a reader list, sometimes empty (nobody reads it)
            readers = tuple(draw.sample(NAMES, draw.randint(0, 3)))
        documents.append(
            Document(f"d{i}", f"Text {i}.", tenant=draw.choice(TENANTS), readers=readers)
        )
    return documents


def _random_principal(draw: random.Random) -> Principal | None:
    if draw.random() < 0.1:
        return None
    groups = tuple(draw.sample(NAMES, draw.randint(0, 4)))
    return Principal(draw.choice(NAMES), draw.choice(TENANTS), groups)


@pytest.mark.parametrize("seed", range(5))
def test_the_visible_classes_are_those_of_the_rule_applied_to_every_class(
    tmp_path: Path, seed: int
) -> None:
    draw = random.Random(seed)
    store = SQLiteStore(tmp_path / "s.db")
    store.upsert_many([(d, chunk_text(d.text, 8, 0)) for d in _random_documents(draw, 80)])
    classes = store._db.execute("SELECT count(*) FROM access_classes").fetchone()[0]
    assert classes > 30  # many tenant and reader sets, not a few large classes
    seen = set()
    for _ in range(200):
        principal = _random_principal(draw)
        allow_public = draw.random() < 0.5
        expected = _scanned(store, principal, allow_public)
        assert store._visible_classes(principal, allow_public) == expected
        seen.add(len(expected))
    assert len(seen) > 3  # principals who see none, some and many of the classes
    store.close()


def _steps(store: SQLiteStore, principal: Principal) -> int:
    """SQLite's virtual machine instructions (in hundreds) to find the principal's classes:
    a count of the work that a loaded machine does not disturb."""
    counted = [0]

    def count() -> int:
        counted[0] += 1
        return 0

    store._db.set_progress_handler(count, 100)
    try:
        store._visible_classes(principal, allow_public=False)
    finally:
        store._db.set_progress_handler(None, 100)
    return counted[0]


def _owned_documents(tmp_path: Path, owners: int) -> SQLiteStore:
    """A store of one document per owner (one access class each), owner 0's in group g0."""
    store = SQLiteStore(tmp_path / f"owned{owners}.db")
    documents = [
        Document(f"d{i}", f"Note {i}.", tenant="t", readers=(f"user{i}", f"g{i}"))
        for i in range(owners)
    ]
    store.upsert_many([(d, chunk_text(d.text, 8, 0)) for d in documents])
    return store


def test_finding_the_visible_classes_follows_the_names_not_classes_times_names(
    tmp_path: Path,
) -> None:
    # A scan of every class probing every name took 9 s for 2,000 classes and 20,000 groups.
    few, many = _owned_documents(tmp_path, 200), _owned_documents(tmp_path, 800)
    groups = tuple(f"g{i}" for i in range(0, 800, 2))  # reads every other class of `many`
    member = Principal("u", "t", groups)
    assert len(few._visible_classes(member, False)) == 100
    assert len(many._visible_classes(member, False)) == 400
    # Classes the names do not reach cost nothing: 200 or 800 in the store, the same work.
    outsider = Principal("u", "t", tuple(f"x{i}" for i in range(400)))
    assert _steps(many, outsider) <= 1.1 * _steps(few, outsider)
    # Four times the names (and the classes they reach): at most about four times the work.
    quarter = Principal("u", "t", groups[:100])
    assert _steps(many, member) <= 5 * _steps(many, quarter)
    few.close()
    many.close()
