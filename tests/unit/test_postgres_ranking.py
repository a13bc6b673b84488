"""The PostgreSQL store's two shortcuts, against a real server: BM25 candidates read by bound
vectors give exactly the ranking of every visible chunk scored in Python (however far the
reference length is from the visible average, with chunks that have no bound vector, and
over as many rounds as it takes), and vectors written outside the HNSW index are found all
the same, while the index is rebuilt, generation by generation, as the tail grows."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ctxasm.data import Principal
from ctxasm.errors import RequestError
from ctxasm.lexical import query_terms
from ctxasm.store import (
    Chunk,
    Document,
    Store,
    open_store,
    postgres_rows,
    postgres_schema,
    postgres_search,
)
from ctxasm.store import postgres as pg
from ctxasm.store.ranking import rescored

WORDS = "river bridge harbour lantern meadow orchard quarry willow falcon copper".split()
FILLER = [f"filler{n}" for n in range(400)]
QUERIES = ["river bridge", "lantern meadow orchard river", "falcon", "copper quarry willow"]
ALICE = Principal("alice", "t1", ("g1",))


def _sql(url: str, statement: str, *params: object) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        cursor = db.execute(statement, params or None)
        return cursor.fetchall() if cursor.description else []


def _document(number: int, length: int, rng: random.Random, tenant: str) -> tuple[Document, Any]:
    words = [rng.choice(WORDS if rng.random() < 0.3 else FILLER) for _ in range(length)]
    text = " ".join(words) + "."
    return Document(f"d{number}", text, tenant=tenant, readers=("g1",)), [Chunk(0, len(text), text)]


def _write_batch(store: Any, batch: int, rng: random.Random) -> None:
    """Write documents 20 * batch to 20 * batch + 19 (one chunk each) in one upsert_many."""
    store.upsert_many(
        [_document(n, rng.randint(5, 40), rng, "t1") for n in range(20 * batch, 20 * batch + 20)]
    )


def _brute_force(url: str, store: Any, query: str) -> tuple[list[tuple[float, str]], Any]:
    """Every visible chunk holding a query term or a form of one, scored in Python: the top
    100, and the store's answer with the number of candidates it read."""
    terms = query_terms(query)
    params = {"tenant": "t1", "names": ["alice", "g1"], "public": False}
    with store._connection() as db:
        params.update(pg.form_parameters(terms))
        classes, terms, stats, reference, _ = pg._statistics(db, params)
        lexical = pg._Lexical(classes, stats, terms, reference, 100)
        found = lexical.best(db, lexical.candidates(db))
        rows = db.execute(
            f"WITH found AS (SELECT id, 0 AS key FROM chunks WHERE class_id = ANY(%(classes)s) "
            f"AND terms && %(terms)s::text[]){pg._ROWS}",
            {"classes": classes, "terms": terms},
        ).fetchall()
    expected = rescored([pg.PostgresRow(*row[1:]) for row in rows], terms, stats)[:100]
    answer = [(score, row.chunk_id) for score, row in found]
    return [(score, row.chunk_id) for score, row in expected], (answer, lexical._params["fetch"])


def test_a_bound_vector_holds_each_words_share_in_its_bucket() -> None:
    """Entry by entry, as the definition reads: each distinct word's share, rounded up, in its
    bucket, the shares of words that share a bucket added up (zq16418 and zq26406 do)."""
    from collections import Counter

    from ctxasm.store.ranking import saturation

    assert postgres_rows._bucket("zq16418") == postgres_rows._bucket("zq26406")
    for text in ["zq16418 zq16418 zq16418 zq26406 a b b c", "one", "", "a a b b c c d"]:
        counts = Counter(text.split())
        found = postgres_rows._bound(counts, len(text.split()), 5.0)
        assert found is not None and found.endswith(f"}}/{postgres_rows.BOUND_DIMENSION}")
        body = found[1 : found.index("}")]
        entries = [entry.split(":") for entry in body.split(",")] if body else []
        expected: Counter[int] = Counter()
        for word, tf in counts.items():
            share = saturation(tf, len(text.split()), 5.0) * postgres_rows.BOUND_SCALE
            expected[postgres_rows._bucket(word)] += math.ceil(share)
        assert len({int(key) for key, _ in entries}) == len(entries)  # one entry a bucket
        assert {int(key): int(share) for key, share in entries} == expected


