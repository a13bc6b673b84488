"""Unbroken runs of text (issue 10, item 2): bounded work per text, exclusion of one passage."""

from __future__ import annotations

import random

import pytest

import ctxasm
from ctxasm.errors import UntokenizableError
from ctxasm.store.chunking import chunk_text, count_tokens, run_cuts
from ctxasm.tokens import _COUNTERS, TokenCounter, get_counter
from ctxasm.tokens.runs import MAX_RUN_CHARS, LongRun, find_long_run
from ctxasm.tokens.tiktoken_source import TiktokenTokenizer

N = MAX_RUN_CHARS
PAIRS = N // 2 + 100  # two characters each: a run of N + 200
LIMIT = f"at most {N:,} can be tokenized in linear time"
GOOD = {"id": "good", "text": "Aristotle taught at the Lyceum in Athens.", "score": 0.5}
QUERY = "Where did Aristotle teach?"


def _cjk(n: int) -> str:
    rnd = random.Random(n)
    return "".join(chr(0x4E00 + rnd.randrange(2000)) for _ in range(n))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a" * N, None),
        ("a" * (N + 1), LongRun(0, N + 1, "letter-like")),
        ("x " + "\n" * (N + 500) + " y", LongRun(1, N + 502, "white-space")),
        ("ok " + "!" * 2 * N, LongRun(3, 2 * N, "symbol-like")),
        ("ก\u0e31" * PAIRS, LongRun(0, 2 * PAIRS, "letter-like")),  # Thai letters and marks
        ("!\x1c" * PAIRS, LongRun(0, 2 * PAIRS, "symbol-like")),  # \x1c is not white space to BPE
        ("!\U00031350" * PAIRS, LongRun(0, 2 * PAIRS, "symbol-like")),  # unassigned in 3.2
        # symbols in Unicode 3.2, letters or marks now: one pre-token to o200k and cl100k
        ("a\u02c8" * PAIRS, LongRun(0, 2 * PAIRS, "letter-like")),
        ("x\u2132" * PAIRS, LongRun(0, 2 * PAIRS, "letter-like")),
        ("!\u1885" * PAIRS, LongRun(0, 2 * PAIRS, "symbol-like")),
        ("。".join([_cjk(N - 1)] * 5), None),  # Chinese prose: punctuation breaks the runs
        ("/".join(["https://example.org/path"] * 100), None),  # long url, short pieces
        # o200k lets slashes and line breaks, in any mix, follow symbols in one pre-token:
        # neither the symbols nor the white space run long, and its merge grew faster than
        # the text (review)
        ("x!" + "////\n" * PAIRS, LongRun(2, 5 * PAIRS, "slash and line-break")),
        ("x!" + "/\r\n" * PAIRS, LongRun(2, 3 * PAIRS, "slash and line-break")),
        ("x!" + "/\n" * (N // 2), None),
    ],
)
def test_long_runs_are_found_by_kind(text: str, expected: LongRun | None) -> None:
    assert find_long_run(text) == expected


def test_counts_of_texts_within_the_bound_are_unchanged() -> None:
    counter = TokenCounter(TiktokenTokenizer("o200k_base"))
    text = " ".join(["a" * MAX_RUN_CHARS, _cjk(MAX_RUN_CHARS), "!" * MAX_RUN_CHARS])
    assert counter.count(text) == TiktokenTokenizer("o200k_base").count(text)


def test_the_counter_refuses_a_long_run_before_tokenizing() -> None:
    counter = TokenCounter(TiktokenTokenizer("o200k_base"))
    with pytest.raises(UntokenizableError) as caught:
        counter.count("b" * 1_000_000)
    assert caught.value.message == (
        f"the text has 1,000,000 letter-like characters without a break from character 0 ({LIMIT})"
    )
    with pytest.raises(UntokenizableError):
        counter.count_upto("b" * (N + 1), 10)


class _Panic(BaseException):
    """Stands for pyo3's PanicException, which is not an Exception."""


