"""HotpotQA's own files read as evaluation data, so that the published tables can be rebuilt.

The dataset's site gives the dev sets as one JSON array each (``hotpot_dev_distractor_v1.json``,
``hotpot_dev_fullwiki_v1.json``), whose records are::

    {"_id", "question", "answer", "type", "level",
     "supporting_facts": [[title, sentence index], ...],
     "context": [[title, [sentence, ...]], ...]}

Each record becomes one question of the unified format (see
:mod:`ctxasm.evaluation.dataset`): a passage per context paragraph, in the file's order (its
text the sentences joined as they are: HotpotQA keeps the space before each), gold where the
supporting facts name its title, holding the answer where the answer's normalised words occur
as whole words in its normalised text (HotpotQA's own normalisation: lower case, no punctuation,
no articles; ``null`` for yes/no answers, which no text holds; this gives the ``has_answer`` of
every passage of the unified files the tables were measured on).
:func:`ctxasm.evaluation.dataset.load_dataset` reads such a file, and
:func:`ctxasm.evaluation.dataset.select_ids` keeps the questions a list of ids names
(``docs/eval/`` lists those of the tables).
"""

from __future__ import annotations

import re
import string
from typing import Any

from ctxasm.errors import RequestError

__all__ = ["looks_like_hotpotqa", "unified_records"]

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def looks_like_hotpotqa(head: bytes) -> bool:
    """Whether a file that starts with ``head`` is a JSON array (HotpotQA's own files are;
    the unified format is one object per line)."""
    return head.lstrip(b" \t\r\n\xef\xbb\xbf").startswith(b"[")


def unified_records(records: Any, name: str) -> list[dict[str, Any]]:
    """HotpotQA's ``records`` (the file's decoded JSON) as records of the unified format, for
    :func:`ctxasm.evaluation.dataset.parse_question`; a malformed record is a
    :class:`~ctxasm.errors.RequestError` naming it (``name[index].field``)."""
    if not isinstance(records, list):
        raise RequestError(f"{name} must be a JSON array of HotpotQA records", field="dataset")
    return [_unified(record, f"{name}[{index}]") for index, record in enumerate(records)]


def _unified(record: Any, where: str) -> dict[str, Any]:
    """One HotpotQA record as a record of the unified format."""
    if not isinstance(record, dict):
        raise RequestError(f"{where} must be an object", field=where)
    qid = _need(record, "_id", str, where)
    answer = _need(record, "answer", str, where)
    context = _need(record, "context", list, where)
    facts = _need(record, "supporting_facts", list, where)
    for fact in facts:
        if not (
            isinstance(fact, list)
            and len(fact) == 2
            and isinstance(fact[0], str)
            and type(fact[1]) is int
        ):
            at = f"{where}.supporting_facts"
            raise RequestError(f"{at} entries must be [title, sentence index]", field=at)
    gold_titles = {fact[0] for fact in facts}
    wanted: str | None = _normalised(answer)
    if wanted in ("yes", "no"):
        wanted = None  # no text holds a yes or a no
    passages = []
    for number, paragraph in enumerate(context):
        at = f"{where}.context[{number}]"
        if (
            not isinstance(paragraph, list)
            or len(paragraph) != 2
            or not isinstance(paragraph[0], str)
            or not isinstance(paragraph[1], list)
            or not all(isinstance(s, str) for s in paragraph[1])
        ):
            raise RequestError(f"{at} must be [title, [sentence, ...]]", field=at)
        title, sentences = paragraph
        text = "".join(sentences)
        # (an answer of only marks and articles is held by none)
        holds = (
            None if wanted is None else bool(wanted) and f" {wanted} " in f" {_normalised(text)} "
        )
        passages.append(
            {
                "pid": f"{qid}#{number}",
                "title": title,
                "text": text,
                "sentences": sentences,
                "is_gold": title in gold_titles,
                "has_answer": holds,
            }
        )
    titles = {p["title"] for p in passages}
    return {
        "id": qid,
        "question": _need(record, "question", str, where),
        "answers": [answer] if answer.strip() else [],
        "passages": passages,
        "gold_pids": [p["pid"] for p in passages if p["is_gold"]],
        "meta": {
            "dataset": "hotpotqa",
            "type": record.get("type") if isinstance(record.get("type"), str) else None,
            "supporting_facts": facts,
            "all_gold_in_candidates": gold_titles <= titles,
        },
    }


def _need(record: dict[str, Any], key: str, kind: type[str] | type[list[Any]], where: str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind):
        what = "a string" if kind is str else "a list"
        raise RequestError(f"{where}.{key} must be {what}", field=f"{where}.{key}")
    return value


def _normalised(text: str) -> str:
    """HotpotQA's answer normalisation: lower case, punctuation and articles removed, white
    space single."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())