# The reference length far below the visible average and far above it (kept there: the
# store's reference never moves), near it, and moved near it by the second write.
@pytest.mark.parametrize(
    ("first_length", "movable"), [(3, False), (400, False), (None, True), (3, True)]
)
def test_bound_candidates_give_the_exact_bm25_ranking(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, first_length: int | None, movable: bool
) -> None:
    # the long chunks below get no bound vector
    monkeypatch.setattr(postgres_rows, "BOUND_MAX_WORDS", 195)
    if not movable:
        monkeypatch.setattr(postgres_rows, "REFERENCE_SETTLES", 0)
    rng = random.Random(first_length or 0)
    store = open_store(postgres_url)
    try:
        # the first batch sets the reference length the bound vectors assume
        first = 20 if first_length else 500
        store.upsert_many(  # type: ignore[attr-defined]
            [_document(n, first_length or rng.randint(1, 300), rng, "t1") for n in range(first)]
        )
        store.upsert_many(  # type: ignore[attr-defined]
            [
                _document(n, rng.randint(1, 300), rng, rng.choice(["t1", "t2"]))
                for n in range(first, 2000)
            ]
        )
        # long chunks, dense in query words, past BOUND_MAX_WORDS: among the best, unbounded
        for n, word in enumerate(WORDS):
            text = " ".join([*FILLER[:200], *[word, "river"] * 80])
            store.upsert(
                Document(f"long{n}", text, tenant="t1", readers=("g1",)),
                [Chunk(0, len(text), text)],
            )
        unbounded = _sql(postgres_url, "SELECT doc_id FROM chunks WHERE bound IS NULL")
        assert {f"long{n}" for n in range(len(WORDS))} <= {doc_id for (doc_id,) in unbounded}
        fetched = []
        for query in QUERIES:
            expected, (found, fetch) = _brute_force(postgres_url, store, query)
            assert found == expected
            assert len(found) == 100
            fetched.append(fetch)
        # more than one round (the words repeat, so the scores are close); with the reference
        # near the average, far fewer than every match, and one round once it was moved there
        assert max(fetched) == 125 if first_length and movable else max(fetched) > 125
        assert (first_length and not movable) or max(fetched) <= 500
        ((reference, average),) = _sql(
            postgres_url,
            "SELECT reference_words, avg(words)::float8 FROM store_state, chunks GROUP BY 1",
        )
        if movable:
            drift = postgres_rows.REFERENCE_DRIFT
            assert average / drift <= reference <= average * drift
        else:
            assert reference == (first_length or reference)
    finally:
        store.close()


