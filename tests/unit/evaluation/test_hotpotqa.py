"""HotpotQA's own files (a JSON array of records) read as evaluation data, and --ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxasm.errors import RequestError
from ctxasm.evaluation import evaluate, load_dataset, resolve_strategy, select_ids
from ctxasm.evaluation.hotpotqa import looks_like_hotpotqa

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "eval"


def _record(qid: str, answer: str = "Rush", kind: str = "bridge") -> dict[str, Any]:
    return {
        "_id": qid,
        "question": "Which band had the drummer of the song?",
        "answer": answer,
        "type": kind,
        "level": "hard",
        "supporting_facts": [["Neil Peart", 0], ["Counterparts (song)", 1]],
        "context": [
            ["Toto", ["Toto is a band.", " It plays rock."]],
            ["Neil Peart", ["Neil Peart was the drummer of Rush.", " He wrote lyrics."]],
            ["Counterparts (song)", ["It is a song.", " The band Rush released it."]],
            ["Rushmore", ["Rushmore is a film."]],
        ],
    }


def test_a_hotpotqa_file_becomes_questions_of_the_unified_format(tmp_path: Path) -> None:
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps([_record("q1"), _record("q2", "yes", "comparison")]))
    first, second = load_dataset(path)
    assert (first.id, first.question, first.answers, first.type) == (
        "q1",
        "Which band had the drummer of the song?",
        ("Rush",),
        "bridge",
    )
    assert [p.pid for p in first.passages] == ["q1#0", "q1#1", "q1#2", "q1#3"]
    assert first.passages[1].text == "Neil Peart was the drummer of Rush. He wrote lyrics."
    assert first.gold_pids == ("q1#1", "q1#2") and first.all_gold_in_candidates
    # whole words of HotpotQA's normalised answer: "Rushmore" does not hold "Rush"
    assert [p.has_answer for p in first.passages] == [False, True, True, False]
    assert first.passages[2].supporting == (" The band Rush released it.",)
    assert [p.has_answer for p in second.passages] == [None] * 4  # a yes/no answer
    rows = evaluate([first], [resolve_strategy("oracle")], [512])
    assert rows[0].all_gold == 1.0


def test_gold_missing_from_the_candidates_is_said(tmp_path: Path) -> None:
    record = _record("q1")
    record["context"] = record["context"][:2]  # full-wiki: the retriever missed a gold page
    path = tmp_path / "fullwiki.json"
    path.write_text(json.dumps([record]))
    (question,) = load_dataset(path)
    assert question.gold_pids == ("q1#1",) and not question.all_gold_in_candidates


@pytest.mark.parametrize(
    ("records", "field"),
    [
        ({"_id": "q"}, "dataset"),
        ([[1]], "h.json[0]"),
        ([{**_record("q"), "_id": 7}], "h.json[0]._id"),
        ([{**_record("q"), "context": [["T", "not a list"]]}], "h.json[0].context[0]"),
        ([{**_record("q"), "supporting_facts": [["T", "0"]]}], "h.json[0].supporting_facts"),
        ([_record("q"), _record("q")], "h.json[1]"),
        ([], "dataset"),
    ],
)
def test_a_malformed_hotpotqa_file_names_the_record(
    tmp_path: Path, records: Any, field: str
) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(records))
    if not isinstance(records, list):  # an object is read as the unified format's one line
        path.write_text("[" + json.dumps(records))
    with pytest.raises(RequestError) as error:
        load_dataset(path)
    assert error.value.field == field or error.value.field.startswith(field), error.value


def test_only_a_json_array_is_read_as_hotpotqa() -> None:
    assert looks_like_hotpotqa(b"\xef\xbb\xbf \n [{")
    assert not looks_like_hotpotqa(b'{"id": "q"}\n')


def test_ids_keep_the_questions_they_list_in_their_order(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps([_record(f"q{i}") for i in range(5)]))
    questions = load_dataset(path)
    kept = select_ids(questions, ["q3", "", " q1 ", "q3"], "ids.txt")
    assert [q.id for q in kept] == ["q3", "q1"]
    with pytest.raises(RequestError, match=r"1 of the 2 ids of ids\.txt are not in the dataset"):
        select_ids(questions, ["q1", "q9"], "ids.txt")
    with pytest.raises(RequestError, match="lists no ids"):
        select_ids(questions, ["", " "], "ids.txt")


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs the team's HotpotQA files (../shared/eval)")
def test_the_unified_files_are_what_hotpotqa_records_give(tmp_path: Path) -> None:
    """Written back as HotpotQA records, the questions of the published tables read as they
    were measured: the same gold passages and the same has_answer, so ``--ids`` over HotpotQA's
    own dev files rebuilds them (texts may differ in spacing, as the files that were measured
    were redistributed by others)."""
    docs = Path(__file__).resolve().parents[3] / "docs" / "eval"
    for setting in ("distractor", "fullwiki"):
        unified = load_dataset(SHARED / f"hotpotqa_{setting}.unified.jsonl")
        ids = (docs / f"hotpotqa_{setting}.ids").read_text().split()
        assert ids == [q.id for q in unified]
        records = [
            {
                "_id": q.id,
                "question": q.question,
                "answer": q.answers[0] if q.answers else "",
                "type": q.type,
                "supporting_facts": [
                    [p.title, p.sentences.index(s)] for p in q.passages for s in p.supporting
                ],
                "context": [[p.title, list(p.sentences)] for p in q.passages],
            }
            for q in unified
        ]
        path = tmp_path / f"hotpot_dev_{setting}_v1.json"
        path.write_text(json.dumps(records))
        rebuilt = select_ids(load_dataset(path), ids, "ids")
        for before, after in zip(unified, rebuilt, strict=True):
            assert after.gold_pids == before.gold_pids
            assert [p.has_answer for p in after.passages] == [p.has_answer for p in before.passages]
