"""Characters a usable tokenizer must count: the sanity check of tokenizer files a user gives.

A ``tokenizer.json`` with no unknown token and no byte fallback, or a pre-tokenizer pattern that
matches only some scripts, counts what it does not know as no token at all, and a budget counted
with it would be too low. Such a file is refused when it loads if it counts any of these
characters, each alone, as nothing: every printable ASCII character but the space, the Latin-1
letters (whose UTF-8 bytes are every continuation byte, so a byte-level vocabulary missing one
shows), and letters, digits and symbols of the world's major scripts and emoji.
"""

from __future__ import annotations

__all__ = ["PROBE_CHARACTERS"]

_SCRIPTS = (
    "αβγΩ"  # Greek
    "жЖщЯ"  # Cyrillic
    "աՁ"  # Armenian
    "שלא"  # Hebrew
    "بسم٣"  # Arabic, with an Arabic-Indic digit
    "कखग९"  # Devanagari, with a digit
    "অত"  # Bengali, Tamil
    "ไทยລ"  # Thai, Lao
    "ཀაሀកက"  # Tibetan, Georgian, Ethiopic, Khmer, Myanmar
    "한글ᄀ"  # Hangul syllables and a jamo
    "あカ中文字"  # Hiragana, Katakana, CJK
    "𠀀"  # CJK beyond the Basic Multilingual Plane
    "€£¥©®™°±→∑"  # currency and other symbols
    "🙂😀👍"  # emoji
)

PROBE_CHARACTERS: tuple[str, ...] = (
    *(chr(point) for point in range(0x21, 0x7F)),
    *(chr(point) for point in range(0xC0, 0x100) if point not in (0xD7, 0xF7)),
    *_SCRIPTS,
)
"""The characters that must each count as at least one token (see the module docstring)."""
