"""The relevance slot: a score for every candidate, then the threshold and top-k cuts.

Strategies only score; :func:`rank` applies the cuts that are the same for all of them.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import ClassVar, Protocol

from ctxasm.data import Candidate, Exclusion, Passage, Reason
from ctxasm.lexical import query_terms, term_counts_all
from ctxasm.strategy import Strategy, require_number
from ctxasm.validation import shown

__all__ = [
    "MIN_AGREEMENT",
    "STAGE",
    "AutoRelevance",
    "BM25Relevance",
    "GivenScoreRelevance",
    "RelevanceStrategy",
    "Scores",
    "bm25",
    "rank",
    "rank_agreement",
    "unit_scaled",
]

STAGE = "relevance"
# The fewest passages whose scores' agreement with the query's words is worth measuring: a
# rank correlation over fewer is mostly chance (at 7, two lists drawn at random agree by 0.71
# or more one time in twenty), and a retriever's or reranker's few best, scored for meaning,
# often share few words with the query ("penned" for "wrote"): its order is the better guide.
MIN_AGREEMENT = 8
# Below that many, scores this far against the query's words are taken to run the wrong way
# (distances given as scores, lower the better) rather than to disagree by chance.
_REVERSED = -0.6
# Under this many, no agreement is measured at all (over 3 or 4 passages a rank correlation
# takes a handful of values, -1 among them by chance).
_MIN_REVERSAL = 5


@dataclass(frozen=True, slots=True)
class Scores:
    """One score per passage; ``floor`` is the score at or below which a passage is irrelevant
    (``None``: no such floor, for scores whose scale ctxasm does not know)."""

    values: list[float]
    floor: float | None
    method: str
    why_irrelevant: str = "no query term in the text"
    note: str = ""
    # The BM25 part of each value (scaled so the best is 1), where the strategy has one.
    lexical: list[float] | None = None
    # What orders passages of equal value (the given scores, where they were not trusted:
    # nothing else tells apart the passages that share no word with the query).
    tiebreak: list[float] | None = None
    # What ``min_score`` is compared with, where not ``values``: the caller's own scores, which
    # it was set against, wherever every passage has one (not a scale ctxasm chose).
    cut_by: list[float] | None = None


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
    frequencies = term_counts_all(terms, texts)
    lengths = [len(text) for text in texts]
    average = (sum(lengths) / len(lengths)) or 1.0
    count = len(texts)
    if count >= _VECTOR_TEXTS and "numpy" in sys.modules:
        return _bm25_vector(frequencies, lengths, len(terms), k1, b, average)
    # a term's document frequency: the texts whose counts for it are not 0
    idf = _idf([count - column.count(0) for column in zip(*frequencies, strict=True)], count)
    raw = []
    saturation = k1 + 1.0
    for row, length in zip(frequencies, lengths, strict=True):
        # Terms a text lacks add nothing (a float plus 0.0 is itself), so they are left out,
        # and a text with none of them scores 0.0 (often most texts: no sum to set up).
        if not any(row):
            raw.append(0.0)
            continue
        norm = k1 * (1.0 - b + b * length / average)
        raw.append(
            sum(
                # the terms it has, picked at C speed (a long query's are mostly absent)
                (
                    w * tf * saturation / (tf + norm)
                    for w, tf in compress(zip(idf, row, strict=True), row)
                ),
                0.0,
            )
        )
    return raw


# From this many texts BM25 is summed with numpy: the same operations in the same order, so
# the same floats, without a Python step per text and term. Only where numpy is loaded already
# (a service, a batch, large dedup): importing it takes longer than it saves in one request.
_VECTOR_TEXTS = 128


def _idf(document_frequencies: Sequence[int], count: int) -> list[float]:
    """BM25's inverse document frequency of terms found in ``document_frequencies`` of
    ``count`` texts."""
    return [math.log(1.0 + (count - df + 0.5) / (df + 0.5)) for df in document_frequencies]


def _bm25_vector(
    frequencies: Sequence[Sequence[int]],
    lengths: Sequence[int],
    width: int,
    k1: float,
    b: float,
    average: float,
) -> list[float]:
    import numpy as np

    counts = np.array(frequencies, dtype=np.float64).reshape(len(lengths), width)
    idf = _idf(np.count_nonzero(counts, axis=0).tolist(), len(lengths))
    norm = k1 * (1.0 - b + b * np.array(lengths, dtype=np.float64) / average)
    raw = np.zeros(len(lengths))
    for column, w in enumerate(idf):
        tf = counts[:, column]
        present = tf > 0
        # Where the term is missing nothing is added (0/0 when k1 is 0 is never computed).
        raw += np.divide(w * tf * (k1 + 1.0), tf + norm, out=np.zeros_like(tf), where=present)
    values: list[float] = raw.tolist()
    return values


@dataclass(frozen=True)
class AutoRelevance(Strategy):
    """The default: the ``utility`` strategy (BM25 over title and text, a title the query
    names, authority, freshness, graph distance, links from relevant passages), with the
    retriever's scores added in proportion to how much they agree with it.

    When every passage has a score, their agreement with the utility of the same passages is
    measured (Spearman's rank correlation, over at most ``sample`` of them: the best by score
    and an even spread of the rest). Scores that agree (a BM25, dense or reranker score of the
    same query) are trusted: the scaled score takes the place of BM25 in the utility for a
    share ``min(1, w_score * trust)``, and no passage is dropped as irrelevant, since the
    retriever judged them. Scores that merely repeat the query's words then change little,
    and informative ones move the ranking. Scores
    that do not agree (random, or distances where lower is better) get no weight, and the
    passages are ranked as if no scores had been given. With a missing score the scores are
    not used (they would not be comparable). Beyond ``sample`` passages the trusted scores
    rank alone, as the retriever's order, and the planners combine them with their own
    evidence on the best ``max_candidates``."""

    name: ClassVar[str] = "auto"
    slot: ClassVar[str] = "relevance"
    k1: float = 1.2
    b: float = 0.75
    w_score: float = 0.6
    sample: int = 64

    def __post_init__(self) -> None:
        BM25Relevance(self.k1, self.b)  # validates the parameters
        require_number("w_score", self.w_score, low=0.0, high=100.0)
        if isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 8:
            from ctxasm.strategy import ParamError

            got = shown(self.sample)
            raise ParamError("sample", f"must be an integer of at least 8, got {got}")

    def score(self, query: str, passages: Sequence[Passage]) -> Scores:
        utility = self._utility()
        if not passages or any(p.score is None for p in passages):
            return utility.score(query, passages)
        given = [p.score or 0.0 for p in passages]
        if len(given) > 1 and len(set(given)) < 2:  # all equal: they tell nothing apart
            ranked = utility.score(query, passages)
            note = "given scores ignored: they are all equal"
            return Scores(ranked.values, None, "utility", ranked.why_irrelevant, note, cut_by=given)
        sampled = _sample(given, self.sample)
        whole = len(sampled) == len(passages)
        own = utility.score(query, passages if whole else [passages[i] for i in sampled])
        if len(sampled) < _MIN_REVERSAL or len(set(own.values)) < 2:
            # Too few to compare at all, or the query's words tell none apart: the retriever's
            # order is all there is to go by.
            return Scores(given, None, "given", note="given scores used: nothing to check them by")
        agreement = rank_agreement([given[i] for i in sampled], own.values)
        trust = max(0.0, agreement)
        if len(sampled) < MIN_AGREEMENT and agreement > _REVERSED:
            # Too few passages for their agreement to mean more than chance: the retriever's
            # order leads, unless it runs clearly against the query's words (distances given
            # as scores, lower the better).
            return Scores(given, None, "given", note="given scores used: nothing to check them by")
        if trust == 0.0:
            ranked = own if whole else utility.score(query, passages)
            # Ranked by utility, but nothing is dropped: the retriever did judge them relevant.
            return Scores(
                ranked.values,
                None,
                "utility",
                ranked.why_irrelevant,
                f"given scores ignored: they do not agree with the query's words ({trust:.2f})",
                tiebreak=given,
                cut_by=given,
            )
        if not whole:
            return Scores(given, None, "given", note=f"given scores trusted {trust:.2f}")
        # The given score stands in for BM25, in proportion to the trust: scores that only
        # repeat the query's words change little, informative ones move the ranking.
        share = min(1.0, self.w_score * trust)
        lexical = own.lexical or [0.0] * len(passages)
        values = [
            u + share * (g - lex) if u > 0 else share * g
            for u, g, lex in zip(own.values, unit_scaled(given), lexical, strict=True)
        ]
        note = f"given scores trusted {trust:.2f}"
        return Scores(values, None, "utility+given", note=note, cut_by=given)

    def _utility(self, w_score: float = 0.0, w_lexical: float = 1.0) -> RelevanceStrategy:
        # By name, through the registry: utility builds on this module's BM25, so importing it
        # here would make the two modules import each other.
        from ctxasm.registry import build

        params = {
            "name": "utility",
            "w_score": w_score,
            "w_lexical": w_lexical,
            "k1": self.k1,
            "b": self.b,
        }
        utility: RelevanceStrategy = build("relevance", params, "strategy.relevance")
        return utility


def unit_scaled(values: Sequence[float]) -> list[float]:
    """``values`` in 0..1: divided by the best when none is negative (ratios kept, as BM25 is
    scaled), else shifted and scaled (all 1 when they are equal). Halving before subtracting
    keeps values near the float limit from overflowing."""
    if not values:
        return []
    low, high = min(values), max(values)
    if low >= 0:
        return [v / high for v in values] if high > 0 else [0.0] * len(values)
    span = high / 2 - low / 2
    return [(v / 2 - low / 2) / span for v in values] if span > 0 else [1.0] * len(values)


def _sample(values: Sequence[float], size: int) -> list[int]:
    """Indexes of at most ``size`` values: the best half by value, then an even spread of the
    rest (deterministic)."""
    if len(values) <= size:
        return list(range(len(values)))
    order = sorted(range(len(values)), key=lambda i: -values[i])
    head, rest = order[: size // 2], order[size // 2 :]
    step = len(rest) / (size - len(head))
    return head + [rest[int(k * step)] for k in range(size - len(head))]


def rank_agreement(first: Sequence[float], second: Sequence[float]) -> float:
    """Spearman's rank correlation of two score lists (ties share their mean rank); 0 when
    either is constant or there are fewer than three."""
    if len(first) < 3:
        return 0.0
    a, b = _ranks(first), _ranks(second)
    mean = (len(a) + 1) / 2
    cov = sum((x - mean) * (y - mean) for x, y in zip(a, b, strict=True))
    var_a = sum((x - mean) ** 2 for x in a)
    var_b = sum((y - mean) ** 2 for y in b)
    if var_a == 0 or var_b == 0:
        return 0.0
    return cov / math.sqrt(var_a * var_b)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def rank(
    query: str,
    readable: Sequence[tuple[int, Passage]],
    strategy: RelevanceStrategy,
    *,
    min_score: float | None,
    top_k: int | None,
    keep: frozenset[str] = frozenset(),
) -> tuple[list[Candidate], list[Exclusion], Scores]:
    """Candidates ranked best first (ties in request order), and what the cuts excluded.

    Passages whose id is in ``keep`` are exempt from the relevance strategy's score floor (the
    previous turn's sources, when planning for the prompt cache); ``min_score``, a limit the
    caller or the operator chose, and ``top_k`` apply to every passage."""
    excluded: list[Exclusion] = []
    live: list[tuple[int, Passage]] = []
    for index, passage in readable:
        text = passage.text
        if text and not text.isspace():
            live.append((index, passage))
        else:
            excluded.append(Exclusion(passage.id, STAGE, Reason.EMPTY, "text is empty"))
    scores = strategy.score(query, [p for _, p in live])
    # Candidates are built in request order and the sort is stable, so equal scores keep it
    # (after the strategy's tie-break, where it has one).
    built = [
        Candidate(p, i, s, p.text, p.start, p.end)
        for (i, p), s in zip(live, scores.values, strict=True)
    ]
    if scores.tiebreak is None:
        ranked = sorted(built, key=attrgetter("score"), reverse=True)
    else:
        pairs = sorted(
            zip(built, scores.tiebreak, strict=True), key=lambda p: (p[0].score, p[1]), reverse=True
        )
        ranked = [candidate for candidate, _ in pairs]
    # min_score compares the caller's scores where every passage has one (see Scores.cut_by)
    cut_by = scores.cut_by
    cut = {c.request_index: v for c, v in zip(built, cut_by, strict=True)} if cut_by else {}
    cut_name = "given" if cut else scores.method
    kept: list[Candidate] = []
    relevant = 0  # rank among the candidates that passed the thresholds
    for candidate in ranked:
        judged = candidate.id not in keep
        if judged and scores.floor is not None and candidate.score <= scores.floor:
            detail = f"{scores.method} score {candidate.score:.4g}: {scores.why_irrelevant}"
        elif (
            min_score is not None
            and (value := cut.get(candidate.request_index, candidate.score)) < min_score
        ):
            detail = f"{cut_name} score {value:.4g} < min_score {min_score:g}"
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
    return kept, excluded, scores
