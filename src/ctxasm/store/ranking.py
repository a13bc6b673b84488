"""Ranking shared by the stores: BM25 over the chunks a principal may see, per-access-class
statistics that make it exact without a scan, and reciprocal rank fusion with vectors.

An *access class* is the pair (tenant, reader set) of a document: every chunk of a class is
visible to exactly the same principals. Each store keeps, per class, the chunk count, the word
count and, per term, the number of chunks holding it; a write updates them in the same
transaction as the chunks. At query time the statistics of the classes a principal can see are
summed (:class:`VisibleStats`), which is the same as counting over the visible chunks, in time
proportional to the number of classes and query terms.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxasm.lexical import phrase_key

__all__ = [
    "K1",
    "RRF_K",
    "B",
    "ClassDelta",
    "VisibleStats",
    "bm25_score",
    "chunk_terms",
    "fts_form",
    "fused",
]

K1 = 1.2
B = 0.75
RRF_K = 60


def chunk_terms(text: str) -> tuple[int, Counter[str]]:
    """A chunk's length in words and its word counts, as BM25 sees them."""
    found = phrase_key(text).split()
    return len(found), Counter(found)


def fts_form(term: str) -> str:
    """``term`` as SQLite FTS5's ``unicode61 remove_diacritics 2`` tokenizer stores it."""
    if term.isascii():
        return term
    decomposed = unicodedata.normalize("NFKD", term)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@dataclass
class ClassDelta:
    """How one write changes the statistics of one access class."""

    chunks: int = 0
    words: int = 0
    terms: Counter[str] = field(default_factory=Counter)

    def add(self, texts: Iterable[str], sign: int = 1) -> None:
        """Count (``sign`` 1) or uncount (``sign`` -1) chunks with these texts."""
        for text in texts:
            found = phrase_key(text).split()
            self.chunks += sign
            self.words += sign * len(found)
            if sign > 0:
                self.terms.update(set(found))
            else:
                self.terms.subtract(set(found))

    def term_rows(self, class_id: int) -> list[tuple[int, str, int]]:
        """``(class_id, term, change)`` for every term whose count changed, sorted (so that
        concurrent writers lock rows in one order)."""
        return [(class_id, term, n) for term, n in sorted(self.terms.items()) if n]


@dataclass(frozen=True, slots=True)
class VisibleStats:
    """BM25 statistics over the chunks a principal may see."""

    total: int
    words: int
    frequencies: dict[str, int]

    @property
    def average(self) -> float:
        return self.words / self.total if self.total else 1.0

    def idf(self, term: str) -> float:
        df = self.frequencies.get(term, 0)
        return math.log(1.0 + (self.total - df + 0.5) / (df + 0.5))

    def weights(self, terms: Sequence[str]) -> list[tuple[str, float]]:
        """``(term, idf)`` of the query terms that some visible chunk holds."""
        return [(t, self.idf(t)) for t in terms if self.frequencies.get(t, 0) > 0]


def bm25_score(
    text: str,
    words: int,
    terms: Sequence[str],
    frequencies: dict[str, int],
    total: int,
    average: float,
    k1: float = K1,
    b: float = B,
) -> float:
    """Okapi BM25 of ``terms`` in one chunk (``words`` long), with the document frequencies,
    chunk count and average length of the chunks the principal may see."""
    found = phrase_key(text).split()
    score = 0.0
    for term in terms:
        tf = found.count(term)
        if not tf:
            continue
        df = frequencies[term]
        idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * words / average)
        score += idf * tf * (k1 + 1.0) / (tf + norm)
    return score


def fused(lexical: list[tuple[float, Any]], near: list[Any]) -> list[tuple[float, Any]]:
    """Reciprocal rank fusion (``1 / (60 + rank)``, summed) of a BM25 and a vector ranking of
    rows whose first column is the chunk id; best first, ties by chunk id."""
    scores: dict[str, float] = {}
    rows: dict[str, Any] = {}
    for rank, (score, row) in enumerate(lexical, start=1):
        if score > 0:
            scores[row[0]] = scores.get(row[0], 0.0) + 1.0 / (RRF_K + rank)
            rows[row[0]] = row
    for rank, row in enumerate(near, start=1):
        scores[row[0]] = scores.get(row[0], 0.0) + 1.0 / (RRF_K + rank)
        rows[row[0]] = row
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [(score, rows[chunk_id]) for chunk_id, score in ranked]
