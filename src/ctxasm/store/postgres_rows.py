"""What a PostgreSQL store writes beside its text, formatted for ``COPY``: the bound vectors
(each word's BM25 share at the store's reference length, rounded up, in hashed buckets) of the
chunks and of a query, the array literals of a chunk's words and class marker, the chunk rows
of a batch, the prefix of pgvector's binary form of an embedding, and the change of the access
classes' statistics a write makes (see :mod:`ctxasm.store.postgres`)."""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

import xxhash

from ctxasm.store.ranking import ClassDelta, chunk_words, saturation
from ctxasm.store.records import Pending

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


def _int_array(items: list[int]) -> str:
    return "{" + ",".join(map(str, items)) + "}"


@lru_cache(maxsize=65536)
def _bucket(term: str) -> int:
    """A word's bound-vector index (pgvector's text form counts from 1)."""
    return xxhash.xxh3_64_intdigest(term.encode("utf-8", "surrogatepass")) % BOUND_DIMENSION + 1


def _bound(counts: Counter[str], length: int, reference: float) -> str | None:
    """A chunk's bound vector: each word's :func:`~ctxasm.store.ranking.saturation` at the
    ``reference`` average length, rounded up to ``1 / BOUND_SCALE``, in its bucket (pgvector
    sorts the entries; words that share a bucket are added up)."""
    if len(counts) > BOUND_MAX_WORDS:
        return None
    keys = list(map(_bucket_key, counts))
    shares = _shares(counts.values(), length, reference)
    if len(set(keys)) < len(keys):
        merged: dict[str, int] = {}
        for key, share in zip(keys, shares, strict=True):
            merged[key] = merged.get(key, 0) + int(share)
        keys, shares = list(merged), [str(share) for share in merged.values()]
    return "{" + ",".join(map(str.__add__, keys, shares)) + f"}}/{BOUND_DIMENSION}"


def _shares(tfs: Iterable[int], length: int, reference: float) -> list[str]:
    """Each term's bound share, as text (most words occur once: computed once for them)."""
    once = str(math.ceil(saturation(1, length, reference) * BOUND_SCALE))
    return [
        once if tf == 1 else str(math.ceil(saturation(tf, length, reference) * BOUND_SCALE))
        for tf in tfs
    ]


@lru_cache(maxsize=65536)
def _bucket_key(term: str) -> str:
    """``"bucket:"``, the start of a word's entry in a bound vector."""
    return f"{_bucket(term)}:"


def _query_bound(weights: list[tuple[str, float]]) -> str:
    """The query's bound vector: each term's idf in its bucket (summed where they share one)."""
    buckets: dict[int, float] = {}
    for term, idf in weights:
        bucket = _bucket(term)
        buckets[bucket] = buckets.get(bucket, 0.0) + idf
    entries = ",".join(f"{b}:{buckets[b]!r}" for b in sorted(buckets))
    return f"{{{entries}}}/{BOUND_DIMENSION}"


def _reference(db: Any, batch: list[Pending]) -> float:
    """The store's reference chunk length for bound vectors: set by its first write (the
    average of that batch), never changed."""
    row = db.execute("SELECT reference_words FROM store_state").fetchone()
    if row[0] is not None:
        return float(row[0])
    lengths = [len(chunk_words(c.text)) for item in batch for c in item.chunks]
    average = sum(lengths) / len(lengths) if lengths else 1.0
    db.execute(
        "UPDATE store_state SET reference_words = %s WHERE reference_words IS NULL",
        (max(average, 1.0),),
    )
    return float(db.execute("SELECT reference_words FROM store_state").fetchone()[0])


def _chunk_rows(
    batch: list[Pending],
    classes: list[int],
    reference: float,
    deltas: dict[int, ClassDelta],
    words: list[list[str]],
) -> Iterator[tuple[Any, ...]]:
    """The ``chunks`` rows of ``batch`` (all but their ids), counted into ``deltas`` as they
    are made, each chunk's words added to ``words``."""
    for item, class_id in zip(batch, classes, strict=True):
        delta = deltas.setdefault(class_id, ClassDelta())
        for seq, chunk in enumerate(item.chunks):
            found = chunk_words(chunk.text)
            words.append(found)
            counts = Counter(found)
            delta.add_words(counts.keys(), len(found))
            yield (
                f"{item.document.doc_id}#{seq}",
                item.document.doc_id,
                seq,
                chunk.start,
                chunk.end,
                len(found),
                chunk.text,
                _text_array(_terms(counts, class_id)),
                class_id,
                _bound(counts, len(found), reference),
            )


def _apply(db: Any, deltas: dict[int, ClassDelta]) -> None:
    """Add the changes to the classes' statistics: rows in one order (class, then term, sorted
    by the database), so concurrent writers never deadlock; the term changes in one statement,
    which the server reads at once (a pipeline then goes on while it runs)."""
    terms: list[str] = []
    owners: list[int] = []
    changes: list[int] = []
    for class_id, delta in sorted(deltas.items()):
        db.execute(
            "UPDATE access_classes SET chunks = chunks + %s, words = words + %s WHERE id = %s",
            (delta.chunks, delta.words, class_id),
        )
        for term, change in delta.terms.items():
            if change:
                terms.append(term)
                owners.append(class_id)
                changes.append(change)
    if not terms:
        return
    columns = (_text_array(terms), _int_array(owners), _int_array(changes))
    db.execute(
        "INSERT INTO class_terms (term, class_id, df) "
        "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) "
        "AS change(term, class_id, df) ORDER BY class_id, term "
        "ON CONFLICT (term, class_id) DO UPDATE SET df = class_terms.df + excluded.df",
        columns,
    )
    if min(changes) < 0:
        db.execute(
            "DELETE FROM class_terms WHERE (term, class_id) IN (SELECT term, class_id FROM "
            "unnest(%s::text[], %s::bigint[], %s::bigint[]) AS change(term, class_id, df) "
            "WHERE df < 0) AND df <= 0",
            columns,
        )
