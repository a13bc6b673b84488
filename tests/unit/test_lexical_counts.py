"""``lexical.term_counts`` counts whole words exactly as splitting the text into words does, and
``lexical.normalize`` finds the words a regular expression's ``\\w`` finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm import lexical
from ctxasm.lexical import clear_caches, normalize, term_counts, words

# Letters whose lower case is longer or changes class, marks, digits, underscores, apostrophes,
# CJK, and separators: the characters where a shortcut would count differently from words().
ALPHABET = "aAbB_1 \n\t-.,'’İiıßẞΣσςé\u0301\u0307中文Ⅳ²٣"


def _by_words(terms: list[str], text: str) -> list[int]:
    found = words(text)
    return [found.count(term) for term in terms]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40), st.lists(st.text(alphabet=ALPHABET, max_size=4)))
def test_term_counts_equal_the_counts_of_the_words(text: str, extra: list[str]) -> None:
    # The terms a query gives are words; any word of the text, and some that are not in it.
    terms = list(dict.fromkeys([*words(text), *(w for e in extra for w in words(e))]))
    assert term_counts(terms, text) == _by_words(terms, text)


def test_term_counts_on_prose() -> None:
    text = "The river's source: a spring. Rivers, riverside and river-river; RIVER_1 river"
    terms = ["river", "rivers", "s", "spring", "river_1", "riv"]
    assert term_counts(terms, text) == _by_words(terms, text) == [4, 1, 1, 1, 1, 0]


def test_an_empty_term_counts_nothing() -> None:
    assert term_counts(["", "a"], "a a") == [0, 2]


def test_term_counts_are_remembered_by_text_and_term() -> None:
    clear_caches()
    text = "A river, a lake; a river."
    assert term_counts(["river", "lake", "sea"], text) == [2, 1, 0]
    # Known and new terms together: the known ones come from the cache, the new ones are found.
    assert term_counts(["sea", "a", "river"], text) == [0, 3, 2]
    (remembered,) = lexical._TERM_COUNTS.values()
    assert remembered == {"river": 2, "lake": 1, "sea": 0, "a": 3}
    # Another text with other counts has its own entry.
    assert term_counts(["river"], text + " River") == [3]
    clear_caches()
    assert not lexical._TERM_COUNTS


def test_the_term_count_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_caches()
    monkeypatch.setattr(lexical, "_MAX_COUNTED_TEXTS", 3)
    monkeypatch.setattr(lexical, "_MAX_TERMS_PER_TEXT", 2)
    for i in range(10):
        assert term_counts(["x", str(i)], f"x {i} x") == [2, 1]
        assert len(lexical._TERM_COUNTS) <= 3
    text = "p q r s"
    for term in "pqrs":
        assert term_counts([term, "t"], text) == [1, 0]
        assert all(len(known) <= 2 for known in lexical._TERM_COUNTS.values())
    clear_caches()


_NON_WORD = re.compile(r"\W")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET + "\u00a0\u3000\u2013\u201c\ufb01\U0001f600\ud800", max_size=40))
def test_normalize_maps_each_non_word_character_to_a_space(text: str) -> None:
    # A lone surrogate (JSON can carry one) is no word character either.
    assert normalize(text) == _NON_WORD.sub(" ", text.lower())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_normalize_on_any_code_point(text: str) -> None:
    assert normalize(text) == _NON_WORD.sub(" ", text.lower())
