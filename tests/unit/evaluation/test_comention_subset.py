"""The co-mention subset: which chains it asks, how it puts them, and what it pads them with."""

from __future__ import annotations

import hashlib
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
from ctxasm.evaluation import EvalQuestion, comention_subset, load_dataset
from ctxasm.evaluation.comention import HOPS, _Comentions
from ctxasm.evaluation.composed import _chosen
from ctxasm.evaluation.composed_pool import Pool
from ctxasm.evaluation.subsets import answer_key
from ctxasm.lexical import phrase_key, title_key

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "examples" / "eval" / "hotpotqa_distractor_20.jsonl"
SHARED_EVAL = REPO.parent / "shared" / "eval"
FULLWIKI = SHARED_EVAL / "hotpotqa_fullwiki.unified.jsonl"


# Green Album and Planet Gong both name Steve Hillage; Planet Gong and Mother Gong both name
# Gilli Smyth. No passage names another's title, and no passage is about either musician.
GREEN = _passage("g#0", "Green Album", "Green Album is a record by the guitarist Steve Hillage.")
GONG = _passage(
    "g#1",
    "Planet Gong",
    "Planet Gong was a band with the guitarist Steve Hillage.",
    "It was led by the singer Gilli Smyth.",
)
MOTHER = _passage(
    "g#2",
    "Mother Gong",
    "Mother Gong is a group of the singer Gilli Smyth with the drummer Didier Malherbe.",
)
# Says "a guitarist of", "a singer of", "a drummer of": the nouns a question asks with.
BOWLER = _passage(
    "n#0",
    "Tom Bowler",
    "Tom Bowler was a guitarist of note, a singer of songs and a drummer of skill.",
)
# Names both musicians: a second way from Green Album to Mother Gong.
BLUE = _passage(
    "c#0",
    "Blue Album",
    "Blue Album is a record by the guitarist Steve Hillage and the singer Gilli Smyth.",
)
OTHERS = [
    _passage("d#0", "Rock Album", "Rock Album is the record of a guitarist from Paris."),
    _passage("d#1", "Album Cover", "An album cover shows a drummer and a singer."),
    _passage("d#2", "Gong Tribe", "Gong Tribe is a group of the drummer Pierre Moerlen."),
]


@pytest.fixture
def chains() -> list[EvalQuestion]:
    """Passages naming one musician after another, with look-alikes around them."""
    return _read(_record("g", GREEN, GONG, MOTHER, BOWLER), _record("c", BLUE, *OTHERS))


def _gold(question: EvalQuestion) -> list[Any]:
    by_pid = {p.pid: p for p in question.passages}
    return [by_pid[pid] for pid in question.gold_pids]


def test_a_chain_through_two_named_musicians_is_asked_whole() -> None:
    subset = comention_subset(_read(_record("g", GREEN, GONG, MOTHER, BOWLER)), candidates=4)
    assert [(q.id, q.type, q.question, q.answers, q.gold_pids) for q in subset] == [
        (
            "comention-2:g#1",
            "comention-2",
            "What is the drummer of the singer of Planet Gong?",
            ("Didier Malherbe",),
            ("g#1", "g#2"),
        ),
        (
            "comention-3:g#0",
            "comention-3",
            "What is the drummer of the singer of the guitarist of Green Album?",
            ("Didier Malherbe",),
            ("g#0", "g#1", "g#2"),  # in chain order
        ),
    ]
    assert all(q.all_gold_in_candidates for q in subset)
    labels = {p.pid: (p.is_gold, p.has_answer, p.supporting) for p in subset[1].passages}
    assert labels == {
        "g#0": (True, False, ("Green Album is a record by the guitarist Steve Hillage.",)),
        # supported where it names each bridge
        "g#1": (
            True,
            False,
            (
                "Planet Gong was a band with the guitarist Steve Hillage.",
                "It was led by the singer Gilli Smyth.",
            ),
        ),
        "g#2": (True, True, (MOTHER["text"],)),
        "n#0": (False, False, ()),  # shares "guitarist", "singer" and "drummer"
    }


