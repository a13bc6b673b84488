"""The PostgreSQL + pgvector store against a real server (see the ``postgres_url`` fixture):
``ctxasm ask`` on it, and NUL characters refused before any SQL. What every store does
(access, idempotency, deletion, hybrid ranking, atomicity) is in
``tests/contract/test_store_contract.py``."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import pytest

import ctxasm
from ctxasm.data import Principal
from ctxasm.errors import StoreUnavailableError
from ctxasm.store import Document, chunk_text, index_paths, open_store

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


def _sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(statement)
        return cursor.fetchall() if cursor.description else []


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


@pytest.mark.parametrize(
    ("document", "field"),
    [
        (Document("d" * 3000, "Text."), "document.doc_id"),
        (
            Document("d", "Text.", tenant="t", readers=tuple(f"{n:036d}" for n in range(100))),
            "document.readers",
        ),
    ],
)
def test_what_no_index_entry_can_hold_is_refused_naming_the_field(
    postgres_url: str, document: Document, field: str
) -> None:
    # PostgreSQL refused it (an index entry holds at most 2,704 bytes) and the error said the
    # store was unavailable: retry later
    store = open_store(postgres_url)
    with pytest.raises(ctxasm.RequestError) as caught:
        store.upsert(document, chunk_text(document.text, 64, 0))
    assert caught.value.field == field
    assert "more than the PostgreSQL store can index" in caught.value.message
    assert store.stats().documents == 0


def _noise(size: int, seed: int) -> str:
    """``size`` characters the server cannot compress (a compressed index entry would fit)."""
    rng = random.Random(seed)
    return "".join(rng.choices(string.ascii_letters + string.digits, k=size))


def test_an_id_and_a_reader_too_long_together_are_refused_naming_both(postgres_url: str) -> None:
    # each under 2,000 bytes, the two filled one entry of the readers table's key: the write
    # failed with the server's "index row size 3816 exceeds btree version 4 maximum 2704"
    store = open_store(postgres_url)
    doc_id, reader = _noise(1900, 1), _noise(1900, 2)
    document = Document(doc_id, "Text.", readers=("g1", reader))
    with pytest.raises(ctxasm.RequestError) as caught:
        store.upsert(document, chunk_text(document.text, 64, 0))
    assert (caught.value.field, caught.value.message) == (
        "document.readers",
        f"document.readers of '{doc_id[:56]}...: its id and the reader '{reader[:56]}... "
        "together take over 2,000 bytes, more than the PostgreSQL store can index; use a "
        "shorter id or reader name",
    )
    assert store.stats().documents == 0
    fits = Document(_noise(1000, 3), "Text.", readers=(_noise(1000, 4),))  # 2,000 bytes
    assert store.upsert(fits, chunk_text(fits.text, 64, 0)) == "added"
    assert store.stats().documents == 1
    store.close()


def test_a_database_without_a_store_is_refused_where_one_is_needed(postgres_url: str) -> None:
    # `ctxasm ask` on an empty database created the store's tables and the pgvector extension,
    # then answered that nothing matched
    import psycopg

    with pytest.raises(ctxasm.ConfigError, match="no ctxasm store in this PostgreSQL database"):
        open_store(postgres_url, create=False)
    with psycopg.connect(postgres_url, autocommit=True) as db:
        tables = db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)
        db.execute("CREATE TABLE documents (id int)")  # an application's own table
    for create in (True, False):
        with pytest.raises(ctxasm.ConfigError, match="'documents' table that is not a ctxasm"):
            open_store(postgres_url, create=create)


def _reset_beneath_a_writer(url: str) -> Any:
    """A store that wrote tenant A's class, then the database reset beneath it (as a restore of
    an older backup leaves it): the store still remembers that class's id."""
    writer = open_store(url)
    hello = Document("warmup", "hello", tenant="A", readers=("a-staff",))
    writer.upsert(hello, chunk_text(hello.text, 64, 8))
    _sql(
        url,
        "TRUNCATE documents, readers, chunks, chunk_vectors, class_terms, access_classes "
        "RESTART IDENTITY CASCADE",
    )
    return writer


def test_a_class_id_remembered_from_before_a_reset_is_looked_up_again(postgres_url: str) -> None:
    # A process remembered its access classes' ids for good: after the database was reset
    # beneath it (or an older backup restored), another process's tenant B class took id 1,
    # and tenant A's next document was written into it, readable by tenant B (rev E).
    writer = _reset_beneath_a_writer(postgres_url)
    other = open_store(postgres_url)
    note = Document("b-doc", "public note", tenant="B", readers=("b-staff",))
    other.upsert(note, chunk_text(note.text, 64, 8))
    other.close()
    secret = Document("a-secret", "salary figures of tenant A", tenant="A", readers=("a-staff",))
    writer.upsert(secret, chunk_text(secret.text, 64, 8))
    eve, ann = Principal("eve", "B", ("b-staff",)), Principal("ann", "A", ("a-staff",))
    assert writer.retrieve("salary figures", eve, k=5) == []
    assert [p.id for p in writer.retrieve("salary figures", ann, k=5)] == ["a-secret#0"]
    writer.close()


