"""Retriever scores attached to evaluation data, to measure how far the assembler trusts them.

The evaluation data carries no scores. :func:`attach_scores` gives every candidate one, of a
known quality, before assembly; the default strategy then sees given scores, as it would behind
a retriever:

* ``bm25``: Okapi BM25 of the question over the passage's title and text, statistics over the
  question's own candidates, scaled so the best is 1 (the ``bm25`` relevance strategy's scores).
* ``dense``: the cosine similarity of question and passage (title and text) embeddings from an
  embedder spec (:func:`~ctxasm.embeddings.get_embedder`; ``hashing`` sees shared wording, not
  paraphrase; a local sentence-transformers model sees meaning).
* ``noisy-oracle``: informative but imperfect: gold passages draw from N(0.7, 0.2), the others
  from N(0.4, 0.2), clipped to 0..1 (:data:`NOISY_ORACLE`).
* ``random``: uniform in 0..1, no signal: the control that ignoring scores should match.

Random draws are seeded per question by an xxhash of the seed and the question id, so scores
are the same in every run and process, whatever ``PYTHONHASHSEED`` is, and do not depend on
which other questions are evaluated.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace

import xxhash

from ctxasm.data import Passage
from ctxasm.embeddings import get_embedder
from ctxasm.errors import ConfigError, RequestError
from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion
from ctxasm.registry import build

__all__ = ["NOISY_ORACLE", "SCORE_KINDS", "attach_scores"]

SCORE_KINDS = ("bm25", "dense", "noisy-oracle", "random")
# noisy-oracle: (mean for gold passages, mean for the others, standard deviation).
NOISY_ORACLE = (0.7, 0.4, 0.2)

Scorer = Callable[[EvalQuestion], list[float]]


def _document(passage: EvalPassage) -> str:
    return f"{passage.title}\n{passage.text}" if passage.title else passage.text


def _rng(kind: str, seed: int, question: EvalQuestion) -> random.Random:
    return random.Random(xxhash.xxh64_intdigest(f"{kind}:{seed}:{question.id}".encode()))


def _bm25() -> Scorer:
    relevance = build("relevance", "bm25", field="scores")

    def score(question: EvalQuestion) -> list[float]:
        passages = [Passage(id=p.pid, text=_document(p)) for p in question.passages]
        return [round(float(v), 6) for v in relevance.score(question.question, passages).values]

    return score


def _dense(spec: str) -> Scorer:
    try:
        embedder = get_embedder(spec)
    except ConfigError as error:
        raise RequestError(f"--embedder: {error.message}", field="embedder") from None

    def score(question: EvalQuestion) -> list[float]:
        vectors = embedder.embed([question.question, *map(_document, question.passages)])
        return [round(float(v), 6) for v in vectors[1:] @ vectors[0]]

    return score


def _noisy_oracle(seed: int) -> Scorer:
    gold_mean, other_mean, spread = NOISY_ORACLE

    def score(question: EvalQuestion) -> list[float]:
        rng = _rng("noisy-oracle", seed, question)
        drawn = (
            rng.gauss(gold_mean if p.is_gold else other_mean, spread) for p in question.passages
        )
        return [round(min(1.0, max(0.0, value)), 6) for value in drawn]

    return score


def _random(seed: int) -> Scorer:
    def score(question: EvalQuestion) -> list[float]:
        rng = _rng("random", seed, question)
        return [round(rng.random(), 6) for _ in question.passages]

    return score


def attach_scores(
    questions: Sequence[EvalQuestion], kind: str, *, seed: int = 0, embedder: str = "hashing"
) -> list[EvalQuestion]:
    """``questions`` with a ``kind`` score (one of :data:`SCORE_KINDS`) on every candidate;
    ``embedder`` is the embedder spec of ``dense``, ``seed`` seeds the random kinds."""
    if kind not in SCORE_KINDS:
        raise RequestError(
            f"unknown score kind {kind!r}; choose one of {', '.join(SCORE_KINDS)}", field="scores"
        )
    factories: dict[str, Callable[[], Scorer]] = {
        "bm25": _bm25,
        "dense": lambda: _dense(embedder),
        "noisy-oracle": lambda: _noisy_oracle(seed),
        "random": lambda: _random(seed),
    }
    scorer = factories[kind]()
    return [_scored(question, scorer(question)) for question in questions]


def _scored(question: EvalQuestion, scores: Sequence[float]) -> EvalQuestion:
    passages = tuple(
        replace(passage, score=score)
        for passage, score in zip(question.passages, scores, strict=True)
    )
    return replace(question, passages=passages)
