"""Counting long texts in two halves at a newline-backtick seam gives the exact count."""

from __future__ import annotations

from functools import cache
from typing import Any

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.tokens import TiktokenTokenizer, TokenCounter, make_tokenizer
from ctxasm.tokens.estimate import EstimateTokenizer

PIECES = st.sampled_from(
    [
        " ",
        "\n",
        "\n\n",
        "  ",
        "\t",
        "`",
        "```",
        "````",
        "/",
        "\n/",
        "a",
        "Word",
        "12345",
        ".",
        "'s",
        "é",
        "東京",
        "\r\n",
        ":",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(PIECES, max_size=40).map("".join),
    st.lists(PIECES, max_size=40).map("".join),
    st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_counts_add_up_across_a_newline_backtick_seam(head: str, tail: str, name: str) -> None:
    encoding = tiktoken.get_encoding(name)
    left, right = head + "\n", "`" + tail
    whole = len(encoding.encode_ordinary(left + right))
    assert whole == len(encoding.encode_ordinary(left)) + len(encoding.encode_ordinary(right))


def test_a_block_is_recounted_from_its_cached_segments_and_stays_exact() -> None:
    counter = TokenCounter(TiktokenTokenizer("o200k_base"))
    passage = "Aristotle taught at the Lyceum.\n" * 120
    body = f"```\n{passage}\n"
    block = f"Sources:\n\n[Source 1] (id: a)\n{body}```"
    message = block + "\n\nQuestion: where did he teach?"
    encoding = tiktoken.get_encoding("o200k_base")
    assert counter.count(body) == len(encoding.encode_ordinary(body))
    entries = len(counter)
    assert counter.count(block) == len(encoding.encode_ordinary(block))
    assert counter.count(message) == len(encoding.encode_ordinary(message))
    # the body was cached when priced: only the header, the two endings and the two totals are new
    assert len(counter) == entries + 5


WORDY = st.sampled_from(
    [
        " ",
        "  ",
        "\n",
        "\t",
        "a",
        "Word",
        "Lyceum",
        "12345",
        ".",
        ",",
        "'s",
        "é",
        "東京",
        "\xa0",
        "`",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(WORDY, max_size=300).map("".join),
    st.integers(min_value=0, max_value=80),
    st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_count_upto_is_exact_within_the_limit_and_a_lower_bound_above(
    text: str, limit: int, name: str
) -> None:
    exact = len(tiktoken.get_encoding(name).encode_ordinary(text))
    counted = TiktokenTokenizer(name).count_upto(text, limit)
    if exact <= limit:
        assert counted == exact
    else:
        assert limit < counted <= exact


def test_a_block_of_thousands_of_passages_is_counted_without_deep_recursion() -> None:
    counter = TokenCounter(TiktokenTokenizer("o200k_base"))
    block = "".join(f"[Source {i}] (id: p{i})\n```\nText {i}.\n```\n\n" for i in range(5000))
    assert counter.count(block) == len(tiktoken.get_encoding("o200k_base").encode_ordinary(block))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(WORDY, max_size=120).map("".join),
    st.lists(WORDY, max_size=60).map("".join),
    st.lists(WORDY, max_size=60).map("".join),
    st.sampled_from(["prefix", "suffix", "unrelated"]),
    st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_count_edited_equals_a_fresh_count(
    shared: str, before: str, after: str, how: str, name: str
) -> None:
    encoding = tiktoken.get_encoding(name)
    if how == "prefix":  # a window grown to the right
        old, new = "```\n" + shared + before + "\n", "```\n" + shared + after + "\n"
    elif how == "suffix":  # grown to the left
        old, new = "```\n" + before + shared + "\n", "```\n" + after + shared + "\n"
    else:
        old, new = before + "\n", after + shared
    counter = TokenCounter(TiktokenTokenizer(name))
    counter.count(old)
    assert counter.count_edited(old, new) == len(encoding.encode_ordinary(new))
    assert counter.count(new) == len(encoding.encode_ordinary(new))  # what it cached is exact


@settings(max_examples=200, deadline=None)
@given(
    st.lists(WORDY, max_size=120).map("".join),
    st.lists(WORDY, max_size=60).map("".join),
    st.lists(WORDY, max_size=60).map("".join),
    st.sampled_from([1.1, 1.2, 1.3]),
)
def test_an_estimate_counts_an_edited_text_as_a_fresh_count(
    shared: str, before: str, after: str, factor: float
) -> None:
    # Estimates (Claude, Gemini) recounted a whole grown text for every edit: the builder's
    # context took time growing with the square of its items.
    old, new = shared + before + "\n", shared + after + "\n"
    counter = TokenCounter(EstimateTokenizer(TiktokenTokenizer("o200k_base"), factor))
    fresh = EstimateTokenizer(TiktokenTokenizer("o200k_base"), factor).count(new)
    counter.count(old)
    assert counter.count_edited(old, new) == fresh
    assert counter.count(new) == fresh


class _Chars:
    """A tokenizer that does not split at spaces by contract (one token per character)."""

    name, exact = "chars", True

    def count(self, text: str) -> int:
        return len(text)

    def lower_bound(self, text: str) -> int:
        return 0


# Text with and without spaces between lines: a character after a newline is a seam too (but
# "/", which o200k's punctuation piece takes after newlines, and white space).
GROWN = st.one_of(
    PIECES,
    st.sampled_from(["多瑙河流入黑海。", "\n東", "\nWord", "Ж\n", "\nж", "\n\nab"]),
    st.sampled_from(
        ['\n\n{"k":12}', "\n123", "」\n「", "\n/x", "!\n/", "\n's", "\n\u0301", "\r\n"]
    ),
    # what SentencePiece reads as spaces, or joins to them: "\u2581" itself, runs of spaces
    # after it, its user-defined symbols and control words written as text
    st.sampled_from(["\u2581", " \u2581", "x\u2581 ", "\u2581  y", "[REF]", "[INST] ", "\u3000 "]),
)


@cache
def _pinned(name: str) -> Any:
    return make_tokenizer(f"pinned:{name}")  # loaded once: its file is read on first count


KINDS = [
    "o200k_base",
    "cl100k_base",
    "estimate",
    "chars",
    "llama-3",
    "qwen3",
    "mistral-tekken",
    "mistral-v1",
    "mistral-v3",
    "mistral-v7",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(GROWN, max_size=12).map("".join), max_size=12), st.sampled_from(KINDS))
def test_a_growing_count_equals_a_fresh_count_of_the_whole_text(
    pieces: list[str], kind: str
) -> None:
    # The builder's context: each piece is tried, then appended; trying tokenizes only what
    # follows the last seam (a space after a word, a letter after a newline), so building n
    # items no longer copies, hashes and compares the whole context n times (4,000 items:
    # 0.56 s -> 0.04 s for gpt-4o, 2.1 s -> 0.03 s for Claude; 2,000 Chinese items 16 s ->
    # 0.04 s; 1,000 items of 80 words for mistral-7b-instruct's SentencePiece model: 66 s ->
    # 0.13 s).
    if kind == "estimate":
        tokenizer: Any = EstimateTokenizer(TiktokenTokenizer("o200k_base"), 1.2)
    elif kind == "chars":
        tokenizer = _Chars()
    elif kind.endswith("_base"):
        tokenizer = TiktokenTokenizer(kind)
    else:
        tokenizer = _pinned(kind)
    growing = TokenCounter(tokenizer).growing()
    text = ""
    for piece in pieces:
        assert growing.with_piece(piece) == tokenizer.count(text + piece)
        growing.append(piece)
        text += piece
    assert growing.with_piece("") == tokenizer.count(text)
