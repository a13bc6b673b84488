"""Chunking documents into token windows: exact slices, the token limit, overlap, coverage and
sentence-end cuts, recounted independently with tiktoken."""

from __future__ import annotations

from functools import cache
from itertools import pairwise

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxasm import RequestError
from ctxasm.lexical import sentence_spans
from ctxasm.store import Chunk, chunk_text
from ctxasm.store.chunking import _SPACE, _offsets, chunk_and_count, count_tokens, run_cuts
from ctxasm.tokens import get_counter

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WORDS = "the river flows through an old city under a stone bridge into the sea".split()
PROSE = " ".join(
    f"{WORDS[i % 13].capitalize()} {' '.join(WORDS[(i + j) % 13] for j in range(3 + i % 9))}."
    for i in range(60)
)


@cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("o200k_base")


def _tokens(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def _uncovered(text: str, chunks: list[Chunk]) -> list[int]:
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    return [i for i, char in enumerate(text) if not char.isspace() and i not in covered]


@pytest.mark.parametrize(("chunk_tokens", "overlap"), [(8, 0), (16, 4), (32, 16), (64, 8)])
def test_every_chunk_is_an_exact_slice_within_the_token_limit(
    chunk_tokens: int, overlap: int
) -> None:
    chunks = chunk_text(PROSE, chunk_tokens, overlap)
    assert len(chunks) > 3
    assert [c.text for c in chunks] == [PROSE[c.start : c.end] for c in chunks]
    assert max(_tokens(c.text) for c in chunks) <= chunk_tokens
    assert _uncovered(PROSE, chunks) == []
    assert chunks[0].start == 0
    assert chunks[-1].end == len(PROSE)


@pytest.mark.parametrize(("chunk_tokens", "overlap"), [(16, 4), (32, 8), (64, 16), (64, 32)])
def test_consecutive_chunks_overlap_when_asked(chunk_tokens: int, overlap: int) -> None:
    chunks = chunk_text(PROSE, chunk_tokens, overlap)
    assert len(chunks) > 3

    # Every pair overlaps, except where the next chunk's own new text leaves no room for the
    # carried tail: the last `overlap` tokens of the chunk before, with what lies between them
    # (white space no chunk shows), would not fit beside it.
    def room_for_tail(a: Chunk, b: Chunk) -> bool:
        tail = _encoding().decode(_encoding().encode_ordinary(a.text)[-overlap:])
        return _tokens(tail + PROSE[a.end : b.end]) <= chunk_tokens

    missing = [(a, b) for a, b in pairwise(chunks) if b.start >= a.end and room_for_tail(a, b)]
    assert missing == []
    assert sum(b.start < a.end for a, b in pairwise(chunks)) >= (len(chunks) - 1) // 2


@pytest.mark.parametrize("chunk_tokens", [8, 16, 64])
def test_no_overlap_means_chunks_at_most_touch(chunk_tokens: int) -> None:
    chunks = chunk_text(PROSE, chunk_tokens, 0)
    assert len(chunks) > 3
    overlapping = [(a, b) for a, b in pairwise(chunks) if b.start < a.end]
    assert overlapping == []


@pytest.mark.parametrize(("chunk_tokens", "overlap"), [(16, 4), (16, 6), (16, 8), (32, 16)])
def test_every_chunk_reaches_past_the_one_before(chunk_tokens: int, overlap: int) -> None:
    # a chunk that ends where its predecessor ends is a copy of part of it: stored, retrieved
    # and ranked again without adding any text
    chunks = chunk_text(PROSE, chunk_tokens, overlap)
    contained = [(a, b) for a, b in pairwise(chunks) if b.end <= a.end]
    assert contained == []


def test_chunks_end_at_sentence_ends() -> None:
    # where each sentence's text ends (a chunk does not end with the space after it)
    ends = {begin + len(PROSE[begin:end].rstrip()) for begin, end in sentence_spans(PROSE)}
    chunks = chunk_text(PROSE, 48, 8)
    assert len(chunks) > 3
    # sentences here are at most 14 tokens, so a sentence end always lies in the second half
    assert [c.end for c in chunks if c.end not in ends] == []


def test_a_sentence_longer_than_the_window_is_cut_at_the_token_limit() -> None:
    text = " ".join(WORDS * 8) + "."
    chunks = chunk_text(text, 16, 4)
    assert len(chunks) > 3
    assert [_tokens(c.text) <= 16 for c in chunks] == [True] * len(chunks)
    assert _uncovered(text, chunks) == []


def test_a_piece_of_a_long_sentence_is_within_the_limit_read_alone() -> None:
    """A piece cut from a sentence over the limit is counted alone: inside its sentence the
    NEL characters around it took fewer tokens (review H: a 10-token chunk at 9)."""
    text = "e. .S. .S. \x85\x85\u2014A.\x85 "
    chunks, total = chunk_and_count(text, 9, 0)
    assert max(_tokens(c.text) for c in chunks) <= 9
    assert total == _tokens(text)
    assert _uncovered(text, chunks) == []


def test_short_text_is_one_chunk() -> None:
    # the text's own indentation stays; the white space after its last word goes
    assert chunk_text("  The river flows.  ", 16, 4) == [Chunk(0, 18, "  The river flows.")]


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
def test_blank_text_gives_no_chunks(text: str) -> None:
    assert chunk_text(text, 16, 4) == []


def test_multibyte_characters_count_against_the_limit() -> None:
    # o200k splits an emoji into byte tokens; a window must not start between them
    text = "🦜 🦜 🦜 🦜"
    chunks = chunk_text(text, 8, 3)
    assert [(c.text, _tokens(c.text)) for c in chunks if _tokens(c.text) > 8] == []
    assert _uncovered(text, chunks) == []


@pytest.mark.parametrize(
    ("chunk_tokens", "overlap", "field", "message"),
    [
        (7, 0, "chunk_tokens", "an integer >= 8"),
        (0, 0, "chunk_tokens", "an integer >= 8"),
        (-5, 0, "chunk_tokens", "an integer >= 8"),
        ("256", 0, "chunk_tokens", "an integer >= 8; got str '256'"),
        (True, 0, "chunk_tokens", "an integer >= 8; got bool"),
        (2**60, 0, "chunk_tokens", "<= 2**53"),
        (16, 9, "overlap", "at most half of chunk_tokens (8)"),
        (16, 16, "overlap", "at most half of chunk_tokens (8)"),
        (16, -1, "overlap", "an integer >= 0"),
        (16, None, "overlap", "an integer >= 0; got null"),
        (16, 2.0, "overlap", "an integer >= 0; got float"),
    ],
)
def test_bad_parameters_are_refused(
    chunk_tokens: object, overlap: object, field: str, message: str
) -> None:
    with pytest.raises(RequestError) as caught:
        chunk_text("The river flows.", chunk_tokens, overlap)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert field in caught.value.message
    assert message in caught.value.message


def test_half_of_chunk_tokens_is_the_largest_overlap() -> None:
    chunks = chunk_text(PROSE, 16, 8)
    assert [c.text for c in chunks] == [PROSE[c.start : c.end] for c in chunks]


_FRAGMENTS = st.sampled_from(
    [
        *WORDS,
        "Mr.",
        "e.g.",
        "3.14",
        "1,234",
        "!",
        "?",
        ".",
        "...",
        "—",
        '"',
        "café",
        "naïve",
        "Straße",
        "日本語",
        "🙂",
        "𓀀",
        "\n",
        "\n\n",
        "\t",
        " ",
        "x" * 40,
    ]
)
_TEXTS = st.lists(_FRAGMENTS | st.text(min_size=1, max_size=5), max_size=120).map(" ".join)


@SETTINGS
@given(text=_TEXTS, chunk_tokens=st.integers(8, 48), share=st.floats(0, 1))
def test_chunks_are_exact_slices_that_cover_the_text(
    text: str, chunk_tokens: int, share: float
) -> None:
    overlap = int(share * (chunk_tokens // 2))
    chunks = chunk_text(text, chunk_tokens, overlap)
    assert [c.text for c in chunks] == [text[c.start : c.end] for c in chunks]
    assert _uncovered(text, chunks) == []
    # no chunk of white space alone: the white space the chunker cuts at (U+001C to U+001F are
    # content to it, as to the tokenizer: review rv22)
    assert all(c.text.strip(_SPACE) for c in chunks)
    assert all(b.start > a.start for a, b in pairwise(chunks))
    assert chunks == chunk_text(text, chunk_tokens, overlap)
    assert [c for c in chunks if _edges_shown(text, c)] == []


def _edges_shown(text: str, chunk: Chunk) -> bool:
    """Whether ``chunk`` ends with white space (as the tokenizer reads it: U+001C to U+001F
    are content), or starts with any but the indentation of a line it starts: at most 16
    spaces and tabs after a line break or the text's start."""
    if chunk.text != chunk.text.rstrip(_SPACE):
        return True
    lead = chunk.text[: len(chunk.text) - len(chunk.text.lstrip(_SPACE))]
    if not lead:
        return False
    at_line = chunk.start == 0 or text[chunk.start - 1] in "\n\r\x0b\x0c\x85\u2028\u2029"
    return not (at_line and len(lead) <= 16 and set(lead) <= {" ", "\t"})


@pytest.mark.parametrize(
    ("text", "chunk_tokens", "overlap"),
    [
        # review rv15: a run of white space longer than a chunk, inside a long "sentence",
        # made an empty unit where the next chunk started (423 characters of blank lines)
        (
            "Report header line\n"
            + "   \n" * 600
            + "Totals for the quarter are listed below and they are final.",
            256,
            32,
        ),
        (
            "Intro line one\n\n"
            + "| a | b |\n" * 3
            + "\n" * 40
            + "   \n" * 30
            + "Closing words here and more words to go.",
            16,
            8,
        ),
        ("alpha beta gamma delta epsilon zeta" + " \n" * 300 + "kappa lambda mu nu xi", 8, 4),
        # a sentence that starts at white space (found by the property test below)
        ("café 0 \U0006d580 the the 0:\x810  0:0\U00010000", 8, 0),
        ("\n\n \t  \U0001f600\U0001f600 end. More words follow here, and more.", 8, 4),
        # review rv16: an indentation the limit has no room for, or one of Unicode spaces or
        # line breaks, was kept before the line's first word (15 tokens in a chunk of 8)
        ("First line here.\n" + "\t" * 200 + "Second sentence is here.", 8, 0),
        ("First line here.\n" + "\u2003" * 20 + "Second sentence is here.", 8, 2),
        ("\u2029" * 20 + "Then more words follow here.", 8, 0),
        ("\t" * 1200 + "Words after a long run of tabs, and more words after them.", 64, 8),
        (" \n   \n   漢字テキスト" + "a" * 40 + "U.S.A. Ünïcödé ? שלום", 8, 0),
    ],
)
def test_white_space_runs_start_no_chunk(text: str, chunk_tokens: int, overlap: int) -> None:
    chunks = chunk_text(text, chunk_tokens, overlap)
    assert [c for c in chunks if _edges_shown(text, c)] == []
    assert _uncovered(text, chunks) == []
    assert max(_tokens(c.text) for c in chunks) <= chunk_tokens
    # no chunk lies inside the next one
    assert [(a, b) for a, b in pairwise(chunks) if b.start <= a.start or b.end <= a.end] == []


@pytest.mark.parametrize(
    ("text", "chunk_tokens", "overlap"),
    [
        ("a" + "\x1c" * 300 + "b", 64, 8),
        ("\x1e\x1e\x1e", 8, 0),
        ("Fields \x1f\x1f kept.\n" + "\x1d" * 40 + " end.", 8, 4),
    ],
)
def test_separators_are_content_to_the_tokenizer_and_kept(
    text: str, chunk_tokens: int, overlap: int
) -> None:
    # Review rv17: U+001C to U+001F, which str.strip takes for white space and the tokenizer
    # for content, were left out of every chunk.
    chunks = chunk_text(text, chunk_tokens, overlap)
    covered = {i for chunk in chunks for i in range(chunk.start, chunk.end)}
    assert [i for i, c in enumerate(text) if c not in _SPACE and i not in covered] == []
    assert max(_tokens(c.text) for c in chunks) <= chunk_tokens


def test_a_carried_tail_is_never_the_whole_chunk_before() -> None:
    # Review rv17: the tail was moved back over its line's indentation to the chunk's start.
    chunks = chunk_text("  ab cd. \u00dcn\u00efc\u00f6d\u00e9", 8, 3)
    assert [(a, b) for a, b in pairwise(chunks) if b.start <= a.start] == []


def test_wide_white_space_between_sentences_is_counted_in_the_sums() -> None:
    # Review rv17: the sums left out the white space between sentences, so a chunk took in
    # every sentence left and gave them back one exact count at a time (quadratic time).
    text = ("a" + "\u00a0" * 2000 + "b. ") * 20
    chunks = chunk_text(text, 256, 0)
    assert max(_tokens(c.text) for c in chunks) <= 256
    assert _uncovered(text, chunks) == []


def test_chunks_show_no_white_space_at_their_edges() -> None:
    # L4 of the first-hour review: a long sentence cut between words, or its tail carried over
    # as the overlap, started the next chunk with a space; a paragraph's end left blank lines.
    text = (
        "The Danube flows through Germany, Austria, Slovakia, Hungary, Croatia, Serbia, "
        "Romania, Bulgaria, Moldova and Ukraine on its long way east to the sea.\n\n"
        "    river = 'Danube'  # an indented line keeps its indentation\n\n"
        "The river ends in the Black Sea.  \n"
    )
    chunks = chunk_text(text, 12, 4)
    assert len(chunks) > 3
    assert [c for c in chunks if _edges_shown(text, c)] == []
    assert [c.text[0] for c in chunks if c.start and text[c.start - 1] == " "] != []
    assert any(c.text.startswith("    river = ") for c in chunks)
    assert chunks[-1].text.endswith("Black Sea.")
    assert max(_tokens(c.text) for c in chunks) <= 12
    assert _uncovered(text, chunks) == []


_SENTENCES = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(
        lambda words: " ".join(words).capitalize() + "."
    ),
    max_size=20,
).map(" ".join)


@SETTINGS
@given(text=_SENTENCES, chunk_tokens=st.integers(8, 64), share=st.floats(0, 1))
def test_prose_chunks_stay_within_the_token_limit(
    text: str, chunk_tokens: int, share: float
) -> None:
    overlap = int(share * (chunk_tokens // 2))
    chunks = chunk_text(text, chunk_tokens, overlap)
    assert [c for c in chunks if _tokens(c.text) > chunk_tokens] == []


@SETTINGS
@given(text=_TEXTS | _SENTENCES, chunk_tokens=st.integers(8, 300), share=st.floats(0, 1))
def test_chunking_counts_the_text_only_when_exact(
    text: str, chunk_tokens: int, share: float
) -> None:
    overlap = int(share * (chunk_tokens // 2))
    chunks, tokens = chunk_and_count(text, chunk_tokens, overlap)
    assert chunks == chunk_text(text, chunk_tokens, overlap)
    if tokens is not None:
        assert tokens == count_tokens(text, get_counter("tiktoken:o200k_base"))


def test_a_text_of_one_chunk_comes_with_its_count() -> None:
    text = PROSE[:300]
    chunks, tokens = chunk_and_count(text, 256, 32)
    assert [(c.start, c.end) for c in chunks] == [(0, len(text))]
    assert tokens == _tokens(text)


@pytest.mark.parametrize(
    ("text", "cuts"),
    [
        (PROSE, []),
        ("a" * 1000, []),
        ("a" * 2500, [1000, 2000]),
        ("x " + " " * 1500 + "y", [1001]),
        ("word " * 500 + "中" * 1001, [3500]),
    ],
)
def test_run_cuts_fall_only_inside_long_runs(text: str, cuts: list[int]) -> None:
    assert run_cuts(text, 1000) == cuts


@SETTINGS
@given(text=_TEXTS | st.text(max_size=200))
def test_token_offsets_are_tiktokens(text: str) -> None:
    tokens = _encoding().encode_ordinary(text)
    assert _offsets(tokens, _encoding()) == _encoding().decode_with_offsets(tokens)[1]
