"""The hard subset: bridge questions among distractors chosen to look relevant.

Built from full-wiki style data (each question's candidates are what a retriever found), by a
fixed recipe, so anyone with the same file rebuilds the same subset:

1. Keep ``bridge`` questions whose gold passages are all among the candidates.
2. Keep those with a *bridge entity*: a gold passage whose title the question does not name
   (its :func:`~ctxasm.lexical.title_key`, a trailing "(qualifier)" removed, is not a phrase of
   the question). The second hop must be found through the first, not through the question.
3. Pad the candidates to ``candidates`` with distractors of *other* questions (passages the
   retriever found for them that are not their gold), one per title and no title the
   question's own candidates have, preferring those that share the most of the question's
   content words (:func:`~ctxasm.lexical.query_terms`; ties in a seeded order).
4. Shuffle the candidates in a seeded order, so position carries no signal.

A padded passage's ``has_answer`` is computed as the data defines it: the answer, normalised
(lower case, punctuation and the articles a, an, the removed), occurs in the normalised text as
whole words; ``null`` for questions whose own labels are all ``null`` (yes/no answers).
Distractors are found through an index from content word to passages, built once, so the
build is linear in the data plus the postings of each question's words.
"""

from __future__ import annotations

import html
import random
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

import xxhash

from ctxasm.errors import RequestError
from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion
from ctxasm.lexical import phrase_key, query_terms, title_key

__all__ = ["SUBSETS", "answer_key", "bridge_titles", "hard_subset", "has_answer"]

SUBSETS = ("hard", "composed", "comention")  # ctxasm.evaluation.composed, .comention

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def answer_key(text: str) -> str:
    """``text`` normalised as the data's ``has_answer`` labels are: lower case, punctuation
    deleted, the articles a, an and the removed, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def has_answer(text: str, answers: Sequence[str]) -> bool:
    """Whether ``text`` contains one of ``answers`` as the data's labels define it: as whole
    words once both are normalised (see :func:`answer_key`)."""
    padded = f" {answer_key(text)} "
    return any(key and f" {key} " in padded for key in map(answer_key, answers))


def bridge_titles(question: EvalQuestion) -> list[str]:
    """The titles of ``question``'s gold passages that the question does not name (HTML
    entities in titles, as in "Richard Hornsby &amp; Sons", read as the characters they are)."""
    asked = f" {phrase_key(question.question)} "
    named = (html.unescape(p.title) for p in question.passages if p.is_gold)
    return [title for title in named if f" {title_key(title) or phrase_key(title)} " not in asked]


class _Distractors:
    """Every question's non-gold passages, one per title, indexed by content word."""

    def __init__(self, questions: Iterable[EvalQuestion]) -> None:
        self.passages: list[tuple[str, EvalPassage]] = []  # (question id, passage)
        self.postings: dict[str, list[int]] = {}
        titles: set[str] = set()
        for question in questions:
            for passage in question.passages:
                if passage.is_gold or passage.title in titles:
                    continue
                titles.add(passage.title)
                index = len(self.passages)
                self.passages.append((question.id, passage))
                for word in query_terms(f"{passage.title} {passage.text}"):
                    self.postings.setdefault(word, []).append(index)

    def best(self, question: EvalQuestion, count: int, seed: int) -> list[EvalPassage]:
        """The ``count`` distractors of other questions sharing the most of ``question``'s
        content words, none with a title or pid among its candidates."""
        shared: Counter[int] = Counter()
        for word in query_terms(question.question):
            shared.update(self.postings.get(word, ()))
        taken = {p.title for p in question.passages}
        eligible = [
            index
            for index in shared
            if self.passages[index][0] != question.id and self.passages[index][1].title not in taken
        ]
        salt = f"{seed}:{question.id}:"
        eligible.sort(
            key=lambda i: (
                -shared[i],
                xxhash.xxh64_intdigest((salt + self.passages[i][1].pid).encode()),
            )
        )
        # pids must stay unique within the question (datasets may number them per question)
        used = {p.pid for p in question.passages}
        chosen: list[EvalPassage] = []
        for index in eligible:
            passage = self.passages[index][1]
            if len(chosen) == count:
                break
            if passage.pid not in used:
                used.add(passage.pid)
                chosen.append(passage)
        return chosen


def _padded(question: EvalQuestion, extra: Sequence[EvalPassage], seed: int) -> EvalQuestion:
    labelled = any(p.has_answer is not None for p in question.passages)
    padding = [
        EvalPassage(
            pid=p.pid,
            title=p.title,
            text=p.text,
            is_gold=False,
            has_answer=has_answer(p.text, question.answers) if labelled else None,
            sentences=p.sentences,
        )
        for p in extra
    ]
    passages = [*question.passages, *padding]
    random.Random(f"hard:{seed}:{question.id}").shuffle(passages)
    return replace(question, passages=tuple(passages))


def hard_subset(
    questions: Sequence[EvalQuestion], *, candidates: int = 20, seed: int = 0
) -> list[EvalQuestion]:
    """The hard subset of full-wiki style ``questions`` (see the module docstring), in their
    order, each with ``candidates`` candidates (fewer only if too few distractors share a
    word with it). The same input, ``candidates`` and ``seed`` give the same subset."""
    if candidates < 1:
        raise RequestError(
            f"candidates must be a positive count, got {candidates}", field="candidates"
        )
    chosen = [
        q
        for q in questions
        if q.type == "bridge" and q.all_gold_in_candidates and q.gold_pids and bridge_titles(q)
    ]
    if not chosen:
        raise RequestError(
            "the hard subset needs full-wiki style data: bridge questions (meta.type "
            "'bridge') whose gold passages are all among the candidates and whose question "
            "does not name a gold passage's title; this dataset has none",
            field="subset",
        )
    distractors = _Distractors(questions)
    return [
        _padded(q, distractors.best(q, max(0, candidates - len(q.passages)), seed), seed)
        for q in chosen
    ]
