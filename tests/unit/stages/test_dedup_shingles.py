"""Near-duplicate dedup's arithmetic: shingle hashes, and the shortcuts that skip comparisons.

Each shortcut must leave every verdict as a plain comparison with every kept passage gives it.
"""

from __future__ import annotations

import random

import pytest
import xxhash

from ctxasm.data import Candidate, Passage
from ctxasm.lexical import words
from ctxasm.stages import dedup, dedup_near
from ctxasm.stages.dedup import Duplicate
from ctxasm.stages.dedup_near import NearDuplicateDedup, shingles
from ctxasm.stages.dedup_stitch import StitchWindowsDedup

VOCABULARY = "the cat sat on a mat and dog ran far away of in Σίσυφος ÉTÉ naïve x_y 42".split()


def _reference_shingles(text: str, size: int) -> list[int]:
    """Shingle hashes one by one, in text order, as ``shingles`` documents them."""
    hashes = [xxhash.xxh32_intdigest(w.encode("utf-8", "surrogatepass")) for w in words(text)]
    if len(hashes) < size:
        return hashes
    return [
        sum(h * dedup_near._MIX ** (size - 1 - j) for j, h in enumerate(hashes[i : i + size]))
        % 2**32
        for i in range(len(hashes) - size + 1)
    ]


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    separators = (" ", ", ", "  ", "\n", "-", "'")
    return [
        "".join(
            rng.choice(VOCABULARY) + rng.choice(separators)
            for _ in range(rng.choice((0, 1, 2, 3, 7, 40, 300)))
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7])
def test_shingle_hashes_are_the_word_hash_polynomials_in_text_order(size: int) -> None:
    for text in _texts(seed=size, count=200):
        expected = _reference_shingles(text, size)
        found = shingles.__wrapped__(text, size)
        assert found == frozenset(expected)
        # built in text order, like the reference: set iteration order, which decides which
        # kept passage is met first (and named on a tie), depends on insertion order
        assert list(found) == list(frozenset(expected))


def test_a_text_with_long_runs_of_words_keeps_every_shingle() -> None:
    text = " ".join(f"w{i % 997}" for i in range(20_000))
    assert shingles.__wrapped__(text, 3) == frozenset(_reference_shingles(text, 3))


@pytest.mark.parametrize("share", [0.0001, 0.1, 1 / 3, 0.5, 0.55, 0.7, 0.9, 0.99, 1.0, 1])
def test_least_count_is_the_smallest_count_reaching_the_share(share: float) -> None:
    for size in range(1, 400):
        least = dedup_near._least_count(size, share)
        assert least / size >= share
        assert least == 1 or (least - 1) / size < share


def _reference_verdict(
    kept: dict[str, frozenset[int]], own: frozenset[int], config: NearDuplicateDedup
) -> tuple[str, float, float] | None:
    """Every kept passage sharing a shingle, compared in the order it was kept; the best wins,
    the first of equals on a tie."""
    best: tuple[str, float, float] | None = None
    for kept_id, values in kept.items():
        shared = len(own & values)
        if not shared:
            continue
        jaccard = shared / (len(own) + len(values) - shared)
        contained = shared / len(own)
        passes = jaccard >= config.threshold or contained >= config.containment
        if passes and (best is None or (jaccard, contained) > best[1:]):
            best = (kept_id, jaccard, contained)
    return best


@pytest.mark.parametrize(
    ("threshold", "containment"), [(0.7, 0.9), (0.3, 0.5), (0.0, 0.9), (1.0, 1.0), (0.9, 0.2)]
)
def test_the_probe_leaves_every_pairwise_verdict_as_a_full_comparison_gives_it(
    threshold: float, containment: float
) -> None:
    rng = random.Random(f"{threshold}/{containment}")
    config = NearDuplicateDedup(threshold=threshold, containment=containment)
    base = [rng.choice(VOCABULARY) for _ in range(30)]
    checked = duplicates = 0
    for _ in range(40):
        session = config.session()
        kept: dict[str, frozenset[int]] = {}
        for i in range(30):  # up to 32 kept: the pairwise path
            text_words = list(base)
            for _ in range(rng.choice((0, 1, 2, 4, 8, 15))):
                text_words[rng.randrange(len(text_words))] = rng.choice(VOCABULARY)
            text = " ".join(text_words[: rng.randrange(3, len(text_words) + 1)])
            candidate = Candidate.of(Passage(id=f"p{i}", text=text), i, 1.0)
            own = shingles(text, config.shingle_size)
            expected = _reference_verdict(kept, own, config)
            found = session.verdict(candidate)
            checked += 1
            if expected is None:
                assert found is None
                session.accept(candidate, None)
                kept[candidate.id] = own
            else:
                assert isinstance(found, Duplicate) and found.of == expected[0]
                assert f"jaccard {expected[1]:.2f}, {expected[2]:.0%}" in found.detail
                duplicates += 1
    assert checked == 1200 and 0 < duplicates < checked


