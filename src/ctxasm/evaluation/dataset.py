"""Loading QA datasets in the unified format of the evaluation data.

One JSON object per line::

    {"id", "question", "answers": [...],
     "passages": [{"pid", "title", "text", "sentences"?, "is_gold", "has_answer"}],
     "gold_pids": [...],
     "meta": {"type"?, "all_gold_in_candidates"?, "supporting_facts"?: [[title, index], ...]}}

A malformed line is a :class:`~ctxasm.errors.RequestError` naming the line and the field. A
file is read a line at a time, each line at most :data:`MAX_LINE_BYTES` and the whole at most
:data:`MAX_DATASET_BYTES` (a :class:`~ctxasm.errors.RequestTooLargeError` beyond).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ctxasm.errors import CtxasmError, RequestError, RequestTooLargeError
from ctxasm.evaluation.hotpotqa import looks_like_hotpotqa, unified_records
from ctxasm.files import TooLargeError, read_bounded, write_atomic
from ctxasm.jsonio import decode_json

__all__ = [
    "MAX_DATASET_BYTES",
    "MAX_LINE_BYTES",
    "EvalPassage",
    "EvalQuestion",
    "load_dataset",
    "read_dataset",
    "select_ids",
    "write_dataset",
]

# The most a dataset file may hold, and one line of it (one question and its candidates, read
# as a request is, at most --max-bytes' default). HotpotQA's dev sets in the unified format
# are tens of MB; a file far larger is no dataset, and /dev/zero given by mistake filled the
# memory.
MAX_DATASET_BYTES = 1024 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class EvalPassage:
    """A candidate passage with its gold labels."""

    pid: str
    title: str
    text: str
    is_gold: bool
    has_answer: bool | None
    # The supporting sentences of a gold passage (empty when the data names none).
    supporting: tuple[str, ...] = ()
    # The data's sentence split of ``text`` (empty when it gives none).
    sentences: tuple[str, ...] = ()
    # A retriever's score, attached by :func:`~ctxasm.evaluation.attach_scores` (None: none).
    score: float | None = None

    def request_passage(self) -> dict[str, Any]:
        """The passage as the assembler sees it: no labels; its score when one is attached."""
        passage: dict[str, Any] = {"id": self.pid, "title": self.title, "text": self.text}
        if self.score is not None:
            passage["score"] = self.score
        return passage

    def to_record(self) -> dict[str, Any]:
        """The passage in the unified format (scores are not part of it)."""
        record: dict[str, Any] = {"pid": self.pid, "title": self.title, "text": self.text}
        if self.sentences:
            record["sentences"] = list(self.sentences)
        record["is_gold"] = self.is_gold
        record["has_answer"] = self.has_answer
        return record


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """One question, its answers and candidates."""

    id: str
    question: str
    answers: tuple[str, ...]
    passages: tuple[EvalPassage, ...]
    gold_pids: tuple[str, ...]
    type: str
    all_gold_in_candidates: bool

    @property
    def has_sentence_labels(self) -> bool:
        return any(p.supporting for p in self.passages if p.is_gold)

    def to_record(self) -> dict[str, Any]:
        """The question in the unified format: :func:`parse_question` reads it back equal
        (less attached scores)."""
        facts = [
            [p.title, index]
            for p in self.passages
            if p.is_gold and p.supporting
            for index, sentence in enumerate(p.sentences)
            if sentence in p.supporting
        ]
        return {
            "id": self.id,
            "question": self.question,
            "answers": list(self.answers),
            "passages": [p.to_record() for p in self.passages],
            "gold_pids": list(self.gold_pids),
            "meta": {
                "type": self.type,
                "all_gold_in_candidates": self.all_gold_in_candidates,
                "supporting_facts": facts,
            },
        }


def _need(record: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RequestError(f"{where}.{key} must be a {names}", field=f"{where}.{key}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RequestError(f"{where} must be a list of strings", field=where)
    return tuple(value)


def parse_question(record: Any, where: str = "line") -> EvalQuestion:
    """One dataset record, checked."""
    if not isinstance(record, dict):
        raise RequestError(f"{where} must be a JSON object", field=where)
    qid = str(_need(record, "id", (str, int), where))
    question = _need(record, "question", str, where)
    answers = _strings(record.get("answers", []), f"{where}.answers")
    for index, answer in enumerate(answers):
        if not answer.strip():  # every prompt contains it: answer recall would read 100%
            raise RequestError(
                f"{where}.answers[{index}] is blank; give the answer's text, or no answers",
                field=f"{where}.answers[{index}]",
            )
    meta = record.get("meta", {})
    if not isinstance(meta, dict):
        raise RequestError(f"{where}.meta must be an object", field=f"{where}.meta")
    support = _supporting_facts(meta, where)
    raw_passages = _need(record, "passages", list, where)
    gold = set(_strings(record.get("gold_pids", []), f"{where}.gold_pids"))
    passages = [
        _passage(raw, f"{where}.passages[{index}]", gold, support)
        for index, raw in enumerate(raw_passages)
    ]
    if not gold:
        gold = {p.pid for p in passages if p.is_gold}
    pids = {p.pid for p in passages}
    all_gold = _flag(meta, "all_gold_in_candidates", gold <= pids, where)
    if all_gold and not gold <= pids:  # the gold rates would count a question none can pass
        missing = sorted(gold - pids)[0]
        raise RequestError(
            f"{where}.meta.all_gold_in_candidates is true, but the gold passage {missing!r} is "
            "not among its passages",
            field=f"{where}.meta.all_gold_in_candidates",
        )
    return EvalQuestion(
        id=qid,
        question=question,
        answers=answers,
        passages=tuple(passages),
        gold_pids=tuple(sorted(gold)),
        type=str(meta.get("type") or "unknown"),
        all_gold_in_candidates=all_gold,
    )


def _supporting_facts(meta: Mapping[str, Any], where: str) -> dict[str, set[int]]:
    """``meta.supporting_facts`` (``[title, sentence index]`` pairs) as sentence indices per
    title."""
    support: dict[str, set[int]] = {}
    facts = meta.get("supporting_facts", [])
    if facts is None:
        facts = []
    if not isinstance(facts, list):
        raise RequestError(
            f"{where}.meta.supporting_facts must be a list", field=f"{where}.meta.supporting_facts"
        )
    for fact in facts:
        if (
            not isinstance(fact, list)
            or len(fact) != 2
            or not isinstance(fact[0], str)
            or not isinstance(fact[1], int)
        ):
            raise RequestError(
                f"{where}.meta.supporting_facts entries must be [title, sentence index]",
                field=f"{where}.meta.supporting_facts",
            )
        support.setdefault(fact[0], set()).add(fact[1])
    return support


def _passage(raw: Any, at: str, gold: set[str], support: Mapping[str, set[int]]) -> EvalPassage:
    """One candidate passage of a record, checked, with its supporting sentences when gold."""
    if not isinstance(raw, dict):
        raise RequestError(f"{at} must be an object", field=at)
    pid = str(_need(raw, "pid", (str, int), at))
    title = raw.get("title") or ""
    text = _need(raw, "text", str, at)
    if not isinstance(title, str):
        raise RequestError(f"{at}.title must be a string", field=f"{at}.title")
    is_gold = raw.get("is_gold", pid in gold)
    if not isinstance(is_gold, bool):
        raise RequestError(f"{at}.is_gold must be true or false", field=f"{at}.is_gold")
    has_answer = raw.get("has_answer")
    if has_answer is not None and not isinstance(has_answer, bool):
        raise RequestError(f"{at}.has_answer must be true, false or null", field=f"{at}.has_answer")
    sentences = raw.get("sentences")
    split: tuple[str, ...] = ()
    if sentences is not None:
        split = _strings(sentences, f"{at}.sentences")
    supporting: tuple[str, ...] = ()
    if is_gold and title in support:
        supporting = tuple(split[i] for i in sorted(support[title]) if 0 <= i < len(split))
    return EvalPassage(pid, title, text, is_gold, has_answer, supporting, split)


def _flag(meta: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = meta.get(key, default)
    if not isinstance(value, bool):
        raise RequestError(f"{where}.meta.{key} must be true or false", field=f"{where}.meta.{key}")
    return value


def read_dataset(lines: Sequence[str] | Iterator[str], name: str = "dataset") -> list[EvalQuestion]:
    """Questions from JSONL lines (blank lines are skipped)."""
    return _each_once(_read_lines(lines, name), name)


def _read_lines(
    lines: Sequence[str] | Iterator[str], name: str
) -> Iterator[tuple[EvalQuestion, str]]:
    """The question of each line that is not blank, with where it was read (``line N``)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            # read as requests are: a repeated key, NaN, nesting over 64 levels and a lone
            # surrogate are refused here, by line, not where the question is used or written
            record = decode_json(line.encode("utf-8", "surrogatepass"), what="line")
        except CtxasmError as error:
            raise RequestError(
                f"{name} line {number} is not JSON: {error.message}", field=f"line {number}"
            ) from None
        yield parse_question(record, f"line {number}"), f"line {number}"


