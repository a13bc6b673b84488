"""Running strategies over a dataset at several budgets, through the real assembler.

Every question becomes an ordinary request (question, passages with id, title and text, and a
score only where :func:`~ctxasm.evaluation.attach_scores` gave one; ``max_context_tokens`` = the
budget) and goes through :meth:`Assembler.assemble`, so
what is measured is the pipeline users run, with the model's real tokenizer. Token caches are
cleared before each strategy and budget, so times include tokenization.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean, median
from typing import Any

from ctxasm import clear_caches
from ctxasm.assembler import Assembler
from ctxasm.config import AssemblerConfig
from ctxasm.errors import BudgetError, RequestError
from ctxasm.evaluation.dataset import EvalQuestion
from ctxasm.evaluation.metrics import QuestionScore, score_question
from ctxasm.evaluation.strategies import EvalStrategy
from ctxasm.tokens import get_counter
from ctxasm.validation import MAX_INTEGER, as_whole

__all__ = ["EvalRow", "evaluate"]


@dataclass(frozen=True, slots=True)
class EvalRow:
    """The metrics of one strategy at one budget (rates in 0..1; ``None`` where no question
    of the dataset has what the metric needs). ``n`` questions were run; the gold metrics are
    over the ``n_gold`` of them whose gold passages are all among the candidates."""

    strategy: str
    budget: int
    answer_recall: float | None
    gold_recall: float | None
    all_gold: float | None
    sentence_recall: float | None
    tokens: float
    dup_tokens: float
    density: float
    ms_per_question: float
    n: int
    n_gold: int = 0
    by_type: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    ms_median: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "answer_recall": self.answer_recall,
            "gold_recall": self.gold_recall,
            "all_gold": self.all_gold,
            "sentence_recall": self.sentence_recall,
            "tokens": self.tokens,
            "dup_tokens": self.dup_tokens,
            "density": self.density,
            "ms_per_question": self.ms_per_question,
            "ms_median": self.ms_median,
            "n": self.n,
            "n_gold": self.n_gold,
            "by_type": {k: dict(v) for k, v in self.by_type.items()},
        }


def _mean(values: Sequence[float | bool | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return round(fmean(known), 4) if known else None


def _summary(scores: Sequence[QuestionScore]) -> dict[str, float | None]:
    return {
        "answer_recall": _mean([s.answer for s in scores]),
        "gold_recall": _mean([s.gold_share for s in scores]),
        "all_gold": _mean([s.all_gold for s in scores]),
        "sentence_recall": _mean([s.sentence_recall for s in scores]),
        "n": len(scores),
        "n_gold": sum(1 for s in scores if s.all_gold is not None),
    }


def _row(name: str, budget: int, scores: Sequence[QuestionScore]) -> EvalRow:
    tokens = sum(s.tokens for s in scores)
    summary = _summary(scores)
    types = sorted({s.type for s in scores})
    return EvalRow(
        strategy=name,
        budget=budget,
        answer_recall=summary["answer_recall"],
        gold_recall=summary["gold_recall"],
        all_gold=summary["all_gold"],
        sentence_recall=summary["sentence_recall"],
        tokens=round(tokens / len(scores), 1),
        dup_tokens=round(sum(s.dup_tokens for s in scores) / len(scores), 1),
        # Gold passages kept per 1,000 context tokens: evidence per token.
        density=round(1000 * sum(s.gold_kept for s in scores) / tokens, 3) if tokens else 0.0,
        ms_per_question=round(fmean(s.ms for s in scores), 3),
        ms_median=round(median(s.ms for s in scores), 3),
        n=len(scores),
        n_gold=sum(1 for s in scores if s.all_gold is not None),
        by_type=(
            {t: _summary([s for s in scores if s.type == t]) for t in types}
            if len(types) > 1
            else {}
        ),
    )


def _request(question: EvalQuestion, strategy: EvalStrategy, budget: int) -> dict[str, Any]:
    passages = [p.request_passage() for p in question.passages]
    if strategy.oracle:
        for passage, source in zip(passages, question.passages, strict=True):
            passage["score"] = 1.0 if source.is_gold else 0.0
    request: dict[str, Any] = {
        "query": question.question,
        "passages": passages,
        "max_context_tokens": budget,
    }
    if strategy.strategy is not None:
        request["strategy"] = dict(strategy.strategy)
    return request


def evaluate(
    questions: Sequence[EvalQuestion],
    strategies: Sequence[EvalStrategy],
    budgets: Sequence[int],
    *,
    model: str = "gpt-4o",
    config: AssemblerConfig | Mapping[str, Any] | str | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[EvalRow]:
    """One row per strategy and budget, in that order. ``progress`` is called with the number
    of questions just finished."""
    checked = [as_whole(b) for b in budgets]
    if not checked or any(b is None or not 1 <= b <= MAX_INTEGER for b in checked):
        raise RequestError("budgets must be token counts from 1 to 2**53", field="budget")
    budgets = [b for b in checked if b is not None]  # plain ints (numpy's arange gives int64)
    assembler = Assembler(config)
    counter = get_counter(assembler.config.models.get(model).tokenizer)
    positions = {id(q): i for i, q in enumerate(questions)}

    def run(question: EvalQuestion, strategy: EvalStrategy, budget: int) -> Any:
        request = _request(question, strategy, budget)
        request["model"] = model
        try:
            return assembler.assemble(request)
        except (RequestError, BudgetError) as error:
            where = f"question {positions[id(question)] + 1} (id {question.id!r})"
            raise RequestError(f"{where}: {error.message}", field=error.field) from None

    if questions and strategies:
        # One untimed assembly first, after loading what the default strategies load on first
        # use: loading the tokenizer or a dictionary is not per-question time.
        assembler.warm_up()
        run(questions[0], strategies[0], budgets[0])
    rows = []
    for strategy in strategies:
        for budget in budgets:
            counter.clear()
            clear_caches()
            scores = []
            for question in questions:
                started = time.perf_counter()
                result = run(question, strategy, budget)
                ms = (time.perf_counter() - started) * 1000
                scores.append(score_question(question, result, ms))
                if progress is not None:
                    progress(1)
            rows.append(_row(strategy.name, budget, scores))
    return rows