def test_the_reference_moves_only_while_the_store_is_small(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write moves the reference, and rewrites every bound vector, while the store holds
    fewer than REFERENCE_SETTLES chunks and the average with it is more than REFERENCE_DRIFT
    times away; never after."""
    monkeypatch.setattr(postgres_rows, "REFERENCE_SETTLES", 20)
    rng = random.Random(9)
    store = open_store(postgres_url)

    def reference_and_bounds() -> tuple[float, list[tuple[str, Any]]]:
        ((reference,),) = _sql(postgres_url, "SELECT reference_words FROM store_state")
        bounds = _sql(postgres_url, "SELECT chunk_id, bound::text FROM chunks ORDER BY id")
        return reference, bounds

    try:
        store.upsert_many([_document(0, 2, rng, "t1")])  # type: ignore[attr-defined]
        assert reference_and_bounds()[0] == 2.0
        before = reference_and_bounds()
        # 10 chunks of 40 words: the average moves past 1.5 times 2, every bound is rewritten
        store.upsert_many(  # type: ignore[attr-defined]
            [_document(n, 40, rng, "t1") for n in range(1, 11)]
        )
        moved = reference_and_bounds()
        assert moved[0] == pytest.approx((2 + 400) / 11)
        assert moved[1][0] != before[1][0]  # the first chunk's bound, at the new reference
        # the average within 1.5 times the reference: nothing moves
        store.upsert_many(  # type: ignore[attr-defined]
            [_document(n, 30, rng, "t1") for n in range(11, 21)]
        )
        assert reference_and_bounds()[0] == moved[0]
        # 20 chunks and more: the reference stays, however far the average goes
        store.upsert_many(  # type: ignore[attr-defined]
            [_document(n, 300, rng, "t1") for n in range(21, 41)]
        )
        assert reference_and_bounds()[0] == moved[0]
        expected, (found, _) = _brute_force(postgres_url, store, "river bridge")
        assert found == expected
    finally:
        store.close()


def test_a_delete_waits_for_a_write_that_moves_the_reference(postgres_url: str) -> None:
    """A delete takes the reference lock before it locks rows: it waits for a write that
    rewrites every bound, instead of holding a chunk that write must update (a deadlock)."""
    import threading

    import psycopg

    rng = random.Random(3)
    store = open_store(postgres_url)
    try:
        store.upsert_many([_document(n, 5, rng, "t1") for n in range(3)])  # type: ignore[attr-defined]
        done = threading.Event()
        with psycopg.connect(postgres_url) as mover, mover.transaction():
            mover.execute("SELECT pg_advisory_xact_lock(%s)", (postgres_rows.REFERENCE_LOCK,))
            deleter = threading.Thread(target=lambda: (store.delete("d0"), done.set()))
            deleter.start()
            assert not done.wait(0.5)  # waiting for the lock, holding no row
        deleter.join(timeout=30)
        assert done.is_set()
        assert _sql(postgres_url, "SELECT count(*) FROM documents WHERE doc_id = 'd0'") == [(0,)]
    finally:
        store.close()


def test_retrieval_ignores_how_far_the_reference_is(postgres_url: str) -> None:
    """The same documents give the same passages and scores whichever batch came first."""
    rng = random.Random(5)
    documents = [_document(n, rng.randint(1, 200), rng, "t1") for n in range(300)]
    found = []
    for order in (documents, sorted(documents, key=lambda d: len(d[0].text))):
        store = open_store(postgres_url)
        try:
            _sql(postgres_url, "TRUNCATE documents, class_terms, access_classes CASCADE")
            _sql(postgres_url, "UPDATE store_state SET reference_words = NULL")
            store.upsert_many(order[:10])  # type: ignore[attr-defined]
            store.upsert_many(order[10:])  # type: ignore[attr-defined]
            found.append([[(p.id, p.score) for p in store.retrieve(q, ALICE, 50)] for q in QUERIES])
        finally:
            store.close()
    assert found[0] == found[1]


def _generations(url: str) -> tuple[int, list[str], dict[int, int]]:
    generation = _sql(url, "SELECT generation FROM store_state")[0][0]
    indexes = [
        name
        for (name,) in _sql(
            url,
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunk_vectors_hnsw_%%' "
            "ORDER BY 1",
        )
    ]
    rows = dict(_sql(url, "SELECT generation, count(*)::int FROM chunk_vectors GROUP BY 1"))
    return generation, indexes, rows


def _nearest_finds_every_chunk(url: str, store: Any) -> None:
    """Each chunk's own vector finds it first, in the index or in the tail."""
    vectors = _sql(
        url, "SELECT c.chunk_id, v.embedding::text FROM chunks c JOIN chunk_vectors v USING (id)"
    )
    generation = _sql(url, "SELECT generation FROM store_state")[0][0]
    classes = [row[0] for row in _sql(url, "SELECT id FROM access_classes")]
    with store._connection() as db:
        for chunk_id, vector in vectors:
            found = db.execute(
                postgres_search._NEAREST.format(generation=generation),
                {"vector": vector, "distance": 0.95, "k": 5, "classes": classes},
            ).fetchall()
            assert min(found)[1] == chunk_id  # (distance, chunk_id, ...)


def _small_store(url: str, monkeypatch: pytest.MonkeyPatch, first: int) -> Iterator[Store]:
    """A store whose HNSW index is first built at ``first`` vectors, rebuilt from a tail of 30
    and kept row by row past 50 (instead of 150,000, 20,000 and 50,000), closed after the
    test."""
    monkeypatch.setattr(postgres_schema, "FIRST_INDEX", first)
    monkeypatch.setattr(postgres_schema, "TAIL_MIN", 30)
    monkeypatch.setattr(postgres_schema, "TAIL_MAX", 50)
    store = open_store(url)
    yield store
    store.close()


@pytest.fixture
def small_tail_store(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The index first built at 30 vectors (see _small_store)."""
    yield from _small_store(postgres_url, monkeypatch, 30)


def test_vectors_are_found_in_the_tail_and_after_each_rebuild(
    postgres_url: str, small_tail_store: Store
) -> None:
    store = small_tail_store
    rng = random.Random(3)
    seen = []
    for batch in range(7):
        _write_batch(store, batch, rng)
        seen.append(_generations(postgres_url))
        _nearest_finds_every_chunk(postgres_url, store)
    # a rewrite of indexed documents: its new vectors go to the tail
    rewrite = Document("d0", "A new text.", tenant="t1")
    store.upsert_many([(rewrite, [Chunk(0, 11, "A new text.")])])  # type: ignore[attr-defined]
    _nearest_finds_every_chunk(postgres_url, store)
    assert seen == [
        (0, [], {1: 20}),  # under TAIL_MIN: the tail alone, searched exactly
        (1, ["chunk_vectors_hnsw_1"], {1: 40}),  # 40 >= 30 and >= 0 indexed: built
        (1, ["chunk_vectors_hnsw_1"], {1: 40, 2: 20}),  # 20 < 40: the tail
        (2, ["chunk_vectors_hnsw_2"], {1: 40, 2: 40}),  # 40 >= 40: rebuilt, the old one dropped
        (2, ["chunk_vectors_hnsw_2"], {1: 40, 2: 40, 3: 20}),
        (2, ["chunk_vectors_hnsw_2"], {1: 40, 2: 40, 3: 40}),
        # 60 would pass TAIL_MAX while under the 80 indexed: into the index, row by row
        (2, ["chunk_vectors_hnsw_2"], {1: 40, 2: 60, 3: 40}),
    ]


def test_a_bulk_load_keeps_the_tail_and_builds_the_index_once_at_its_end(
    postgres_url: str, small_tail_store: Store
) -> None:
    store = small_tail_store
    rng = random.Random(5)
    seen = []
    with store.bulk():  # type: ignore[attr-defined]
        for batch in range(4):
            _write_batch(store, batch, rng)
            seen.append(_generations(postgres_url))
            _nearest_finds_every_chunk(postgres_url, store)  # the tail, searched exactly
    seen.append(_generations(postgres_url))
    _nearest_finds_every_chunk(postgres_url, store)
    # a failed bulk load builds nothing: the next write decides as usual
    with pytest.raises(RuntimeError), store.bulk():  # type: ignore[attr-defined]
        store.upsert_many(  # type: ignore[attr-defined]
            [_document(n, rng.randint(5, 40), rng, "t1") for n in range(80, 100)]
        )
        raise RuntimeError("stop")
    seen.append(_generations(postgres_url))
    assert seen == [
        (0, [], {1: 20}),
        (0, [], {1: 40}),  # past TAIL_MIN and as large as the (empty) index: still the tail
        (0, [], {1: 60}),  # past TAIL_MAX: still the tail
        (0, [], {1: 80}),
        (1, ["chunk_vectors_hnsw_1"], {1: 80}),  # built once, when the load ended
        (1, ["chunk_vectors_hnsw_1"], {1: 80, 2: 20}),
    ]


def test_a_bulk_load_that_leaves_a_long_tail_rebuilds_even_under_the_index_size(
    postgres_url: str, small_tail_store: Store
) -> None:
    store = small_tail_store
    rng = random.Random(6)
    with store.bulk():  # type: ignore[attr-defined]
        for batch in range(5):  # 100 vectors: indexed once at the end
            _write_batch(store, batch, rng)
    assert _generations(postgres_url) == (1, ["chunk_vectors_hnsw_1"], {1: 100})
    with store.bulk():  # type: ignore[attr-defined]
        for batch in range(5, 8):  # a tail of 60, past TAIL_MAX though under the 100
            _write_batch(store, batch, rng)
    assert _generations(postgres_url) == (2, ["chunk_vectors_hnsw_2"], {1: 100, 2: 60})
    _nearest_finds_every_chunk(postgres_url, store)
    with store.bulk():  # type: ignore[attr-defined]
        store.upsert_many(  # type: ignore[attr-defined]
            [_document(n, rng.randint(5, 40), rng, "t1") for n in range(160, 180)]
        )
    # a tail of 20 (under TAIL_MIN): left as it is
    assert _generations(postgres_url) == (2, ["chunk_vectors_hnsw_2"], {1: 100, 2: 60, 3: 20})


def test_a_long_tail_left_by_a_failed_bulk_load_waits_for_the_next_one(
    postgres_url: str, small_tail_store: Store
) -> None:
    store = small_tail_store
    rng = random.Random(8)
    with pytest.raises(RuntimeError), store.bulk():  # type: ignore[attr-defined]
        for batch in range(5):
            _write_batch(store, batch, rng)
        raise RuntimeError("stop")
    assert _generations(postgres_url) == (0, [], {1: 100})
    # an ordinary write adds to a tail past FIRST_INDEX + TAIL_MAX instead of building it
    store.upsert_many(  # type: ignore[attr-defined]
        [_document(n, rng.randint(5, 40), rng, "t1") for n in range(100, 120)]
    )
    assert _generations(postgres_url) == (0, [], {1: 120})
    _nearest_finds_every_chunk(postgres_url, store)
    with store.bulk():  # type: ignore[attr-defined]
        pass  # the next bulk load's end builds it
    assert _generations(postgres_url) == (1, ["chunk_vectors_hnsw_1"], {1: 120})


@pytest.fixture
def first_index_store(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The index first built at 100 vectors (see _small_store)."""
    yield from _small_store(postgres_url, monkeypatch, 100)


def test_no_index_is_built_before_the_store_holds_first_index_vectors(
    postgres_url: str, first_index_store: Store
) -> None:
    store = first_index_store
    rng = random.Random(9)
    for batch in range(4):  # past TAIL_MIN and TAIL_MAX: still no index, all exact
        _write_batch(store, batch, rng)
    assert _generations(postgres_url) == (0, [], {1: 80})
    _nearest_finds_every_chunk(postgres_url, store)
    with store.bulk():  # type: ignore[attr-defined]
        pass  # 80 < FIRST_INDEX: nothing to build
    assert _generations(postgres_url) == (0, [], {1: 80})
    _write_batch(store, 4, rng)  # 100: built by the ordinary write that reaches it
    assert _generations(postgres_url) == (1, ["chunk_vectors_hnsw_1"], {1: 100})
    _nearest_finds_every_chunk(postgres_url, store)


def test_two_writes_that_pass_first_index_together_leave_the_build_to_the_next(
    postgres_url: str, first_index_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two writes each planned under FIRST_INDEX (neither builds) commit past it together; the
    # next ordinary write builds the index (it once waited for a bulk load's end, the tail
    # growing without bound meanwhile).
    store = first_index_store
    rng = random.Random(1)
    for batch in range(4):
        _write_batch(store, batch, rng)
    barrier = threading.Barrier(2, timeout=30)
    plan = pg._plan

    def planned_together(*args: Any, **named: Any) -> Any:
        planned = plan(*args, **named)
        barrier.wait()  # both have planned before either commits
        return planned

    monkeypatch.setattr(pg, "_plan", planned_together)
    halves = [range(80, 95), range(95, 110)]
    failed: list[BaseException] = []

    def write(numbers: range) -> None:
        try:
            store.upsert_many(  # type: ignore[attr-defined]
                [_document(n, 20, random.Random(n), "t1") for n in numbers]
            )
        except BaseException as error:  # reported below
            failed.append(error)

    writers = [threading.Thread(target=write, args=(half,)) for half in halves]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert not failed
    monkeypatch.setattr(pg, "_plan", plan)
    assert _generations(postgres_url) == (0, [], {1: 110})
    _write_batch(store, 6, rng)
    assert _generations(postgres_url) == (1, ["chunk_vectors_hnsw_1"], {1: 130})
    _nearest_finds_every_chunk(postgres_url, store)


def test_index_paths_loads_in_bulk(
    postgres_url: str, small_tail_store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import json

    from ctxasm import store as store_module

    monkeypatch.setattr(store_module, "BATCH_CHUNKS", 20)  # five batches of 20 documents
    store = small_tail_store
    rng = random.Random(7)
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"doc_id": f"d{n}", "text": _document(n, 20, rng, "t1")[0].text}) + "\n"
            for n in range(100)
        )
    )
    report = store_module.index_paths(store, [corpus], tenant="t1", readers=["g1"])
    assert (report.added, report.chunks) == (100, 100)
    # without the bulk block: built at 40 and rebuilt at 80 (see the test above)
    assert _generations(postgres_url) == (1, ["chunk_vectors_hnsw_1"], {1: 100})


