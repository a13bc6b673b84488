"""Caches keyed by texts are bounded by the characters they hold (reviews Q and R: 150
distinct passages of 1 MB kept 165 MB alive in the guard's cache alone, and 16,000 distinct
passages of 8,000 characters grew a process by 3.4 GB, counted in entries)."""

from __future__ import annotations

import random
import threading

import ctxasm
from ctxasm import lexical
from ctxasm.formatting import labels
from ctxasm.keys import CACHE_CHARS, ENTRY_CHARS, HEAVY_CACHE_CHARS, text_cache
from ctxasm.stages import compression, dedup, dedup_near, dedup_stitch, guard


def test_a_cache_holds_many_short_texts_or_a_few_long_ones() -> None:
    calls: list[str] = []

    @text_cache(10 * (100 + ENTRY_CHARS))
    def measured(text: str) -> int:
        calls.append(text)
        return len(text)

    short = [f"{n:03d}" + "s" * 97 for n in range(10)]  # ten entries fill it exactly
    for text in short:
        assert measured(text) == 100
    calls.clear()
    for text in short:
        measured(text)
    assert calls == []
    assert measured.cache_info().currsize == 10
    long = "x" * (5 * (100 + ENTRY_CHARS) - ENTRY_CHARS)  # the room of five
    measured(long)
    assert measured.cache_info().currsize == 6  # the five least recently used went
    calls.clear()
    measured(short[-1])
    measured(long)
    measured(short[0])
    assert calls == [short[0]]
    whole = "y" * (10 * (100 + ENTRY_CHARS))  # longer than the cache: computed, not kept
    measured(whole)
    measured(whole)
    assert calls[-2:] == [whole, whole]
    measured.cache_clear()
    assert measured.cache_info().currsize == 0


def test_a_pair_of_texts_counts_both() -> None:
    calls: list[tuple[str, str]] = []

    @text_cache(2 * (50 + ENTRY_CHARS), texts=2)
    def joined(first: str, second: str, extra: int) -> int:
        calls.append((first, second))
        return len(first) + len(second) + extra

    assert joined("a" * 25, "b" * 25, 1) == 51
    assert joined("a" * 25, "b" * 25, 1) == 51
    assert calls == [("a" * 25, "b" * 25)]
    joined("c" * 60, "d" * 60, 0)  # more than the room left: the first pair goes
    assert joined.cache_info().currsize == 1


def test_threads_get_their_own_results() -> None:
    @text_cache(40 * (20 + ENTRY_CHARS))  # room for 40 of 200 keys: constant eviction
    def reversed_text(text: str) -> str:
        return text[::-1]

    keys = [f"key {n:04d} " + "z" * 10 for n in range(200)]
    wrong: list[str] = []

    def hammer(seed: int) -> None:
        draw = random.Random(seed)
        for _ in range(5000):
            key = draw.choice(keys)
            if reversed_text(key) != key[::-1]:
                wrong.append(key)

    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert reversed_text.cache_info().currsize <= 40


def test_the_pipeline_caches_are_bounded_by_characters() -> None:
    budgets = {
        guard._scan: CACHE_CHARS,
        lexical.phrase_key: CACHE_CHARS,
        lexical.entities: CACHE_CHARS,
        lexical.sentence_spans: CACHE_CHARS,
        lexical.key_words: HEAVY_CACHE_CHARS,
        lexical.sentence_words: HEAVY_CACHE_CHARS,
        lexical._written_words: HEAVY_CACHE_CHARS,
        dedup_near.shingles: HEAVY_CACHE_CHARS,
        dedup._normalized_key: CACHE_CHARS,
        dedup_stitch._text_relation: CACHE_CHARS,
        compression.sentence_lemmas: HEAVY_CACHE_CHARS,
        labels.neutral_text: CACHE_CHARS,
    }
    for cached, budget in budgets.items():
        assert cached.cache_info().maxsize == budget


def test_clear_caches_empties_every_text_cache() -> None:
    text = "The Danube ends in the Black Sea. It flows through Vienna."
    ctxasm.assemble("Where does the Danube end?", [{"id": "a", "text": text}], model="gpt-4o")
    compression.sentence_lemmas(text)
    lexical.written_phrase("danube", text)
    ctxasm.clear_caches()
    for cached in (
        guard._scan,
        lexical.phrase_key,
        lexical._written_words,
        lexical.sentence_spans,
        compression.sentence_lemmas,
        labels.neutral_text,
    ):
        assert cached.cache_info().currsize == 0


def test_a_call_with_keywords_is_computed_as_before() -> None:
    text = "Ann met Bob in Rome in 1990."
    assert lexical.entities(text, min_chars=3) == lexical.entities.__wrapped__(text, 3)
    assert lexical.entities(text=text) == lexical.entities(text)
    assert dedup_near.shingles(text, size=2) == dedup_near.shingles(text, 2)


def test_the_characters_counted_are_those_of_the_texts() -> None:
    @text_cache(10_000)
    def scanned(text: str, size: int, threshold: float) -> int:
        return len(text) + size

    texts = [f"{n} " + "w" * 500 for n in range(40)]  # 40 calls of about 500 characters
    for text in texts:
        scanned(text, 5, 1.0)
    held = scanned.cache_info().currsize
    assert held == 10_000 // (len(texts[0]) + ENTRY_CHARS)  # not 40: the texts are counted
    assert scanned.cache_chars() == sum(len(t) + ENTRY_CHARS for t in texts[-held:])


def test_a_tuple_argument_is_not_taken_for_two_arguments() -> None:
    @text_cache(1000)
    def first(text: object) -> object:
        return text

    assert first(("ab", "cd")) == ("ab", "cd")
    try:
        first("ab", "cd")  # type: ignore[call-arg]
    except TypeError:
        pass
    else:
        raise AssertionError("two arguments were answered from the cache of one")
