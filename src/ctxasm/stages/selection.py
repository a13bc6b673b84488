"""The selection slot: which candidates go into the budget.

Every strategy receives the candidates ranked best first and a :class:`Packing` to fill; the
packing prices candidates, consults the dedup chain and records every exclusion, so a strategy
decides only the order of offers (and, for knapsack, the set).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ctxasm.data import Candidate, Chosen, Reason
from ctxasm.deadline import checkpoint
from ctxasm.lexical import words
from ctxasm.stages.relevance import unit_scaled
from ctxasm.stages.selection_packing import Offer, Packing
from ctxasm.strategy import Strategy, require_choice, require_int, require_number
from ctxasm.validation import shown

__all__ = [
    "GreedyByScoreSelection",
    "KnapsackSelection",
    "MMRSelection",
    "PrioritySelection",
    "SelectionStrategy",
    "UtilityPerTokenSelection",
    "offer_in_order",
    "scaled_scores",
]

# The most a request may ask these strategies to weigh exactly: their work grows with the
# square of the candidates (MMR's similarities) or with candidates x budget columns (the
# knapsack's table), so a parameter must not turn one request into minutes and gigabytes.
MMR_MAX_CANDIDATES = 1_000
KNAPSACK_MAX_CANDIDATES = 1_000
KNAPSACK_MAX_CELLS = 50_000
KNAPSACK_MAX_ROUNDS = 8  # solves per selection (see KnapsackSelection.select)


class SelectionStrategy(Protocol):
    name: ClassVar[str]

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        """Offer ``candidates`` (ranked best first) to ``packing`` in the strategy's order."""
        ...

    def to_config(self) -> dict[str, Any]: ...


def offer_in_order(
    candidates: Sequence[Candidate], packing: Packing, chosen: Chosen | None = None
) -> None:
    """Offer ``candidates`` in the given order (each kept one recorded as ``chosen``, when
    given); once the budget is full, exclude the rest."""
    for position, candidate in enumerate(candidates):
        if packing.full:
            packing.exclude(candidates[position:], Reason.OVER_BUDGET, "the budget is full")
            return
        packing.offer(candidate, chosen)


def scaled_scores(candidates: Sequence[Candidate]) -> list[float]:
    """Scores as values in (0, 1]: divided by the best when none is negative (ratios kept),
    else shifted and scaled; never zero, so a passage that fits is always worth taking.
    Halving before subtracting keeps scores near the float limit from overflowing."""
    scaled = unit_scaled([c.score for c in candidates])
    return [max(value, 1e-6) for value in scaled]


@dataclass(frozen=True)
class GreedyByScoreSelection(Strategy):
    """Best score first; a candidate that does not fit is skipped and smaller ones still tried.

    Prices only the candidates it reaches, so it is the fastest strategy. Use it when scores are
    good and passages are of similar length (the default).
    """

    name: ClassVar[str] = "greedy_by_score"
    slot: ClassVar[str] = "selection"

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        offer_in_order(candidates, packing)


@dataclass(frozen=True)
class PrioritySelection(Strategy):
    """Highest ``priority`` first (then score, then request order).

    ``cutoff="strict"``: once a candidate does not fit, the rest of its tier is still tried, and
    every candidate of a lower priority is excluded with ``priority_cutoff`` (a lower tier never
    jumps a higher one). ``cutoff="skip"``: skip what does not fit and keep going. Passages
    without a priority count as ``default_priority``. Use for fixed tiers (policy documents
    before tickets, ...).
    """

    name: ClassVar[str] = "priority"
    slot: ClassVar[str] = "selection"
    cutoff: str = "strict"
    default_priority: float = 0.0

    def __post_init__(self) -> None:
        require_choice("cutoff", self.cutoff, ("strict", "skip"))
        require_number("default_priority", self.default_priority)

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        def priority(c: Candidate) -> float:
            given = c.passage.priority
            return self.default_priority if given is None else given

        ordered = sorted(candidates, key=lambda c: (-priority(c), -c.score, c.request_index))
        if self.cutoff == "skip":
            offer_in_order(ordered, packing)
            return
        cutoff: float | None = None  # the tier of the first candidate that did not fit
        detail = ""
        for candidate in ordered:
            tier = priority(candidate)
            if cutoff is not None and tier < cutoff:
                packing.exclude([candidate], Reason.PRIORITY_CUTOFF, detail)
            elif packing.offer(candidate) is Offer.TOO_BIG and cutoff is None:
                cutoff = tier
                detail = f"after {candidate.id} (priority {tier:g}) did not fit"


