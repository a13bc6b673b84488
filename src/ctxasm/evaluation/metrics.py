"""What one assembly kept of a question's evidence.

A gold passage counts as included when it is in the prompt whole, or, compressed, when every
one of its supporting sentences survived (datasets without sentence labels: when its kept text
still contains an answer). Texts are compared as phrase keys (lower-case words), so spacing
and punctuation differences between a dataset's sentence split and its text do not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion
from ctxasm.lexical import phrase_key
from ctxasm.model import Assembly, Candidate
from ctxasm.stages.dedup import NearDuplicateDedup, shingles

__all__ = ["QuestionScore", "score_question"]

# Near-duplicates are judged like the default `near` dedup strategy judges them.
_NEAR = NearDuplicateDedup()


@dataclass(frozen=True, slots=True)
class QuestionScore:
    """One question at one budget; ``None`` where the metric does not apply to it."""

    type: str
    answer: bool | None
    gold_share: float | None
    all_gold: bool | None
    sentence_recall: float | None
    gold_kept: int
    tokens: int
    dup_tokens: int
    ms: float


def _contains(haystack: str, needle: str) -> bool:
    key = phrase_key(needle)
    return bool(key) and f" {key} " in haystack


def _kept(passage: EvalPassage, candidate: Candidate, answers: Sequence[str]) -> bool:
    """Whether ``candidate`` (the rendered version of ``passage``) keeps its evidence."""
    if passage.text in candidate.text:
        return True
    kept = f" {phrase_key(candidate.text)} "
    if passage.supporting:
        return all(_contains(kept, sentence) for sentence in passage.supporting)
    return any(_contains(kept, answer) for answer in answers)


def _dup_tokens(assembly: Assembly) -> int:
    """Tokens of included passages that are near-duplicates of a higher-scoring included one."""
    included = {item.id: item.tokens for item in assembly.report.included}
    by_score = sorted(assembly.passages, key=lambda c: (-c.score, c.request_index))
    seen: list[frozenset[int]] = []
    total = 0
    for candidate in by_score:
        own = shingles(candidate.text, _NEAR.shingle_size)
        for earlier in seen:
            shared = len(own & earlier)
            union = len(own | earlier)
            jaccard = shared / union if union else 1.0
            contained = shared / len(own) if own else 1.0
            if jaccard >= _NEAR.threshold or contained >= _NEAR.containment:
                total += included.get(candidate.id, 0)
                break
        seen.append(own)
    return total


def score_question(question: EvalQuestion, assembly: Assembly, ms: float) -> QuestionScore:
    """The metrics of ``question`` given what ``assembly`` put in the prompt."""
    rendered = {c.id: c for c in assembly.passages}
    kept = {
        p.pid
        for p in question.passages
        if p.pid in rendered and _kept(p, rendered[p.pid], question.answers)
    }
    answerable = [p for p in question.passages if p.has_answer is not None]
    answer = any(p.has_answer and p.pid in kept for p in answerable) if answerable else None
    gold = [p for p in question.passages if p.is_gold]
    gold_kept = sum(1 for p in gold if p.pid in kept)
    gold_share = all_gold = sentence_recall = None
    if question.all_gold_in_candidates and question.gold_pids:
        gold_share = sum(1 for pid in question.gold_pids if pid in kept) / len(question.gold_pids)
        all_gold = gold_share == 1.0
        labelled = [p for p in gold if p.supporting]
        if labelled:
            total = sum(len(p.supporting) for p in labelled)
            found = 0
            for passage in labelled:
                candidate = rendered.get(passage.pid)
                if candidate is None:
                    continue
                text = f" {phrase_key(candidate.text)} "
                found += sum(1 for s in passage.supporting if _contains(text, s))
            sentence_recall = found / total
    return QuestionScore(
        type=question.type,
        answer=answer,
        gold_share=gold_share,
        all_gold=all_gold,
        sentence_recall=sentence_recall,
        gold_kept=gold_kept,
        tokens=assembly.report.context_tokens,
        dup_tokens=_dup_tokens(assembly),
        ms=ms,
    )
