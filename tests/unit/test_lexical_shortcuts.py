"""Byte-level shortcuts of ``ctxasm.lexical`` give what a walk over the characters gives:
``outside_ascii`` the set of a text's characters outside ASCII, ``normalize`` every non-word
character as a space, ``entities`` the phrase key of each capitalised run its definition finds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.lexical import STOPWORDS, entities, normalize, outside_ascii, sentence_spans

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


# The definition of an entity: the pattern as first written (each first word as three plain
# alternatives), with a capital of any script where it said A-Z, each match normalised on its own.
_CAPITALS = "".join(
    re.escape(chr(code))
    for code in range(0x110000)
    if chr(code).isalpha() and (chr(code).isupper() or chr(code).istitle())
)
_ENTITY_DEFINITION = re.compile(
    rf"(?:[{_CAPITALS}][\w'’\-]*|\d[\d,.]*\d|\d)"
    r"(?:\s+(?:(?:of|the|de|la|del|von|van|der|and|for|du)\s+)*"
    rf"(?:[{_CAPITALS}][\w'’\-]*|\d[\d,.]*\d|\d))*"
)


def _entities_by_definition(text: str, min_chars: int = 4) -> frozenset[str]:
    keys = (" ".join(normalize(match).split()) for match in _ENTITY_DEFINITION.findall(text))
    return frozenset(
        key for key in keys if key not in STOPWORDS and (len(key) >= min_chars or key.isdigit())
    )


# Capitals, digits and what joins or follows them, with the characters whose lower case depends
# on their neighbours (a final sigma) or changes length (İ).
ENTITY_ALPHABET = "ABZ of the and 19 2,0.5 x-'’\n\tİΣΟσÉéŁłДдǅⒶ\u0301中²١\ud800😀\x00"


@settings(max_examples=800, deadline=None)
@given(st.text(alphabet=ENTITY_ALPHABET, max_size=80) | st.text(max_size=60))
def test_entities_are_the_matches_of_their_definition(text: str) -> None:
    entities.cache_clear()
    assert entities(text) == _entities_by_definition(text)
    assert entities(text, 2) == _entities_by_definition(text, 2)


def test_entities_normalised_together_keep_each_match_apart() -> None:
    # A final sigma stays final when the next match follows it; a NUL in the text is no match.
    cases = {
        "AΟΔΟΣ, Bank of England": {"aοδος", "bank of england"},
        "AΟΔΟΣ; then Kİstanbul and Bank 1990": {"aοδος", "ki stanbul and bank 1990"},
        "Alpha\x00Beta 2,000": {"alpha", "beta 2 000"},
        "no capitals here": set(),
    }
    for text, expected in cases.items():
        entities.cache_clear()
        assert entities(text) == expected == _entities_by_definition(text), text


def test_names_are_entities_in_every_script_that_writes_capitals() -> None:
    text = "Émile Zola met Никола Тесла in Łódź; ǅemal saw Ōfuji. Ⓐbc is no name, nor émile."
    assert entities(text) == {"émile zola", "никола тесла", "łódź", "ǆemal", "ōfuji"}
    # a capital outside ASCII starts a sentence as an ASCII one does
    assert sentence_spans("He met Zola. Émile left. Ok.") == ((0, 13), (13, 25), (25, 28))
    assert sentence_spans("He met Zola. émile left.") == ((0, 24),)
    # an initial in any script is no sentence end
    assert len(sentence_spans("Поэт А. С. Пушкин родился в Москве.")) == 1
    assert len(sentence_spans("The poet É. Zola wrote it. Ó. Wilde too.")) == 2


def test_many_capitals_outside_ascii_are_read_in_one_pass() -> None:
    # every capital of Latin Extended-A, Greek and Cyrillic: more than are replaced one by one
    capitals = "".join(chr(c) for c in range(0x100, 0x530) if chr(c).isupper())
    text = " ".join(f"{capital}ab" for capital in capitals)
    entities.cache_clear()
    assert entities(text) == _entities_by_definition(text)
    assert len(entities(text)) == 1  # one run of capitalised words