def test_two_writers_adding_one_new_document_at_once_both_succeed(postgres_url: str) -> None:
    # Each read the id as new before either wrote it; the second COPY met the first's row and
    # psycopg's UniqueViolation reached the caller (rev E: 20 tries of 20)
    import threading

    store = open_store(postgres_url)
    outcomes: list[str] = []
    failures: list[BaseException] = []

    def write(start: threading.Barrier, doc_id: str, text: str) -> None:
        start.wait()
        try:
            outcomes.append(
                store.upsert(Document(doc_id, text, tenant="t"), chunk_text(text, 64, 8))
            )
        except BaseException as error:  # reported below
            failures.append(error)

    for round_ in range(5):
        start = threading.Barrier(2)
        threads = [
            threading.Thread(target=write, args=(start, f"d{round_}", text))
            for text in ("one", "two")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not failures
    assert sorted(outcomes) == ["added"] * 5 + ["updated"] * 5
    assert store.stats().documents == 5
    store.close()


def test_the_store_urls_password_is_not_in_its_errors() -> None:
    # libpq quotes what it cannot parse, and the message went to the terminal and logs
    for url in (
        "postgresql://app:Sup3rSecret%zz@127.0.0.1:1/db",
        "postgresql://app:Sup3r Secret@127.0.0.1:1/db",
        "postgresql://app:Sup3rSecret@[::1/db",
        "postgresql://app@127.0.0.1:1/db?password=Sup3rSecret%zz",
        "postgresql://app:Sup3r@Secret@127.0.0.1:1/db",  # the driver splits at the first "@"
        "postgresql+psycopg://app:Sup3rSecret@127.0.0.1:1/db",  # no URL the stores know
    ):
        with pytest.raises(ctxasm.ConfigError) as caught:
            open_store(url)
        assert "Sup3r" not in caught.value.message, caught.value.message
        assert "Secret" not in caught.value.message, caught.value.message
    # a short password would be spelt out by the gaps it leaves: the message is left out
    with pytest.raises(ctxasm.ConfigError) as caught:
        open_store("postgresql://app:a@127.0.0.1:1/db")
    assert "left out: it may hold the password" in caught.value.message


def test_two_classes_remembered_with_one_id_after_a_reset_are_both_checked(
    postgres_url: str,
) -> None:
    # After the reset, tenant B's class is made by this same writer and takes id 1, which the
    # writer still remembers for tenant A's: a batch of both must not write A's into it
    writer = _reset_beneath_a_writer(postgres_url)
    note = Document("b-doc", "public note", tenant="B", readers=("b-staff",))
    writer.upsert(note, chunk_text(note.text, 64, 8))
    secret = Document("a-secret", "salary figures of tenant A", tenant="A", readers=("a-staff",))
    again = Document("b-doc2", "another note", tenant="B", readers=("b-staff",))
    writer.upsert_many(
        [(secret, chunk_text(secret.text, 64, 8)), (again, chunk_text(again.text, 64, 8))]
    )
    eve = Principal("eve", "B", ("b-staff",))
    assert writer.retrieve("salary figures", eve, k=5) == []
    writer.close()


@pytest.mark.parametrize("retried", [True, False])
def test_a_deadlock_reaches_the_write_that_tries_again(postgres_url: str, retried: bool) -> None:
    # The write of a batch tries again when it deadlocks on another writer's rows, but the
    # connection turned every deadlock into "the store is unavailable" first: a full test
    # run on a loaded machine failed so. Two real transactions lock two rows in opposite
    # orders; one of them is the deadlock's victim.
    import threading

    import psycopg

    store = open_store(postgres_url)
    for n in (1, 2):
        store.upsert(Document(f"lock-{n}", f"row {n}", tenant="t"), chunk_text(f"row {n}", 64, 8))
    both = threading.Barrier(2)
    caught: list[BaseException] = []

    def lock(first: str, second: str) -> None:
        try:
            with store._connection(retried=retried) as db, db.transaction():  # type: ignore[attr-defined]
                lock_row = "SELECT 1 FROM documents WHERE doc_id = %s FOR UPDATE"
                db.execute(lock_row, (first,))
                both.wait()
                db.execute(lock_row, (second,))
        except BaseException as error:  # reported below
            caught.append(error)

    threads = [
        threading.Thread(target=lock, args=order)
        for order in (("lock-1", "lock-2"), ("lock-2", "lock-1"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    assert len(caught) == 1, caught
    if retried:
        assert isinstance(caught[0], psycopg.errors.DeadlockDetected)
    else:
        assert isinstance(caught[0], StoreUnavailableError)
        assert "deadlock detected" in caught[0].message


def test_writers_of_overlapping_new_documents_in_any_order_all_succeed(postgres_url: str) -> None:
    # Four writers of 20 of the same 30 new ids each, in their own orders: batches gave up
    # after three tries (and index_paths stopped, taking it for an outage), or deadlocked on
    # each other's rows (rev F). Rows are now written in id order, and a batch tries again.
    import random
    import threading

    store = open_store(postgres_url)
    failures: list[BaseException] = []

    def write(start: threading.Barrier, round_: int, seed: int) -> None:
        rng = random.Random(seed)
        items = []
        for n in rng.sample(range(30), 20):
            text = f"document {n} round {round_} " + rng.choice(["same", f"v{seed}"])
            document = Document(f"r{round_}-d{n}", text, tenant="t", readers=(f"g{n % 3}",))
            items.append((document, chunk_text(text, 64, 8)))
        start.wait()
        try:
            store.upsert_many(items)  # type: ignore[attr-defined]
        except BaseException as error:  # reported below
            failures.append(error)

    for round_ in range(6):
        start = threading.Barrier(4)
        threads = [
            threading.Thread(target=write, args=(start, round_, round_ * 10 + k)) for k in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not failures, failures[:1]
    counted = _sql(
        postgres_url, "SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM chunk_vectors)"
    )
    assert counted[0][0] == counted[0][1] == store.stats().chunks
    store.close()


def _database(url: str) -> str:
    return url.partition("?")[0].rsplit("/", 1)[1]


def _session_that_cannot_write(url: str, how: str) -> str:
    """The URL of a session that may read the store at ``url`` but not write it: a role granted
    SELECT alone, or a read-only session (as on a read replica)."""
    if how == "read-only session":
        return f"{url}&options=-cdefault_transaction_read_only%3Don"
    role = f"reader_{_database(url)}"
    _sql(
        url, f'CREATE ROLE "{role}" LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{role}"'
    )
    return url.replace("//postgres:@", f"//{role}:@", 1)


@pytest.mark.parametrize("how", ["role granted SELECT", "read-only session"])
def test_a_session_that_cannot_write_stops_at_its_first_write_and_still_reads(
    postgres_url: str, tmp_path: Path, how: str
) -> None:
    # rv41-3: delete raised psycopg's own error ("internal error" in the CLI), and index
    # reported every document failed, one by one, with it
    import subprocess
    import sys

    assert "?" in postgres_url and "//postgres:@" in postgres_url  # the fixture's form
    writer = open_store(postgres_url)
    document = Document("d", "The Danube ends in the Black Sea.", tenant="t", readers=("g",))
    writer.upsert(document, chunk_text(document.text, 64, 0))
    writer.close()
    url = _session_that_cannot_write(postgres_url, how)
    database = _database(postgres_url)
    if how == "read-only session":
        message = (
            f"the PostgreSQL store in database '{database}' cannot be written: the session is "
            "read-only (cannot execute SELECT FOR UPDATE in a read-only transaction), as on a "
            "read replica or with default_transaction_read_only; write through the primary "
            "server; what was written before stays, and the same command can be run again"
        )
    else:
        message = (
            f"the PostgreSQL store in database '{database}' cannot be used by the role "
            f"'reader_{database}', which lacks a privilege on its tables (permission denied for "
            "table documents); grant it SELECT, INSERT, UPDATE and DELETE on them and USAGE on "
            "their sequences, or use the role that made the store; what was written before "
            "stays, and the same command can be run again"
        )
    store = open_store(url)
    who = Principal("u", "t", ("g",))
    assert [p.id for p in store.retrieve("danube", who)] == ["d#0"]
    with pytest.raises(StoreUnavailableError) as caught:
        store.delete("d")
    assert (caught.value.field, caught.value.message) == ("store", message)
    new = Document("e", "The Rhine ends in the North Sea.", tenant="t", readers=("g",))
    with pytest.raises(StoreUnavailableError) as caught:
        store.upsert(new, chunk_text(new.text, 64, 0))
    assert caught.value.field == "store"
    assert caught.value.message.startswith(f"the PostgreSQL store in database '{database}' ")
    store.close()
    lines = tmp_path / "docs.jsonl"
    lines.write_text(
        "".join(
            f'{{"doc_id": "n{n}", "text": "Note {n} on the river.", "tenant": "t"}}\n'
            for n in range(3)
        ),
        encoding="utf-8",
    )
    script = Path(sys.executable).parent / "ctxasm"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "ctxasm"]
    indexed = subprocess.run(
        [*command, "index", str(lines), "--store", url], capture_output=True, text=True, timeout=120
    )
    deleted = subprocess.run(
        [*command, "delete", "d", "--store", url], capture_output=True, text=True, timeout=120
    )
    # one error each, naming the store, not one a document nor an internal error
    assert (indexed.returncode, deleted.returncode) == (1, 1)
    assert deleted.stderr == f"ctxasm: error: {message} [store]\n"
    assert indexed.stderr.count("ctxasm:") == 1, indexed.stderr
    assert f"ctxasm: error: the PostgreSQL store in database '{database}' " in indexed.stderr
    assert _sql(postgres_url, "SELECT doc_id FROM documents") == [("d",)]
