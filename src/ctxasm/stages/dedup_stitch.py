"""Stitching (dedup ``stitch``): overlapping windows of one document become one passage.

Placement alone decides, before the candidate is priced (see
:class:`~ctxasm.stages.dedup.DedupSession`): a window is compared with the kept windows of its
document, by its offsets where they measure its text, else by its text. Inside a kept window it
is a :class:`~ctxasm.stages.dedup.Duplicate`; overlapping one, a
:class:`~ctxasm.stages.dedup.Merge` into that kept passage (its id stays), grown to at most
``MAX_STITCHED_CHARS`` characters.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from ctxasm.data import ELISION, Candidate, Passage
from ctxasm.keys import CACHE_CHARS, text_cache
from ctxasm.stages.dedup import DedupSession, Duplicate, Merge, Verdict
from ctxasm.strategy import Strategy, require_int
from ctxasm.urls import shows_url

__all__ = ["StitchWindowsDedup"]


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


StitchWindows = StitchWindowsDedup  # former name, kept importable
