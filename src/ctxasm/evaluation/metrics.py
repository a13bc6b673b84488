"""What one assembly kept of a question's evidence.

A gold passage counts as included when its text is in the prompt whole, or, compressed, when
every one of its supporting sentences is (datasets without sentence labels: when an answer
string is). Evidence is found by content, wherever it ended up: a gold window stitched into
another passage, or a gold passage whose exact copy was kept instead, still counts. An answer
counts when a passage labelled as containing it is in the prompt whole, or its kept text still
contains an answer string. Texts are compared as phrase keys (lower-case words), so spacing
and punctuation differences between a dataset's sentence split and its text do not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxasm.data import Assembly, Candidate
from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion
from ctxasm.lexical import phrase_key
from ctxasm.stages.dedup_near import NearDuplicateDedup, shingles

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


class _Prompt:
    """The passages as rendered, searchable by content: evidence counts wherever it ended up
    (a gold window stitched into another, a gold passage whose exact copy was kept instead)."""

    def __init__(self, passages: Sequence[Candidate]) -> None:
        self.texts = [c.text for c in passages]
        self.keys = [f" {phrase_key(c.text)} " for c in passages]

    def whole(self, text: str) -> bool:
        key = f" {phrase_key(text)} "
        return any(text in t for t in self.texts) or any(key in k for k in self.keys)

    def sentence(self, sentence: str) -> bool:
        return any(_contains(key, sentence) for key in self.keys)

    def answer(self, answers: Sequence[str]) -> bool:
        return any(_contains(key, a) for key in self.keys for a in answers)


def _evidence_kept(passage: EvalPassage, prompt: _Prompt, answers: Sequence[str]) -> bool:
    """Whether the prompt keeps ``passage``'s evidence: the passage whole, or every supporting
    sentence of it (without sentence labels: an answer, if the passage has one)."""
    if prompt.whole(passage.text):
        return True
    if passage.supporting:
        return all(prompt.sentence(s) for s in passage.supporting)
    return bool(passage.has_answer) and prompt.answer(answers)


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
    prompt = _Prompt(assembly.passages)
    answerable = [p for p in question.passages if p.has_answer is not None]
    rendered = {c.id: f" {phrase_key(c.text)} " for c in assembly.passages}
    answer = None
    if answerable:
        # a passage labelled as containing the answer is in the prompt whole, or its kept
        # (compressed) text still contains an answer string
        answer = any(
            p.has_answer
            and (
                prompt.whole(p.text)
                or (
                    p.pid in rendered
                    and any(_contains(rendered[p.pid], a) for a in question.answers)
                )
            )
            for p in answerable
        )
    gold = [p for p in question.passages if p.is_gold]
    kept = {p.pid for p in gold if _evidence_kept(p, prompt, question.answers)}
    gold_share = all_gold = sentence_recall = None
    if question.all_gold_in_candidates and question.gold_pids:
        gold_share = sum(1 for pid in question.gold_pids if pid in kept) / len(question.gold_pids)
        all_gold = gold_share == 1.0
        labelled = [p for p in gold if p.supporting]
        if labelled:
            total = sum(len(p.supporting) for p in labelled)
            found = sum(1 for p in labelled for s in p.supporting if prompt.sentence(s))
            sentence_recall = found / total
    return QuestionScore(
        type=question.type,
        answer=answer,
        gold_share=gold_share,
        all_gold=all_gold,
        sentence_recall=sentence_recall,
        gold_kept=len(kept),
        tokens=assembly.report.context_tokens,
        dup_tokens=_dup_tokens(assembly),
        ms=ms,
    )
