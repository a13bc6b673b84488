"""The injection scan is linear in the passage length on adversarial shapes (issue 10, item 1).

Each shape is scanned at n and 8n characters; a linear scan takes about 8 times as long, a
quadratic one 64 times. The bound (20) leaves room for noise; the process's own CPU time is
measured (so other processes on a loaded machine do not count), the best of five runs is
compared, and n is large enough for the scan, not the timer, to dominate.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from ctxasm.stages.guard import InjectionScanGuard, clear_caches

N = 20_000
SHAPES: dict[str, Callable[[int], str]] = {
    "newlines with system and ':' elsewhere": lambda n: "system" + "\n" * n + ":",
    "newlines and spaces": lambda n: "system:" + " \n" * (n // 2) + "x",
    "image openers": lambda n: "![" * (n // 2),
    "label openers": lambda n: "[Source " * (n // 8),
    "tag openers": lambda n: "<document " * (n // 10),
    "img openers": lambda n: "<img " * (n // 5),
    "override words": lambda n: "ignore previous " * (n // 16),
    "base64 runs just short of a blob": lambda n: ("QUJD" * 49 + " ") * (n // 197),
    "role lines": lambda n: "system:\n" * (n // 8),
    "letters far apart": lambda n: "i  ,  ,  g " * (n // 11),
    "pair halves in separate sentences": lambda n: "new things. the rules. " * (n // 23),
    "words outside ASCII": lambda n: "игнорируй – ø " * (n // 14),
    "comments without CDATA": lambda n: "<!---->x" * (n // 8),
    "comment and CDATA openers": lambda n: "<!--<![CDATA[" * (n // 13),
    "tags and references": lambda n: "<b>&amp;</b>" * (n // 12),
    "include-like tags": lambda n: ("<sys/" + "a" * 190 + ".h>") * (n // 198),
    "letters a symbol separates": lambda n: "i_g_n|o/r+e " * (n // 12),
    "one long run of separated letters": lambda n: "a_" * (n // 2) + "1",
    "one-word sentences": lambda n: "ignore. all! previous? " * (n // 23),
    "upside-down letters": lambda n: "ǝɹouƃı llɐ ʇ " * (n // 13),
    "decimal codes": lambda n: "73 103 110 111 114 101 32 97 " * (n // 29),
    "octal escapes and code points": lambda n: "\\111\\147 U+0049 %u0049 =49 " * (n // 29),
    "base64 of base64 runs": lambda n: "U1dkdWIzSmxJR0ZzYkNCd2NtVjJhVzkx " * (n // 33),
    "CSS url openers": lambda n: "url(//a" * (n // 7),
    "colons before a CSS url": lambda n: ": " * (n // 2) + "url(//x?d=1)",
    "fetching attributes in one tag": lambda n: "<a " + "ping=//x?d=1" * (n // 12),
}


def _best_of_five(text: str) -> float:
    scan = InjectionScanGuard().scan
    best = float("inf")
    for _ in range(5):
        clear_caches()
        start = time.process_time()
        scan(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_scan_time_grows_linearly(shape: str) -> None:
    make = SHAPES[shape]
    small, large = _best_of_five(make(N)), _best_of_five(make(8 * N))
    assert large / max(small, 1e-4) < 20, (shape, small, large)
