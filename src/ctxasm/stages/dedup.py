"""The dedup slot: redundancy against what has already been selected.

A dedup strategy opens a :class:`DedupSession` per assembly. Selection offers each candidate it
is about to keep; the session answers with a verdict, computed only then (so candidates that
never get that far are never shingled or hashed):

* ``None``: nothing redundant, keep it;
* :class:`Duplicate`: it repeats a kept passage (the detail names which and how similar);
* :class:`Merge`: it is an overlapping window of a kept passage's document, and the two are
  stitched into one passage that keeps the earlier one's id and label.

Strategies are chained in the order the request lists them; the first verdict wins. Comparing
against *selected* passages (not every higher-ranked one) means a near-copy of a passage that was
too long to fit can still be chosen in its place.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from array import array
from collections import Counter
from collections.abc import Collection, Sequence, Set
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from typing import Any, ClassVar, NamedTuple, Protocol

import xxhash

from ctxasm.data import ELISION, Candidate, Passage
from ctxasm.keys import CACHE_CHARS, HEAVY_CACHE_CHARS, content_key, text_cache
from ctxasm.lexical import normalize, phrase_key
from ctxasm.strategy import Strategy, require_int, require_number
from ctxasm.urls import shows_url

__all__ = [
    "DedupChain",
    "DedupSession",
    "DedupStrategy",
    "Duplicate",
    "ExactDedup",
    "Merge",
    "NearDuplicateDedup",
    "StitchWindowsDedup",
    "clear_caches",
]


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The candidate repeats kept passage ``of``."""

    of: str
    detail: str


@dataclass(frozen=True, slots=True)
class Merge:
    """The candidate overlaps kept passage ``into``; ``merged`` is the two stitched together."""

    into: Candidate
    merged: Candidate
    detail: str


Verdict = Duplicate | Merge | None


class DedupSession(Protocol):
    """Per-assembly state of one dedup strategy.

    Two questions, asked at different moments: :meth:`placement` before the candidate is priced
    (cheap, from document identity and offsets: a window that extends a kept passage only costs
    its new text), :meth:`verdict` once it is known to fit (comparing content).
    """

    def placement(self, candidate: Candidate) -> Verdict:
        """Whether ``candidate`` is part of a kept passage's document window (stitching)."""
        ...

    def verdict(self, candidate: Candidate) -> Verdict:
        """Whether ``candidate``'s content repeats what has been accepted so far."""
        ...

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        """Record that ``candidate`` was kept (replacing ``replaced`` after a merge)."""
        ...


class DedupStrategy(Protocol):
    name: ClassVar[str]

    def session(self) -> DedupSession: ...

    def to_config(self) -> dict[str, Any]: ...


class DedupChain:
    """Several sessions asked in order; the first verdict wins."""

    def __init__(self, sessions: Sequence[DedupSession]) -> None:
        self.sessions = list(sessions)

    def placement(self, candidate: Candidate) -> Verdict:
        for session in self.sessions:
            found = session.placement(candidate)
            if found is not None:
                return found
        return None

    def verdict(self, candidate: Candidate) -> Verdict:
        for session in self.sessions:
            found = session.verdict(candidate)
            if found is not None:
                return found
        return None

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        for session in self.sessions:
            session.accept(candidate, replaced)


def _document_key(candidate: Candidate) -> str | None:
    passage = candidate.passage
    if passage.doc_id is not None:
        return "doc:" + passage.doc_id
    if passage.url is not None:
        return "url:" + passage.url
    if passage.title is not None:
        return "title:" + passage.title
    return None


class _Place(NamedTuple):
    """Where a window lies in its document: its ``start`` and ``end`` offsets, and ``text``,
    the document's text between them where the offsets are trusted (they measure the window's
    text as given), else ``None`` (offsets in bytes, or of a text cleaned since: they still
    tell windows far apart)."""

    start: int
    end: int
    text: str | None


def _place(start: int | None, end: int | None, text: str) -> _Place | None:
    if start is None or end is None:
        return None
    return _Place(start, end, text if end - start == len(text) else None)


def _given_place(candidate: Candidate) -> _Place | None:
    """Where ``candidate``, a window as offered, lies: by its offsets or, where a later stage
    shortened its text and dropped them (compression does), by its passage's as given."""
    if candidate.start is None or candidate.end is None:
        passage = candidate.passage
        return _place(passage.start, passage.end, passage.text)
    return _place(candidate.start, candidate.end, candidate.text)


def _own_place(candidate: Candidate) -> _Place | None:
    """Where ``candidate``, a stitched window, lies by its own offsets (its passage's are
    those of the window it grew from)."""
    return _place(candidate.start, candidate.end, candidate.text)


def _apart(one: _Place, other: _Place) -> bool:
    """Whether the offsets of two windows say they share no character: trusted ones that do
    not overlap, or any that leave a gap between them (in units unknown, touching windows may
    still share a character)."""
    if one.text is not None and other.text is not None:
        return one.end <= other.start or other.end <= one.start
    return one.end < other.start or other.end < one.start


