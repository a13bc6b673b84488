"""What a PostgreSQL store writes beside its text, formatted for ``COPY``: the bound vectors
(each word's BM25 share at the store's reference length, rounded up, in hashed buckets) of the
chunks and of a query, the array literals of a chunk's words and class marker, the chunk rows
of a batch, the prefix of pgvector's binary form of an embedding, and the change of the access
classes' statistics a write makes, staged by ``COPY`` and applied in one statement (see
:mod:`ctxasm.store.postgres`)."""

from __future__ import annotations

import math
import struct
from collections import Counter
from dataclasses import dataclass
from typing import Any

import xxhash

from ctxasm.errors import RequestError
from ctxasm.store.ranking import ClassDelta, ClassWords, chunk_words, saturation
from ctxasm.store.records import Pending, chunk_row
from ctxasm.validation import shown

DIMENSION = 256
# Bound vectors: a word's bucket is its xxh3 hash modulo pgvector's largest sparsevec dimension
# (words sharing a bucket add up: the bound only grows); a share is rounded up to 1/1024. A
# chunk with more distinct words than a sparsevec holds has none, and is always scored exactly.
BOUND_DIMENSION = 1_000_000_000
BOUND_SCALE = 1024
BOUND_MAX_WORDS = 16_000

_VECTOR = struct.pack(">hh", DIMENSION, 0)  # pgvector's binary form: this, then big-endian floats


def _marker(class_id: int) -> str:
    """The element of ``terms`` that names a chunk's access class (no word has a space), so
    one GIN index scan finds the chunks that hold a query term *and* are visible."""
    return f" class {class_id}"


def _terms(counts: Counter[str], class_id: int) -> list[str]:
    """A chunk's distinct words (in the order they first occur), then its class marker."""
    return [*counts, _marker(class_id)]


def _text_array(items: list[str]) -> str:
    """``items`` as a PostgreSQL array literal, every element quoted (``COPY`` takes it as
    text, which psycopg would otherwise scan element by element)."""
    plain = "".join(items)
    if "\\" in plain or '"' in plain:
        items = [t.replace("\\", "\\\\").replace('"', '\\"') for t in items]
    return '{"' + '","'.join(items) + '"}' if items else "{}"


def _bucket(term: str) -> int:
    """A word's bound-vector index (pgvector's text form counts from 1)."""
    return xxhash.xxh3_64_intdigest(term.encode("utf-8", "surrogatepass")) % BOUND_DIMENSION + 1


BUCKET_TEXTS = 1 << 17  # words whose bucket text is kept (about 20 MiB at most, words included)


class _BucketTexts(dict[str, str]):
    """Words' bound-vector indexes as text, kept for the next chunks that hold them (emptied
    when ``BUCKET_TEXTS`` are kept): a plain dictionary look-up, at C speed, for a word seen
    before."""

    def __missing__(self, term: str) -> str:
        if len(self) >= BUCKET_TEXTS:
            self.clear()
        text = self[term] = str(_bucket(term))
        return text


_BUCKET_TEXTS = _BucketTexts()


def _bound(counts: Counter[str], length: int, reference: float) -> str | None:
    """A chunk's bound vector: each word's :func:`~ctxasm.store.ranking.saturation` at the
    ``reference`` average length, rounded up to ``1 / BOUND_SCALE``, in its bucket (pgvector
    sorts the entries; words that share a bucket are added up). The words of one term
    frequency share one share, and their entries are written by one join."""
    if len(counts) > BOUND_MAX_WORDS:
        return None
    frequencies = Counter(counts.values())  # how many words occur tf times, for each tf
    # by term frequency (most words occur once), in the order they occur within one
    ordered = sorted(counts, key=counts.__getitem__) if len(frequencies) > 1 else list(counts)
    keys = list(map(_BUCKET_TEXTS.__getitem__, ordered))
    shares = {tf: _share(tf, length, reference) for tf in sorted(frequencies)}
    if len(set(keys)) < len(keys):
        merged: dict[str, int] = {}
        for key, word in zip(keys, ordered, strict=True):
            merged[key] = merged.get(key, 0) + shares[counts[word]]
        entries = ",".join(f"{key}:{share}" for key, share in merged.items())
        return "{" + entries + f"}}/{BOUND_DIMENSION}"
    groups = []
    start = 0
    for tf, share in shares.items():
        end = start + frequencies[tf]
        groups.append(f":{share},".join(keys[start:end]) + f":{share}")
        start = end
    return "{" + ",".join(groups) + f"}}/{BOUND_DIMENSION}"


def _share(tf: int, length: int, reference: float) -> int:
    """A word's bound share, in ``1 / BOUND_SCALE``: its term frequency's saturation at the
    ``reference`` length, rounded up."""
    return math.ceil(saturation(tf, length, reference) * BOUND_SCALE)


