"""The tokenizer protocol and the content-hash count cache every stage shares."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol, runtime_checkable

from ctxasm.errors import CtxasmError, UntokenizableError
from ctxasm.keys import content_key
from ctxasm.tokens.runs import MAX_RUN_CHARS, LongRun, find_long_run

__all__ = ["GrowingCount", "TokenCounter", "Tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens the way one model family does.

    ``exact`` is false for estimates. ``lower_bound`` is a count the text can never be below,
    computed much faster than ``count`` (0 is always correct); selection uses it to skip
    passages that cannot fit without tokenizing them.
    """

    name: str
    exact: bool

    def count(self, text: str) -> int: ...

    def lower_bound(self, text: str) -> int: ...


class TokenCounter:
    """A tokenizer with a bounded cache of counts keyed by a 128-bit hash of the text.

    Retrieval returns the same chunks again and again, so counts are looked up by content, not
    by object. The cache is shared by every assembly that uses the same tokenizer, and holds no
    text, only ``hash -> count``.

    A tokenizer that sets ``splits_before_fence = True`` promises that no token spans a newline
    followed by a backtick, so ``count(a + b) == count(a) + count(b)`` whenever ``a`` ends with
    ``"\n"`` and ``b`` starts with a backtick; texts are then counted segment by segment
    between such seams, each segment cached.

    Every text is checked before it is tokenized: one holding a run longer than ``max_run``
    characters (see :mod:`ctxasm.tokens.runs`), which would take quadratic time, and one the
    tokenizer fails on (tiktoken's Rust core panics with a ``BaseException``) raise
    :class:`~ctxasm.errors.UntokenizableError`, so the caller can exclude that one text.
    """

    def __init__(
        self, tokenizer: Tokenizer, max_entries: int = 500_000, max_run: int = MAX_RUN_CHARS
    ) -> None:
        self.tokenizer = tokenizer
        self.max_entries = max_entries
        self.max_run = max_run
        # Whether the tokenizer's pieces may run on through slashes and line breaks (o200k's
        # and Tekken's do); a tokenizer that does not say is taken to.
        self.slash_runs = bool(getattr(tokenizer, "slash_runs", True))
        self._counts: dict[int, int] = {}
        self._at_least: dict[int, int] = {}  # lower bounds from counts that stopped early
        self._bounds: dict[int, int] = {}  # the tokenizer's lower_bound, by content
        self._lock = threading.Lock()
        self._splittable = bool(getattr(tokenizer, "splits_before_fence", False))
        self._spaces_split = bool(getattr(tokenizer, "splits_at_spaces", False))

    @property
    def name(self) -> str:
        return self.tokenizer.name

    @property
    def exact(self) -> bool:
        return self.tokenizer.exact

    def count(self, text: str) -> int:
        """The number of tokens in ``text``, from the cache when it has been counted before."""
        key, cached = self._lookup(text)
        if cached is not None:
            return cached
        if self._splittable and "\n`" in text:
            # Count seam by seam: a sources block is made of parts that were priced (and
            # cached) one by one, so recounting it only tokenizes what is new.
            pieces = text.split("\n`")
            segments = [pieces[0] + "\n"]
            segments += [f"`{piece}\n" for piece in pieces[1:-1]]
            segments.append("`" + pieces[-1])
            counted = sum(self._count_segment(segment) for segment in segments)
        else:
            counted = self._tokenize(text)
        self._store(key, counted)
        return counted

    def _count_segment(self, text: str) -> int:
        key = self._key(text)
        cached = self._counts.get(key)
        if cached is None:
            cached = self._tokenize(text)
            self._store(key, cached)
        return cached

    def check(self, text: str) -> None:
        """Raise :class:`~ctxasm.errors.UntokenizableError` when ``text`` holds a run too
        long to tokenize in linear time (a scan, no tokenizing)."""
        run = self.long_run(text)
        if run is not None:
            raise UntokenizableError(f"the text has {run.describe(self.max_run)}")

    def long_run(self, text: str) -> LongRun | None:
        """The first run in ``text`` too long for this tokenizer to count in linear time
        (see :mod:`ctxasm.tokens.runs`), or ``None``; a scan only."""
        return find_long_run(text, self.max_run, slashes=self.slash_runs)

    def _tokenize(
        self, text: str, limit: int | None = None, count: Callable[[str], int] | None = None
    ) -> int:
        """The tokenizer's count (or partial count up to ``limit``, or ``count``'s) of a
        checked text."""
        self.check(text)
        partial = None if limit is None else getattr(self.tokenizer, "count_upto", None)
        try:
            if count is not None:
                return int(count(text))
            return self.tokenizer.count(text) if partial is None else int(partial(text, limit))
        except (CtxasmError, KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # a Rust panic is a BaseException; it must not end a request
            raise UntokenizableError(
                f"the {self.name} tokenizer failed on a text of {len(text):,} characters "
                f"({type(exc).__name__})"
            ) from None

    def _store(self, key: int, counted: int) -> None:
        with self._lock:
            if len(self._counts) >= self.max_entries:
                # Drop the oldest half: dicts keep insertion order, so this is FIFO eviction.
                for stale in list(self._counts)[: self.max_entries // 2]:
                    del self._counts[stale]
            self._counts[key] = counted

    def count_upto(self, text: str, limit: int) -> int:
        """``count(text)`` when it is at most ``limit``; else any count above ``limit`` that
        ``count(text)`` is not below. Tokenizers with a ``count_upto`` of their own stop early
        on long texts; such partial counts are remembered as lower bounds, apart from the
        exact counts."""
        key, cached = self._lookup(text)
        if cached is not None:
            return cached
        known = self._at_least.get(key, 0)
        if known > limit:
            return known
        partial = getattr(self.tokenizer, "count_upto", None)
        counted = self._tokenize(text, limit)
        if counted <= limit or partial is None:
            self._store(key, counted)
        else:
            with self._lock:
                if len(self._at_least) >= self.max_entries:
                    self._at_least.clear()
                self._at_least[key] = max(known, counted)
        return counted

    def count_edited(self, old: str, new: str) -> int:
        """``count(new)`` for a text that shares a long prefix or suffix with ``old``, whose
        count is cached: only the part that changed is tokenized.

        Needs a tokenizer with ``splits_at_spaces`` (a space after a non-whitespace character
        always starts a new piece): splitting both texts at such a space inside the shared part
        makes ``count(x) == count(x[:p]) + count(x[p:])`` for both. A tokenizer with its own
        ``count_edited`` (an estimate over such a tokenizer) is asked instead. Falls back to
        ``count(new)``.
        """
        known = self._cached(old)
        edited = getattr(self.tokenizer, "count_edited", None)
        if known is not None and not self._spaces_split and edited is not None:
            counted: int = edited(old, new)
            self._store(self._key(new), counted)
            return counted
        if known is None or not self._spaces_split:
            return self.count(new)
        shared = _shared_prefix(old, new)
        cut = _last_space_boundary(old, shared)
        if cut > 0:
            counted = known - self.count(old[cut:]) + self.count(new[cut:])
        else:
            shared = _shared_prefix(old[::-1], new[::-1])
            cut = _first_space_boundary(old, len(old) - shared)
            if cut <= 0:
                return self.count(new)
            head = len(new) - (len(old) - cut)
            counted = known - self.count(old[:cut]) + self.count(new[:head])
        self._store(self._key(new), counted)
        return counted

    def growing(self) -> GrowingCount:
        """A count of a text that will only grow at its end (see :class:`GrowingCount`); an
        estimate keeps its proxy's count and scales it."""
        grown = getattr(self.tokenizer, "growing", None)
        if grown is not None and not self._spaces_split:
            made: GrowingCount = grown()
            return made
        if getattr(self.tokenizer, "seams", False) and hasattr(self.tokenizer, "count_continued"):
            return GrowingCount(self, continued=self._count_continued)
        return GrowingCount(self)

    def _count_continued(self, text: str) -> int:
        """The tokenizer's ``count_continued`` of ``text`` (a SentencePiece model with seams),
        checked and its failures refused as a count's are."""
        return self._tokenize(text, count=self.tokenizer.count_continued)  # type: ignore[attr-defined]

    _key = staticmethod(content_key)  # the cache holds no text

    def _lookup(self, text: str) -> tuple[int, int | None]:
        """The content key of ``text`` and its cached count (0 for empty text, else None)."""
        if not text:
            return 0, 0
        key = self._key(text)
        return key, self._counts.get(key)

    def _cached(self, text: str) -> int | None:
        return self._lookup(text)[1]

    def lower_bound(self, text: str) -> int:
        """A count that ``count(text)`` is never below, computed without tokenizing (the
        tokenizer's bound, cached by content: a candidate that does not fit is refused on it
        in every assembly that offers it, and hashing is cheaper than recomputing)."""
        if not text:
            return 0
        key = self._key(text)
        bound = self._bounds.get(key)
        if bound is None:
            bound = self.tokenizer.lower_bound(text)
            with self._lock:
                if len(self._bounds) >= self.max_entries:
                    self._bounds.clear()
                self._bounds[key] = bound
        return bound

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()
            self._at_least.clear()
            self._bounds.clear()

    def __len__(self) -> int:
        return len(self._counts)


class GrowingCount:
    """The count of a text built by appending pieces, such as the builder's context.

    With a tokenizer that ``splits_at_spaces``, the text is kept as a settled head, known only
    by its count, and the tail after its last split point (a space after a non-whitespace
    character, or a character after a newline other than white space and "/", see
    :func:`_last_seam`):
    ``count(head + tail + piece) == count(head) + count(tail + piece)``. Trying a
    piece tokenizes the tail and the piece, never the whole text, so trying n pieces costs what
    they hold, not n times the text. A SentencePiece model with ``seams`` splits at such spaces
    only (not after "\u2581"), and counts what follows its first split point with
    ``continued`` (without the leading space it gives a text of its own). Other tokenizers
    count the whole text (reusing what :meth:`TokenCounter.count_edited` can). ``factor``
    scales and rounds up the count, as an estimate does its proxy's.
    """

    def __init__(
        self,
        counter: TokenCounter,
        factor: float | None = None,
        continued: Callable[[str], int] | None = None,
    ) -> None:
        self._counter = counter
        self._factor = factor
        self._continued = continued
        self._whole = not counter._spaces_split and continued is None
        self._head = 0
        self._tail = ""
        self._settled = False  # whether the head holds text (the tail then follows a seam)
        self._settled_chars = 0  # the characters of the head

    def with_piece(self, piece: str) -> int:
        """The count of the text with ``piece`` appended (the text is left as it is)."""
        text = self._tail + piece
        try:
            if self._whole and self._tail:
                counted = self._counter.count_edited(self._tail, text)
            else:
                counted = self._head + self._tail_count(text)
        except UntokenizableError as error:
            raise self._placed(error, text) from None
        return counted if self._factor is None else math.ceil(counted * self._factor)

    def _placed(self, error: UntokenizableError, text: str) -> UntokenizableError:
        """``error`` on the tail and a piece (``text``), with the run it names placed in the
        whole text: the tail starts ``self._settled_chars`` characters in."""
        run = self._counter.long_run(text)
        if run is None or not self._settled_chars:
            return error
        run = replace(run, start=run.start + self._settled_chars)
        return UntokenizableError(f"the text has {run.describe(self._counter.max_run)}")

    def append(self, piece: str) -> None:
        """Append ``piece`` (tried with :meth:`with_piece` first: its count is reused)."""
        text = self._tail + piece
        if self._whole:
            cut = -1
        elif self._continued is not None:
            cut = _last_piece_seam(text, len(self._tail))
        else:
            cut = _last_seam(text, len(self._tail))
        if cut > 0:
            rest = text[cut:]
            counted = self._tail_count(text)
            self._settled = True
            self._head += counted - self._tail_count(rest)
            self._settled_chars += cut
            text = rest
        self._tail = text

    def _tail_count(self, text: str) -> int:
        if self._continued is not None and self._settled:
            return self._continued(text)
        return self._counter.count(text)


def _last_piece_seam(text: str, start: int) -> int:
    """:func:`_last_space_boundary` from ``start`` on, less a space after "\u2581" (which a
    SentencePiece model reads as a space, so a run of spaces may join them)."""
    cut = _last_space_boundary(text, len(text), max(start, 1))
    while cut > 0 and text[cut - 1] == "\u2581":
        cut = _last_space_boundary(text, cut, max(start, 1))
    return cut


def _last_seam(text: str, start: int) -> int:
    """The last position from ``start`` on (and above 0) where a piece of a tokenizer that
    ``splits_at_spaces`` must begin: a space after a non-whitespace character, or a character
    after a newline other than white space and "/" (text without spaces, such as Chinese or
    JSON, has the second between lines); -1 if there is none. Only ``text[start - 1:]`` is
    searched."""
    low = max(start, 1)
    found = _last_space_boundary(text, len(text), low)
    at = len(text) - 1
    while (at := text.rfind("\n", low - 1, at)) >= 0:
        after = text[at + 1]
        if not after.isspace() and after != "/":
            return max(found, at + 1)
    return found


def _shared_prefix(first: str, second: str) -> int:
    """Length of the longest common prefix (C-speed comparisons): one text extending the
    other (text appended, the builder's case) is one comparison; otherwise windows doubling
    from the start find where they differ, then halving inside the last one, so the work is
    linear in the prefix rather than in the texts times their logarithm."""
    if second.startswith(first):
        return len(first)
    if first.startswith(second):
        return len(second)
    low, high = 0, min(len(first), len(second))
    width = 64
    while width < high and first[:width] == second[:width]:
        low, width = width, width * 2
    high = min(high, width)
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _last_space_boundary(text: str, limit: int, low: int = 1) -> int:
    """The last position from ``low`` (at least 1) and below ``limit`` holding a space after a
    non-whitespace character; -1 if there is none."""
    cut = text.rfind(" ", low, limit)
    while cut > 0 and text[cut - 1].isspace():
        cut = text.rfind(" ", low, cut)
    return cut


def _first_space_boundary(text: str, start: int) -> int:
    """The first position above ``start`` holding a space after a non-whitespace character
    (so the character before it also lies at or after ``start``); -1 if there is none."""
    cut = text.find(" ", start + 1)
    while cut != -1 and text[cut - 1].isspace():
        cut = text.find(" ", cut + 1)
    return cut
