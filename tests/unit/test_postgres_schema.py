"""What the PostgreSQL store finds when it opens a database (``postgres_schema``), against a
real server: a ``ctxasm_schema`` no store made, a store missing some or all of its tables, and
names of the store's indexes held by other relations, each refused with the database left as it
was, or (nothing of the store left but its version) made again; an intact store keeps opening.
Upgrades from older versions are in ``test_postgres_service.py``."""

from __future__ import annotations

from typing import Any

import pytest

from ctxasm import ConfigError
from ctxasm.data import Principal
from ctxasm.store import Document, chunk_text, open_store
from ctxasm.store.postgres_schema import _INDEXES

WHO = Principal("u", "t", ("g",))
OWN_SPACE = "give the store a database (or a schema, with ?options=-csearch_path=...) of its own"
# every relation of the schema with its columns, the extensions, and the rows of the tables
# that hold a store's data or version: what a refusal must leave as it was
LAYOUT = """
    SELECT c.relname::text, c.relkind::text,
           coalesce((SELECT string_agg(a.attname::text, ',' ORDER BY a.attnum)
                     FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0), '')
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public'
    UNION ALL SELECT 'extension', extname::text, '' FROM pg_extension
    ORDER BY 1, 2
"""


def _sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(statement)
        return cursor.fetchall() if cursor.description else []


def _written_store(url: str) -> None:
    store = open_store(url)
    document = Document("a", "The river delta is home to many birds.", tenant="t", readers=("g",))
    store.upsert(document, chunk_text(document.text, 64, 0))
    store.close()


def _state(url: str) -> list[tuple[Any, ...]]:
    """The schema's relations with their columns, the extensions, and every table's rows."""
    state = _sql(url, LAYOUT)
    for name, kind, _ in list(state):
        if kind == "r":
            state += _sql(url, f'SELECT {name!r}, to_jsonb(t)::text FROM "{name}" t ORDER BY 2')
    return state


def _refused_untouched(url: str, message: str, creates: tuple[bool, ...] = (True, False)) -> None:
    """Opening the store (to write or, unless ``creates`` says otherwise, only to read) is
    refused with ``message``, and nothing in the database changes."""
    before = _state(url)
    for create in creates:
        with pytest.raises(ConfigError) as caught:
            open_store(url, create=create)
        assert (caught.value.field, caught.value.message) == ("store", message)
    assert _state(url) == before


@pytest.mark.parametrize(
    ("table", "detail"),
    [
        # rv41-1: int('abc') stopped the opening with a ValueError ("internal error" in the CLI)
        ("(version TEXT); INSERT INTO ctxasm_schema VALUES ('abc')", "version text"),
        ("(version TEXT); INSERT INTO ctxasm_schema VALUES ('4.0')", "version text"),
        ("(version NUMERIC); INSERT INTO ctxasm_schema VALUES (4.0)", "version numeric"),
        (
            "(id INTEGER, version INTEGER); INSERT INTO ctxasm_schema VALUES (1, 4)",
            "id integer, version integer",
        ),
        ("(id INTEGER)", "id integer"),
    ],
)
def test_a_ctxasm_schema_table_of_other_columns_is_refused_untouched(
    postgres_url: str, table: str, detail: str
) -> None:
    _sql(postgres_url, f"CREATE TABLE ctxasm_schema {table}")
    _refused_untouched(
        postgres_url,
        "this database already has a 'ctxasm_schema' table that is not a ctxasm store's (its "
        f"columns: {detail}; a store's: version integer); {OWN_SPACE}",
    )


@pytest.mark.parametrize("version", [0, -3])
def test_a_version_no_store_records_is_refused_untouched(postgres_url: str, version: int) -> None:
    _sql(
        postgres_url,
        "CREATE TABLE ctxasm_schema (version INTEGER); "
        f"INSERT INTO ctxasm_schema VALUES ({version})",
    )
    _refused_untouched(
        postgres_url,
        "this database already has a 'ctxasm_schema' table that is not a ctxasm store's (it "
        f"records version {version}; stores record 2 and later); {OWN_SPACE}",
    )


