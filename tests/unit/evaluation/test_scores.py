"""Retriever scores attached to evaluation data: what each kind gives, and that it is stable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from statistics import fmean
from typing import Any

import pytest

from ctxasm.embeddings import get_embedder
from ctxasm.errors import RequestError
from ctxasm.evaluation import (
    NOISY_ORACLE,
    SCORE_KINDS,
    EvalQuestion,
    attach_scores,
    evaluate,
    read_dataset,
    resolve_strategy,
)


def _record(qid: str, passages: list[tuple[str, str, bool]]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": "Who is the spouse of the Green performer?",
        "answers": ["Miquette Giraudy"],
        "passages": [
            {"pid": f"{qid}#{i}", "title": title, "text": text, "is_gold": gold}
            for i, (title, text, gold) in enumerate(passages)
        ],
        "meta": {"type": "bridge"},
    }


PASSAGES = [
    ("Green (album)", "Green is an album by the performer Steve Hillage.", True),
    ("Steve Hillage", "His spouse is Miquette Giraudy.", True),
    ("Lawn", "A lawn is grass.", False),
]


def _questions(*ids: str) -> list[EvalQuestion]:
    return read_dataset([json.dumps(_record(qid, PASSAGES)) for qid in ids])


def _scores(question: EvalQuestion) -> list[float | None]:
    return [p.score for p in question.passages]


def test_bm25_scores_title_and_text_best_one() -> None:
    (question,) = attach_scores(_questions("q"), "bm25")
    first, second, third = _scores(question)
    assert first == 1.0  # green and performer, in the title and the text
    assert second is not None and 0.0 < second < 1.0  # spouse
    assert third == 0.0


def test_dense_scores_are_cosines_of_the_embedder() -> None:
    (question,) = attach_scores(_questions("q"), "dense", embedder="hashing")
    first, second, third = _scores(question)
    assert first is not None and second is not None and third is not None
    assert first > second > third
    vectors = get_embedder("hashing").embed(
        [question.question, *(f"{p.title}\n{p.text}" for p in question.passages)]
    )
    assert _scores(question) == [round(float(v), 6) for v in vectors[1:] @ vectors[0]]
    with pytest.raises(RequestError, match="unknown embedder") as caught:
        attach_scores(_questions("q"), "dense", embedder="nope")
    assert caught.value.field == "embedder"


def test_noisy_oracle_favours_gold_within_bounds() -> None:
    questions = attach_scores(_questions(*(f"q{i}" for i in range(200))), "noisy-oracle")
    gold = [p.score for q in questions for p in q.passages if p.is_gold]
    other = [p.score for q in questions for p in q.passages if not p.is_gold]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in [*gold, *other])
    gold_mean, other_mean, _ = NOISY_ORACLE
    assert fmean(s for s in gold if s is not None) == pytest.approx(gold_mean, abs=0.03)
    assert fmean(s for s in other if s is not None) == pytest.approx(other_mean, abs=0.04)


def test_random_scores_depend_on_the_question_and_seed_only() -> None:
    alone = attach_scores(_questions("b"), "random")
    together = attach_scores(_questions("a", "b"), "random")
    assert _scores(together[1]) == _scores(alone[0])
    assert _scores(together[0]) != _scores(together[1])
    assert _scores(attach_scores(_questions("b"), "random", seed=1)[0]) != _scores(alone[0])
    assert all(s is not None and 0.0 <= s < 1.0 for s in _scores(alone[0]))


def test_scores_are_the_same_in_another_process() -> None:
    code = (
        "import json, sys; from ctxasm.evaluation import attach_scores, read_dataset; "
        "qs = read_dataset(sys.stdin.read().splitlines()); "
        "print(json.dumps([[p.score for p in q.passages] for k in ('noisy-oracle', 'random') "
        "for q in attach_scores(qs, k)]))"
    )
    lines = "\n".join(json.dumps(_record(qid, PASSAGES)) for qid in ("a", "b"))
    here = [
        _scores(q)
        for k in ("noisy-oracle", "random")
        for q in attach_scores(_questions("a", "b"), k)
    ]
    for hash_seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=lines,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            check=True,
        )
        assert json.loads(done.stdout) == here


def test_the_request_carries_the_score_and_the_oracle_keeps_its_own() -> None:
    (question,) = attach_scores(_questions("q"), "random")
    assert [p.request_passage()["score"] for p in question.passages] == _scores(question)
    rows = evaluate([question], [resolve_strategy("oracle")], [64])
    assert rows[0].all_gold == 1.0  # gold scored 1 whatever the attached scores


@pytest.mark.parametrize("kind", SCORE_KINDS)
def test_every_kind_scores_every_passage(kind: str) -> None:
    (question,) = attach_scores(_questions("q"), kind)
    assert all(isinstance(s, float) for s in _scores(question))


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(RequestError, match="'nope'; choose one of bm25, dense") as caught:
        attach_scores(_questions("q"), "nope")
    assert caught.value.field == "scores"
