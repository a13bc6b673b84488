"""Finding unbroken runs of characters that no tokenizer can count in linear time.

A BPE tokenizer first cuts text into pre-tokens (a word, a run of punctuation, a run of white
space) and then merges bytes inside each one. Older tiktoken releases merged in time quadratic
in the length of the pre-token, and overflowed their stack on runs of about a million
characters; the pinned engines are linear up to tens of thousands of characters and grow
faster beyond a few hundred thousand (docs/tokenizers.md has the measurements). Ordinary prose
has pre-tokens of a few characters, but a run such as 200,000 Chinese characters without
punctuation, ``"a" * 600_000`` or a million newlines is one pre-token.

This module bounds pre-tokens without tokenizing. Every pre-token of the o200k and cl100k
patterns is made of at most one leading character, then characters of one *letter-like* run or
of one *symbol-like* run, then trailing white space or (o200k, Tekken: ``[\r\n/]*``) a mix of
slashes and line breaks, or it is white space only. So when no run of each kind below is longer
than ``limit`` characters, no pre-token is longer than ``2 * limit + 1``, and counting a text
costs time linear in its length:

letters
    anything but white space, decimal digits, punctuation, symbols and controls: letters,
    combining marks, and characters unassigned in the Unicode tables used here;
symbols
    anything but white space, decimal digits and letters: punctuation, symbols, controls,
    combining marks, other numbers, and the same unassigned characters;
white space
    the characters of Unicode's ``White_Space`` property (what the tokenizers' ``\\s`` means);
slashes and line breaks
    ``/``, ``\\r`` and ``\\n`` (``"x!" + "/\\n" * 100_000`` is one o200k pre-token, though
    neither its symbols nor its white space run long).

The categories come from the Unicode 3.2 tables that ship with Python (``unicodedata.ucd_3_2_0``),
which are older than any tokenizer's: a character assigned since then is in both of the first
two kinds, so a table newer on either side can only make a run look longer here, never shorter.
A character whose category changed since 3.2 (in Python's own tables) is in both kinds too:
eighteen symbols became letters or marks (U+02B9 to U+02CF among them), and ``"a\u02c8"``
repeated was one pre-token that the 3.2 tables alone read as runs of one character.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from ctxasm.unicode_text import WHITE_SPACE

__all__ = ["MAX_RUN_CHARS", "WHITE_SPACE", "LongRun", "find_long_run", "long_runs"]

MAX_RUN_CHARS = 8000
"""The longest run of one kind that a counted text may hold (see the module docstring)."""

_WHITE_SPACE = WHITE_SPACE
# Code points outside these ranges were unassigned in Unicode 3.2.
_ASSIGNED_PLANES = ((0, 0x30000), (0xE0000, 0xE1000))
_NOT_LETTER_LIKE = ("Nd", "P", "S", "Cc", "Cf", "Co", "Cs", "Z", "Nl", "No")
_NOT_SYMBOL_LIKE = ("Nd", "L")


@dataclass(frozen=True, slots=True)
class LongRun:
    """``length`` characters of one ``kind`` from ``start``, with no break between them."""

    start: int
    length: int
    kind: str

    def describe(self, limit: int = MAX_RUN_CHARS) -> str:
        """One sentence for a report: what the run is and the limit it exceeds."""
        return (
            f"{self.length:,} {self.kind} characters without a break from character "
            f"{self.start:,} (at most {limit:,} can be tokenized in linear time)"
        )


def _ranges(categories: tuple[str, ...]) -> str:
    """A regular-expression class body for the code points whose category starts with one of
    ``categories`` both in the Unicode 3.2 tables and in Python's own (a character that changed
    category since, such as U+02C8, a symbol in 3.2 and a letter now, breaks a run of neither
    kind)."""
    old, new = unicodedata.ucd_3_2_0, unicodedata
    parts: list[str] = []
    for low, high in _ASSIGNED_PLANES:
        start = -1
        for point in range(low, high + 1):
            char = chr(point)
            inside = (
                point < high
                and old.category(char).startswith(categories)
                and new.category(char).startswith(categories)
            )
            if inside and start < 0:
                start = point
            elif not inside and start >= 0:
                end = point - 1
                first, last = re.escape(chr(start)), re.escape(chr(end))
                parts.append(first if start == end else f"{first}-{last}")
                start = -1
    return "".join(parts)


# What o200k's and Tekken's patterns let follow a run of symbols, in any mix and number.
_SLASHES_AND_BREAKS = r"[\r\n/]"


@functools.cache
def _screen(limit: int) -> re.Pattern[str]:
    """A quick screen for runs of non-white-space or of white space longer than ``limit``
    (the ``space`` group). Each run is entered only at its first character (the look-behind),
    so the scan is linear. Cheap to build: prose never needs more than this."""
    space = f"[{_WHITE_SPACE}]"
    solid = f"[^{_WHITE_SPACE}]"
    return re.compile(
        f"(?<!{solid}){solid}{{{limit + 1}}}|(?P<space>(?<!{space}){space}{{{limit + 1},}})"
    )


@functools.cache
def _mixed(limit: int) -> re.Pattern[str]:
    """Runs of slashes and line breaks longer than ``limit``, each entered at its first
    character: the one kind the screen cannot see (it breaks both of the screen's)."""
    mixed = _SLASHES_AND_BREAKS
    return re.compile(f"(?<!{mixed}){mixed}{{{limit + 1},}}")


_SLASHES_KIND = "slash and line-break"


@functools.cache
def _precise(limit: int, slashes: bool = True) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """One pattern per kind, matching its whole runs longer than ``limit``, each entered at its
    first character only; without ``slashes`` (for a text with no slash, which cannot hold a
    run of that kind), none for slashes and line breaks. Building the letter-like and
    symbol-like classes walks the Unicode tables (about 0.1 s), so it waits for the first text
    the screen does not clear."""
    breaks = {
        "letter-like": _WHITE_SPACE + _ranges(_NOT_LETTER_LIKE),
        "symbol-like": _WHITE_SPACE + _ranges(_NOT_SYMBOL_LIKE),
    }
    kinds = {name: f"[^{body}]" for name, body in breaks.items()}
    kinds["white-space"] = f"[{_WHITE_SPACE}]"
    if slashes:
        kinds[_SLASHES_KIND] = _SLASHES_AND_BREAKS
    return tuple(
        (name, re.compile(f"(?<!{chars}){chars}{{{limit + 1},}}")) for name, chars in kinds.items()
    )


def find_long_run(text: str, limit: int = MAX_RUN_CHARS, *, slashes: bool = True) -> LongRun | None:
    """A run longer than ``limit`` in ``text`` (the first of the first kind found), if any;
    without ``slashes``, runs of slashes and line breaks are not looked for (a tokenizer whose
    pieces never take slashes after line breaks, such as cl100k's, cuts them into short ones).

    Prose costs one quick scan; only a text with more than ``limit`` characters between two
    white-space characters (a long URL, Chinese or Thai prose) is scanned per kind.
    """
    if len(text) <= limit or _blocks_clear(text, limit):
        return None
    found = _screen(limit).search(text)
    if found is None:
        # Only a mix of slashes and line breaks is left, which needs a slash (a text without
        # one, such as Chinese prose, is not read again).
        mixed = _mixed(limit).search(text) if slashes and "/" in text else None
        if mixed is None:
            return None
        return LongRun(mixed.start(), mixed.end() - mixed.start(), _SLASHES_KIND)
    if found.lastgroup == "space":
        return LongRun(found.start(), found.end() - found.start(), "white-space")
    for kind, pattern in _precise(limit, slashes and "/" in text):
        found = pattern.search(text)
        if found is not None:
            return LongRun(found.start(), found.end() - found.start(), kind)
    return None


def _blocks_clear(text: str, limit: int) -> bool:
    """Whether a check ten times quicker than the screen on prose shows that ``text`` has no
    run longer than ``limit``: every whole block of ``(limit + 1) // 2`` characters from the
    start holds a space and a character that is not white space to ``str.isspace`` (which
    every character of ``_WHITE_SPACE`` is). A longer run of any kind holds a whole block of
    its own characters, which fails one of the two. ``False`` decides nothing."""
    step = (limit + 1) // 2
    return step > 0 and all(
        " " in text[start : start + step] and not text[start : start + step].isspace()
        for start in range(0, len(text) - step + 1, step)
    )


def long_runs(text: str, limit: int = MAX_RUN_CHARS) -> list[LongRun]:
    """Every run longer than ``limit`` in ``text``, ordered by start (runs of different kinds
    may overlap)."""
    if len(text) <= limit:
        return []
    found = [
        LongRun(match.start(), match.end() - match.start(), kind)
        for kind, pattern in _precise(limit, "/" in text)
        for match in pattern.finditer(text)
    ]
    return sorted(found, key=lambda run: (run.start, run.kind))
