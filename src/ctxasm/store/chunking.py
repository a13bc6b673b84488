"""Cutting documents into overlapping windows of tokens, at sentence boundaries where possible.

Every chunk is an exact slice ``text[start:end]`` of its document, so the assembler can stitch
overlapping windows back together from their offsets. A chunk holds at most ``chunk_tokens``
tokens of the configured tokenizer (a single sentence longer than that is cut at the token
limit); it ends at the last sentence end that keeps it at least half full, and the next chunk
starts about ``overlap`` tokens before that end, at the nearest sentence start when one keeps
the overlap under twice that.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ctxasm.errors import RequestError
from ctxasm.lexical import sentence_spans

__all__ = ["Chunk", "chunk_text"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """``text[start:end]`` of a document."""

    start: int
    end: int
    text: str


def _token_starts(text: str, encoding_name: str) -> list[int]:
    """The character offset where each token of ``text`` starts."""
    from ctxasm.tokens.tiktoken_source import load_encoding

    encoding = load_encoding(encoding_name)
    tokens = encoding.encode_ordinary(text)
    _, offsets = encoding.decode_with_offsets(tokens)
    return list(offsets)


def chunk_text(
    text: str, chunk_tokens: int, overlap: int, encoding_name: str = "o200k_base"
) -> list[Chunk]:
    """Overlapping chunks of ``text`` (see the module docstring)."""
    if chunk_tokens < 8:
        raise RequestError("chunk_tokens must be at least 8", field="chunk_tokens")
    if not 0 <= overlap < chunk_tokens // 2 + 1:
        raise RequestError(
            f"overlap must be between 0 and half of chunk_tokens ({chunk_tokens // 2})",
            field="overlap",
        )
    if not text.strip():
        return []
    starts = _token_starts(text, encoding_name)
    total = len(starts)
    sentence_ends = [end for _, end in sentence_spans(text)]
    sentence_starts = [start for start, _ in sentence_spans(text)]

    def char_at(token: int) -> int:
        return starts[token] if token < total else len(text)

    def token_at(char: int) -> int:
        """The token that holds ``char`` (a token may start with the space before it)."""
        return max(0, bisect.bisect_right(starts, char) - 1)

    chunks: list[Chunk] = []
    first = 0  # token index where the chunk starts
    while first < total:
        begin = char_at(first)
        limit_token = min(first + chunk_tokens, total)
        end = char_at(limit_token)
        if limit_token < total:
            # the last sentence end inside the window that keeps the chunk at least half full
            half = char_at(first + chunk_tokens // 2)
            index = bisect.bisect_right(sentence_ends, end) - 1
            if index >= 0 and sentence_ends[index] > half:
                end = sentence_ends[index]
        piece = text[begin:end]
        if piece.strip():
            chunks.append(Chunk(begin, end, piece))
        if end >= len(text):
            break
        last = token_at(end)
        next_first = max(first + 1, last - overlap)
        if overlap:
            # start at the sentence start nearest to that, if it keeps the overlap under twice
            # the asked-for size and the chunk moving forward
            next_char = char_at(next_first)
            index = bisect.bisect_left(sentence_starts, next_char)
            nearby = [
                sentence_starts[i]
                for i in (index - 1, index)
                if 0 <= i < len(sentence_starts) and begin < sentence_starts[i] < end
            ]
            options = [
                token_at(s)
                for s in nearby
                if first < token_at(s) and last - token_at(s) <= 2 * overlap
            ]
            if options:
                next_first = min(options, key=lambda t: abs(t - next_first))
        first = next_first
    return chunks
