"""Hand-made records in the unified format, for the tests of the chained subsets (composed and
co-mention): passages given sentence by sentence, questions that only carry them."""

from __future__ import annotations

import json
from typing import Any

from ctxasm.evaluation import EvalQuestion, read_dataset

# Arguments of a subset builder that are no counts, and the field each names.
NOT_COUNTS: list[tuple[str, Any]] = [
    ("candidates", 4.5),
    ("candidates", "20"),
    ("candidates", None),
    ("candidates", True),
    ("per_hops", 1.5),
    ("per_hops", True),
    ("seed", "x"),
    ("seed", -1),
    ("seed", None),
    ("seed", 1.5),
]


def passage(pid: str, title: str, *sentences: str) -> dict[str, Any]:
    return {
        "pid": pid,
        "title": title,
        "text": " ".join(sentences),
        "sentences": list(sentences),
        "is_gold": False,
        "has_answer": False,
    }


def record(qid: str, *passages: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": f"Question {qid}?",
        "answers": ["unused"],
        "passages": list(passages),
        "meta": {"type": "bridge"},
    }


def read(*records: dict[str, Any]) -> list[EvalQuestion]:
    return read_dataset([json.dumps(r) for r in records])