class _PanickyTokenizer:
    """o200k, except that it panics on any text holding the word PANIC."""

    name = "tiktoken:o200k_base"
    exact = True

    def __init__(self) -> None:
        self.inner = TiktokenTokenizer("o200k_base")
        self.splits_before_fence = True

    def count(self, text: str) -> int:
        if "PANIC" in text:
            raise _Panic("called `Result::unwrap()` on an `Err` value")
        return self.inner.count(text)

    def lower_bound(self, text: str) -> int:
        return self.inner.lower_bound(text)


def test_a_tokenizer_panic_becomes_an_error_but_interrupts_pass() -> None:
    counter = TokenCounter(_PanickyTokenizer())
    with pytest.raises(UntokenizableError) as caught:
        counter.count("PANIC now")
    assert caught.value.message == (
        "the tiktoken:o200k_base tokenizer failed on a text of 9 characters (_Panic)"
    )

    class _Interrupting(_PanickyTokenizer):
        def count(self, text: str) -> int:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        TokenCounter(_Interrupting()).count("anything")


def test_a_panic_on_one_passage_excludes_only_that_passage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(_COUNTERS, "tiktoken:o200k_base", TokenCounter(_PanickyTokenizer()))
    bad = {"id": "bad", "text": "Aristotle PANIC taught", "score": 0.9}
    result = ctxasm.Assembler().assemble(query=QUERY, passages=[GOOD, bad], model="gpt-4o")
    assert [p.id for p in result.report.included] == ["good"]
    assert [
        (e.candidate_id, e.stage, e.reason.value, e.detail) for e in result.report.excluded
    ] == [
        (
            "bad",
            "selection",
            "untokenizable",
            "cannot be counted: the tiktoken:o200k_base tokenizer failed on a text of "
            "27 characters (_Panic)",
        )
    ]


@pytest.mark.parametrize(
    ("passage", "detail"),
    [
        (
            {"id": "bad", "text": "Aristotle " + "a" * 200_000, "score": 0.9},
            "its text has 200,000 letter-like characters without a break from character 10",
        ),
        (
            {"id": "bad", "text": "Aristotle " + _cjk(200_000), "score": 0.9},
            "its text has 200,000 letter-like characters without a break from character 10",
        ),
        (
            {"id": "bad", "text": "Aristotle " + "\n" * 1_000_000 + "x", "score": 0.9},
            "its text has 1,000,001 white-space characters without a break from character 9",
        ),
        (
            {"id": "bad", "text": "Aristotle taught.", "title": "T" * 5 * N, "score": 0.9},
            f"its title has {5 * N:,} letter-like characters without a break from character 0",
        ),
    ],
)
def test_a_passage_with_a_long_run_is_excluded_not_the_request(
    passage: dict[str, object], detail: str
) -> None:
    result = ctxasm.assemble(QUERY, [GOOD, passage], model="gpt-4o")
    assert [p.id for p in result.report.included] == ["good"]
    assert [
        (e.candidate_id, e.stage, e.reason.value, e.detail) for e in result.report.excluded
    ] == [
        (
            "bad",
            "selection",
            "untokenizable",
            f"cannot be counted: {detail} ({LIMIT})",
        )
    ]


def test_a_long_id_is_named_where_the_header_shows_it() -> None:
    # The header shows the id of a passage with neither title nor url; the detail blamed the
    # text ("the text has ... from character 21"), which was fine. The header is what is
    # scanned, as rendered.
    long_id = "d" * 100_000
    alone = {"id": long_id, "text": "Aristotle taught Alexander.", "score": 0.9}
    result = ctxasm.assemble(QUERY, [GOOD, alone], model="gpt-4o")
    header = "cannot be counted: its header (the title, url or id it shows) has 100,000 "
    expected = [(long_id, True)]
    assert [(e.candidate_id, e.detail.startswith(header)) for e in result.report.excluded] == (
        expected
    )
    # a url the header does not show (javascript:) leaves the id shown too (review O)
    hidden = {**alone, "url": "javascript:alert(1)"}
    result = ctxasm.assemble(QUERY, [GOOD, hidden], model="gpt-4o")
    assert [(e.candidate_id, e.detail.startswith(header)) for e in result.report.excluded] == (
        expected
    )
    # a url of 7,999 symbols shown beside its brackets: a run only the header has (review P)
    joined = {"id": "u", "text": "Aristotle taught.", "url": "https://x.org/" + "!" * (N - 1)}
    result = ctxasm.assemble(QUERY, [GOOD, joined], model="gpt-4o")
    assert [e.detail.startswith(header[:63]) for e in result.report.excluded] == [True]
    titled = {**alone, "title": "Aristotle"}  # the header shows the title, not the id
    result = ctxasm.assemble(QUERY, [GOOD, titled], model="gpt-4o")
    assert sorted(p.id for p in result.report.included) == sorted(["good", long_id])


