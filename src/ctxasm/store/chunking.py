"""Cutting documents into overlapping windows of tokens, at sentence boundaries where possible.

Every chunk is an exact slice ``text[start:end]`` of its document, so the assembler can stitch
overlapping windows back together from their offsets. A chunk is as many whole sentences as fit
in ``chunk_tokens`` tokens of the configured tokenizer (checked by an exact count; a sentence
longer than that is cut into pieces between words, or failing that at token boundaries that
are also character boundaries).
The next chunk repeats the last sentences of the previous one that fit in ``overlap`` tokens,
so windows overlap by whole sentences; with ``overlap=0`` (or a last sentence longer than the
overlap) consecutive chunks touch. Together the chunks cover the whole text.

An unbroken run of more than 1,000 letters, symbols or white-space characters (see
:mod:`ctxasm.tokens.runs`) takes quadratic time to tokenize, so the text is first cut inside
such runs, every 1,000 characters, and the pieces between cuts are chunked one by one (chunks
touch at a cut instead of overlapping). No chunk then holds a run longer than that, and
chunking stays linear in the length of the document.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxasm.errors import RequestError
from ctxasm.lexical import sentence_spans
from ctxasm.tokens import TokenCounter
from ctxasm.tokens.runs import MAX_RUN_CHARS, find_long_run, long_runs

__all__ = ["Chunk", "chunk_and_count", "chunk_text", "count_tokens", "run_cuts"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """``text[start:end]`` of a document."""

    start: int
    end: int
    text: str


_CONTINUATION = bytes(range(0x80, 0xC0))  # UTF-8 bytes that continue a character


def _offsets(tokens: list[int], encoding: Any) -> list[int]:
    """The character offset of each token: ``encoding.decode_with_offsets(tokens)[1]``, without
    decoding the text (a token that starts inside a character is at that character)."""
    offsets = []
    length = 0
    for piece in encoding.decode_tokens_bytes(tokens):
        offsets.append(max(0, length - (0x80 <= piece[0] < 0xC0)))
        length += len(piece.translate(None, _CONTINUATION))
    return offsets


def _units(
    text: str, limit: int, encoding: Any
) -> tuple[list[tuple[int, int, int]], dict[int, list[int]]]:
    """``(start, end, tokens)`` of each sentence of ``text``; a sentence over ``limit`` tokens
    is cut into pieces of at most ``limit`` at token boundaries that are also character
    boundaries (a multi-byte character split over tokens is never cut). Also the tokens of each
    unit that is a whole sentence, by unit index (its ``tokens`` is then an exact count of its
    text)."""
    units: list[tuple[int, int, int]] = []
    whole: dict[int, list[int]] = {}
    encode = encoding.encode_ordinary
    for begin, end in sentence_spans(text):
        sentence = text[begin:end]
        tokens = encode(sentence)
        if len(tokens) <= limit:
            whole[len(units)] = tokens
            units.append((begin, end, len(tokens)))
            continue
        offsets = _offsets(tokens, encoding)
        cuts = [i for i in range(len(tokens)) if i == 0 or offsets[i] > offsets[i - 1]]
        # cut between words where possible: at a token that starts with white space
        words = [i for i in cuts if i == 0 or sentence[offsets[i]].isspace()]
        piece_start = 0
        while piece_start < len(tokens):
            stop = piece_start + limit
            if stop >= len(tokens):
                stop = len(tokens)
            else:
                at = bisect.bisect_right(words, stop) - 1
                if at >= 0 and words[at] > piece_start:
                    stop = words[at]
                else:
                    stop = cuts[bisect.bisect_right(cuts, stop) - 1]
                if stop <= piece_start:  # one character of more than ``limit`` tokens
                    after = bisect.bisect_right(cuts, piece_start)
                    stop = cuts[after] if after < len(cuts) else len(tokens)
            char_start = begin + offsets[piece_start]
            char_end = begin + (offsets[stop] if stop < len(tokens) else len(sentence))
            units.append((char_start, char_end, stop - piece_start))
            piece_start = stop
    return units, whole


def run_cuts(text: str, limit: int = MAX_RUN_CHARS) -> list[int]:
    """Positions inside runs longer than ``limit``, every ``limit`` characters from the start
    of each run, so that no piece between two cuts holds more than ``limit`` of any run."""
    if find_long_run(text, limit) is None:  # one quick scan for prose (see find_long_run)
        return []
    cuts = {
        run.start + step
        for run in long_runs(text, limit)
        for step in range(limit, run.length, limit)
    }
    return sorted(cuts)


def _pieces(text: str) -> list[tuple[int, int]]:
    bounds = [0, *run_cuts(text), len(text)]
    return list(itertools.pairwise(bounds))


def count_tokens(text: str, counter: TokenCounter) -> int:
    """Tokens in ``text``, counted piece by piece between :func:`run_cuts` (exactly
    ``counter.count(text)`` when there is no cut), in time linear in its length."""
    return sum(counter.count(text[begin:end]) for begin, end in _pieces(text))


def count_tokens_batch(texts: Sequence[str], encoding_name: str = "o200k_base") -> int:
    """:func:`count_tokens` of every text, added up, tokenized in one batch (tiktoken spreads a
    batch over threads)."""
    from ctxasm.tokens.tiktoken_source import load_encoding

    pieces = [text[begin:end] for text in texts for begin, end in _pieces(text)]
    if not pieces:
        return 0
    encoding = load_encoding(encoding_name)
    return sum(len(tokens) for tokens in encoding.encode_ordinary_batch(pieces))


def chunk_text(
    text: str, chunk_tokens: int, overlap: int, encoding_name: str = "o200k_base"
) -> list[Chunk]:
    """Overlapping chunks of ``text`` (see the module docstring)."""
    return chunk_and_count(text, chunk_tokens, overlap, encoding_name)[0]


def chunk_and_count(
    text: str, chunk_tokens: int, overlap: int, encoding_name: str = "o200k_base"
) -> tuple[list[Chunk], int | None]:
    """:func:`chunk_text`, and :func:`count_tokens` of ``text`` when chunking counted it on the
    way (every piece between run cuts was counted whole, as when it makes one chunk), else
    ``None``."""
    if chunk_tokens < 8:
        raise RequestError("chunk_tokens must be at least 8", field="chunk_tokens")
    if not 0 <= overlap <= chunk_tokens // 2:
        raise RequestError(
            f"overlap must be between 0 and half of chunk_tokens ({chunk_tokens // 2})",
            field="overlap",
        )
    if not text.strip():
        return [], None
    chunks: list[Chunk] = []
    total: int | None = 0
    for begin, end in _pieces(text):
        piece_chunks, tokens = _chunk_piece(text[begin:end], chunk_tokens, overlap, encoding_name)
        for chunk in piece_chunks:
            chunks.append(Chunk(begin + chunk.start, begin + chunk.end, chunk.text))
        total = None if total is None or tokens is None else total + tokens
    return chunks, total


def _chunk_piece(
    text: str, chunk_tokens: int, overlap: int, encoding_name: str
) -> tuple[list[Chunk], int | None]:
    """Overlapping chunks of a text without long runs, and its token count if it was counted
    whole on the way."""
    from ctxasm.tokens.tiktoken_source import load_encoding

    if not text.strip():
        return [], None
    encoding = load_encoding(encoding_name)
    units, whole = _units(text, chunk_tokens, encoding)
    encode = encoding.encode_ordinary
    # Exact counts of the spans counted so far: each candidate chunk is tokenized once, and a
    # whole sentence not at all (its count is exact already).
    counted = {(units[i][0], units[i][1]): units[i][2] for i in whole}

    def count(begin: int, end: int) -> int:
        tokens = counted.get((begin, end))
        if tokens is None:
            tokens = counted[begin, end] = len(encode(text[begin:end]))
        return tokens

    chunks: list[Chunk] = []
    begin, first, lead = 0, 0, 0  # chunk start (char), first whole unit, tokens before it
    fresh = 0  # the first unit this chunk must include (the one after the previous chunk)
    while first < len(units):
        # as many whole sentences as fit (sums of sentence counts, then exact checks); at
        # least the first new one, so every chunk reaches past the one before: carried
        # sentences give way when they leave it no room
        while True:
            last, used = first, lead + units[first][2]
            while last + 1 < len(units) and used + units[last + 1][2] <= chunk_tokens:
                last += 1
                used += units[last][2]
            while last > max(first, fresh) and count(begin, units[last][1]) > chunk_tokens:
                last -= 1
            fits = count(begin, units[last][1]) <= chunk_tokens
            if last >= fresh and fits:
                break
            if lead:
                begin, lead = units[first][0], 0  # drop the carried tail first
            elif first < fresh:
                first += 1
                begin = units[first][0]
            else:
                break  # one unit alone: _units keeps every unit within the limit
        end = units[last][1]
        if text[begin:end].strip():
            chunks.append(Chunk(begin, end, text[begin:end]))
        if last + 1 >= len(units):
            break
        begin, first, lead = _next_start(text, units, whole, first, last, overlap, encoding)
        fresh = last + 1
    return chunks, counted.get((0, len(text)))


def _next_start(
    text: str,
    units: list[tuple[int, int, int]],
    whole: dict[int, list[int]],
    first: int,
    last: int,
    overlap: int,
    encoding: Any,
) -> tuple[int, int, int]:
    """Where the next chunk starts: ``(char, first whole unit, tokens before it)``. It repeats
    the last whole sentences of this chunk that fit in ``overlap`` tokens; when even the last
    sentence is longer, the tail of it that fits, from a word boundary."""
    following = last + 1
    start, carried = following, 0
    while start - 1 > first and carried + units[start - 1][2] <= overlap:
        start -= 1
        carried += units[start][2]
    if start < following or overlap == 0:
        return units[start][0], start, 0
    begin, end, _ = units[last]
    tokens = whole.get(last)
    if tokens is None:
        tokens = encoding.encode_ordinary(text[begin:end])
    offsets = _offsets(tokens, encoding)
    for index in range(max(1, len(tokens) - overlap), len(tokens)):
        at = offsets[index]
        char_boundary = offsets[index] > offsets[index - 1]
        if char_boundary and text[begin + at].isspace():
            return begin + at, following, len(tokens) - index
    return units[following][0], following, 0