def _query_bound(weights: list[tuple[str, float]]) -> str:
    """The query's bound vector: each term's idf in its bucket (summed where they share one)."""
    buckets: dict[int, float] = {}
    for term, idf in weights:
        bucket = _bucket(term)
        buckets[bucket] = buckets.get(bucket, 0.0) + idf
    entries = ",".join(f"{b}:{buckets[b]!r}" for b in sorted(buckets))
    return f"{{{entries}}}/{BOUND_DIMENSION}"


# While a store holds fewer chunks than this, a write may move its reference length: where the
# average chunk length with the batch is more than REFERENCE_DRIFT times away from it, the
# reference becomes that average and every bound vector is rewritten (a few thousand rows at
# most). A reference set by an unrepresentative first write (a one-line note before the corpus)
# would otherwise loosen every bound, and asks would read many times the rows they need.
REFERENCE_SETTLES = 5_000
REFERENCE_DRIFT = 1.5
# The transaction lock each write takes on this key before it reads the reference: exclusive
# for a write that moves it (it rewrites bounds no other open write may still be computing),
# shared for any other. A delete takes it shared, before it locks rows a rewrite waits for.
REFERENCE_LOCK = 7106818


def lock_reference(db: Any, batch: list[Pending]) -> tuple[bool, list[int] | None]:
    """Take the reference lock (first in a write's transaction, so it is never waited for
    while holding another): exclusive where the store is small and ``batch`` would move the
    reference by the statistics read now, else shared. Whether it is exclusive (this write
    may move the reference), and the word counts of the batch's chunks where they were
    counted."""
    chunks, words, reference = db.execute(
        "SELECT coalesce(sum(chunks), 0), coalesce(sum(words), 0), "
        "(SELECT reference_words FROM store_state) FROM access_classes"
    ).fetchone()
    lengths = None
    # the first write sets the reference: exclusive, so that a concurrent first write waits
    # and may move it (else a one-line note could fix it for a whole corpus written beside it)
    movable = reference is None
    if reference is not None and int(chunks) < REFERENCE_SETTLES:
        lengths = [len(chunk_words(c.text)) for item in batch for c in item.chunks]
        movable = _moved(float(reference), int(chunks), int(words), lengths) is not None
    lock = "pg_advisory_xact_lock" if movable else "pg_advisory_xact_lock_shared"
    db.execute(f"SELECT {lock}(%s)", (REFERENCE_LOCK,))
    return movable, lengths


def _moved(reference: float, chunks: int, words: int, lengths: list[int]) -> float | None:
    """The average chunk length with chunks of ``lengths`` added to ``chunks`` of ``words``
    in all, where it is more than REFERENCE_DRIFT times away from ``reference``."""
    if not chunks or not lengths:
        return None
    average = max((words + sum(lengths)) / (chunks + len(lengths)), 1.0)
    if reference / REFERENCE_DRIFT <= average <= reference * REFERENCE_DRIFT:
        return None
    return average


def _reference(
    db: Any, batch: list[Pending], *, movable: bool = False, lengths: list[int] | None = None
) -> float:
    """The store's reference chunk length for bound vectors: the average of its first write,
    moved to the average with ``batch`` (bound vectors rewritten) while the store is small
    enough and the reference is more than ``REFERENCE_DRIFT`` times away from it (only
    ``movable``: under the exclusive :func:`lock_reference`; ``lengths``: the word counts of
    the batch's chunks, where counted already)."""
    row = db.execute("SELECT reference_words FROM store_state").fetchone()
    if row is None:  # its tables emptied by hand (TRUNCATE) while the store held them
        db.execute("INSERT INTO store_state DEFAULT VALUES ON CONFLICT DO NOTHING")
        row = (None,)
    (reference,) = row
    if reference is not None and not movable:
        return float(reference)
    if lengths is None:
        lengths = [len(chunk_words(c.text)) for item in batch for c in item.chunks]
    if reference is None:
        average = sum(lengths) / len(lengths) if lengths else 1.0
        db.execute(
            "UPDATE store_state SET reference_words = %s WHERE reference_words IS NULL",
            (max(average, 1.0),),
        )
        return float(db.execute("SELECT reference_words FROM store_state").fetchone()[0])
    chunks, words = db.execute("SELECT count(*), coalesce(sum(words), 0) FROM chunks").fetchone()
    moved = _moved(float(reference), int(chunks), int(words), lengths)
    if moved is None or int(chunks) >= REFERENCE_SETTLES:  # grown past it since the lock
        return float(reference)
    db.execute("UPDATE store_state SET reference_words = %s", (moved,))
    rewrite_bounds(db, moved)
    return moved


