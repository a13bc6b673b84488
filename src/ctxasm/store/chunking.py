"""Cutting documents into overlapping windows of tokens, at sentence boundaries where possible.

Every chunk is an exact slice ``text[start:end]`` of its document, so the assembler can stitch
overlapping windows back together from their offsets. A chunk is as many whole sentences as fit
in ``chunk_tokens`` tokens of the configured tokenizer (checked by an exact count; a sentence
longer than that is cut into pieces between words, or failing that at token boundaries that
are also character boundaries).
The next chunk repeats the last sentences of the previous one that fit in ``overlap`` tokens,
so windows overlap by whole sentences; with ``overlap=0`` (or a last sentence longer than the
overlap) consecutive chunks touch. Together the chunks cover the whole text, but for the white
space at their edges: a chunk does not end with blank lines or a space, nor start with the space
between two words (see ``_word_start``).

An unbroken run of more than 8,000 letters, symbols or white-space characters (see
:mod:`ctxasm.tokens.runs`) is past what tokenizes in linear time, so the text is first cut
inside such runs, every 8,000 characters, and the pieces between cuts are chunked one by one
(chunks touch at a cut instead of overlapping). No chunk then holds a run longer than that,
and chunking stays linear in the length of the document.

Each piece is tokenized once, in parts whose counts add up (see ``_SpanCounter``): the counts
of its sentences and candidate chunks are read from those parts, and chunking counts the whole
text on the way.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxasm.lexical import sentence_spans
from ctxasm.tokens import TokenCounter
from ctxasm.tokens.runs import MAX_RUN_CHARS, WHITE_SPACE, find_long_run, long_runs
from ctxasm.validation import integer, invalid

__all__ = ["Chunk", "chunk_and_count", "chunk_text", "count_tokens", "run_cuts"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """``text[start:end]`` of a document."""

    start: int
    end: int
    text: str


_CONTINUATION = bytes(range(0x80, 0xC0))  # UTF-8 bytes that continue a character


def _offsets(tokens: list[int], encoding: Any, skip: int = 0) -> list[int]:
    """The character offset of each token: ``encoding.decode_with_offsets(tokens)[1]``, without
    decoding the text (a token that starts inside a character is at that character); with
    ``skip``, of the tokens after the first ``skip`` only."""
    offsets = []
    length = len(encoding.decode_bytes(tokens[:skip]).translate(None, _CONTINUATION))
    for piece in encoding.decode_tokens_bytes(tokens[skip:]):
        offsets.append(max(0, length - (0x80 <= piece[0] < 0xC0)))
        length += len(piece.translate(None, _CONTINUATION))
    return offsets


class _SpanCounter:
    """Exact token counts of spans of one text, which is tokenized once, piece by piece.

    In o200k and cl100k a space that follows a character other than white space always starts
    a pre-tokenizer piece, and tokens never cross pieces (see
    :attr:`~ctxasm.tokens.tiktoken_source.TiktokenTokenizer.splits_at_spaces`): the tokens
    of a text are those of the text before such a space (a *cut*) followed by those of the
    text from it. The text is tokenized in parts between *anchors*, the first and the last cut
    of each sentence, so the tokens before every anchor are known. A span then has the tokens
    of its head (up to its first anchor, tokenized alone), those between its first and its
    last anchor, and those of its tail (from its last anchor, tokenized alone; none where the
    span ends at an anchor, as a sentence without the space after it does). A span without
    an anchor is tokenized alone, and so is every span of a text that cannot be tokenized as it
    is (a lone surrogate, which tiktoken replaces) or that tiktoken fails on.
    """

    def __init__(self, text: str, encoding: Any, sentences: Sequence[tuple[int, int]]) -> None:
        self.text = text
        self.encoding = encoding
        self._short = _short_counts(encoding)
        self._anchors = _anchors(text, sentences)
        self._before: list[int] = []  # the tokens of text[:anchor], for each anchor
        self.total: int | None = None  # the tokens of the text (None: every span alone)
        self._heads: dict[int, int] = {}  # span start -> tokens up to its first anchor
        self._tails: dict[int, int] = {}  # span end -> tokens from its last anchor
        try:
            if not text.isascii():
                text.encode("utf-8")
            self._tokenize()
        except UnicodeEncodeError:
            self._anchors = []
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException:  # a Rust panic: each span then fails, or not, as it does alone
            self._anchors = []

    def _tokenize(self) -> None:
        text, anchors = self.text, self._anchors
        if not anchors:
            self.total = self._alone(text)
            return
        parts = [text[: anchors[0]]]
        parts.extend(text[start:stop] for start, stop in itertools.pairwise(anchors))
        self._before = list(itertools.accumulate(map(self._alone, parts)))
        self.total = self._before[-1] + self._alone(text[anchors[-1] :])

    def count(self, begin: int, end: int) -> int:
        """The tokens of ``text[begin:end]``, as tiktoken counts that text alone."""
        if self.total is None:
            return len(self.encoding.encode_ordinary(self.text[begin:end]))
        if begin == 0 and end == len(self.text):
            return self.total
        first = bisect.bisect_right(self._anchors, begin)  # anchors after begin
        last = bisect.bisect_left(self._anchors, end)  # and up to end (a cut itself: no tail)
        if last == len(self._anchors) or self._anchors[last] != end:
            last -= 1
        if first > last:
            return self._alone(self.text[begin:end])
        head = self._heads.get(begin)
        if head is None:
            head = self._heads[begin] = self._alone(self.text[begin : self._anchors[first]])
        tail = self._tails.get(end)
        if tail is None:
            tail = self._tails[end] = self._alone(self.text[self._anchors[last] : end])
        return head + self._before[last] - self._before[first] + tail

    def _alone(self, text: str) -> int:
        """The tokens of ``text`` tokenized alone; a short one (most heads are a first word,
        most tails a space) is counted once per process."""
        if len(text) > _SHORT_CHARS:
            return len(self.encoding.encode_ordinary(text))
        return self._short[text]


def _anchors(text: str, sentences: Sequence[tuple[int, int]]) -> list[int]:
    """The first and the last cut (a space after a character other than white space) inside
    each sentence, in order."""
    anchors = []
    for begin, end in sentences:
        first = text.find(" ", begin + 1, end)
        while first != -1 and text[first - 1].isspace():
            first = text.find(" ", first + 1, end)
        if first == -1:
            continue
        anchors.append(first)
        last = text.rfind(" ", first + 1, end)
        while last != -1 and text[last - 1].isspace():
            last = text.rfind(" ", first + 1, last)
        if last != -1:
            anchors.append(last)
    return anchors


class _ShortCounts(dict[str, int]):
    """Token counts of short texts in one encoding, counted on first use (at most
    ``_SHORT_TEXTS`` of them are kept)."""

    def __init__(self, encoding: Any) -> None:
        super().__init__()
        self._encode = encoding.encode_ordinary

    def __missing__(self, text: str) -> int:
        if len(self) >= _SHORT_TEXTS:
            self.clear()
        tokens = self[text] = len(self._encode(text))
        return tokens


_SHORT_CHARS = 32
_SHORT_TEXTS = 65_536
_SHORT: dict[str, _ShortCounts] = {}


def _short_counts(encoding: Any) -> _ShortCounts:
    """The short-text counts of ``encoding``, kept for the process."""
    counts = _SHORT.get(encoding.name)
    if counts is None:
        counts = _SHORT[encoding.name] = _ShortCounts(encoding)
    return counts


def _units(
    text: str, sentences: Sequence[tuple[int, int]], limit: int, spans: _SpanCounter
) -> tuple[list[tuple[int, int, int]], set[int]]:
    """``(start, end, tokens)`` of each sentence of ``text``; a sentence over ``limit`` tokens
    is cut into pieces of at most ``limit`` at token boundaries that are also character
    boundaries (a multi-byte character split over tokens is never cut). Also the indexes of
    the units that are whole sentences (their ``tokens`` is then an exact count of their
    text)."""
    units: list[tuple[int, int, int]] = []
    whole: set[int] = set()
    encoding = spans.encoding
    for spanned_begin, spanned in sentences:
        # white space around a sentence is no chunk's: chunks start and end where its text does
        end = _text_end(text, spanned_begin, spanned)
        if end == spanned_begin:
            continue
        begin = spanned_begin
        # (most sentences start after the one space that ends the sentence before: as they are)
        before = text[max(0, begin - 2) : begin]
        if text[begin] in _SPACES or (
            before[-1:] in _INDENT and (len(before) < 2 or before[0] in _LINE_OR_INDENT)
        ):
            begin = _word_start(text, begin, end)
        counted = spans.count(begin, end)
        if counted <= limit:
            whole.add(len(units))
            units.append((begin, end, counted))
            continue
        sentence = text[begin:end]
        tokens = encoding.encode_ordinary(sentence)
        offsets = _offsets(tokens, encoding)
        cuts = [i for i in range(len(tokens)) if i == 0 or offsets[i] > offsets[i - 1]]
        # cut between words where possible: at a token that starts with white space
        words = [i for i in cuts if i == 0 or sentence[offsets[i]] in _SPACES]
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
            char_start, char_end, alone, stop = _piece(
                text, begin, len(sentence), offsets, cuts, (piece_start, stop), limit, encoding
            )
            if char_end > char_start:  # a piece of white space alone is no unit
                units.append((char_start, char_end, alone))
            piece_start = stop
    return units, whole


def _piece(
    text: str,
    begin: int,
    length: int,
    offsets: list[int],
    cuts: list[int],
    tokens: tuple[int, int],
    limit: int,
    encoding: Any,
) -> tuple[int, int, int, int]:
    """The piece of the sentence ``text[begin:begin + length]`` (its token ``offsets`` and the
    token indexes ``cuts`` where a character starts) from token ``tokens[0]`` to ``tokens[1]``:
    ``(char start, char end, tokens alone, end token)``, cut earlier where, read alone, it
    takes more than ``limit`` tokens, and without white space at its edges (see
    :func:`_word_start`)."""
    piece_start, stop = tokens
    char_end = begin + (offsets[stop] if stop < len(offsets) else length)
    char_start = _word_start(text, begin + offsets[piece_start], char_end)
    char_end = _text_end(text, char_start, char_end)
    alone = len(encoding.encode_ordinary(text[char_start:char_end]))
    while alone > limit:
        # Read alone, a piece may take more tokens than it did in its sentence (the tokens at
        # its edges split differently): cut it as many boundaries earlier as it is over (a
        # token or two, in practice).
        at = max(
            bisect.bisect_left(cuts, stop) - (alone - limit),
            bisect.bisect_right(cuts, piece_start),
        )
        if at >= len(cuts) or cuts[at] >= stop:
            bare = _solid(text, char_start, char_end)
            if bare == char_start:
                break  # one character of more than ``limit`` tokens: as it is
            char_start = bare  # the line's indentation makes it too long: not kept
        else:
            stop = cuts[at]
            char_end = _text_end(text, char_start, max(char_start, begin + offsets[stop]))
        alone = len(encoding.encode_ordinary(text[char_start:char_end]))
    return char_start, char_end, alone, stop


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


def check_chunking(chunk_tokens: object, overlap: object) -> tuple[int, int]:
    """``chunk_tokens`` and ``overlap`` as plain integers, or a :class:`RequestError` naming
    the one chunking cannot use: ``chunk_tokens`` from 8, ``overlap`` from 0 to half of it."""
    size = integer(chunk_tokens, "chunk_tokens", minimum=8, optional=False)
    shared = integer(overlap, "overlap", minimum=0, optional=False)
    assert size is not None and shared is not None
    if shared > size // 2:
        raise invalid("overlap", f"at most half of chunk_tokens ({size // 2})", overlap)
    return size, shared


def chunk_and_count(
    text: str, chunk_tokens: int, overlap: int, encoding_name: str = "o200k_base"
) -> tuple[list[Chunk], int | None]:
    """:func:`chunk_text`, and :func:`count_tokens` of ``text``, which chunking counts on the
    way; ``None`` for blank text, and when a piece between run cuts could not be tokenized
    whole as it is (a lone surrogate) and did not make one chunk."""
    chunk_tokens, overlap = check_chunking(chunk_tokens, overlap)
    if not text.strip(_SPACE):
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
    whole on the way (always, unless it cannot be tokenized whole as it is)."""
    from ctxasm.tokens.tiktoken_source import load_encoding

    encoding = load_encoding(encoding_name)
    if not text.strip(_SPACE):
        return [], len(encoding.encode_ordinary(text))
    sentences = sentence_spans(text)
    spans = _SpanCounter(text, encoding, sentences)
    units, whole = _units(text, sentences, chunk_tokens, spans)
    # Exact counts of the spans counted so far: each candidate chunk is counted once, and a
    # whole sentence not again (its count is exact already).
    counted = {(units[i][0], units[i][1]): units[i][2] for i in whole}

    def count(begin: int, end: int) -> int:
        tokens = counted.get((begin, end))
        if tokens is None:
            tokens = counted[begin, end] = spans.count(begin, end)
        return tokens

    # The tokens of the white space between consecutive units, which no unit counts: summed
    # with the units', they keep the sum of a span near its exact count (a run of white space
    # can take many tokens, and a sum without it would take in units one exact count each
    # gives back).
    gaps = [
        # one space (the most gaps) joins the word after it: no token of its own
        max(0, spans.count(end, after) - 1) if after > end + 1 else 0
        for (_, end, _), (after, _, _) in itertools.pairwise(units)
    ]
    chunks: list[Chunk] = []
    begin = units[0][0] if units else 0  # chunk start (char): where the first unit's text is
    first, lead = 0, 0  # the chunk's first whole unit, and the tokens before it
    fresh = 0  # the first unit this chunk must include (the one after the previous chunk)
    while first < len(units):
        # as many whole sentences as fit (sums of sentence counts, then exact checks); at
        # least the first new one, so every chunk reaches past the one before: carried
        # sentences give way when they leave it no room
        while True:
            last, used = first, lead + units[first][2]
            while last + 1 < len(units) and used + gaps[last] + units[last + 1][2] <= chunk_tokens:
                used += gaps[last] + units[last + 1][2]
                last += 1
            if count(begin, units[last][1]) > chunk_tokens:  # the sum was short: the last
                # unit that fits, by exact counts halving the units in play (a few counts)
                low, high = max(first, fresh), last
                while low < high:
                    middle = (low + high + 1) // 2
                    if count(begin, units[middle][1]) > chunk_tokens:
                        high = middle - 1
                    else:
                        low = middle
                last = low
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
        if text[begin:end].strip(_SPACE):
            chunks.append(Chunk(begin, end, text[begin:end]))
        if last + 1 >= len(units):
            break
        begin, first, lead = _next_start(text, units, first, last, overlap, encoding)
        fresh = last + 1
    return chunks, spans.total if spans.total is not None else counted.get((0, len(text)))


