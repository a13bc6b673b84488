"""A PostgreSQL store's tables and their upkeep: the schema, the version a store was written
with, and where a write puts its vectors: the tail outside the HNSW index, or the index,
rebuilt over everything in one pass once the tail is as large as what it covers (see
:mod:`ctxasm.store.postgres`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ctxasm.errors import ConfigError
from ctxasm.store.postgres_rows import BOUND_DIMENSION, DIMENSION
from ctxasm.store.records import VERSION_1_DOCUMENTS, VERSION_1_READERS

SCHEMA_VERSION = 4
# The HNSW index is first built once a store has FIRST_INDEX vectors: below that an exact
# search (recall 1) is about as fast as the index's filtered search of the hashed vectors
# (recall@50 0.5-0.7 at 100k), and a load builds no graph (half of a 100k load's time). Once
# built, the tail outside it never passes TAIL_MAX rows (then writes go into it row by row),
# and the end of a bulk load rebuilds it (see _plan).
FIRST_INDEX = 150_000
TAIL_MIN = 20_000
TAIL_MAX = 50_000
HNSW = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 48)"

_SCHEMA = f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS ctxasm_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS access_classes (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    tenant TEXT,
    readers TEXT[],
    chunks BIGINT NOT NULL DEFAULT 0,
    words BIGINT NOT NULL DEFAULT 0
);
-- class_id names an access class; no foreign key: a write changes about 24 rows here per
-- chunk, and checking each would cost a third of their upkeep
CREATE TABLE IF NOT EXISTS class_terms (
    term TEXT COLLATE "C" NOT NULL,
    class_id BIGINT NOT NULL,
    df BIGINT NOT NULL,
    PRIMARY KEY (term, class_id)
);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    title TEXT,
    url TEXT,
    tenant TEXT,
    has_readers BOOLEAN NOT NULL,
    timestamp TEXT,
    authority DOUBLE PRECISION,
    metadata JSONB NOT NULL DEFAULT '{{}}',
    content_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS readers (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    reader TEXT NOT NULL,
    PRIMARY KEY (doc_id, reader)
);
CREATE INDEX IF NOT EXISTS readers_by_name ON readers(reader, doc_id);
CREATE TABLE IF NOT EXISTS chunks (
    id BIGSERIAL PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    words INTEGER NOT NULL,
    text TEXT NOT NULL,
    terms TEXT[] COLLATE "C" NOT NULL,
    class_id BIGINT NOT NULL REFERENCES access_classes(id),
    bound sparsevec({BOUND_DIMENSION})
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, seq);
CREATE INDEX IF NOT EXISTS chunks_terms ON chunks USING GIN (terms);
CREATE TABLE IF NOT EXISTS chunk_vectors (
    id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    class_id BIGINT NOT NULL,
    generation INTEGER NOT NULL,
    embedding vector({DIMENSION}) NOT NULL
);
CREATE INDEX IF NOT EXISTS chunk_vectors_by_class ON chunk_vectors(class_id, generation);
CREATE INDEX IF NOT EXISTS chunk_vectors_by_generation ON chunk_vectors(generation);
CREATE TABLE IF NOT EXISTS store_state (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    reference_words DOUBLE PRECISION,
    generation INTEGER NOT NULL DEFAULT 0
);
INSERT INTO store_state DEFAULT VALUES ON CONFLICT DO NOTHING;
"""
# Stored inline and uncompressed where they fit: scanning the matches reads them for every
# row (the text is compressed or moved out first), and the vectors' table stays narrow. A
# class's term counts change in place: with room left in their pages (pages filled from now
# on, in a store upgraded), nearly every change is a heap-only update, with no new index entry.
_STORAGE = """
ALTER TABLE chunks ALTER COLUMN terms SET STORAGE MAIN, ALTER COLUMN bound SET STORAGE MAIN;
ALTER TABLE chunk_vectors ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE class_terms SET (fillfactor = 70);
"""


@dataclass(frozen=True, slots=True)
class _Plan:
    """Where a write puts its vectors: the generation it gives them, and whether the HNSW
    index is rebuilt over everything (as ``rebuild``, the new generation) before it commits."""

    generation: int
    rebuild: int | None = None