def _plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _plan_nodes(child)


def test_the_index_scan_stops_at_k_and_the_distance_limit_applies_after_it(
    postgres_url: str, small_tail_store: Store
) -> None:
    """Fewer than k visible neighbours within the distance limit: the HNSW scan has no
    condition on the distance (with one, pgvector reads on to hnsw.max_scan_tuples), and the
    rows found are those of an exact search: every visible vector within the limit."""
    store = small_tail_store
    rng = random.Random(11)
    for batch in range(3):  # 60 vectors: 40 in the index, 20 in the tail
        _write_batch(store, batch, rng)
    generation, indexes, _ = _generations(postgres_url)
    assert indexes == ["chunk_vectors_hnsw_1"]
    classes = [row[0] for row in _sql(postgres_url, "SELECT id FROM access_classes")]
    vector = _sql(postgres_url, "SELECT embedding::text FROM chunk_vectors ORDER BY id LIMIT 1")
    exact = _sql(
        postgres_url,
        "SELECT id, embedding <=> %s::vector FROM chunk_vectors ORDER BY 2",
        vector[0][0],
    )
    limit = (exact[3][1] + exact[4][1]) / 2  # four vectors within it, k = 10
    params = {"vector": vector[0][0], "distance": limit, "k": 10, "classes": classes}
    query = postgres_search._NEAREST.format(generation=generation)
    with store._connection() as db:
        # the HNSW index, as a large store uses it
        db.execute("SET enable_seqscan = off")
        db.execute("SET enable_bitmapscan = off")
        db.execute("SET enable_sort = off")
        found = db.execute(query, params).fetchall()
        (plan,) = db.execute(f"EXPLAIN (FORMAT JSON) {query}", params).fetchone()[0]
        db.execute("RESET enable_seqscan")
        db.execute("RESET enable_bitmapscan")
        db.execute("RESET enable_sort")
    scans = [
        node
        for node in _plan_nodes(plan["Plan"])
        if node.get("Index Name", "").startswith("chunk_vectors_hnsw_")
    ]
    assert scans, [(n["Node Type"], n.get("Index Name")) for n in _plan_nodes(plan["Plan"])]
    assert all("<=>" not in scan.get("Filter", "") for scan in scans)
    expected = _sql(
        postgres_url,
        "SELECT c.chunk_id FROM chunk_vectors v JOIN chunks c USING (id) "
        "WHERE (v.embedding <=> %s::vector) < %s",
        vector[0][0],
        limit,
    )
    assert sorted(row[1] for row in found) == sorted(row[0] for row in expected)
    assert len(found) == 4