def _kept_first(kept: _Place | None, new: _Place | None) -> bool | None:
    """Whether the offsets of two windows put the kept one first (``None``: they do not say,
    as where one has none or both start at one offset)."""
    if kept is None or new is None or kept.start == new.start:
        return None
    return kept.start < new.start


def _union(one: _Place, other: _Place) -> _Place:
    """The place two overlapping trusted places cover together."""
    first, second = (one, other) if one.start <= other.start else (other, one)
    assert first.text is not None and second.text is not None
    text = first.text
    if second.end > first.end:
        text += second.text[first.end - second.start :]
    return _Place(first.start, max(first.end, second.end), text)


def _cut_of(text: str, whole: str) -> bool:
    """Whether ``text`` is ``whole`` with parts left out at its ``ELISION`` marks: the pieces
    between the marks appear in ``whole`` in their order, without overlapping. White space is
    compared loosely (a compressed text joins its sentences with single spaces)."""
    flat, at = " ".join(whole.split()), 0
    for piece in text.split(ELISION):
        words = " ".join(piece.split())
        if words:
            at = flat.find(words, at)
            if at == -1:
                return False
            at += len(words)
    return True


# Kept windows of one document a new window is compared with (the most recent ones).
_MAX_WINDOWS = 64
# The longest text a stitch may grow a passage to (about 8,000 tokens); a window that would
# grow it further is a passage of its own. Every stitch rescans, reshingles and recounts the
# grown text, so without a bound 400 chained windows of one document cost 400 times its
# length (8 s); with it, each costs at most this much.
MAX_STITCHED_CHARS = 32_768
# The most characters of their document that stitched compressed windows may span (their shown
# text is at most MAX_STITCHED_CHARS): each join is checked against the whole span.
_MAX_CUT_SPAN = 4 * MAX_STITCHED_CHARS


@dataclass(frozen=True)
class StitchWindowsDedup(Strategy):
    """Stitch overlapping windows of one document into one passage.

    Windows belong to one document when they share ``doc_id`` (else ``url``, else ``title``).
    They overlap when their ``start``/``end`` character offsets overlap, or, without offsets,
    when one text ends with at least ``min_overlap_chars`` characters that the other begins
    with. A window inside a kept one is a duplicate. Use whenever chunks were cut with overlap.

    Offsets are trusted when they measure the window's text as the caller gave it; a later
    stage shortening the text (compression) does not move the window. Windows at trusted
    places are stitched where those overlap, never by their texts alone: windows apart stay
    apart whatever text they share (a sentence every section repeats). A compressed window
    no longer matches its offsets, so it is joined with one it overlaps where their texts
    overlap, and only when the joined text keeps their document's order (its pieces between
    gap marks appear in the two windows' span in order); else the two stay apart. Offsets
    that do not measure the text (bytes, say) still keep apart windows they leave a gap
    between, and still say which of two texts joined comes first.

    A window is compared with the last 64 kept windows of its document, so thousands of
    passages sharing a title stay linear, and a stitch grows a passage to at most
    ``MAX_STITCHED_CHARS`` characters (a window past that is a passage of its own), so
    hundreds of chained windows do too.
    """

    name: ClassVar[str] = "stitch"
    slot: ClassVar[str] = "dedup"
    min_overlap_chars: int = 32

    def __post_init__(self) -> None:
        require_int("min_overlap_chars", self.min_overlap_chars, low=1)

    def session(self) -> DedupSession:
        return _StitchSession(self.min_overlap_chars)


class _Window(NamedTuple):
    """A kept window with what placement tests first: where it lies, and its first
    ``min_overlap_chars`` characters."""

    candidate: Candidate
    place: _Place | None
    head: str


