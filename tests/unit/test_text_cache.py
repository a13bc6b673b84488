"""Caches keyed by texts hold few long ones (review Q: 150 distinct passages of 1 MB kept
165 MB alive in the guard's cache alone, and the caches of 16,384 entries allowed gigabytes)."""

from __future__ import annotations

import ctxasm
from ctxasm import lexical
from ctxasm.keys import LONG_TEXT, LONG_TEXTS, text_cache
from ctxasm.stages import compression, dedup, guard
from ctxasm.stages.guard import InjectionScanGuard


def test_long_texts_have_a_small_cache_of_their_own() -> None:
    calls: list[str] = []

    @text_cache(4)
    def measured(text: str) -> int:
        calls.append(text)
        return len(text)

    short = ["s" * n for n in range(1, 5)]
    long = ["x" * (LONG_TEXT + n) for n in range(1, LONG_TEXTS + 2)]
    for text in (*short, *long):
        assert measured(text) == len(text)
    calls.clear()
    for text in short:
        measured(text)
    assert calls == []  # long texts did not push the short ones out
    measured(long[-1])
    assert calls == []  # the latest long ones are kept ...
    measured(long[0])
    assert calls == [long[0]]  # ... the oldest is not
    assert measured.cache_info().currsize == 4 + LONG_TEXTS
    measured.cache_clear()
    assert measured.cache_info().currsize == 0


def test_a_pair_of_texts_is_measured_together() -> None:
    calls: list[tuple[str, str]] = []

    @text_cache(2, texts=2)
    def joined(first: str, second: str, extra: int) -> int:
        calls.append((first, second))
        return len(first) + len(second) + extra

    half = "y" * (LONG_TEXT // 2 + 1)
    for _ in range(2):
        assert joined(half, half, 1) == 2 * len(half) + 1
    assert calls == [(half, half)]
    assert joined.cache_info().currsize == 1


def test_the_pipeline_caches_keep_at_most_a_few_long_passages() -> None:
    ctxasm.clear_caches()
    compression.sentence_lemmas.cache_clear()  # a cache of compression's, not cleared there
    scan = InjectionScanGuard()
    texts = [f"passage {n} " + "river delta word " * 1200 for n in range(LONG_TEXTS + 8)]
    for text in texts:
        scan.scan(text)
        lexical.phrase_key(text)
        lexical.sentence_spans(text)
        dedup.shingles(text, 5)
        compression.sentence_lemmas(text)
    for cached in (
        guard._scan,
        lexical.phrase_key,
        lexical.sentence_spans,
        dedup.shingles,
        compression.sentence_lemmas,
    ):
        assert cached.cache_info().currsize <= LONG_TEXTS
    ctxasm.clear_caches()