@dataclass(frozen=True)
class UtilityPerTokenSelection(Strategy):
    """Highest score per token first, skipping what does not fit.

    Favors short, dense passages over long, diluted ones; prices every candidate. Use when
    passage lengths vary a lot.
    """

    name: ClassVar[str] = "utility_per_token"
    slot: ClassVar[str] = "selection"

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        fitting = packing.price(candidates)
        values = scaled_scores([c for c, _ in fitting])
        keyed = [
            (-value / cost, c.request_index, c)
            for value, (c, cost) in zip(values, fitting, strict=True)
        ]
        keyed.sort(key=lambda item: (item[0], item[1]))
        offer_in_order([c for _, _, c in keyed], packing)


@dataclass(frozen=True)
class KnapsackSelection(Strategy):
    """The set with the highest total score that fits: exact 0/1 knapsack by dynamic programming.

    The chosen set is offered in rank order, so dedup compares against what is really kept; if
    it turns some away, the leftover budget is solved again (at most ``KNAPSACK_MAX_ROUNDS``
    solves in all; then the rest are offered in rank order). The best ``max_candidates`` are
    solved exactly (time and memory grow with candidates x budget; the budget is coarsened to
    at most ``max_cells`` columns, rounding costs up so the result still fits); any budget left
    is then filled greedily from the rest. Use when a few hundred candidates of mixed lengths
    compete for a tight budget.
    """

    name: ClassVar[str] = "knapsack"
    slot: ClassVar[str] = "selection"
    max_candidates: int = 400
    max_cells: int = 20_000

    def __post_init__(self) -> None:
        require_int("max_candidates", self.max_candidates, low=1, high=KNAPSACK_MAX_CANDIDATES)
        require_int("max_cells", self.max_cells, low=100, high=KNAPSACK_MAX_CELLS)

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        pool, rest = candidates[: self.max_candidates], candidates[self.max_candidates :]
        fitting = packing.price(pool)
        open_ = [c for c, _ in fitting]
        values = dict(zip((c.id for c in open_), scaled_scores(open_), strict=True))
        # Solve, then offer the chosen set in rank order so dedup compares against what is
        # really kept. When dedup turned some of them away, budget is left: solve again over
        # the candidates not yet offered. Every round offers at least one candidate; past
        # KNAPSACK_MAX_ROUNDS (copies of one passage turned away round after round: 77 solves
        # for 1,000 of them), what is left is offered in rank order instead.
        for _ in range(KNAPSACK_MAX_ROUNDS):
            if not open_:
                break
            costs = [packing.meter.cost(c) for c in open_]
            chosen = self._solve([values[c.id] for c in open_], costs, packing.remaining)
            if not chosen:
                break
            redundant = False
            for index in sorted(chosen):
                outcome = packing.offer(open_[index])
                redundant = redundant or outcome in (
                    Offer.DUPLICATE,
                    Offer.MERGED,
                    Offer.REFUSED,
                    Offer.UNTOKENIZABLE,
                )
            open_ = [c for i, c in enumerate(open_) if i not in chosen]
            if not redundant:
                break
        else:
            offer_in_order(open_, packing)  # the rounds are spent: the rest by rank
            open_ = []
        packing.exclude(
            open_, Reason.OVER_BUDGET, "not in the highest-scoring set that fits the budget"
        )
        offer_in_order(rest, packing)

    def _solve(self, values: list[float], costs: list[int], capacity: int) -> set[int]:
        import numpy as np

        if capacity <= 0 or not values:
            return set()
        step = max(1, math.ceil(capacity / self.max_cells))
        width = capacity // step
        weights = [math.ceil(cost / step) for cost in costs]
        best = np.zeros(width + 1)
        taken = np.zeros((len(values), width + 1), dtype=bool)
        for item, (value, weight) in enumerate(zip(values, weights, strict=True)):
            if weight > width:
                continue
            candidate = best[: width + 1 - weight] + value
            better = candidate > best[weight:] + 1e-12
            taken[item, weight:] = better
            best[weight:] = np.where(better, candidate, best[weight:])
        chosen: set[int] = set()
        column = width
        for item in range(len(values) - 1, -1, -1):
            if taken[item, column]:
                chosen.add(item)
                column -= weights[item]
        return chosen


