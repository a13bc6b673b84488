"""Unicode for counting: the White_Space property, and normalization in time linear in the
text.

``unicodedata.normalize`` puts each run of combining marks (characters of a non-zero canonical
combining class, with those that decomposing a character brings) in canonical order with an
insertion sort: its time grows with the square of the run. A text of 8,000-mark runs, each the
reverse of canonical order, took 4 s a megabyte, where prose takes milliseconds. Here each long
run of such characters is decomposed and put in canonical order first, by a stable sort on the
combining class (what the standard's canonical ordering is), so the library's sort finds it
sorted. A text and its runs so ordered have the same normal form in every form, since each form
starts from the canonical decomposition, and the canonical ordering of a sequence does not
depend on how its runs were ordered before; so :func:`normalize` gives exactly what
``unicodedata.normalize`` gives.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Set
from functools import cache
from typing import Literal

__all__ = ["OPENS_WITH_MARK", "WHITE_SPACE", "normalize", "reorders"]

# Unicode's White_Space property, unchanged since Unicode 6.3 (what Rust's and `regex`'s \s
# match, and Rust's trim removes; Python's str.strip also removes U+001C to U+001F): the
# characters themselves, which a regular expression's class takes as they are.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)

Form = Literal["NFC", "NFD", "NFKC", "NFKD"]

# Runs of this many characters that may reorder are put in order first; shorter ones cost the
# library's sort at most this squared, once each.
LONG_RUN = 32
# The end of the supplementary plane, which holds the last mark (U+1E94A ADLAM NUKTA); tests
# check that nothing beyond it is one, for the Unicode version at hand.
MARKS_END = 0x20000


def normalize(form: Form, text: str, others: Set[str] | None = None) -> str:
    """``unicodedata.normalize(form, text)``, in time linear in ``text`` (see the module).
    ``others``, where the caller knows them: the characters of ``text`` outside ASCII (when
    none of them is a mark, the text is not searched for runs)."""
    if text.isascii():
        return text
    if others is not None and not any(map(reorders, others)):
        return unicodedata.normalize(form, text)
    runs = _long_runs()
    if runs.search(text) is None:
        return unicodedata.normalize(form, text)
    # the compatibility forms start from the compatibility decomposition (U+FF9E is a mark
    # there, a letter in the canonical one)
    decomposition: Form = "NFKD" if form in ("NFKC", "NFKD") else "NFD"
    ordered = runs.sub(lambda run: _in_order(run.group(), decomposition), text)
    return unicodedata.normalize(form, ordered)


def _in_order(run: str, decomposition: Form) -> str:
    """The ``decomposition`` of a run, its marks in canonical order: each character
    decomposed on its own, then each stretch of non-starters sorted, stably, by class."""
    combining, decompose = unicodedata.combining, unicodedata.normalize
    # one character at a time: the run decomposed whole would be sorted by the library again
    decomposed = "".join([decompose(decomposition, char) for char in run])
    ordered: list[str] = []
    marks: list[str] = []
    for char in decomposed:
        if combining(char):
            marks.append(char)
            continue
        if marks:
            ordered.extend(sorted(marks, key=combining))
            marks.clear()
        ordered.append(char)
    ordered.extend(sorted(marks, key=combining))
    return "".join(ordered)


# Characters of class 0 whose decomposition opens with a mark: Tibetan vowel signs (canonical),
# the halfwidth katakana sound marks (compatibility). In a run of marks they are marks too
# (tests check the list against the Unicode database).
OPENS_WITH_MARK = frozenset("\u0f73\u0f75\u0f81\uff9e\uff9f")


def reorders(char: str) -> bool:
    """Whether ``char`` extends a run that canonical ordering sorts: a mark (a non-zero
    combining class), or a character whose decomposition opens with one. A precomposed letter
    ("é") opens with its letter: it ends a run before its own mark."""
    return bool(unicodedata.combining(char)) or char in OPENS_WITH_MARK


@cache
def _long_runs() -> re.Pattern[str]:
    """Runs of at least ``LONG_RUN`` characters that canonical ordering may move (built on
    first use, from this Python's Unicode database, in a few milliseconds). Beyond the BMP the
    class takes the whole supplementary plane instead (a run of emoji is ordered too, to the
    same result): one range there keeps the library's fast table for the BMP, where a list of
    ranges would be tried one by one at every character (25 ms against 2 for 280 kB)."""
    ranges: list[str] = []
    start = previous = -2
    for code in range(0x300, 0x10000):
        if not reorders(chr(code)):
            continue
        if code != previous + 1:
            if start >= 0:
                ranges.append(_range(start, previous))
            start = code
        previous = code
    if start >= 0:
        ranges.append(_range(start, previous))
    ranges.append(_range(0x10000, MARKS_END - 1))
    return re.compile(f"[{''.join(ranges)}]{{{LONG_RUN},}}")


def _range(first: int, last: int) -> str:
    if first == last:
        return re.escape(chr(first))
    return f"{re.escape(chr(first))}-{re.escape(chr(last))}"