class _StitchSession:
    def __init__(self, min_overlap: int) -> None:
        self.min_overlap = min_overlap
        self.by_document: dict[str, list[_Window]] = {}
        self.positions: dict[str, int] = {}  # a kept window's index in its document's list, by id
        # The id, text and place of the passage the last placement stitched compressed windows
        # into: its offsets are dropped (they would not measure its text), so accept takes
        # its place from here.
        self.cut_stitch: tuple[str, str, _Place] | None = None

    def verdict(self, candidate: Candidate) -> Verdict:
        return None

    def placement(self, candidate: Candidate) -> Verdict:
        self.cut_stitch = None
        key = _document_key(candidate)
        windows = None if key is None else self.by_document.get(key)
        if not windows:
            return None
        place, text = _given_place(candidate), candidate.text
        head = text[: self.min_overlap]
        # The most recent windows only: many windows of one document (or one title) would
        # otherwise make every placement compare with all of them. The cheap tests first:
        # windows whose offsets put them apart, and texts neither of whose starts lies inside
        # the other (every text relation needs one), are unrelated.
        for kept, kept_place, kept_head in windows[-_MAX_WINDOWS:]:
            if place is not None and kept_place is not None:
                if _apart(kept_place, place):
                    continue
                if kept_place.text is not None and place.text is not None:
                    # trusted places decide: a text the two share elsewhere (a sentence the
                    # document repeats) says nothing about where they meet
                    found = self._by_offsets(kept, kept_place, candidate, place)
                    if found is not None:
                        return found
                    continue
            if head in kept.text or kept_head in text:
                found = self._by_text(kept, candidate, _kept_first(kept_place, place))
                if found is not None:
                    return found
        return None

    def _by_offsets(self, kept: Candidate, at: _Place, new: Candidate, new_at: _Place) -> Verdict:
        """The verdict on ``new`` against ``kept``, overlapping windows at trusted places."""
        assert at.text is not None and new_at.text is not None
        low, high = max(at.start, new_at.start), min(at.end, new_at.end)
        shared_kept = at.text[low - at.start : high - at.start]
        if shared_kept != new_at.text[low - new_at.start : high - new_at.start]:
            return None  # same offsets, different text: not the same document version
        if kept.text != at.text or new.text != new_at.text:
            return self._by_cuts(kept, at, new, new_at)
        if at.start <= new_at.start and new_at.end <= at.end:
            return Duplicate(kept.id, f"window {new_at.start}-{new_at.end} lies inside {kept.id}")
        union = _union(at, new_at)
        assert union.text is not None
        if _grows_too_long(kept, new, len(union.text)):
            return None  # a passage of its own
        merged = kept._replace(
            passage=_headed(kept, new),
            text=union.text,
            start=union.start,
            end=union.end,
            score=max(kept.score, new.score),
        )
        detail = f"stitched into {kept.id}: windows overlap by {high - low} characters"
        return Merge(kept, merged, detail)

    def _by_cuts(self, kept: Candidate, at: _Place, new: Candidate, new_at: _Place) -> Verdict:
        """The verdict on ``new`` against ``kept``, overlapping windows at trusted places one
        of which compression shortened. Their union cannot be shown (that would undo the
        compression) and a shortened text no longer matches its offsets, so the texts are
        joined where they overlap, the earlier window's first; the join stands only when its
        pieces between gap marks appear in the union in order (texts that repeat a sentence
        can meet at the wrong one), else the windows stay apart."""
        if kept.text == at.text and at.start <= new_at.start and new_at.end <= at.end:
            # everything the new window was compressed from is there in full
            return Duplicate(kept.id, f"window {new_at.start}-{new_at.end} lies inside {kept.id}")
        if max(at.end, new_at.end) - min(at.start, new_at.start) > _MAX_CUT_SPAN:
            # the join is checked against the span the two cover, read whole each time: past
            # this a passage of its own, so that stitching stays linear (review rv36-1)
            return None
        found = self._by_text(kept, new, _kept_first(at, new_at))
        if not isinstance(found, Merge):
            return found
        union = _union(at, new_at)
        assert union.text is not None
        if not _cut_of(found.merged.text, union.text):
            return None
        merged = found.merged._replace(start=None, end=None)
        self.cut_stitch = (merged.id, merged.text, union)
        return Merge(kept, merged, found.detail)

    def _by_text(self, kept: Candidate, new: Candidate, kept_first: bool | None) -> Verdict:
        """The verdict on ``new`` against ``kept`` by their texts. Where offsets say which
        window comes first (``kept_first``), the texts join that way round only: each may end
        with a sentence the other begins with."""
        relation, overlap = _text_relation(kept.text, new.text, self.min_overlap)
        if kept_first is not None and relation in ("continues", "precedes"):
            wanted = "continues" if kept_first else "precedes"
            if relation != wanted:
                first, second = (kept, new) if kept_first else (new, kept)
                relation = wanted
                overlap = _suffix_prefix_overlap(first.text, second.text, self.min_overlap)
                if not overlap:
                    return None
        return self._related(kept, new, relation, overlap)

    def _related(self, kept: Candidate, new: Candidate, relation: str, overlap: int) -> Verdict:
        """The verdict on ``new`` whose text relates to ``kept``'s as ``relation`` says (see
        :func:`_text_relation`), sharing ``overlap`` characters with it."""
        if relation == "inside":
            return Duplicate(kept.id, f"text lies inside {kept.id}")
        score = max(kept.score, new.score)
        if relation == "contains":
            merged = kept._replace(
                passage=_headed(kept, new),
                text=new.text,
                score=score,
                start=new.start,
                end=new.end,
            )
            return Merge(kept, merged, f"stitched into {kept.id}: its text contains {kept.id}")
        if relation in ("continues", "precedes"):
            first, second = (kept, new) if relation == "continues" else (new, kept)
            if _grows_too_long(kept, new, len(first.text) + len(second.text) - overlap):
                return None  # a passage of its own
            text = first.text + second.text[overlap:]
            merged = kept._replace(
                passage=_headed(kept, new), text=text, score=score, start=None, end=None
            )
            detail = f"stitched into {kept.id}: {relation} it with {overlap} shared characters"
            return Merge(kept, merged, detail)
        return None

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        key = _document_key(candidate)
        if key is None:
            return
        if replaced is None:
            place = _given_place(candidate)
        elif self.cut_stitch is not None and self.cut_stitch[:2] == (candidate.id, candidate.text):
            place = self.cut_stitch[2]
        else:
            place = _own_place(candidate)
        self.cut_stitch = None
        window = _Window(candidate, place, candidate.text[: self.min_overlap])
        windows = self.by_document.setdefault(key, [])
        if replaced is None:
            self.positions[candidate.id] = len(windows)
            windows.append(window)
            return
        position = self.positions.get(replaced.id)
        if (
            position is not None
            and position < len(windows)
            and windows[position].candidate.id == replaced.id
        ):
            windows[position] = window