def rewrite_bounds(db: Any, reference: float) -> None:
    """Give every chunk its bound vector at the ``reference`` length, 10,000 rows at a time."""
    last = 0
    while found := db.execute(
        "SELECT id, text FROM chunks WHERE id > %s ORDER BY id LIMIT 10000", (last,)
    ).fetchall():
        bounds = []
        for _, text in found:
            words = chunk_words(text)
            bounds.append(_bound(Counter(words), len(words), reference))
        db.execute(
            "UPDATE chunks SET bound = new.bound FROM unnest(%s::bigint[], %s::sparsevec[]) "
            "AS new(id, bound) WHERE chunks.id = new.id",
            ([chunk_id for chunk_id, _ in found], bounds),
        )
        last = found[-1][0]


def _chunk_words(
    batch: list[Pending], classes: list[int], deltas: dict[int, ClassDelta]
) -> tuple[list[list[str]], list[Counter[str]]]:
    """Each chunk's words and their counts, for its row and its vector, counted into the
    ``deltas`` of the chunks' classes (see :class:`~ctxasm.store.ranking.ClassWords`)."""
    words: list[list[str]] = []
    counts: list[Counter[str]] = []
    gathered = ClassWords()
    for item, class_id in zip(batch, classes, strict=True):
        for number, chunk in enumerate(item.chunks):
            found = chunk_words(chunk.text)
            _check_word_sizes(found, item, number)
            counted = Counter(found)
            words.append(found)
            counts.append(counted)
            gathered.add(class_id, counted, len(found))
    gathered.count_into(deltas)
    return words, counts


# The longest word, in UTF-8 bytes, a chunk may hold: its class statistics and its GIN entry
# are index rows, which PostgreSQL limits to about 2,700 bytes (a word past that failed the
# write with the server's own "index row size exceeds btree maximum").
MAX_WORD_BYTES = 2_000


def _check_word_sizes(found: list[str], item: Pending, number: int) -> None:
    """Refuse a chunk with a word longer than :data:`MAX_WORD_BYTES`, naming it."""
    longest = max(found, key=len, default="")
    if len(longest) * 4 <= MAX_WORD_BYTES:  # no character takes more than 4 bytes
        return
    size = max(
        len(word.encode("utf-8", "surrogatepass"))
        for word in found
        if len(word) * 4 > MAX_WORD_BYTES
    )
    if size > MAX_WORD_BYTES:
        raise RequestError(
            f"chunks[{number}] of document {shown(item.document.doc_id)} holds a word of "
            f"{size:,} bytes; the PostgreSQL store indexes words of at most "
            f"{MAX_WORD_BYTES:,} bytes (split the text, or leave such data out of the document)",
            field=f"chunks[{number}]",
        )


def _chunk_rows(
    batch: list[Pending],
    classes: list[int],
    reference: float,
    words: list[list[str]],
    counts: list[Counter[str]],
) -> list[tuple[Any, ...]]:
    """The ``chunks`` rows of ``batch`` (all but their ids), from each chunk's ``words`` and
    their ``counts`` (:func:`_chunk_words`)."""
    rows = []
    index = 0
    for item, class_id in zip(batch, classes, strict=True):
        doc_id = item.document.doc_id
        for seq, chunk in enumerate(item.chunks):
            counted = counts[index]
            length = len(words[index])
            index += 1
            rows.append(
                (
                    *chunk_row(doc_id, seq, chunk, length),
                    _text_array(_terms(counted, class_id)),
                    class_id,
                    _bound(counted, length, reference),
                )
            )
    return rows


# A write's term changes are copied into this table of the session (parsed several times faster
# than array parameters of 100,000 elements), then added to class_terms by one statement, short
# enough to be sent whole at once: in a pipeline, a statement with megabytes of parameters is
# sent only in part until the pipeline next reads, and the server would wait while Python works.
_CHANGES = (
    'CREATE TEMP TABLE IF NOT EXISTS class_term_changes (term TEXT COLLATE "C" NOT NULL, '
    "class_id BIGINT NOT NULL, df BIGINT NOT NULL) ON COMMIT DELETE ROWS"
)


@dataclass(frozen=True, slots=True)
class _Changes:
    """A write's change of the classes' statistics, its term changes staged by :func:`_stage`:
    ``staged`` when any term's count changes, ``falls`` when one falls. ``columns`` holds the
    term changes as array literals (terms, classes, changes) instead, where the session may
    not make a temporary table."""

    deltas: dict[int, ClassDelta]
    staged: bool
    falls: bool
    columns: tuple[str, str, str] | None = None


