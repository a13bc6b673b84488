"""Byte-level shortcuts of ``ctxasm.lexical`` give what a walk over the characters gives:
``outside_ascii`` the set of a text's characters outside ASCII, ``normalize`` every non-word
character as a space."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.lexical import normalize, outside_ascii

# Letters, digits and separators, and the characters a byte-level shortcut could get wrong:
# lower cases of another length (İ), the capital sigma, marks, apostrophes, non-ASCII
# non-letters, CJK, astral characters and lone surrogates (which could pair up).
ALPHABET = "ABCab of the1 2,.-'’\nİΣσςÉé\u0301\u00b7\u2019中Ⅳ²—\ud800\udc00😀"


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=60) | st.text(max_size=60))
def test_outside_ascii_is_the_set_of_such_characters(text: str) -> None:
    assert outside_ascii(text) == frozenset(c for c in text if not c.isascii())


def test_outside_ascii_keeps_lone_surrogates_apart() -> None:
    # Two lone surrogates that would make a pair stay two characters, as in the text.
    high, low = chr(0xD83D), chr(0xDE00)
    assert outside_ascii(f"a{high}{low}b😀é") == {high, low, "😀", "é"}
    assert outside_ascii("plain ASCII") == frozenset()


_NON_WORD = re.compile(r"[^\w]", re.UNICODE)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=60) | st.text(max_size=60))
def test_normalize_maps_every_non_word_character_to_a_space(text: str) -> None:
    low = text.lower()
    expected = "".join(c if c.isalnum() or c == "_" else " " for c in low)
    assert normalize(text) == expected
    assert _NON_WORD.sub(" ", low).split() == normalize(text).split()
