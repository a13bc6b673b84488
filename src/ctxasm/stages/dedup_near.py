"""Near-duplicates (dedup ``near``): a passage whose word shingles mostly repeat a kept one's.

Shingles are 32-bit hashes of word n-grams (:func:`shingles`, cached by text). A candidate is
compared only with kept passages that share enough of them, found directly, through an inverted
index or through MinHash LSH as the kept passages grow in number; the verdict is a
:class:`~ctxasm.stages.dedup.Duplicate` or nothing. :func:`clear_caches` forgets what every
dedup strategy caches.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections import Counter
from collections.abc import Collection, Sequence, Set
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from typing import Any, ClassVar, NamedTuple

import xxhash

from ctxasm.data import Candidate
from ctxasm.deadline import checkpoint
from ctxasm.keys import HEAVY_CACHE_CHARS, text_cache
from ctxasm.lexical import normalize, phrase_key
from ctxasm.stages.dedup import DedupSession, Duplicate, Verdict, _normalized_key
from ctxasm.stages.dedup_stitch import _text_relation
from ctxasm.strategy import Strategy, require_int, require_number

__all__ = ["NearDuplicateDedup", "clear_caches"]


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

    def prepare(self) -> None:
        # The first request past lsh_after kept passages imports datasketch and draws its
        # permutations (1.7 s of CPU in a request, with no checkpoint; see ctxasm.deadline).
        _template()
        _lsh_bands(_lsh_threshold(self.threshold))

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
        self.lsh = _BoundedLSH(*_lsh_bands(_lsh_threshold(self.config.threshold)))
        for kept_id, values in self.kept.items():
            checkpoint()
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


def _lsh_threshold(threshold: float) -> float:
    """The LSH threshold for a decision ``threshold``: lower, so that recall stays high."""
    return max(0.1, threshold * 0.8)


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