def _stage(db: Any, deltas: dict[int, ClassDelta]) -> _Changes:
    """Copy the term changes of ``deltas`` into ``class_term_changes``, inside the write's
    transaction (the table is emptied when it commits)."""
    from psycopg import pq

    if db.info.transaction_status == pq.TransactionStatus.IDLE:
        raise RuntimeError("class statistics change only inside the write's transaction")
    if not any(any(delta.terms.values()) for delta in deltas.values()):
        return _Changes(deltas, False, False)
    falls = any(min(delta.terms.values(), default=0) < 0 for delta in deltas.values())
    if not _may_stage(db):
        return _Changes(deltas, False, falls, _columns(_term_rows(deltas)))
    # one line a term whose count changes, each class's lines made in one pass
    text = "".join(_lines(class_id, delta.terms) for class_id, delta in deltas.items())
    if "\\" in text:  # COPY's escape (tabs and line ends are never in a word)
        text = text.replace("\\", "\\\\")
    db.execute(_CHANGES)
    with db.cursor().copy("COPY class_term_changes (term, class_id, df) FROM STDIN") as copy:
        copy.write(text)
    return _Changes(deltas, True, falls)


def _lines(class_id: int, terms: Counter[str]) -> str:
    """The ``COPY`` lines of a class's term changes (none for a term whose count is kept)."""
    tail = f"\t{class_id}\t"
    if min(terms.values(), default=1) > 0:  # a write adding chunks only: every term changes
        return "".join([f"{term}{tail}{change}\n" for term, change in terms.items()])
    return "".join([f"{term}{tail}{change}\n" for term, change in terms.items() if change])


def _term_rows(deltas: dict[int, ClassDelta]) -> list[tuple[str, int, int]]:
    """``(term, class, change)`` of every term whose count changes."""
    return [
        (term, class_id, change)
        for class_id, delta in deltas.items()
        for term, change in delta.terms.items()
        if change
    ]


def _may_stage(db: Any) -> bool:
    """Whether this session may make its staging table: PostgreSQL grants the TEMPORARY
    privilege on a database to every role, unless an administrator revoked it."""
    row = db.execute("SELECT has_database_privilege(current_database(), 'TEMPORARY')").fetchone()
    return bool(row[0])


def _columns(rows: list[tuple[str, int, int]]) -> tuple[str, str, str]:
    """Term changes ``(term, class, change)`` as array literals: terms, classes, changes."""
    terms, owners, changes = zip(*rows, strict=True)
    return (
        _text_array(list(terms)),
        "{" + ",".join(map(str, owners)) + "}",
        "{" + ",".join(map(str, changes)) + "}",
    )


def _apply(db: Any, changes: _Changes) -> None:
    """Add the staged changes to the classes' statistics, in statements that a pipeline sends
    whole. Rows change in one order (the classes by id, then the terms in their index's
    order, sorted by the database), so concurrent writers never deadlock."""
    for class_id, delta in sorted(changes.deltas.items()):
        db.execute(
            "UPDATE access_classes SET chunks = chunks + %s, words = words + %s WHERE id = %s",
            (delta.chunks, delta.words, class_id),
        )
    if changes.columns is not None:
        _apply_columns(db, changes.columns, changes.falls)
    if not changes.staged:
        return
    db.execute(
        "INSERT INTO class_terms (term, class_id, df) "
        "SELECT term, class_id, df FROM class_term_changes ORDER BY term, class_id "
        "ON CONFLICT (term, class_id) DO UPDATE SET df = class_terms.df + excluded.df"
    )
    if changes.falls:
        db.execute(
            "DELETE FROM class_terms USING class_term_changes AS change "
            "WHERE class_terms.term = change.term AND class_terms.class_id = change.class_id "
            "AND change.df < 0 AND class_terms.df <= 0"
        )


# The term changes from array parameters, where no staging table may be made: slower to parse
# for the server, the same rows changed in the same order.
_CHANGE_ROWS = (
    'SELECT term COLLATE "C" AS term, class_id, df '
    "FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS change(term, class_id, df)"
)


def _apply_columns(db: Any, columns: tuple[str, str, str], falls: bool) -> None:
    db.execute(
        f"INSERT INTO class_terms (term, class_id, df) SELECT * FROM ({_CHANGE_ROWS}) AS change "
        "ORDER BY term, class_id "
        "ON CONFLICT (term, class_id) DO UPDATE SET df = class_terms.df + excluded.df",
        columns,
    )
    if falls:
        db.execute(
            f"DELETE FROM class_terms USING ({_CHANGE_ROWS}) AS change "
            "WHERE class_terms.term = change.term AND class_terms.class_id = change.class_id "
            "AND change.df < 0 AND class_terms.df <= 0",
            columns,
        )


def _update(db: Any, deltas: dict[int, ClassDelta]) -> None:
    """:func:`_stage` the changes, then :func:`_apply` them."""
    _apply(db, _stage(db, deltas))