def _each_once(questions: Iterable[tuple[EvalQuestion, str]], name: str) -> list[EvalQuestion]:
    """The ``questions`` (each with where it was read), refused where two share an id (results
    and saved subsets are joined back by id) or where there is none."""
    found: list[EvalQuestion] = []
    seen: dict[str, str] = {}  # question id -> where it was first read
    for question, where in questions:
        earlier = seen.setdefault(question.id, where)
        if earlier != where:
            raise RequestError(
                f"{where}.id {question.id[:80]!r} of {name} is the id of {earlier} too; each "
                "question needs its own",
                field=f"{where}.id",
            )
        found.append(question)
    if not found:
        raise RequestError(f"{name} has no questions", field="dataset")
    return found


def load_dataset(path: str | Path, limit: int | None = None) -> list[EvalQuestion]:
    """Questions from a JSONL file, read a line at a time (see :data:`MAX_DATASET_BYTES`), or
    from one of HotpotQA's own files (a JSON array, see :mod:`ctxasm.evaluation.hotpotqa`);
    ``limit`` keeps the first ones."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            if looks_like_hotpotqa(handle.peek(4096)):
                records = unified_records(_whole_json(handle, path), path.name)
                questions = _each_once(
                    (
                        (parse_question(record, f"{path.name}[{index}]"), f"{path.name}[{index}]")
                        for index, record in enumerate(records)
                    ),
                    path.name,
                )
            else:
                questions = read_dataset(_lines(handle, path), path.name)
    except OSError as exc:
        raise RequestError(f"cannot read {path}: {exc.strerror}", field="dataset") from None
    return questions[:limit] if limit is not None else questions


def select_ids(
    questions: Sequence[EvalQuestion], ids: Sequence[str], name: str
) -> list[EvalQuestion]:
    """The ``questions`` whose ids ``ids`` lists (one a line; blank lines skipped), in its
    order, each once; every id must be among them."""
    by_id = {question.id: question for question in questions}
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    if not wanted:
        raise RequestError(f"{name} lists no ids", field="ids")
    missing = [i for i in wanted if i not in by_id]
    if missing:
        raise RequestError(
            f"{len(missing)} of the {len(wanted)} ids of {name} are not in the dataset, "
            f"the first {missing[0][:80]!r}",
            field="ids",
        )
    return [by_id[i] for i in wanted]


def _whole_json(handle: BinaryIO, path: Path) -> Any:
    """The JSON value of all of ``handle`` (see :func:`ctxasm.files.read_bounded`: at most
    :data:`MAX_DATASET_BYTES`, a regular file by its size before it is read)."""
    try:
        data = read_bounded(handle, MAX_DATASET_BYTES)
    except TooLargeError as exc:
        how = "it holds" if exc.size is None else f"it is {exc.size:,} bytes,"
        raise _too_large(path, f"{how} more than {MAX_DATASET_BYTES:,} bytes") from None
    try:
        return decode_json(data, what="file")
    except CtxasmError as error:
        raise RequestError(f"{path.name} is not JSON: {error.message}", field="dataset") from None


def _lines(handle: BinaryIO, path: Path) -> Iterator[str]:
    """The lines of ``handle`` as text, as they are read, ended by LF, CRLF or a lone CR (JSON
    holds no raw CR, and an old file may end its lines so); a :class:`RequestTooLargeError`
    for a line over :data:`MAX_LINE_BYTES` or a file over :data:`MAX_DATASET_BYTES` (a
    regular file by its size, before a line is read)."""
    status = os.fstat(handle.fileno())
    if stat.S_ISREG(status.st_mode) and status.st_size > MAX_DATASET_BYTES:
        raise _too_large(path, f"it is {status.st_size:,} bytes, more than {MAX_DATASET_BYTES:,}")
    total = 0
    number = 0
    while line := handle.readline(MAX_LINE_BYTES + 1):
        total += len(line)
        if total > MAX_DATASET_BYTES:  # a device or a pipe that does not end
            raise _too_large(path, f"it holds more than {MAX_DATASET_BYTES:,} bytes")
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise RequestTooLargeError(
                f"{path} line {number + 1} holds more than {MAX_LINE_BYTES:,} bytes; no "
                "question with its candidates is that long",
                field=f"line {number + 1}",
            )
        if line.endswith(b"\r\n"):
            line = line[:-2]
        for piece in line.split(b"\r") if b"\r" in line else (line,):
            number += 1
            try:
                yield piece.decode("utf-8")
            except UnicodeDecodeError:
                raise RequestError(
                    f"{path} line {number} is not UTF-8 text", field=f"line {number}"
                ) from None


def _too_large(path: Path, how: str) -> RequestTooLargeError:
    return RequestTooLargeError(f"{path} is too large to be a dataset: {how}", field="dataset")


def write_dataset(questions: Sequence[EvalQuestion], path: str | Path) -> None:
    """Write ``questions`` to ``path`` as JSONL in the unified format (UTF-8), so
    :func:`load_dataset` reads them back (attached scores are not written)."""
    path = Path(path)
    data = "".join(
        json.dumps(question.to_record(), ensure_ascii=False) + "\n" for question in questions
    ).encode("utf-8")
    try:
        write_atomic(path, data)  # whole or not at all: a full disk keeps the old file
    except OSError as exc:
        raise RequestError(f"cannot write {path}: {exc.strerror}", field="output") from None