def test_an_intact_store_keeps_opening(postgres_url: str) -> None:
    _written_store(postgres_url)
    before = _sql(postgres_url, LAYOUT)
    for create in (False, True):
        store = open_store(postgres_url, create=create)
        assert [p.id for p in store.retrieve("river birds", WHO)] == ["a#0"]
        store.close()
    assert _sql(postgres_url, LAYOUT) == before
    assert _sql(postgres_url, "SELECT version FROM ctxasm_schema") == [(4,)]


STORE_TABLES = "access_classes, class_terms, documents, readers, chunks, chunk_vectors, store_state"


def test_a_store_reset_but_for_its_version_is_made_again_by_a_write(postgres_url: str) -> None:
    # rv41-2: with its tables dropped and ctxasm_schema kept, the store was taken as whole, never
    # made again, and `index` and `ask` ended in "internal error: UndefinedTable"
    _written_store(postgres_url)
    _sql(postgres_url, f"DROP TABLE {STORE_TABLES}")
    with pytest.raises(ConfigError) as caught:
        open_store(postgres_url, create=False)
    assert caught.value.message == (
        "no ctxasm store in this PostgreSQL database; index documents into it first (ctxasm index)"
    )
    assert [name for name, *_ in _sql(postgres_url, LAYOUT)] == [
        "ctxasm_schema",
        "extension",
        "extension",
    ]
    store = open_store(postgres_url)
    assert store.stats().documents == 0
    document = Document("b", "Birds cross the river at dawn.", tenant="t", readers=("g",))
    assert store.upsert(document, chunk_text(document.text, 64, 0)) == "added"
    assert [p.id for p in store.retrieve("river birds", WHO)] == ["b#0"]
    store.close()
    assert _sql(postgres_url, "SELECT version FROM ctxasm_schema") == [(4,)]
    assert _sql(postgres_url, "SELECT generation FROM store_state") == [(0,)]


def test_a_store_whose_tables_are_dropped_while_open_says_so(postgres_url: str) -> None:
    # An open store (a running service) met "internal error: UndefinedTable" after a reset.
    from ctxasm.errors import StoreUnavailableError

    _written_store(postgres_url)
    store = open_store(postgres_url, create=False)
    try:
        _sql(postgres_url, f"DROP TABLE {STORE_TABLES}")
        for call in (lambda: store.retrieve("river birds", WHO), store.stats):
            with pytest.raises(StoreUnavailableError) as caught:
                call()
            assert caught.value.message.startswith(
                "the PostgreSQL store's tables were dropped or changed after it was opened ("
            )
            assert caught.value.message.endswith(
                "); open the store again (restart `ctxasm serve`), after `ctxasm index` if it "
                "was reset"
            )
    finally:
        store.close()


def test_a_store_whose_tables_are_emptied_while_open_goes_on_empty(postgres_url: str) -> None:
    # rv44-9: after a TRUNCATE of every table, retrieve and upsert ended in a TypeError
    _written_store(postgres_url)
    store = open_store(postgres_url)
    try:
        _sql(postgres_url, f"TRUNCATE {STORE_TABLES}")
        assert store.retrieve("river birds", WHO) == []
        document = Document("b", "Birds cross the river at dawn.", tenant="t", readers=("g",))
        assert store.upsert(document, chunk_text(document.text, 64, 0)) == "added"
        assert [p.id for p in store.retrieve("river birds", WHO)] == ["b#0"]
    finally:
        store.close()
    assert _sql(postgres_url, "SELECT generation FROM store_state") == [(0,)]