def test_lsh_band_keys_are_the_bands_of_the_signature() -> None:
    session = NearDuplicateDedup().session()
    signature = session._minhash(frozenset(range(300)))  # type: ignore[attr-defined]
    index = dedup_near._BoundedLSH(*dedup_near._lsh_bands(0.56))
    values = signature.hashvalues
    assert index._keys(signature) == [
        (band, values[low:high].tobytes()) for band, (low, high) in enumerate(index.ranges)
    ]


def test_a_window_with_offsets_is_stitched_by_text_to_one_without() -> None:
    # Offsets are compared only when both windows have trusted ones; otherwise the texts are.
    document = " ".join(f"word{i}" for i in range(60))
    session = StitchWindowsDedup().session()
    kept = Candidate.of(Passage(id="a", text=document[:200], doc_id="d"), 0, 1.0)
    session.accept(kept, None)
    window = Candidate.of(
        Passage(id="b", text=document[150:300], doc_id="d", start=150, end=300), 1, 0.5
    )
    merged = session.placement(window)
    assert isinstance(merged, dedup.Merge)
    assert (merged.merged.id, merged.merged.text) == ("a", document[:300])
    unrelated = Candidate.of(
        Passage(id="c", text=document[320:400], doc_id="d", start=320, end=400), 2, 0.5
    )
    assert session.placement(unrelated) is None


def _grown_texts(rng: random.Random) -> tuple[str, list[str]]:
    """A text and the texts it grows into, window by window: pieces added before and after,
    cut anywhere (inside a word too, as a chunker that counts characters cuts)."""
    pieces = [*VOCABULARY, " ", ", ", "\n", "Σ", "İ", "-"]
    text = "".join(rng.choice(pieces) + rng.choice(" -") for _ in range(rng.randint(0, 6)))
    grown = []
    for _ in range(rng.randint(1, 10)):
        before = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        after = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        text = (before[rng.randint(0, len(before)) :] if rng.random() < 0.4 else "") + text
        text += after[: rng.randint(0, len(after))]
        grown.append(text)
    return grown[0], grown[1:]


@pytest.mark.parametrize("kept_count", [0, 40, 200])  # compared directly, posted, in LSH
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_a_passage_grown_by_stitching_has_the_shingles_of_its_whole_text(
    kept_count: int, size: int
) -> None:
    # A stitch updates the kept shingles from what it adds: they must be the grown text's.
    rng = random.Random(size * 1000 + kept_count)
    for _ in range(60):
        session = NearDuplicateDedup(shingle_size=size, lsh_after=100).session()
        for i in range(kept_count):
            text = " ".join(rng.choice(VOCABULARY) for _ in range(12))
            session.accept(Candidate.of(Passage(f"o{i}", text), i, 0.5), None)
        first, later = _grown_texts(rng)
        kept = Candidate.of(Passage("k", first or "x"), 0, 1.0)
        session.accept(kept, None)
        for text in later:
            grown = kept._replace(text=text)
            session.accept(grown, kept)
            kept = grown
            assert set(session.kept["k"]) == set(shingles(text, size))  # type: ignore[attr-defined]
        # and the verdicts it gives are those of a session that kept the whole text at once
        fresh = NearDuplicateDedup(shingle_size=size, lsh_after=100).session()
        fresh.accept(kept, None)
        probe = Candidate.of(Passage("c", kept.text), 0, 1.0)
        if kept_count == 0:
            assert session.verdict(probe) == fresh.verdict(probe)


def test_an_exact_copy_of_a_grown_passage_is_found() -> None:
    session = dedup.ExactDedup().session()
    kept = Candidate.of(Passage("k", "Aristotle taught"), 0, 1.0)
    session.accept(kept, None)
    grown = kept._replace(text="Aristotle taught at the Lyceum")
    session.accept(grown, kept)
    again = grown._replace(text="Aristotle taught at the Lyceum in Athens")
    session.accept(again, grown)
    copy = Candidate.of(Passage("c", "aristotle TAUGHT at the lyceum, in athens"), 1, 0.5)
    assert session.verdict(copy) == Duplicate(
        "k", "same text as k after normalisation (similarity 1.0)"
    )
    other = Candidate.of(Passage("d", "Aristotle taught at the Lyceum in Athens today"), 2, 0.5)
    assert session.verdict(other) is None
    # and a copy of a text the passage grew through
    between = Candidate.of(Passage("e", "Aristotle taught at the Lyceum"), 3, 0.5)
    assert session.verdict(between) == Duplicate(
        "k", "same text as k after normalisation (similarity 1.0)"
    )