def test_the_subset_is_deterministic_and_the_seed_shuffles(chains: list[EvalQuestion]) -> None:
    assert comention_subset(chains, seed=3) == comention_subset(chains, seed=3)
    orders = {
        tuple(p.pid for q in comention_subset(chains, seed=seed) for p in q.passages)
        for seed in range(6)
    }
    assert len(orders) > 1


def test_chains_of_both_lengths_are_asked_in_turn(chains: list[EvalQuestion]) -> None:
    asked = [
        (q.id, q.question, q.answers, [p.title for p in _gold(q)]) for q in comention_subset(chains)
    ]
    assert asked == [
        (
            "comention-2:g#1",
            "What is the drummer of the singer of Planet Gong?",
            ("Didier Malherbe",),
            ["Planet Gong", "Mother Gong"],
        ),
        (
            # through Blue Album, which names both musicians: Green Album does not name the
            # second, nor Mother Gong the first
            "comention-3:g#0",
            "What is the drummer of the singer of the guitarist of Green Album?",
            ("Didier Malherbe",),
            ["Green Album", "Blue Album", "Mother Gong"],
        ),
        (
            "comention-2:g#2",
            "What is the guitarist of the singer of Mother Gong?",
            ("Steve Hillage",),
            ["Mother Gong", "Blue Album"],
        ),
        (
            "comention-2:c#0",
            "What is the drummer of the singer of Blue Album?",
            ("Didier Malherbe",),
            ["Blue Album", "Mother Gong"],
        ),
    ]


@pytest.mark.parametrize(
    "passages",
    [
        # Green Album's text holds Gilli Smyth (in a list, not as a name of its own): the
        # second bridge is a shortcut from the first passage
        [
            _passage(
                "g#0",
                "Green Album",
                "Green Album is a record by the guitarist Steve Hillage.",
                "Its sleeve thanks Daevid Allen, Gilli Smyth.",
            ),
            GONG,
            MOTHER,
            BOWLER,
        ],
        # Mother Gong names the Steve Hillage Band: the first bridge is inside a name of the
        # last passage
        [
            GREEN,
            GONG,
            _passage(
                "g#2",
                "Mother Gong",
                MOTHER["text"],
                "It toured with the Steve Hillage Band.",
            ),
            BOWLER,
        ],
    ],
    ids=["first-holds-second-bridge", "last-holds-first-bridge"],
)
def test_a_text_that_holds_a_later_or_earlier_bridge_makes_no_chain(
    passages: list[dict[str, Any]],
) -> None:
    subset = comention_subset(_read(_record("g", *passages)), candidates=4)
    assert [(q.id, q.question) for q in subset] == [
        ("comention-2:g#1", "What is the drummer of the singer of Planet Gong?")
    ]


def test_candidates_are_padded_with_bridge_namers_first_and_unique_pids(
    chains: list[EvalQuestion],
) -> None:
    subset = comention_subset(chains, candidates=6)
    padding = {q.id: sorted(p.title for p in q.passages if not p.is_gold) for q in subset}
    assert padding == {
        # Blue Album names the bridge, Gong Tribe a word of "Planet Gong"; the rest share the
        # question's words
        "comention-2:g#1": ["Album Cover", "Blue Album", "Gong Tribe", "Tom Bowler"],
        "comention-3:g#0": ["Album Cover", "Planet Gong", "Tom Bowler"],
        "comention-2:g#2": ["Album Cover", "Gong Tribe", "Planet Gong", "Tom Bowler"],
        "comention-2:c#0": ["Album Cover", "Green Album", "Planet Gong", "Tom Bowler"],
    }
    for question in subset:
        assert len({p.pid for p in question.passages}) == len(question.passages) == 6


def test_data_without_chains_is_refused() -> None:
    lonely = _read(_record("x", GREEN, BOWLER, *OTHERS))
    with pytest.raises(RequestError, match="chains of 2 to 3") as caught:
        comention_subset(lonely)
    assert caught.value.field == "subset"
    with pytest.raises(RequestError, match="at least 3") as small:
        comention_subset(lonely, candidates=2)
    assert small.value.field == "candidates"
    with pytest.raises(RequestError, match="at least 1") as none:
        comention_subset(lonely, per_hops=0)
    assert none.value.field == "per_hops"