def test_a_retrieval_gives_the_same_passages_with_one_connection_or_two(postgres_url: str) -> None:
    """The neighbours are searched on a second connection when the pool has one free at once,
    beside the lexical ranking on the first; with a pool of one connection, both run on it."""
    rng = random.Random(12)
    writer = open_store(postgres_url)
    try:
        writer.upsert_many(  # type: ignore[attr-defined]
            [_document(n, rng.randint(5, 40), rng, "t1") for n in range(120)]
        )
    finally:
        writer.close()
    found = {}
    spares = {}
    lent_two = {}
    for size in (1, 4):
        store = open_store(f"{postgres_url}{'&' if '?' in postgres_url else '?'}pool_size={size}")
        try:
            # A pool grows in the background once a request has waited, and on a busy machine
            # a connection just put back may not be free within the spare's 5 ms: look again.
            wanted = (True, size > 1)
            looks = []
            for _ in range(100):
                with (
                    store._spare_connection() as first,  # type: ignore[attr-defined]
                    store._spare_connection() as second,  # type: ignore[attr-defined]
                ):
                    looks.append((first is not None, second is not None))
                if looks[-1] == wanted:
                    break
                time.sleep(0.02)
            spares[size] = looks[-1]
            lent_two[size] = (True, True) in looks
            found[size] = [[(p.id, p.score) for p in store.retrieve(q, ALICE, 50)] for q in QUERIES]
        finally:
            store.close()
    assert spares == {1: (True, False), 4: (True, True)}
    assert not lent_two[1]  # a pool of one never lends a second connection
    assert found[1] == found[4]
    assert all(found[1])


