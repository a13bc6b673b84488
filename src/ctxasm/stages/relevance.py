"""The relevance slot: a score for every candidate, then the threshold and top-k cuts.

Strategies only score; :func:`rank` applies the cuts that are the same for all of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import ClassVar, Protocol

from ctxasm.data import Candidate, Exclusion, Passage, Reason
from ctxasm.lexical import phrase_key, query_terms
from ctxasm.strategy import Strategy, require_number

__all__ = [
    "STAGE",
    "AutoRelevance",
    "BM25Relevance",
    "GivenScoreRelevance",
    "RelevanceStrategy",
    "Scores",
    "bm25",
    "rank",
]

STAGE = "relevance"


@dataclass(frozen=True, slots=True)
class Scores:
    """One score per passage; ``floor`` is the score at or below which a passage is irrelevant
    (``None``: no such floor, for scores whose scale ctxasm does not know)."""

    values: list[float]
    floor: float | None
    method: str
    why_irrelevant: str = "no query term in the text"


class RelevanceStrategy(Protocol):
    name: ClassVar[str]

    def score(self, query: str, passages: Sequence[Passage]) -> Scores: ...

    def to_config(self) -> dict[str, object]: ...


@dataclass(frozen=True)
class GivenScoreRelevance(Strategy):
    """Use the retriever's scores as they are; a passage without a score gets ``default``.

    Use when the retriever (or a reranker) already scored the passages well.
    """

    name: ClassVar[str] = "given"
    slot: ClassVar[str] = "relevance"
    default: float = 0.0

    def __post_init__(self) -> None:
        require_number("default", self.default)

    def score(self, query: str, passages: Sequence[Passage]) -> Scores:
        values = [self.default if p.score is None else p.score for p in passages]
        return Scores(values, None, "given")


@dataclass(frozen=True)
class BM25Relevance(Strategy):
    """Okapi BM25 of the query's content words against each passage, scaled so the best is 1.

    Statistics (document frequency, average length) come from the candidate set itself, after
    access filtering, so a passage the principal may not read never shapes another's score.
    Length is measured in characters. A passage that shares no content word with the query
    scores 0 and is dropped as irrelevant. Use when passages arrive without scores.
    """

    name: ClassVar[str] = "bm25"
    slot: ClassVar[str] = "relevance"
    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        require_number("k1", self.k1, low=0.0, high=10.0)
        require_number("b", self.b, low=0.0, high=1.0)

    def score(self, query: str, passages: Sequence[Passage]) -> Scores:
        terms = query_terms(query)
        if not passages or not terms:
            return Scores([0.0] * len(passages), 0.0, "bm25", "the query has no content words")
        raw = bm25(terms, [p.text for p in passages], self.k1, self.b)
        best = max(raw)
        values = [r / best for r in raw] if best > 0 else raw
        return Scores(values, 0.0, "bm25")


def bm25(terms: Sequence[str], texts: Sequence[str], k1: float, b: float) -> list[float]:
    """Okapi BM25 of ``terms`` (distinct content words) against each text, with document
    frequencies and the average length (in characters) taken from ``texts`` themselves."""
    if not texts:
        return []
    needles = [f" {term} " for term in terms]
    # Doubling the spaces keeps adjacent words from sharing the space a match consumes.
    padded = ["  " + phrase_key(text).replace(" ", "  ") + "  " for text in texts]
    frequencies = [[text.count(needle) for needle in needles] for text in padded]
    lengths = [len(text) for text in texts]
    average = (sum(lengths) / len(lengths)) or 1.0
    count = len(texts)
    idf = []
    for column in range(len(terms)):
        df = sum(1 for row in frequencies if row[column])
        idf.append(math.log(1.0 + (count - df + 0.5) / (df + 0.5)))
    raw = []
    for row, length in zip(frequencies, lengths, strict=True):
        norm = k1 * (1.0 - b + b * length / average)
        raw.append(sum(w * tf * (k1 + 1.0) / (tf + norm) for w, tf in zip(idf, row, strict=True)))
    return raw


@dataclass(frozen=True)
class AutoRelevance(Strategy):
    """Given scores when every passage has one; otherwise the ``utility`` strategy with its
    default weights (BM25 over title and text, a title the query names, authority, freshness,
    graph distance, links from relevant passages), using ``k1`` and ``b`` for BM25. The
    default. Scores are not mixed: one missing score switches the whole set to utility, since
    retriever scores and BM25 are on different scales."""

    name: ClassVar[str] = "auto"
    slot: ClassVar[str] = "relevance"
    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        BM25Relevance(self.k1, self.b)  # validates the parameters

    def score(self, query: str, passages: Sequence[Passage]) -> Scores:
        if all(p.score is not None for p in passages):
            return Scores([p.score or 0.0 for p in passages], None, "given")
        # By name, through the registry: utility builds on this module's BM25, so importing it
        # here would make the two modules import each other.
        from ctxasm.registry import build

        params = {"name": "utility", "w_score": 0.0, "k1": self.k1, "b": self.b}
        utility: RelevanceStrategy = build("relevance", params, "strategy.relevance")
        return utility.score(query, passages)


def rank(
    query: str,
    readable: Sequence[tuple[int, Passage]],
    strategy: RelevanceStrategy,
    *,
    min_score: float | None,
    top_k: int | None,
) -> tuple[list[Candidate], list[Exclusion]]:
    """Candidates ranked best first (ties in request order), and what the cuts excluded."""
    excluded: list[Exclusion] = []
    live: list[tuple[int, Passage]] = []
    for index, passage in readable:
        text = passage.text
        if text and not text.isspace():
            live.append((index, passage))
        else:
            excluded.append(Exclusion(passage.id, STAGE, Reason.EMPTY, "text is empty"))
    scores = strategy.score(query, [p for _, p in live])
    # Candidates are built in request order and the sort is stable, so equal scores keep it.
    ranked = sorted(
        [
            Candidate(p, i, s, p.text, p.start, p.end)
            for (i, p), s in zip(live, scores.values, strict=True)
        ],
        key=attrgetter("score"),
        reverse=True,
    )
    kept: list[Candidate] = []
    relevant = 0  # rank among the candidates that passed the thresholds
    for candidate in ranked:
        if scores.floor is not None and candidate.score <= scores.floor:
            detail = f"{scores.method} score {candidate.score:.4g}: {scores.why_irrelevant}"
        elif min_score is not None and candidate.score < min_score:
            detail = f"{scores.method} score {candidate.score:.4g} < min_score {min_score:g}"
        elif top_k is not None and len(kept) >= top_k:
            relevant += 1
            detail = f"rank {relevant} > top_k {top_k}"
            excluded.append(Exclusion(candidate.id, STAGE, Reason.TOP_K, detail))
            continue
        else:
            relevant += 1
            kept.append(candidate)
            continue
        excluded.append(Exclusion(candidate.id, STAGE, Reason.BELOW_THRESHOLD, detail))
    return kept, excluded