# The columns, in order, of the tables of ctxasm 0.1 (version 1, before ctxasm_schema), the one
# version told by its tables: a database holding anything else under the names of a store's
# tables is not a store, and is refused before anything is written or any table locked.
_VERSION_1_COLUMNS = {
    "documents": VERSION_1_DOCUMENTS,
    "readers": VERSION_1_READERS,
    "chunks": (
        "id",
        "chunk_id",
        "doc_id",
        "seq",
        "start",
        "end",
        "words",
        "text",
        "terms",
        "embedding",
    ),
}
_STORE_TABLES = (
    *_VERSION_1_COLUMNS,
    "access_classes",
    "class_terms",
    "chunk_vectors",
    "store_state",
    "ctxasm_schema",
)
# The tables a store of each version recorded in ctxasm_schema holds (version 1 records none):
# version 3 moved the vectors to chunk_vectors and added store_state.
_VERSION_TABLES = {
    2: ("access_classes", "class_terms", *_VERSION_1_COLUMNS),
    3: tuple(name for name in _STORE_TABLES if name != "ctxasm_schema"),
    4: tuple(name for name in _STORE_TABLES if name != "ctxasm_schema"),
}
# The indexes _SCHEMA names, with the table each belongs on. Their names share the schema's
# namespace with every other relation's: CREATE INDEX IF NOT EXISTS skips a name another
# application's index or table holds, and the store went without its own (its lexical search
# then read every chunk).
_INDEXES = dict(re.findall(r"CREATE INDEX IF NOT EXISTS (\w+) ON (\w+)", _SCHEMA))
_OWN_SPACE = "give the store a database (or a schema, with ?options=-csearch_path=...) of its own"


def _schema_version(db: Any) -> int | None:
    """The store's schema version: None for a database without a store's tables (or with
    nothing left of one but its ``ctxasm_schema``: nothing is lost in making it again), 1 for
    ctxasm 0.1's (:data:`_VERSION_1_COLUMNS`); a :class:`ConfigError` for relations under
    those names that are neither (one with its own ``documents`` and ``chunks`` tables was
    taken for a version-1 store, and its upgrade altered them until an SQL error stopped it),
    and for a store that lacks some of its version's tables (see :func:`_checked_tables`)."""
    found = {
        name: (tuple(columns), tuple(types))
        for name, columns, types in db.execute(
            "SELECT c.relname::text, array_agg(a.attname::text ORDER BY a.attnum), "
            "array_agg(format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
            "WHERE n.nspname = current_schema() AND c.relname::text = ANY(%s) GROUP BY c.relname",
            (list(_STORE_TABLES),),
        ).fetchall()
    }
    if "ctxasm_schema" in found:
        version = _recorded_version(db, *found.pop("ctxasm_schema"))
        if version is not None:
            return _checked_tables(version, set(found))
    if not found:
        return None
    if {name: columns for name, (columns, _) in found.items()} == _VERSION_1_COLUMNS:
        return 1
    raise _foreign(sorted(found))


def _recorded_version(db: Any, columns: tuple[str, ...], types: tuple[str, ...]) -> int | None:
    """The version a store's ``ctxasm_schema`` records (None where it holds no row); a
    :class:`ConfigError` for a table of that name that no ctxasm made: one of other columns,
    or a version no store records (a text ``'abc'`` stopped the opening with a ValueError)."""
    if (columns, types) != (("version",), ("integer",)):
        shape = ", ".join(f"{c} {t}" for c, t in zip(columns, types, strict=True))
        raise _foreign(["ctxasm_schema"], f" (its columns: {shape}; a store's: version integer)")
    version = db.execute("SELECT max(version) FROM ctxasm_schema").fetchone()[0]
    if version is not None and version < 2:  # version 1 had no ctxasm_schema
        raise _foreign(
            ["ctxasm_schema"], f" (it records version {version}; stores record 2 and later)"
        )
    return None if version is None else int(version)


def _checked_tables(version: int, present: set[str]) -> int | None:
    """``version``, where the database holds every table a store of that version has (or
    the version is newer than this ctxasm's, refused by the caller); None where it holds
    none of them (a store whose tables were dropped to reset it, ``ctxasm_schema`` left: it
    is made again, as in an empty database); else a :class:`ConfigError` naming what is
    missing: the rest of the store is not used without them (every command failed with
    "relation ... does not exist"), nor are they made again beside it."""
    if version > SCHEMA_VERSION:
        return version
    missing = [name for name in _VERSION_TABLES[version] if name not in present]
    if not missing:
        return version
    if not present:
        return None
    left = ", ".join(sorted(present))
    raise ConfigError(
        f"the PostgreSQL store (schema version {version}) is missing its "
        f"table{'s' if len(missing) > 1 else ''} {', '.join(missing)}, and its other tables "
        f"cannot be used without {'them' if len(missing) > 1 else 'it'}: restore the store "
        f"from a backup, or reset it (DROP TABLE {left}, ctxasm_schema) and index its "
        "documents again",
        field="store",
    )


def _foreign(names: list[str], detail: str = "") -> ConfigError:
    named = ", ".join(f"'{name}'" for name in names)
    what = f"a {named} table that is" if len(names) == 1 else f"tables {named} that are"
    return ConfigError(
        f"this database already has {what} not a ctxasm store's{detail}; {_OWN_SPACE}",
        field="store",
    )