@pytest.mark.parametrize(
    ("dropped", "missing"),
    [
        ("chunk_vectors", "table chunk_vectors, and its other tables cannot be used without it"),
        ("store_state", "table store_state, and its other tables cannot be used without it"),
        (
            "chunk_vectors, chunks, readers, documents",
            "tables documents, readers, chunks, chunk_vectors, and its other tables cannot be "
            "used without them",
        ),
    ],
)
def test_a_store_missing_some_of_its_tables_is_refused_untouched(
    postgres_url: str, dropped: str, missing: str
) -> None:
    # rv41-2: its other tables hold data that is no use without these; never made again beside it
    _written_store(postgres_url)
    _sql(postgres_url, f"DROP TABLE {dropped}")
    left = sorted(set(STORE_TABLES.split(", ")) - set(dropped.split(", ")))
    _refused_untouched(
        postgres_url,
        f"the PostgreSQL store (schema version 4) is missing its {missing}: restore the store "
        f"from a backup, or reset it (DROP TABLE {', '.join(left)}, ctxasm_schema) and index "
        "its documents again",
    )
    # the reset the message gives leaves a database the store is made in again
    _sql(postgres_url, f"DROP TABLE {', '.join(left)}, ctxasm_schema")
    _written_store(postgres_url)


def test_the_store_index_names_are_those_of_its_schema() -> None:
    assert _INDEXES == {
        "readers_by_name": "readers",
        "chunks_by_doc": "chunks",
        "chunks_terms": "chunks",
        "chunk_vectors_by_class": "chunk_vectors",
        "chunk_vectors_by_generation": "chunk_vectors",
    }


@pytest.mark.parametrize(
    ("other", "held"),
    [
        # rv41-4: CREATE INDEX IF NOT EXISTS skipped the name, and the store had no GIN index
        (
            "CREATE TABLE app_notes (terms TEXT); CREATE INDEX chunks_terms ON app_notes (terms)",
            "an index 'chunks_terms' on table 'app_notes', the name of the store's own index on "
            "'chunks'",
        ),
        (
            "CREATE TABLE app_readers (reader TEXT); "
            "CREATE INDEX readers_by_name ON app_readers (reader)",
            "an index 'readers_by_name' on table 'app_readers', the name of the store's own "
            "index on 'readers'",
        ),
        (
            "CREATE TABLE chunk_vectors_by_generation (id INT)",
            "a relation 'chunk_vectors_by_generation', the name of the store's own index on "
            "'chunk_vectors'",
        ),
    ],
)
def test_a_name_of_the_stores_indexes_held_by_another_relation_is_refused_untouched(
    postgres_url: str, other: str, held: str
) -> None:
    _sql(postgres_url, other)
    _refused_untouched(
        postgres_url,
        f"this database already has {held} (without which every search reads the whole "
        f"table); {OWN_SPACE}",
        creates=(True,),
    )
    _refused_untouched(
        postgres_url,
        "no ctxasm store in this PostgreSQL database; index documents into it first (ctxasm index)",
        creates=(False,),
    )


def test_a_store_keeps_its_indexes_when_upgraded_and_opened_again(postgres_url: str) -> None:
    # the store's own indexes, already there, are no other relation's
    _written_store(postgres_url)
    _sql(postgres_url, "UPDATE ctxasm_schema SET version = 3")
    store = open_store(postgres_url)
    assert [p.id for p in store.retrieve("river birds", WHO)] == ["a#0"]
    store.close()
    indexes = _sql(
        postgres_url,
        "SELECT indexname::text, tablename::text FROM pg_indexes WHERE schemaname = 'public' "
        "AND indexname = ANY(ARRAY['readers_by_name', 'chunks_by_doc', 'chunks_terms', "
        "'chunk_vectors_by_class', 'chunk_vectors_by_generation']) ORDER BY 1",
    )
    assert dict(indexes) == _INDEXES
    assert _sql(postgres_url, "SELECT version FROM ctxasm_schema") == [(4,)]
