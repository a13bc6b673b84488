"""The hard subset: which questions it keeps, how it pads and shuffles their candidates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxasm.errors import RequestError
from ctxasm.evaluation import (
    EvalQuestion,
    bridge_titles,
    hard_subset,
    load_dataset,
    read_dataset,
    write_dataset,
)
from ctxasm.evaluation.dataset import parse_question
from ctxasm.evaluation.subsets import answer_key

SHARED_EVAL = Path(__file__).resolve().parents[3].parent / "shared" / "eval"
FULLWIKI = SHARED_EVAL / "hotpotqa_fullwiki.unified.jsonl"


def _passage(pid: str, title: str, text: str, *, gold: bool = False) -> dict[str, Any]:
    return {
        "pid": pid,
        "title": title,
        "text": text,
        "sentences": [text],
        "is_gold": gold,
        "has_answer": False,
    }


def _question(
    qid: str,
    question: str,
    passages: list[dict[str, Any]],
    *,
    kind: str = "bridge",
    answers: tuple[str, ...] = ("Miquette Giraudy",),
    all_gold: bool = True,
) -> dict[str, Any]:
    return {
        "id": qid,
        "question": question,
        "answers": list(answers),
        "passages": passages,
        "gold_pids": [p["pid"] for p in passages if p["is_gold"]],
        "meta": {
            "type": kind,
            "all_gold_in_candidates": all_gold,
            "supporting_facts": [[p["title"], 0] for p in passages if p["is_gold"]],
        },
    }


# A full-wiki style file. Only "green" is a bridge question with an unnamed gold title
# ("Steve Hillage"); the others give the distractors it is padded with.
RECORDS = [
    _question(
        "green",
        "Who is the spouse of the Green performer?",
        [
            _passage("green#0", "Green (album)", "Green is an album by Steve Hillage.", gold=True),
            _passage(
                "green#1",
                "Steve Hillage",
                "Steve Hillage is a guitarist. His partner is Miquette Giraudy.",
                gold=True,
            ),
            _passage("green#2", "Green Day", "Green Day is a punk band from California."),
        ],
    ),
    _question(
        "named",
        "Was Steve Hillage the performer of Green?",
        [
            _passage("named#0", "Steve Hillage", "Steve Hillage is a guitarist.", gold=True),
            _passage("named#1", "Green (album)", "Green is an album.", gold=True),
            # a distractor whose title the green question already has: never padding
            _passage("named#2", "Green Day", "Green Day performer spouse of a performer."),
        ],
    ),
    _question(
        "compare",
        "Which is older, the Green Man pub or the Red Lion?",
        [
            _passage("compare#0", "Green Man", "The Green Man is a pub.", gold=True),
            _passage("compare#1", "Red Lion", "The Red Lion is a pub.", gold=True),
            # shares "green", "performer" and "spouse"
            _passage("compare#2", "Cabaret", "A green performer met the spouse of the host."),
            # shares "green" and "performer"
            _passage("compare#3", "Stage fright", "A green performer often fears the stage."),
            # shares "green" only
            _passage("compare#4", "Green tea", "Green tea is a drink."),
            # mentions the answer, as a padded passage it is labelled so
            _passage("compare#5", "Gong (band)", "Gong had a green synth of Miquette Giraudy's."),
            _passage("compare#6", "Planet Gong", "The Green performer's spouse: Miquette Giraudy."),
        ],
        kind="comparison",
    ),
    _question(
        "missing",
        "Who married the lead performer of Green Thumb?",
        [
            _passage("missing#0", "Green Thumb", "Green Thumb is a band.", gold=True),
            # same title as a passage seen earlier: the first one is the distractor
            _passage("missing#1", "Cabaret", "Cabaret green performer spouse twice spouse."),
            _passage("missing#2", "Lawn", "A lawn is green grass."),
        ],
        all_gold=False,
    ),
]


@pytest.fixture
def questions() -> list[EvalQuestion]:
    import json

    return read_dataset([json.dumps(r) for r in RECORDS])


def test_bridge_titles_are_the_gold_titles_the_question_does_not_name(
    questions: list[EvalQuestion],
) -> None:
    green, named, _, _ = questions
    assert bridge_titles(green) == ["Steve Hillage"]  # "Green (album)" is named as "Green"
    assert bridge_titles(named) == []
    html = parse_question(
        _question(
            "h",
            "When did Richard Hornsby & Sons build an engine?",
            [_passage("h#0", "Richard Hornsby &amp; Sons", "An engine maker.", gold=True)],
        )
    )
    assert bridge_titles(html) == []


def test_the_subset_keeps_bridge_questions_with_all_gold_and_an_unnamed_gold_title(
    questions: list[EvalQuestion],
) -> None:
    assert [q.id for q in hard_subset(questions, candidates=5)] == ["green"]


def test_padding_prefers_distractors_sharing_the_most_question_words(
    questions: list[EvalQuestion],
) -> None:
    (green,) = hard_subset(questions, candidates=6)
    added = [p.pid for p in green.passages if not p.pid.startswith("green#")]
    # compare#2 and compare#6 share three words, compare#3 two: gold passages, titles the
    # question has (Green Day) and a second "Cabaret" are never taken
    assert sorted(added) == ["compare#2", "compare#3", "compare#6"]
    assert {p.pid for p in green.passages} >= {"green#0", "green#1", "green#2"}
    assert all(not p.is_gold for p in green.passages if p.pid in added)
    assert green.gold_pids == ("green#0", "green#1")


def test_padded_passages_are_labelled_with_the_answer_as_the_data_defines_it(
    questions: list[EvalQuestion],
) -> None:
    (green,) = hard_subset(questions, candidates=20)
    labels = {p.pid: p.has_answer for p in green.passages}
    assert labels["compare#6"] is True
    assert labels["compare#5"] is False  # "Giraudy's" is not the word "Giraudy"
    assert labels["compare#2"] is False
    assert answer_key("The Bears' (U.S.) a-team!") == "bears us ateam"


def test_too_few_distractors_leave_fewer_candidates(questions: list[EvalQuestion]) -> None:
    (green,) = hard_subset(questions, candidates=20)
    # every distractor sharing a word: compare#2..#6 and Lawn (missing#2)
    assert len(green.passages) == 3 + 6


def test_the_subset_is_deterministic_and_the_seed_shuffles(
    questions: list[EvalQuestion],
) -> None:
    assert hard_subset(questions, candidates=8, seed=3) == hard_subset(
        questions, candidates=8, seed=3
    )
    orders = {
        tuple(p.pid for p in hard_subset(questions, candidates=6, seed=seed)[0].passages)
        for seed in range(6)
    }
    assert len(orders) > 1  # the seed decides the order...
    assert len({frozenset(order) for order in orders}) == 1  # ...not which passages (no ties)
    # one word shared: compare#4, compare#5 and missing#2 tie; the seed picks among them
    picked = {
        next(p.pid for p in q.passages if p.pid in {"compare#4", "compare#5", "missing#2"})
        for seed in range(12)
        for q in hard_subset(questions, candidates=7, seed=seed)
    }
    assert len(picked) > 1


def test_the_subset_round_trips_through_jsonl(
    questions: list[EvalQuestion], tmp_path: Path
) -> None:
    subset = hard_subset(questions, candidates=6)
    path = tmp_path / "hard.jsonl"
    write_dataset(subset, path)
    assert load_dataset(path) == subset
    assert load_dataset(path)[0].passages[0].sentences


def test_data_without_hard_questions_is_refused(questions: list[EvalQuestion]) -> None:
    with pytest.raises(RequestError, match="full-wiki style data") as caught:
        hard_subset(questions[1:])
    assert caught.value.field == "subset"
    with pytest.raises(RequestError, match="positive") as bad:
        hard_subset(questions, candidates=0)
    assert bad.value.field == "candidates"


def test_hard_subset_of_hotpotqa_fullwiki() -> None:
    if not FULLWIKI.is_file():
        pytest.skip(f"{FULLWIKI} is absent (the shared evaluation data is not checked out)")
    subset = hard_subset(load_dataset(FULLWIKI))
    assert len(subset) == 178
    assert {len(q.passages) for q in subset} == {20}
    assert all(q.type == "bridge" and q.all_gold_in_candidates for q in subset)
    assert all(bridge_titles(q) for q in subset)
    assert all(len({p.title for p in q.passages}) == 20 for q in subset)


def test_padding_keeps_passage_ids_unique() -> None:
    import json

    def renumbered(record: dict[str, Any]) -> dict[str, Any]:
        # pids numbered per question, as some datasets do: "0", "1", ...
        passages = [{**p, "pid": str(i)} for i, p in enumerate(record["passages"])]
        gold = [p["pid"] for p in passages if p["is_gold"]]
        return {**record, "passages": passages, "gold_pids": gold}

    lines = [json.dumps(renumbered(r)) for r in RECORDS]
    (green,) = hard_subset(read_dataset(lines), candidates=20)
    pids = [p.pid for p in green.passages]
    assert sorted(pids) == ["0", "1", "2", "3", "4", "5", "6"]