def _check_index_names(db: Any) -> None:
    """Refuse, before the tables are made or upgraded, a database where a name the store
    gives one of its indexes (:data:`_INDEXES`) is held by another relation: an index of
    another table, or a table, view or sequence."""
    taken = [
        (name, table)
        for name, kind, table in db.execute(
            "SELECT c.relname::text, c.relkind::text, t.relname::text FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_index i ON i.indexrelid = c.oid "
            "LEFT JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE n.nspname = current_schema() AND c.relname::text = ANY(%s) ORDER BY 1",
            (list(_INDEXES),),
        ).fetchall()
        if kind not in ("i", "I") or table != _INDEXES[name]
    ]
    if taken:
        name, table = taken[0]
        held = f"an index '{name}' on table '{table}'" if table else f"a relation '{name}'"
        raise ConfigError(
            f"this database already has {held}, the name of the store's own index on "
            f"'{_INDEXES[name]}' (without which every search reads the whole table); "
            f"{_OWN_SPACE}",
            field="store",
        )


def _plan(db: Any, rows: int, *, bulk: bool = False, settle: bool = False) -> _Plan:
    """Where a write of ``rows`` vectors goes (inside its transaction): the index, rebuilt
    over everything, once the tail would be as large as what the index holds (and at least
    ``TAIL_MIN``); else the tail while it stays under ``TAIL_MAX`` rows; else the index, row
    by row. A store without an index keeps every vector in the tail until it holds
    ``FIRST_INDEX`` of them, then builds it (a tail past that by ``TAIL_MAX`` too: a bulk
    load that failed, left to the next one). A rebuild first locks out other writers (who
    would deadlock later) and decides again once it holds the lock (another may have rebuilt
    meanwhile).

    In a ``bulk`` load the rows always join the tail, however long it grows (inserting them
    into a large index row by row costs milliseconds each); when it ends (``settle``, no
    rows), the index is rebuilt if the tail is past ``TAIL_MAX`` as well. A tail already past
    ``TAIL_MAX`` (a bulk load that failed before its end) is left to the next one: an ordinary
    write adds to it rather than rebuild so many vectors under its timeout."""
    if bulk:
        return _Plan(_generation(db) + 1)
    locked = False
    while True:
        generation = _generation(db)
        # generation 0: no index was ever built, every vector is in the tail
        # (past FIRST_INDEX by up to TAIL_MAX: two writes planned under it, committed together)
        least, most = (TAIL_MIN, TAIL_MAX) if generation else (FIRST_INDEX, FIRST_INDEX + TAIL_MAX)
        tail = _count(db, f"generation > {generation}") + rows
        if not settle and tail - rows > most:
            return _Plan(generation + 1)
        if tail >= least and (
            (settle and tail > most) or tail >= _count(db, f"generation <= {generation}")
        ):
            if locked:
                return _Plan(generation + 1, rebuild=generation + 1)
            db.execute("LOCK TABLE chunk_vectors IN SHARE ROW EXCLUSIVE MODE")
            locked = True
            continue
        return _Plan(generation + 1 if tail <= most else generation)


def _generation(db: Any) -> int:
    """The index generation of ``store_state``; its row is made again (generation 0: no index)
    where the tables were emptied by hand (``TRUNCATE``) while the store held them."""
    row = db.execute("SELECT generation FROM store_state").fetchone()
    if row is None:
        db.execute("INSERT INTO store_state DEFAULT VALUES ON CONFLICT DO NOTHING")
        return 0
    return int(row[0])


def _count(db: Any, condition: str) -> int:
    return int(db.execute(f"SELECT count(*) FROM chunk_vectors WHERE {condition}").fetchone()[0])


INDEX_MEMORY_MB = 1024  # the most memory an HNSW build is given, by default


def _rebuild(
    db: Any, generation: int, rows: int | None = None, *, memory_mb: int = INDEX_MEMORY_MB
) -> None:
    """Build the HNSW index over every vector up to ``generation`` (inside the write's
    transaction: readers go on with the previous index until it commits), with the memory
    its graph needs, up to ``memory_mb``, so that it is built in one pass (a graph larger
    than that is finished on disk, several times slower)."""
    if rows is None:
        rows = _count(db, f"generation <= {generation}")
    needed = min(max(rows * 2, 64 * 1024), memory_mb * 1024)  # kB: about 2 kB a vector
    current = db.execute(
        "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone()[0]
    if needed > current:
        db.execute(f"SET LOCAL maintenance_work_mem = '{needed}kB'")
    db.execute(
        f"CREATE INDEX chunk_vectors_hnsw_{generation} ON chunk_vectors {HNSW} "
        f"WHERE generation <= {generation}"
    )
    db.execute("UPDATE store_state SET generation = %s", (generation,))


def _drop_stale_indexes(db: Any, generation: int) -> None:
    """Drop the HNSW indexes of earlier generations (after the rebuild committed, without
    blocking readers). Nothing reads them any more: one left by a failure here, or by a
    killed process, is dropped after the next rebuild, and the write still succeeds."""
    import psycopg

    try:
        for (name,) in db.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = 'chunk_vectors' AND indexname LIKE 'chunk_vectors_hnsw_%%' "
            "AND indexname <> %s",
            (f"chunk_vectors_hnsw_{generation}",),
        ).fetchall():
            db.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
    except psycopg.Error:
        pass