def _headed(kept: Candidate, new: Candidate) -> Passage:
    """The passage ``kept`` stands for once ``new`` is stitched into it: its own, with the
    title, url and source of ``new`` where it has none of title and url itself (windows of one
    document that a retriever returned with and without them; the grown passage's header and
    report name the document either way, and the guard reads the header it gets). A title of
    white space alone, or a url no header shows, is none: the header leaves it out too."""
    passage, other = kept.passage, new.passage
    if _headed_by(passage):
        return passage
    if not _headed_by(other):
        return passage
    source = passage.source if passage.source is not None else other.source
    return dataclasses.replace(passage, title=other.title, url=other.url, source=source)


def _headed_by(passage: Passage) -> bool:
    """Whether ``passage``'s header names it: it has a title with more than white space in it,
    or a url a header shows (not a ``javascript:`` one, say)."""
    return bool((passage.title or "").strip()) or shows_url(passage.url)


def _grows_too_long(kept: Candidate, new: Candidate, length: int) -> bool:
    """Whether stitching ``new`` into ``kept`` as a text of ``length`` characters would grow
    past ``MAX_STITCHED_CHARS`` and past both windows."""
    return length > max(MAX_STITCHED_CHARS, len(kept.text), len(new.text))


@text_cache(CACHE_CHARS, texts=2)
def _text_relation(kept: str, new: str, minimum: int) -> tuple[str, int]:
    """How ``new`` relates to ``kept``: inside it, containing it, continuing it (kept's end is
    new's start), preceding it, or unrelated; with the overlap in characters. Cached: the same
    windows meet again request after request."""
    # Every relation below puts the start of one text inside the other: two probes rule
    # out most unrelated pairs before the full comparisons.
    if new[:minimum] not in kept and kept[:minimum] not in new:
        return "unrelated", 0
    if new in kept:
        return "inside", len(new)
    if kept in new:
        return "contains", len(kept)
    overlap = _suffix_prefix_overlap(kept, new, minimum)
    if overlap:
        return "continues", overlap
    overlap = _suffix_prefix_overlap(new, kept, minimum)
    if overlap:
        return "precedes", overlap
    return "unrelated", 0


# Places where the start of one text recurs in the other that are compared (each comparison
# reads up to the whole text, at C speed). A text that repeats the other's start more often
# than this ("ab ab ab ...") is not stitched to it by text: it stays a passage of its own.
_DIRECT_TRIES = 16


def _suffix_prefix_overlap(first: str, second: str, minimum: int) -> int:
    """The longest ``n >= minimum`` with ``first[-n:] == second[:n]``, or 0; also 0 where the
    first ``minimum`` characters of ``second`` recur more than ``_DIRECT_TRIES`` times in the
    end of ``first`` that could overlap (so the work is linear in the texts: windows of one
    document, each compared with the last 64 of it, took seconds when each recurrence was)."""
    if len(first) < minimum or len(second) < minimum:
        return 0
    probe = second[:minimum]
    position = first.find(probe, max(0, len(first) - len(second)))
    for _ in range(_DIRECT_TRIES):
        if position == -1:
            return 0
        if second.startswith(first[position:]):
            return len(first) - position
        position = first.find(probe, position + 1)
    return 0


@text_cache(CACHE_CHARS)
def _normalized_key(text: str) -> int:
    # The phrase key is the text's words joined by single spaces (and is usually cached
    # already: selection and relevance key every candidate the same way).
    return content_key(phrase_key(text))


@dataclass(frozen=True)
class ExactDedup(Strategy):
    """Drop a passage whose text equals a kept one's after normalisation (case, whitespace and
    punctuation ignored). Cheap; always worth running."""

    name: ClassVar[str] = "exact"
    slot: ClassVar[str] = "dedup"

    def session(self) -> DedupSession:
        return _ExactSession()


class _ExactSession:
    def __init__(self) -> None:
        self.seen: dict[int, str] = {}

    def placement(self, candidate: Candidate) -> Verdict:
        return None

    def verdict(self, candidate: Candidate) -> Verdict:
        owner = self.seen.get(_normalized_key(candidate.text))
        if owner is None:
            return None
        return Duplicate(owner, f"same text as {owner} after normalisation (similarity 1.0)")

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        self.seen.setdefault(_normalized_key(candidate.text), candidate.id)


# Shingles of more words find no near-duplicate that fewer would miss, and the hash of a
# shingle is a polynomial of its words: its cost grows with the size.
MAX_SHINGLE_SIZE = 32
_MIX = 0x9E3779B1  # an odd 32-bit multiplier: shingle hash = polynomial of its word hashes
# The hashes of all of a text's shingles come from one multiplication of Python integers: one
# holds every word hash in a lane of 96 bits, the other the polynomial's coefficients, so lane
# ``i`` of the product is the polynomial of the words ending at ``i``. A lane receives fewer
# than 2**32 products below 2**64 each, so nothing ever carries into the next one.
_LANE_WORDS = 3  # 32-bit array items per lane
_LANE_BITS = 32 * _LANE_WORDS
_U32 = next(code for code in "IL" if array(code).itemsize == 4)  # "I" on every common platform
_SWAP = sys.byteorder == "big"  # lanes are packed into the integers little-endian


