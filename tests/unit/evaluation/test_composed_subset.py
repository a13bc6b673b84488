"""The composed subset: which chains it asks, how it puts them, and what it pads them with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chain_records import NOT_COUNTS
from chain_records import passage as _passage
from chain_records import read as _read
from chain_records import record as _record

from ctxasm.errors import RequestError
from ctxasm.evaluation import EvalQuestion, load_dataset
from ctxasm.evaluation.composed import composed_subset
from ctxasm.evaluation.subsets import answer_key
from ctxasm.lexical import phrase_key, title_key

SHARED_EVAL = Path(__file__).resolve().parents[3].parent / "shared" / "eval"
FULLWIKI = SHARED_EVAL / "hotpotqa_fullwiki.unified.jsonl"


GREEN = _passage("g#0", "Green Album", "Green Album is a record by the guitarist Steve Hillage.")
HILLAGE = _passage(
    "g#1",
    "Steve Hillage",
    "Steve Hillage is a musician.",
    "His partner is the keyboardist Miquette Giraudy.",
)
# Says "a guitarist of", "a keyboardist of", "the band of": the nouns a question asks with.
BOWLER = _passage(
    "g#2", "Tom Bowler", "Tom Bowler was a guitarist of note and a keyboardist of skill."
)
GIRAUDY = _passage(
    "c#0",
    "Miquette Giraudy",
    "Miquette Giraudy is a French musician.",
    "She was a member of the band Planet Gong.",
)
GONG = _passage(
    "c#1",
    "Planet Gong",
    "Planet Gong is a band from Paris.",
    "It was founded in 1977 by Daevid Allen.",
)
# Names Steve Hillage and Miquette Giraudy both: Blue Album -> Steve Hillage -> Miquette
# Giraudy would be a shortcut.
BLUE = _passage(
    "c#2",
    "Blue Album",
    "Blue Album is a record by the guitarist Steve Hillage and the keyboardist Miquette Giraudy.",
)
OTHERS = [
    _passage("d#0", "Rock Album", "Rock Album is the band of a guitarist from Paris."),
    _passage("d#1", "Album Cover", "An album cover shows a keyboardist and a guitarist."),
    _passage("d#2", "Gong Tribe", "Gong Tribe is a band of the member Planet Zero."),
    _passage("d#3", "Paris Musicians", "A partner of a musician founded the band."),
]


@pytest.fixture
def chains() -> list[EvalQuestion]:
    """Passages naming one another in chains of two to four, with look-alikes around them."""
    return _read(
        _record("g", GREEN, HILLAGE, BOWLER),
        _record("c", GIRAUDY, GONG, BLUE),
        _record("d", *OTHERS),
    )


def _gold(question: EvalQuestion) -> list[Any]:
    by_pid = {p.pid: p for p in question.passages}
    return [by_pid[pid] for pid in question.gold_pids]


def test_a_single_chain_becomes_one_whole_question() -> None:
    (asked,) = composed_subset(_read(_record("g", GREEN, HILLAGE, BOWLER)), candidates=4)
    assert asked.id == "composed-2:g#0"
    assert asked.question == "What is the keyboardist of the guitarist of Green Album?"
    assert asked.answers == ("Miquette Giraudy",)
    assert asked.type == "composed-2"
    assert asked.all_gold_in_candidates
    assert asked.gold_pids == ("g#0", "g#1")  # in chain order
    labels = {p.pid: (p.is_gold, p.has_answer, p.supporting) for p in asked.passages}
    assert labels == {
        "g#0": (True, False, ("Green Album is a record by the guitarist Steve Hillage.",)),
        "g#1": (True, True, ("His partner is the keyboardist Miquette Giraudy.",)),
        "g#2": (False, False, ()),  # shares "guitarist" and "keyboardist" with the question
    }


def test_the_subset_is_deterministic_and_the_seed_shuffles(
    chains: list[EvalQuestion],
) -> None:
    assert composed_subset(chains, seed=3) == composed_subset(chains, seed=3)
    orders = {
        tuple(p.pid for q in composed_subset(chains, seed=seed) for p in q.passages)
        for seed in range(6)
    }
    assert len(orders) > 1


def test_chains_of_every_length_are_asked_hop_by_hop(chains: list[EvalQuestion]) -> None:
    # the lengths in turn: 2, 3, 4, then the next 3
    asked = [
        (q.id, q.question, q.answers, [p.title for p in _gold(q)]) for q in composed_subset(chains)
    ]
    assert asked == [
        (
            "composed-2:c#0",
            "What is the founder of the band of Miquette Giraudy?",
            ("1977",),
            ["Miquette Giraudy", "Planet Gong"],
        ),
        (
            "composed-3:g#1",
            "What is the founder of the band of the keyboardist of Steve Hillage?",
            ("1977",),
            ["Steve Hillage", "Miquette Giraudy", "Planet Gong"],
        ),
        (
            "composed-4:g#0",
            "What is the founder of the band of the keyboardist of the guitarist of Green Album?",
            ("1977",),
            ["Green Album", "Steve Hillage", "Miquette Giraudy", "Planet Gong"],
        ),
        (
            # Blue Album names Miquette Giraudy itself: "Blue Album -> Steve Hillage ->
            # Miquette Giraudy" would be a shortcut, and Steve Hillage's answer is in Blue Album
            "composed-3:c#2",
            "What is the founder of the band of the keyboardist of Blue Album?",
            ("1977",),
            ["Blue Album", "Miquette Giraudy", "Planet Gong"],
        ),
    ]


def test_no_chain_title_but_the_first_is_named_before_its_hop(
    chains: list[EvalQuestion],
) -> None:
    for seed in range(4):
        for question in composed_subset(chains, seed=seed):
            asked = f" {phrase_key(question.question)} "
            first, *later = _gold(question)
            assert f" {title_key(first.title)} " in asked
            assert [p.title for p in later if f" {title_key(p.title)} " in asked] == []
            gold = [first, *later]
            for hop, passage in enumerate(later, start=1):
                named = f" {title_key(passage.title)} "
                assert named in f" {phrase_key(gold[hop - 1].text)} "  # the hop before names it
                shortcuts = [p.title for p in gold[: hop - 1] if named in f" {phrase_key(p.text)} "]
                assert shortcuts == []


def test_the_answer_is_in_the_last_chain_passage_only(chains: list[EvalQuestion]) -> None:
    for question in composed_subset(chains):
        gold = _gold(question)
        assert [p.has_answer for p in gold] == [False] * (len(gold) - 1) + [True]
        key = f" {answer_key(question.answers[0])} "
        assert [p.title for p in gold if key in f" {answer_key(p.text)} "] == [gold[-1].title]
        supported = [p.supporting for p in gold]
        assert supported[-1] == ("It was founded in 1977 by Daevid Allen.",)


def test_candidates_are_padded_with_look_alikes_and_unique_pids(
    chains: list[EvalQuestion],
) -> None:
    padding = {
        q.id: sorted(p.title for p in q.passages if not p.is_gold)
        for q in composed_subset(chains, candidates=6)
    }
    assert padding == {
        # Blue Album and Steve Hillage name chain passages; the rest share the question's words
        "composed-2:c#0": ["Blue Album", "Gong Tribe", "Paris Musicians", "Steve Hillage"],
        "composed-3:g#1": ["Album Cover", "Blue Album", "Green Album"],
        "composed-3:c#2": ["Album Cover", "Rock Album", "Steve Hillage"],
        "composed-4:g#0": ["Album Cover", "Blue Album"],
    }
    for question in composed_subset(chains, candidates=6):
        assert len({p.pid for p in question.passages}) == len(question.passages) == 6


def test_pids_numbered_per_question_stay_unique() -> None:
    def renumbered(record: dict[str, Any]) -> dict[str, Any]:
        passages = [{**p, "pid": str(i)} for i, p in enumerate(record["passages"])]
        return {**record, "passages": passages}

    records = [
        _record("g", GREEN, HILLAGE, BOWLER),
        _record("c", GIRAUDY, GONG, BLUE),
        _record("d", *OTHERS),
    ]
    subset = composed_subset(_read(*map(renumbered, records)), candidates=6)
    # the first passage with a pid keeps it; later ones get their question's id before it
    assert [(q.id, q.gold_pids) for q in subset] == [
        ("composed-2:c:0", ("c:0", "c:1")),
        ("composed-3:1", ("1", "c:0", "c:1")),
        ("composed-4:0", ("0", "1", "c:0", "c:1")),
        ("composed-3:c:2", ("c:2", "c:0", "c:1")),
    ]
    for question in subset:
        assert len({p.pid for p in question.passages}) == len(question.passages) == 6


def test_data_without_chains_is_refused() -> None:
    lonely = _read(_record("x", BOWLER, *OTHERS))
    with pytest.raises(RequestError, match="chains of 2 to 4") as caught:
        composed_subset(lonely)
    assert caught.value.field == "subset"
    with pytest.raises(RequestError, match="at least 4") as small:
        composed_subset(lonely, candidates=3)
    assert small.value.field == "candidates"
    with pytest.raises(RequestError, match="at least 1") as none:
        composed_subset(lonely, per_hops=0)
    assert none.value.field == "per_hops"


@pytest.mark.parametrize(("field", "value"), NOT_COUNTS)
def test_arguments_that_are_not_counts_are_refused_by_name(
    chains: list[EvalQuestion], field: str, value: Any
) -> None:
    with pytest.raises(RequestError, match=f"^{field} must be an integer") as caught:
        composed_subset(chains, **{field: value})
    assert caught.value.field == field


def test_three_passages_with_one_pid_in_one_question_get_three_pids() -> None:
    same = [{**p, "pid": "0"} for p in (GREEN, HILLAGE, BOWLER)]
    (asked,) = composed_subset(_read(_record("a", *same)), candidates=4)
    assert sorted(p.pid for p in asked.passages) == ["0", "a:0", "a:0:2"]


def test_the_subset_is_the_same_in_every_process() -> None:
    # no set or dict order of a process (string hashing is salted per process) may show
    script = (
        "import json, sys\n"
        "from ctxasm.evaluation import composed_subset, read_dataset\n"
        "questions = read_dataset(sys.stdin.read().splitlines())\n"
        "print(json.dumps([q.to_record() for q in composed_subset(questions, candidates=6)]))\n"
    )
    lines = "\n".join(
        json.dumps(r)
        for r in (
            _record("g", GREEN, HILLAGE, BOWLER),
            _record("c", GIRAUDY, GONG, BLUE),
            _record("d", *OTHERS),
        )
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            input=lines,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(salt)},
        ).stdout
        for salt in (0, 1, 2)
    }
    assert len(outputs) == 1


def test_per_hops_caps_each_length(chains: list[EvalQuestion]) -> None:
    kinds = [q.type for q in composed_subset(chains, per_hops=1)]
    assert kinds == ["composed-2", "composed-3", "composed-4"]


def test_the_answer_is_found_in_the_last_passage_as_the_labels_find_it() -> None:
    # "Daevid Allen's" and a number cut from "13,361.74" are not answers the labels find there
    gong = _passage(
        "c#1",
        "Planet Gong",
        "Planet Gong is a band from Paris.",
        "It was Daevid Allen's band of 13,361.74 members, founded by Gilli Smyth.",
    )
    (asked,) = composed_subset(_read(_record("c", GIRAUDY, gong)), candidates=4)
    assert asked.answers == ("Gilli Smyth",)
    assert [p.has_answer for p in _gold(asked)] == [False, True]


def test_composed_subset_of_hotpotqa_fullwiki() -> None:
    if not FULLWIKI.is_file():
        pytest.skip(f"{FULLWIKI} is absent (the shared evaluation data is not checked out)")
    subset = composed_subset(load_dataset(FULLWIKI))
    kinds = [q.type for q in subset]
    assert [kinds.count(f"composed-{hops}") for hops in (2, 3, 4)] == [100, 100, 23]
    assert {len(q.passages) for q in subset} == {20}
    assert all(len({p.pid for p in q.passages}) == 20 for q in subset)
    assert all(len({p.title for p in q.passages}) == 20 for q in subset)
    assert all(_gold(q)[-1].has_answer for q in subset)  # every answer is found where it is


def test_a_qualified_title_is_linked_from_a_passage_with_a_word_its_qualifier_starts() -> None:
    from ctxasm.evaluation.composed_pool import _fits, _qualifier, _starts

    starts = _starts([("Two", "Films", "were", "made"), ("Documentary", "makers")])
    assert _fits(_qualifier("Wichita (2014 film)"), starts)  # "film" starts "films"
    assert _fits(_qualifier("Wichita (documentary)"), starts)  # "docum" starts "documentary"
    assert not _fits(_qualifier("Wichita (band)"), starts)
    assert _fits(_qualifier("Wichita"), starts)  # no qualifier: any passage
