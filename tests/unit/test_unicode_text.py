"""Unicode normalization in linear time (review rv18: Qwen's NFC took 4 s a megabyte on runs
of combining marks in reverse canonical order)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.unicode_text import LONG_RUN, MARKS_END, OPENS_WITH_MARK, normalize, reorders

FORMS = ("NFC", "NFD", "NFKC", "NFKD")
# Marks of several classes (230 above, 220 below, 1 overlay, 9 virama, 129/130 Tibetan), and
# characters that decompose into marks: precomposed letters, U+0F73 (class 0, whose parts are
# not), U+0344 (two marks), a Hangul syllable and a compatibility ligature, among starters.
_CHARS = st.sampled_from(
    list("\u0301\u0316\u0334\u094d\u0f71\u0f72\u0f73\u0344\u0308\u05b0\u302a\uff9e\uff9f")
    + list("aeéÅἀ한ﬃ 中\u0915")
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_CHARS, max_size=80), max_size=4).map("".join))
def test_every_form_is_the_librarys(text: str) -> None:
    for form in FORMS:
        assert normalize(form, text) == unicodedata.normalize(form, text)


@pytest.mark.parametrize(
    "run",
    [
        "\u0301\u0316" * 3995,  # classes 230 and 220, alternating: every pair out of order
        "\u0f73\u0316" * 3000,  # class 0 that decomposes into 129 and 130, between 220s
        "e\u0301" * 4000,  # precomposable: each pair composes
        "\U0001d165\U0001d167" * 2000,  # marks beyond the BMP (musical symbols)
        # review rv20: marks only in the compatibility forms (U+FF9E is U+3099, class 8)
        "\uff9e" * 3000 + "\u0334" * 3000,
    ],
)
def test_long_runs_are_normalized_exactly(run: str) -> None:
    # each such run took the library's insertion sort time quadratic in its length
    text = ("a" + run + " ") * 2
    assert len(run) >= LONG_RUN
    for form in FORMS:
        assert normalize(form, text) == unicodedata.normalize(form, text)


def test_the_run_class_is_what_this_pythons_unicode_database_reorders() -> None:
    codes = [code for code in range(0x110000) if not 0xD800 <= code < 0xE000]
    # no mark past the scanned planes
    assert not any(unicodedata.combining(chr(code)) for code in codes if code >= MARKS_END)
    # the characters of class 0 whose decomposition opens with a mark are the listed ones
    # (the compatibility decomposition holds the canonical one)
    opening = {
        chr(code)
        for code in codes
        if not unicodedata.combining(chr(code))
        and unicodedata.combining(unicodedata.normalize("NFKD", chr(code))[0])
    }
    assert opening == OPENS_WITH_MARK
    assert all(map(reorders, OPENS_WITH_MARK)) and not reorders("é")


def test_ascii_and_prose_are_left_to_the_library() -> None:
    assert normalize("NFC", "plain") == "plain"
    text = "Ça été très bien, naïve café. 東京は首都です。"
    assert normalize("NFC", text) == unicodedata.normalize("NFC", text)
    others = set(text) - set(map(chr, range(128)))
    assert normalize("NFKC", text, others) == unicodedata.normalize("NFKC", text)
    # told the characters, a text of long runs is still ordered first
    runs = ("a" + "\u0301\u0316" * 100 + " ") * 2
    assert normalize("NFC", runs, {"\u0301", "\u0316"}) == unicodedata.normalize("NFC", runs)