@pytest.mark.parametrize(("field", "value"), NOT_COUNTS)
def test_arguments_that_are_not_counts_are_refused_by_name(
    chains: list[EvalQuestion], field: str, value: Any
) -> None:
    with pytest.raises(RequestError, match=f"^{field} must be an integer") as caught:
        comention_subset(chains, **{field: value})
    assert caught.value.field == field


def test_per_hops_caps_each_length(chains: list[EvalQuestion]) -> None:
    kinds = [q.type for q in comention_subset(chains, per_hops=1)]
    assert kinds == ["comention-2", "comention-3"]


def test_the_sample_gives_chains_of_both_lengths() -> None:
    subset = comention_subset(load_dataset(SAMPLE))
    kinds = [q.type for q in subset]
    assert [kinds.count(f"comention-{hops}") for hops in HOPS] == [20, 16]
    assert kinds[:4] == ["comention-2", "comention-3", "comention-2", "comention-3"]
    assert len({q.id for q in subset}) == len(subset)
    for question in subset:
        assert len({p.pid for p in question.passages}) == len(question.passages) <= 20
        assert len(question.gold_pids) == int(question.type[-1])


def test_the_answer_is_in_the_last_chain_passage_only() -> None:
    for question in comention_subset(load_dataset(SAMPLE)):
        gold = _gold(question)
        assert [p.has_answer for p in gold] == [False] * (len(gold) - 1) + [True]
        key = f" {answer_key(question.answers[0])} "
        assert [p.title for p in gold if key in f" {answer_key(p.text)} "] == [gold[-1].title]
        assert key not in f" {answer_key(question.question)} "


def test_no_question_names_a_bridge_or_a_later_chain_title() -> None:
    pool = Pool(load_dataset(SAMPLE))
    comentions = _Comentions(pool, 0)
    chosen = _chosen(comentions.starts(), comentions.ask, HOPS, 100)
    assert len(chosen) == 36
    for asked in chosen:
        said = f" {phrase_key(asked.question)} "
        gold = [pool.passages[i] for i in asked.chain]
        texts = [f" {phrase_key(p.text)} " for p in gold]
        assert [b for b in asked.bridges if f" {b} " in said] == []
        assert [p.title for p in gold[1:] if f" {title_key(p.title)} " in said] == []
        assert f" {title_key(gold[0].title)} " in said
        for hop, bridge in enumerate(asked.bridges):
            named = f" {bridge} "
            # both passages of the hop name the bridge; neither is about it
            assert [named in text for text in texts[hop : hop + 2]] == [True, True]
            assert named not in f" {title_key(gold[hop].title)} "
            assert named not in f" {phrase_key(gold[hop + 1].title)} "
            # and no other chain passage holds it: no shortcut
            assert [i for i, text in enumerate(texts) if named in text] == [hop, hop + 1]


def test_the_subset_is_the_same_in_every_process() -> None:
    # no set or dict order of a process (string hashing is salted per process) may show
    script = (
        "import hashlib, json, sys\n"
        "from ctxasm.evaluation import comention_subset, load_dataset\n"
        "subset = comention_subset(load_dataset(sys.argv[1]))\n"
        "records = json.dumps([q.to_record() for q in subset])\n"
        "print(hashlib.sha256(records.encode()).hexdigest())\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script, str(SAMPLE)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(salt)},
        ).stdout
        for salt in (0, 1, 2)
    }
    here = [q.to_record() for q in comention_subset(load_dataset(SAMPLE))]
    assert outputs == {hashlib.sha256(json.dumps(here).encode()).hexdigest() + "\n"}


def test_comention_subset_of_hotpotqa_fullwiki() -> None:
    if not FULLWIKI.is_file():
        pytest.skip(f"{FULLWIKI} is absent (the shared evaluation data is not checked out)")
    subset = comention_subset(load_dataset(FULLWIKI))
    kinds = [q.type for q in subset]
    assert [kinds.count(f"comention-{hops}") for hops in HOPS] == [100, 100]
    assert {len(q.passages) for q in subset} == {20}
    assert all(len({p.pid for p in q.passages}) == 20 for q in subset)
    assert all([p.has_answer for p in _gold(q)][-1] for q in subset)