@text_cache(HEAVY_CACHE_CHARS)
def shingles(text: str, size: int) -> frozenset[int]:
    """32-bit hashes of the word ``size``-grams of ``text`` (its words, when it is shorter).

    A shingle's hash is ``(h1 * M**(size-1) + h2 * M**(size-2) + ... + h_size) mod 2**32`` with
    ``h`` the xxh32 hashes of its words and ``M`` a fixed odd multiplier, so no shingle string
    is ever built. The set is built in text order (its iteration order decides which kept
    passage a verdict meets first, and so names on a tie). Results are cached by text, like
    token counts: retrieval returns the same chunks again and again.
    """
    return _shingles_of(_Words.of(text).hashes, size)


def _shingles_of(hashes: Sequence[int], size: int) -> frozenset[int]:
    """:func:`shingles` of a text whose words have the xxh32 ``hashes``."""
    if size == 1 or len(hashes) < size:
        return frozenset(hashes)
    return frozenset(_polynomials(hashes, size))


class _Words(NamedTuple):
    """A text's words as shingles are made of them: the xxh32 hash of each word of its phrase
    key, in order, and its first and last words (which a stitch may join to a neighbour's)."""

    hashes: array[int]
    first: str
    last: str

    @classmethod
    def of(cls, text: str) -> _Words:
        words = phrase_key(text).encode("utf-8", "surrogatepass").split()
        hashes = array(_U32, map(xxhash.xxh32_intdigest, words))
        return cls(hashes, *(_decoded(words[i]) if words else "" for i in (0, -1)))

    def grown(self, text: str, grown: str) -> _Growth | None:
        """The words of ``grown``, a text made by adding text before and or after ``text``
        (whose words these are), from the words of what was added: its first and last words
        joined to those of ``text`` where no space parts them. ``None`` where ``text`` is not
        in ``grown``, has no words, or lower-casing depends on the neighbours (a capital
        sigma)."""
        at = grown.find(text) if not grown.startswith(text) else 0
        if at == -1 or not self.hashes or "\u03a3" in grown:
            return None
        before, after = _Words.of(grown[:at]), _Words.of(grown[at + len(text) :])
        hashes = self.hashes
        first, last = self.first, self.last
        cut_front = cut_back = 0
        if before.hashes and _joins(grown[at - 1 : at + 1]):
            joined = before.last + first
            if len(hashes) == 1:
                last = joined
            first = before.first if len(before.hashes) > 1 else joined
            hashes = array(_U32, [*before.hashes[:-1], _hash(joined)]) + hashes[1:]
            cut_front = 1
        elif before.hashes:
            hashes, first = before.hashes + hashes, before.first
        end = at + len(text)
        if after.hashes and _joins(grown[end - 1 : end + 1]):
            joined = last + after.first
            if len(hashes) == 1:
                first = joined
            last = after.last if len(after.hashes) > 1 else joined
            hashes = hashes[:-1] + array(_U32, [_hash(joined), *after.hashes[1:]])
            cut_back = 1
        elif after.hashes:
            hashes, last = hashes + after.hashes, after.last
        words = _Words(hashes, first, last)
        return _Growth(words, len(before.hashes), len(after.hashes), cut_front, cut_back)


class _Growth(NamedTuple):
    """What a stitch made of a text's words: the grown text's ``words``, of which the first
    ``head`` and the last ``tail`` are new (added, or joined to an old first or last word), and
    how many of the old words' first and last (0 or 1) a join replaced."""

    words: _Words
    head: int
    tail: int
    cut_front: int
    cut_back: int

    def shingle_changes(self, old: _Words, size: int) -> tuple[array[int], array[int]] | None:
        """The shingles (of ``size`` words) the old text had that the grown one has fewer of,
        and those the grown one has that are new, each once per occurrence; ``None`` when
        either text has fewer than ``size`` words (its shingles are then its words)."""
        n, m = len(old.hashes), len(self.words.hashes)
        if size == 1 or n < size or m < size:
            return None
        removed = array(_U32)
        cut = ([0] if self.cut_front else []) + ([n - size] if self.cut_back else [])
        for start in sorted(set(cut)):
            removed += _polynomials(old.hashes[start : start + size], size)
        # The shingles that hold a new word start in the first ``head`` places or the places
        # ``size - 1`` before the last ``tail`` words: two ranges, one where they meet.
        last = m - size + 1
        front, back = (0, min(self.head, last)), (max(0, m - self.tail - size + 1), last)
        ranges = [(start, stop) for start, stop in (front, back) if start < stop]
        if len(ranges) == 2 and back[0] <= front[1]:
            ranges = [(0, back[1])]
        added = array(_U32)
        new = self.words.hashes
        for start, stop in ranges:
            added += _polynomials(new[start : stop + size - 1], size)
        return removed, added