@dataclass(frozen=True)
class MMRSelection(Strategy):
    """Maximal marginal relevance: each pick maximises ``lam * relevance - (1 - lam) * similarity``
    to what is already picked.

    Similarity is the cosine of ``embedding`` when every candidate has one, else the cosine of
    the ``embedder``'s vectors of their texts when one is named (``"hashing"``,
    ``"sentence-transformers:/path"``, see :mod:`ctxasm.embeddings`), else word-set Jaccard.
    Relevance is the score scaled to 0..1. Considers the best ``max_candidates``, then
    fills any budget left greedily. Use when the top results say the same thing in different
    words.
    """

    name: ClassVar[str] = "mmr"
    slot: ClassVar[str] = "selection"
    lam: float = 0.7
    max_candidates: int = 200
    embedder: str | None = None

    def __post_init__(self) -> None:
        require_number("lam", self.lam, low=0.0, high=1.0)
        require_int("max_candidates", self.max_candidates, low=1, high=MMR_MAX_CANDIDATES)
        if self.embedder is not None:
            from ctxasm.embeddings import get_embedder
            from ctxasm.errors import CtxasmError
            from ctxasm.strategy import ParamError

            if not isinstance(self.embedder, str):
                got = shown(self.embedder)
                raise ParamError("embedder", f"must be an embedder spec, got {got}")
            try:
                get_embedder(self.embedder)
            except CtxasmError as exc:
                raise ParamError("embedder", exc.message) from None

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        pool, rest = list(candidates[: self.max_candidates]), candidates[self.max_candidates :]
        if pool:
            self._pick(pool, packing)
        offer_in_order(rest, packing)

    def _pick(self, pool: list[Candidate], packing: Packing) -> None:
        import numpy as np

        similarity = _similarity_matrix(pool, self.embedder)
        relevance = np.array(scaled_scores(pool))
        closest = np.zeros(len(pool))
        open_ = np.ones(len(pool), dtype=bool)
        while open_.any():
            gain = self.lam * relevance - (1.0 - self.lam) * closest
            gain[~open_] = -np.inf
            pick = int(np.argmax(gain))  # argmax takes the first maximum: the better rank
            open_[pick] = False
            if packing.offer(pool[pick]) in (Offer.ADDED, Offer.MERGED):
                closest = np.maximum(closest, similarity[pick])


def _similarity_matrix(pool: Sequence[Candidate], embedder: str | None = None) -> Any:
    import numpy as np

    embeddings = [c.passage.embedding for c in pool]
    if all(e is not None for e in embeddings) and len({len(e or ()) for e in embeddings}) == 1:
        from ctxasm.embeddings import unit_rows

        unit = unit_rows(np.array(embeddings, dtype=float))
        return np.clip(unit @ unit.T, -1.0, 1.0)
    if embedder is not None:
        from ctxasm.embeddings import get_embedder

        unit = np.asarray(get_embedder(embedder).embed([c.text for c in pool]), dtype=float)
        return np.clip(unit @ unit.T, -1.0, 1.0)
    sets = [set(words(c.text)) for c in pool]
    size = len(sets)
    result = np.zeros((size, size))
    for i in range(size):
        checkpoint()
        for j in range(i, size):
            union = len(sets[i] | sets[j])
            value = len(sets[i] & sets[j]) / union if union else 0.0
            result[i, j] = result[j, i] = value
    return result


GreedyByScore = GreedyByScoreSelection  # former name, kept importable
UtilityPerToken = UtilityPerTokenSelection  # former name, kept importable