def test_a_long_id_a_template_may_show_excludes_its_passage_not_the_request() -> None:
    # The standard header hides the id of a titled passage, so selection kept it; the
    # template wrote it, and the whole request failed when the prompt was counted (review P).
    long_id = "d" * (N + 1000)
    titled = {"id": long_id, "title": "Aristotle", "text": "Aristotle taught.", "score": 0.9}
    template = "{% for s in sources %}{{ s.id }}: {{ s.fenced }}\n{% endfor %}Q: {{ query }}"
    result = ctxasm.assemble(QUERY, [GOOD, titled], format="template", template=template)
    assert [p.id for p in result.report.included] == ["good"]
    assert [e.detail.split(" has ")[0] for e in result.report.excluded] == [
        "cannot be counted: its id (which the template may show)"
    ]


def test_a_long_run_over_the_budget_is_over_budget_first() -> None:
    bad = {"id": "bad", "text": "a" * 1_000_000, "score": 0.9}
    result = ctxasm.assemble(QUERY, [GOOD, bad], model="gpt-4o", max_context_tokens=500)
    assert [(e.candidate_id, e.reason.value) for e in result.report.excluded] == [
        ("bad", "over_budget")
    ]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"query": "q" * 5 * N}, "query"),
        ({"system_prompt": "Be brief. " + "!" * 3 * N}, "system_prompt"),
        (
            {
                "history": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "中" * 2 * N},
                ]
            },
            "history[1].content",
        ),
    ],
)
def test_a_long_run_outside_the_passages_is_a_request_error(
    fields: dict[str, object], field: str
) -> None:
    request = {"query": QUERY, "passages": [GOOD], "model": "gpt-4o", **fields}
    with pytest.raises(UntokenizableError) as caught:
        ctxasm.assemble(**request)
    assert caught.value.field == field
    assert caught.value.code == "untokenizable"
    assert caught.value.message.startswith(f"{field} cannot be counted: the text has ")


def test_chunks_of_a_document_with_a_long_run_are_cut_inside_it() -> None:
    text = "Intro sentence. " + "z" * (2 * N + 500) + " Outro sentence."
    cuts = [16 + N, 16 + 2 * N]
    assert run_cuts(text) == cuts
    chunks = chunk_text(text, 4 * N, 8)
    assert [(c.start, c.end) for c in chunks] == [
        (0, cuts[0]),
        (cuts[0], cuts[1]),
        (cuts[1], len(text)),
    ]
    small = chunk_text(text, 64, 8)
    assert set(cuts) <= {c.start for c in small}
    chunks += small
    assert all(c.text == text[c.start : c.end] for c in chunks)
    assert all(find_long_run(c.text) is None for c in chunks)


def test_document_tokens_are_counted_linearly_and_exactly_without_runs() -> None:
    counter = get_counter("tiktoken:o200k_base")
    prose = "Aristotle taught at the Lyceum. " * 100
    assert count_tokens(prose, counter) == counter.count(prose)
    assert count_tokens("a" * 250 * N, counter) == 250 * counter.count("a" * N)


def test_slashes_and_line_breaks_bound_only_the_encodings_that_join_them() -> None:
    # o200k joins "{" and every "//" and line break after it into one piece; cl100k cuts at
    # each line break, so the same block of empty comment lines was wrongly refused there.
    import tiktoken

    text = "int main() {\n" + "//\n" * 3000
    assert get_counter("tiktoken:cl100k_base").count(text) == len(
        tiktoken.get_encoding("cl100k_base").encode_ordinary(text)
    )
    with pytest.raises(UntokenizableError, match="slash and line-break characters"):
        get_counter("tiktoken:o200k_base").count(text)