# White space as the tokenizer reads it (Unicode's White_Space): not the separators U+001C to
# U+001F that str.isspace also counts, which are content to a tokenizer.
_SPACE = WHITE_SPACE
_SPACES = frozenset(_SPACE)
_BREAKS = frozenset("\n\r\x0b\x0c\x85\u2028\u2029")  # what ends a line
_INDENT = frozenset(" \t")
_LINE_OR_INDENT = _BREAKS | _INDENT
_MOST_INDENT = 16  # characters of indentation kept before a line's first word


def _text_end(text: str, start: int, end: int) -> int:
    """Where ``text[start:end]`` ends without the white space at its end."""
    while end > start and text[end - 1] in _SPACES:
        end -= 1
    return end


def _solid(text: str, at: int, end: int) -> int:
    """The first character from ``at`` (before ``end``) that is not white space."""
    while at < end and text[at] in _SPACES:
        at += 1
    return at


def _word_start(text: str, at: int, end: int) -> int:
    """Where a chunk (or a piece of a sentence) that would start at ``at`` starts instead: at
    the first character after ``at`` (before ``end``) that is not white space, so not at the
    space between two words, nor at blank lines; but where that character begins a line after
    an indentation of at most ``_MOST_INDENT`` spaces and tabs, at the indentation. The time
    is that of the white space skipped, plus at most ``_MOST_INDENT``."""
    start = _solid(text, at, end)
    back, least = start, max(0, start - _MOST_INDENT)
    while back > least and text[back - 1] in _INDENT:
        back -= 1
    if back < start and (back == 0 or text[back - 1] in _BREAKS):
        return back
    return start


def _next_start(
    text: str,
    units: list[tuple[int, int, int]],
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
    tokens = encoding.encode_ordinary(text[begin:end])  # a unit ends where its text does
    skip = max(0, len(tokens) - overlap - 1)  # only the offsets of the last tokens are read
    offsets = _offsets(tokens, encoding, skip)
    for index in range(max(1, len(tokens) - overlap), len(tokens)):
        at = offsets[index - skip]
        char_boundary = at > offsets[index - 1 - skip]
        if char_boundary and text[begin + at] in _SPACES:
            # from the word after that space: a tail is never the line's indentation (which
            # would make it the whole sentence, the chunk before's start)
            return _solid(text, begin + at, end), following, len(tokens) - index
    return units[following][0], following, 0
