"""How a PostgreSQL store's writes keep its class statistics, against a real server: staged in a
session table (or, for a role without the TEMPORARY privilege, sent as arrays) and added in one
statement, exact per class after replacements and deletes and under concurrent writers, and a
version 3 store upgraded to leave room for in-place updates."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from ctxasm.data import Principal
from ctxasm.store import Document, chunk_text, open_store
from ctxasm.store.postgres_rows import _stage
from ctxasm.store.ranking import ClassDelta, chunk_words

WHO = Principal("u", "t", ("g",))


def _sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(statement)
        return cursor.fetchall() if cursor.description else []


def _recount(url: str) -> dict[tuple[str, int], int]:
    """Each (term, class) pair's number of chunks, counted from the chunks themselves."""
    counts: Counter[tuple[str, int]] = Counter()
    for text, class_id in _sql(url, "SELECT text, class_id FROM chunks"):
        counts.update((term, class_id) for term in set(chunk_words(text)))
    return dict(counts)


def _kept(url: str) -> dict[tuple[str, int], int]:
    return {
        (term, class_id): df
        for term, class_id, df in _sql(url, "SELECT term, class_id, df FROM class_terms")
    }


def _document(doc_id: str, text: str, group: str) -> tuple[Document, Any]:
    return Document(doc_id, text, tenant="t", readers=(group,)), chunk_text(text, 8, 0)


def test_replacements_and_deletes_keep_every_class_count_exact(postgres_url: str) -> None:
    store = open_store(postgres_url)
    store.upsert_many(  # type: ignore[attr-defined]
        [
            _document("a", "Herons nest in the river delta. Egrets fish at dawn.", "g"),
            _document("b", "Herons and egrets share the delta.", "h"),
            _document("c", "Only this document mentions pelicans.", "g"),
        ]
    )
    # one write that lowers counts (to zero for "pelicans"), raises others and adds a class
    store.upsert_many(  # type: ignore[attr-defined]
        [
            _document("c", "Cormorants dry their wings.", "g"),
            _document("a", "Herons nest in the river delta.", "g"),
            _document("d", "Cormorants and herons.", "k"),
        ]
    )
    store.delete("b")
    assert _kept(postgres_url) == _recount(postgres_url)
    assert ("pelicans", 1) not in _kept(postgres_url)
    assert [p.id for p in store.retrieve("cormorants", WHO)] == ["c#0"]
    store.close()