def _decoded(word: bytes) -> str:
    return word.decode("utf-8", "surrogatepass")


def _hash(word: str) -> int:
    return xxhash.xxh32_intdigest(word.encode("utf-8", "surrogatepass"))


def _joins(pair: str) -> bool:
    """Whether one word runs across the two characters of ``pair``: lower-cased as
    :func:`~ctxasm.lexical.normalize` reads them, the first ends with a word character and the
    second starts with one."""
    if len(pair) != 2:
        return False
    left, right = normalize(pair[0]), normalize(pair[1])
    return left[-1:] not in ("", " ") and right[:1] not in ("", " ")


def _polynomials(hashes: Sequence[int], size: int) -> array[int]:
    """``(hashes[i] * M**(size-1) + ... + hashes[i+size-1]) mod 2**32`` for every start ``i``,
    in order, with ``M = _MIX`` (all at once: see ``_LANE_BITS``)."""
    count = len(hashes)
    lanes = array(_U32, bytes(4 * _LANE_WORDS * count))
    lanes[::_LANE_WORDS] = array(_U32, hashes)
    if _SWAP:
        lanes.byteswap()
    product = int.from_bytes(lanes, "little") * _coefficients(size)
    result = array(_U32, product.to_bytes(4 * _LANE_WORDS * (count + size - 1), "little"))
    if _SWAP:
        result.byteswap()
    # a lane's low 32 bits are its value mod 2**32
    return result[_LANE_WORDS * (size - 1) : _LANE_WORDS * count : _LANE_WORDS]


@lru_cache(maxsize=64)
def _coefficients(size: int) -> int:
    """``M**d mod 2**32`` in lane ``d``, for ``d < size``."""
    return sum(pow(_MIX, d, 1 << 32) << (_LANE_BITS * d) for d in range(size))


@dataclass(frozen=True)
class NearDuplicateDedup(Strategy):
    """Drop a passage whose word shingles mostly repeat a kept passage's.

    A candidate is a near-duplicate when its shingle Jaccard similarity with a kept passage is at
    least ``threshold``, or when at least ``containment`` of its own shingles already appear in
    one (a chunk inside a longer passage).

    With a few kept passages (up to 32) a candidate's shingle set is intersected with each
    that has one of a few of its shingles (every near-duplicate has one); up to ``lsh_after``
    kept passages, an inverted index from shingle to kept passages finds every kept passage
    sharing a shingle and the exact counts, in time proportional to the candidate's own
    shingles. Beyond that, a MinHash LSH index (datasketch) proposes the few
    worth comparing, so thousands of kept passages stay fast; proposals are then checked
    exactly (containment is only checked on what LSH proposes). Use when chunks overlap or
    sources copy each other.
    """

    name: ClassVar[str] = "near"
    slot: ClassVar[str] = "dedup"
    threshold: float = 0.7
    containment: float = 0.9
    shingle_size: int = 3
    lsh_after: int = 1000

    def __post_init__(self) -> None:
        require_number("threshold", self.threshold, low=0.0, high=1.0)
        require_number("containment", self.containment, low=0.0, high=1.0)
        require_int("shingle_size", self.shingle_size, low=1, high=MAX_SHINGLE_SIZE)
        require_int("lsh_after", self.lsh_after, low=1)

    def session(self) -> DedupSession:
        return _NearSession(self)


_NUM_PERM = 128
# Up to this many kept passages, a candidate is compared with each directly; beyond, through an
# inverted index from shingle to kept passages (built on first need).
_DIRECT_UPTO = 32
# A shingle (or LSH bucket) remembers at most this many kept passages. Ordinary passages share
# a shingle with a few others; thousands of near-copies would otherwise make every lookup walk
# all of them (quadratic). A passage past the cap is still found through its other shingles.
_MAX_OWNERS = 64
# When a capped list was met, only this many of the passages sharing the most shingles are
# compared exactly.
_MAX_PROPOSALS = 32