def test_another_tenants_writes_change_nothing_once_the_index_is_built(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HNSW graph is shared by every tenant, and which neighbours its scan reaches depends
    on what the others wrote: a principal who sees no more chunks than a store holds before it
    has an index is searched exactly, so another tenant's writes, which here build the index and
    fill it, change neither its passages nor their scores (8 of 20 questions changed before)."""
    monkeypatch.setattr(postgres_schema, "FIRST_INDEX", 300)
    monkeypatch.setattr(postgres_schema, "TAIL_MIN", 20)
    monkeypatch.setattr(postgres_schema, "TAIL_MAX", 60)
    store = open_store(postgres_url)
    try:
        rng = random.Random(5)
        vocabulary = [f"w{n}" for n in range(400)]

        def write(prefix: str, tenant: str) -> None:
            for n in range(0, 200, 10):
                store.upsert_many(  # type: ignore[attr-defined]
                    [
                        (d, [Chunk(0, len(d.text), d.text)])
                        for d in (
                            Document(
                                f"{prefix}{m}",
                                " ".join(rng.choices(vocabulary, k=12)),
                                tenant=tenant,
                            )
                            for m in range(n, n + 10)
                        )
                    ]
                )

        write("a", "A")
        reader = Principal("u", "A")
        questions = [" ".join(rng.choices(vocabulary, k=3)) for _ in range(20)]
        before = [[(p.id, p.score) for p in store.retrieve(q, reader, 10)] for q in questions]
        write("b", "B")
        assert _generations(postgres_url)[1]  # the other tenant's writes built the index
        after = [[(p.id, p.score) for p in store.retrieve(q, reader, 10)] for q in questions]
        assert after == before
    finally:
        store.close()


def test_a_word_longer_than_an_index_row_takes_is_refused_naming_the_chunk(
    postgres_url: str,
) -> None:
    """PostgreSQL limits an index row to about 2,700 bytes: a chunk holding a longer word (a
    random token, a base64 blob) is refused by name, before the server would fail the write,
    and the document's previous version stays."""
    store = open_store(postgres_url)
    try:
        old = Document("long", "A short first version.", tenant="t")
        store.upsert_many([(old, [Chunk(0, len(old.text), old.text)])])  # type: ignore[attr-defined]
        text = "Data: " + "x7" * 1_200 + " end."
        new = Document("long", text, tenant="t")
        with pytest.raises(RequestError) as caught:
            store.upsert_many([(new, [Chunk(0, len(text), text)])])  # type: ignore[attr-defined]
        assert caught.value.field == "chunks[0]"
        assert "holds a word of 2,400 bytes" in caught.value.message
        found = store.retrieve("short first version", Principal("u", "t"), 5)
        assert [p.text for p in found] == ["A short first version."]
    finally:
        store.close()