def test_concurrent_writers_to_the_same_classes_keep_the_counts_exact(postgres_url: str) -> None:
    stores = [open_store(postgres_url) for _ in range(2)]
    failures: list[BaseException] = []

    def write(store: Any, prefix: str) -> None:
        try:
            for batch in range(4):
                store.upsert_many(
                    [
                        _document(
                            f"{prefix}{batch}-{n}", f"Shared words {n} {prefix}.", "gh"[n % 2]
                        )
                        for n in range(30)
                    ]
                )
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    threads = [
        threading.Thread(target=write, args=(s, p)) for s, p in zip(stores, "xy", strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert _kept(postgres_url) == _recount(postgres_url)
    for store in stores:
        store.close()


def _class_totals(url: str) -> list[tuple[Any, ...]]:
    return _sql(url, "SELECT id, chunks, words FROM access_classes ORDER BY id")


@pytest.mark.parametrize("second", ["delete", "reindex"])
def test_a_delete_beside_another_write_of_the_document_subtracts_it_once(
    postgres_url: str, second: str
) -> None:
    # Two deletes of one document (or a delete beside its re-index) both read its chunks and
    # both subtracted them; only one removed rows. The counts went negative and every retrieve
    # of the class failed with a math domain error.
    import psycopg

    stores = [open_store(postgres_url) for _ in range(2)]
    stores[0].upsert(*_document("x", "Herons nest in the river delta. " * 20, "g"))
    stores[0].upsert(*_document("y", "Egrets fish at dawn in the delta.", "g"))
    results: dict[str, Any] = {}

    def run(name: str, call: Any) -> None:
        try:
            results[name] = call()
        except BaseException as exc:  # reported by the assertion below
            results[name] = exc

    calls = {
        "first": lambda: stores[0].delete("x"),
        "second": (
            (lambda: stores[1].delete("x"))
            if second == "delete"
            else (lambda: stores[1].upsert(*_document("x", "Herons moved upriver.", "g")))
        ),
    }
    with psycopg.connect(postgres_url) as holder:  # another writer, mid-transaction
        holder.execute("SELECT 1 FROM documents WHERE doc_id = 'x' FOR UPDATE")
        threads = []
        for name, call in calls.items():
            threads.append(threading.Thread(target=run, args=(name, call)))
            threads[-1].start()
            for _ in range(500):  # until it waits on the row lock
                waiting = _sql(
                    postgres_url,
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
                )[0][0]
                if waiting == len(threads):
                    break
                threading.Event().wait(0.01)
        holder.rollback()
    for thread in threads:
        thread.join()
    assert results["first"] is True
    assert results["second"] == (False if second == "delete" else "updated")
    assert _kept(postgres_url) == _recount(postgres_url)
    totals = _sql(
        postgres_url,
        "SELECT class_id, count(*), sum(words) FROM chunks GROUP BY class_id ORDER BY class_id",
    )
    kept = [row for row in _class_totals(postgres_url) if row[1] > 0]
    assert [(c, n) for c, n, _ in kept] == [(c, n) for c, n, _ in totals]
    assert all(row[1] >= 0 and row[2] >= 0 for row in _class_totals(postgres_url))
    assert [p.doc_id for p in stores[1].retrieve("egrets delta", WHO)][:1] == ["y"]
    for store in stores:
        store.close()


def test_statistics_are_staged_only_inside_a_write_transaction(postgres_url: str) -> None:
    """The staging table is emptied at every commit: a change staged outside a transaction
    would be gone before it is applied."""
    import psycopg

    store = open_store(postgres_url)  # creates the tables
    delta = ClassDelta()
    delta.add(["Herons nest."])
    with (
        psycopg.connect(postgres_url, autocommit=True) as db,
        pytest.raises(RuntimeError) as caught,
    ):
        _stage(db, {1: delta})
    assert str(caught.value) == "class statistics change only inside the write's transaction"
    store.close()


def test_a_version_3_store_is_upgraded_to_leave_room_in_the_term_counts(
    postgres_url: str,
) -> None:
    store = open_store(postgres_url)
    store.upsert_many(  # type: ignore[attr-defined]
        [_document("a", "Herons nest in the river delta.", "g")]
    )
    before = [(p.id, p.score) for p in store.retrieve("river herons", WHO)]
    store.close()
    # version 3 is version 4 without the fill factor of class_terms
    _sql(postgres_url, "ALTER TABLE class_terms RESET (fillfactor)")
    _sql(postgres_url, "UPDATE ctxasm_schema SET version = 3")
    store = open_store(postgres_url)
    assert _sql(postgres_url, "SELECT version FROM ctxasm_schema") == [(4,)]
    assert _sql(postgres_url, "SELECT reloptions FROM pg_class WHERE relname = 'class_terms'") == [
        (["fillfactor=70"],)
    ]
    assert [(p.id, p.score) for p in store.retrieve("river herons", WHO)] == before
    assert before != []
    store.close()


def test_a_role_without_the_temporary_privilege_still_writes(postgres_url: str) -> None:
    """Where an administrator revoked TEMPORARY, the changes go as array parameters instead of
    through the staging table: the same counts, the same results."""
    import psycopg

    store = open_store(postgres_url)  # tables and extension made by the administrator
    store.close()
    database = psycopg.conninfo.conninfo_to_dict(postgres_url)["dbname"]
    _sql(postgres_url, "DROP ROLE IF EXISTS ctxasm_no_temp")
    _sql(postgres_url, "CREATE ROLE ctxasm_no_temp LOGIN")
    _sql(postgres_url, f'REVOKE TEMPORARY ON DATABASE "{database}" FROM PUBLIC')
    _sql(postgres_url, "GRANT ALL ON ALL TABLES IN SCHEMA public TO ctxasm_no_temp")
    _sql(postgres_url, "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ctxasm_no_temp")
    parts = urlsplit(postgres_url)
    limited = urlunsplit(parts._replace(netloc="ctxasm_no_temp@" + parts.netloc.rpartition("@")[2]))
    with psycopg.connect(limited, autocommit=True) as db:
        assert db.execute(
            "SELECT has_database_privilege(current_database(), 'TEMPORARY')"
        ).fetchone() == (False,)
    store = open_store(limited)
    store.upsert_many(  # type: ignore[attr-defined]
        [
            _document("a", "Herons nest in the river delta.", "g"),
            _document("c", "Only this document mentions pelicans.", "g"),
        ]
    )
    store.upsert_many(  # type: ignore[attr-defined]
        [_document("c", "Cormorants dry their wings.", "g")]
    )
    store.delete("a")
    assert _kept(postgres_url) == _recount(postgres_url)
    assert ("pelicans", 1) not in _kept(postgres_url)
    assert [p.id for p in store.retrieve("cormorants", WHO)] == ["c#0"]
    store.close()