class _NearSession:
    def __init__(self, config: NearDuplicateDedup) -> None:
        self.config = config
        self.kept: dict[str, Set[int]] = {}
        # shingle -> kept ids (at most _MAX_OWNERS), until LSH takes over. Most shingles have
        # one owner: a tuple shared by all of its shingles holds it, as thousands of one-item
        # lists would make the garbage collector run more often and take longer.
        self.postings: dict[int, tuple[str] | list[str]] = {}
        self.lsh: _BoundedLSH | None = None
        # Passages grown by stitching: their words and how often each shingle occurs, to grow
        # their shingles from (see _grown).
        self.grown: dict[str, tuple[_Words, Counter[int] | None]] = {}
        # The last frozen shingle set given a MinHash signature, and that signature.
        self.signed: tuple[frozenset[int], Any] | None = None

    def placement(self, candidate: Candidate) -> Verdict:
        return None

    def _shingles(self, candidate: Candidate) -> frozenset[int]:
        return shingles(candidate.text, self.config.shingle_size)

    def verdict(self, candidate: Candidate) -> Verdict:
        own = self._shingles(candidate)
        if not own:
            return None
        best: tuple[float, float, str] | None = None
        for kept_id, shared in self._overlaps(own).items():
            other = len(self.kept[kept_id])
            jaccard = shared / (len(own) + other - shared)
            contained = shared / len(own)
            if jaccard >= self.config.threshold or contained >= self.config.containment:
                score = (jaccard, contained, kept_id)
                if best is None or score[:2] > best[:2]:
                    best = score
        if best is None:
            return None
        jaccard, contained, kept_id = best
        return Duplicate(
            kept_id,
            f"near-duplicate of {kept_id} (jaccard {jaccard:.2f}, "
            f"{contained:.0%} of its shingles already there)",
        )

    def _overlaps(self, own: frozenset[int]) -> dict[str, int]:
        """Kept passages that may be near-duplicates of ``own`` (every one that is, among a
        bounded number: see ``_MAX_OWNERS``), with the number of shingles each shares with it,
        in the order the verdict breaks ties by."""
        if self.lsh is not None:
            return self._shared(own, self.lsh.query(self._minhash(own)))
        if len(self.kept) <= _DIRECT_UPTO:
            # A few kept passages: set intersections in C beat maintaining an index, and the
            # probe rules most of them out in a fraction of an intersection's time.
            probe = self._probe(own)
            return {
                kept_id: len(own & values)
                for kept_id, values in self.kept.items()
                if not values.isdisjoint(probe)
            }
        if not self.postings:
            for kept_id, values in self.kept.items():
                self._post(kept_id, values)
        # Counted in the order the candidate's shingles and their owners come (ties go to
        # the passage met first).
        lists = list(filter(None, map(self.postings.get, own)))
        counts = Counter(chain.from_iterable(lists))
        if max(map(len, lists), default=0) < _MAX_OWNERS:
            return counts  # every count is exact
        return self._shared(own, [kept_id for kept_id, _ in counts.most_common(_MAX_PROPOSALS)])

    def _least_shared(self, size: int) -> int:
        """The fewest shingles a kept passage must share with a candidate of ``size`` shingles
        to be its near-duplicate: ``n`` shared make a share ``n / size`` of the candidate's,
        and its Jaccard similarity is never above that share, so it must reach the lower
        threshold (0 with a threshold of 0)."""
        share = min(self.config.threshold, self.config.containment)
        return 0 if share <= 0 else _least_count(size, share)

    def _probe(self, own: frozenset[int]) -> Collection[int]:
        """Some of ``own``'s shingles, one of which every kept near-duplicate has: it lacks at
        most ``len(own) - least`` of them, so any ``len(own) - least + 1`` include one. (With
        ``least`` 0 or 1, all of them: sharing one makes a kept passage worth counting.)"""
        least = self._least_shared(len(own))
        return own if least <= 1 else tuple(islice(own, len(own) - least + 1))

    def _shared(self, own: frozenset[int], ids: Sequence[str]) -> dict[str, int]:
        """How many shingles ``own`` shares with each of the kept passages ``ids`` (those that
        share too few to be near-duplicates left out)."""
        least = self._least_shared(len(own))
        shared = map(len, map(own.intersection, map(self.kept.__getitem__, ids)))
        return {kept_id: n for kept_id, n in zip(ids, shared, strict=True) if n >= least}

    def _post(self, kept_id: str, values: Set[int]) -> None:
        postings = self.postings
        get = postings.get
        alone = (kept_id,)  # one tuple for every shingle it is the first to have
        for shingle in values:
            owners = get(shingle)
            if owners is None:
                postings[shingle] = alone
            elif isinstance(owners, tuple):
                postings[shingle] = [*owners, kept_id]
            elif len(owners) < _MAX_OWNERS:
                owners.append(kept_id)

    def _minhash(self, values: Set[int]) -> Any:
        # The candidate a verdict just signed is the one accepted next: signed once. Only an
        # immutable set is remembered (a kept set grows in place when its passage is stitched).
        last = self.signed
        if last is not None and last[0] is values:
            return last[1]
        signature = self._signed(values)
        if isinstance(values, frozenset):
            self.signed = (values, signature)
        return signature

    @staticmethod
    def _signed(values: Set[int]) -> Any:
        from datasketch import MinHash

        template = _template()
        signature = MinHash(
            num_perm=_NUM_PERM,
            hashfunc=int,
            permutations=template.permutations,
            scheme=template.scheme,
        )
        signature.update_batch(sorted(values))
        return signature

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        own: Set[int]
        if replaced is None:
            own = self._shingles(candidate)
        else:
            own = self._grown(candidate, replaced)
            self._forget(replaced.id)
        self.kept[candidate.id] = own
        if self.lsh is not None:
            self.lsh.insert(candidate.id, self._minhash(own))
            return
        if self.postings:  # the index exists: keep it current
            self._post(candidate.id, own)
        if len(self.kept) > self.config.lsh_after:
            self._build_index()

    def _grown(self, candidate: Candidate, replaced: Candidate) -> Set[int]:
        """:meth:`_shingles` of ``candidate``, ``replaced`` grown by a stitch: the kept shingles
        changed by those of the words added and joined only, so that a passage grown window by
        window is not read whole again at every stitch (which made stitching quadratic in the
        windows). Where the words cannot be grown so, the text is read whole."""
        size = self.config.shingle_size
        known = self.grown.pop(replaced.id, None)
        words, counts = known if known is not None else (_Words.of(replaced.text), None)
        growth = words.grown(replaced.text, candidate.text)
        changes = None if growth is None else growth.shingle_changes(words, size)
        if growth is None or changes is None:
            return self._shingles(candidate)
        removed, added = changes
        own = self.kept[replaced.id]
        if self.postings or not isinstance(own, set):
            own = set(own)  # the kept set is unposted from, or shared with the shingles cache
        if removed:  # a join replaced an end word: a shingle may occur elsewhere too
            if counts is None:
                counts = Counter(_polynomials(words.hashes, size))
            counts.subtract(removed)
            own.difference_update(gram for gram in removed if counts[gram] <= 0)
            for gram in set(removed):
                if counts[gram] <= 0:
                    del counts[gram]
        if counts is not None:
            counts.update(added)
        own.update(added)
        self.grown[candidate.id] = (growth.words, counts)
        return own

    def _forget(self, kept_id: str) -> None:
        old = self.kept.pop(kept_id, frozenset())
        if self.lsh is not None:
            self.lsh.remove(kept_id)
            return
        if not self.postings:
            return
        for shingle in old:
            owners = self.postings.get(shingle)
            if owners is None or kept_id not in owners:
                continue
            if isinstance(owners, list) and len(owners) > 1:
                owners.remove(kept_id)
            else:
                del self.postings[shingle]

    def _build_index(self) -> None:
        # A lower LSH threshold than the decision threshold keeps recall high; every proposal
        # is then checked with the exact Jaccard above.
        threshold = max(0.1, self.config.threshold * 0.8)
        self.lsh = _BoundedLSH(*_lsh_bands(threshold))
        for kept_id, values in self.kept.items():
            self.lsh.insert(kept_id, self._minhash(values))
        self.postings.clear()


@lru_cache(maxsize=4096)
def _least_count(size: int, share: float) -> int:
    """The smallest ``n >= 1`` with ``n / size >= share``, as Python's division has it."""
    n = max(1, math.ceil(share * size))
    while n > 1 and (n - 1) / size >= share:
        n -= 1
    while n / size < share:
        n += 1
    return n


class _BoundedLSH:
    """MinHash LSH over ``bands`` bands of ``rows`` hash values, the same banding as
    datasketch's ``MinHashLSH``, but a bucket holds at most ``_MAX_OWNERS`` passages: a query
    proposes at most ``bands * _MAX_OWNERS`` of them however many near-copies were kept."""

    def __init__(self, bands: int, rows: int) -> None:
        self.ranges = [(band * rows, (band + 1) * rows) for band in range(bands)]
        self.buckets: dict[tuple[int, bytes], list[str]] = {}
        self.keys: dict[str, list[tuple[int, bytes]]] = {}

    def _keys(self, signature: Any) -> list[tuple[int, bytes]]:
        values = signature.hashvalues
        raw, width = values.tobytes(), values.itemsize  # one copy, sliced per band
        return [
            (band, raw[low * width : high * width]) for band, (low, high) in enumerate(self.ranges)
        ]

    def insert(self, kept_id: str, signature: Any) -> None:
        placed = []
        for key in self._keys(signature):
            members = self.buckets.setdefault(key, [])
            if len(members) < _MAX_OWNERS:
                members.append(kept_id)
                placed.append(key)
        self.keys[kept_id] = placed

    def query(self, signature: Any) -> list[str]:
        """The passages in the candidate's buckets, sorted by id: where more than
        ``_MAX_PROPOSALS``, those in the most of them (a near-duplicate shares many bands; the
        rest would each cost an exact comparison), ties to the first met."""
        found: Counter[str] = Counter()
        for key in self._keys(signature):
            found.update(self.buckets.get(key, ()))
        if len(found) <= _MAX_PROPOSALS:
            return sorted(found)
        return sorted(kept_id for kept_id, _ in found.most_common(_MAX_PROPOSALS))

    def remove(self, kept_id: str) -> None:
        for key in self.keys.pop(kept_id, ()):
            members = self.buckets[key]
            members.remove(kept_id)
            if not members:
                del self.buckets[key]


@lru_cache(maxsize=1)
def _template() -> Any:
    # datasketch draws 128 random permutations per MinHash unless given them: draw them once.
    from datasketch import MinHash

    return MinHash(num_perm=_NUM_PERM, seed=1)


@lru_cache(maxsize=16)
def _lsh_bands(threshold: float) -> tuple[int, int]:
    # The (bands, rows) split for a threshold comes from a numerical optimisation; do it once.
    from datasketch import MinHashLSH

    index = MinHashLSH(threshold=threshold, num_perm=_NUM_PERM)
    return int(index.b), int(index.r)


def clear_caches() -> None:
    """Forget cached keys, shingles and text relations (for cold-start measurements; the words
    they are made of are cached by :func:`ctxasm.lexical.clear_caches`)."""
    for cached in (_normalized_key, shingles, _text_relation):
        cached.cache_clear()


StitchWindows = StitchWindowsDedup  # former name, kept importable
