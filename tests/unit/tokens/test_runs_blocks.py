"""``find_long_run`` clears most prose with a block check before its regular-expression screen:
that check never clears a text the screen (and the per-kind patterns) would stop."""

from __future__ import annotations

import random

import pytest

from ctxasm.tokens import runs
from ctxasm.tokens.runs import find_long_run

# one character of each kind (letter-like, symbol-like, white space; \x1c is a space to Python
# only), and a break
PARTS = ["a", "。", "-", "\u00a0", "\n", " ", "\u2003", "\x1c", "x y"]
LENGTHS = [1, 3, 499, 500, 501, 998, 999, 1000, 1001, 1002, 1500]


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(
            rng.choice(PARTS) * rng.choice(LENGTHS) + rng.choice(["", " ", "x", "x y"])
            for _ in range(rng.randint(1, 6))
        )
        for _ in range(count)
    ]


def _unscreened(text: str, limit: int) -> runs.LongRun | None:
    """find_long_run without the block check."""
    found = runs._screen(limit).search(text) if len(text) > limit else None
    if found is None:
        return None
    if found.lastgroup == "space":
        return runs.LongRun(found.start(), found.end() - found.start(), "white-space")
    for kind, pattern in runs._precise(limit):
        match = pattern.search(text)
        if match is not None:
            return runs.LongRun(match.start(), match.end() - match.start(), kind)
    return None


def test_every_white_space_character_is_a_space_to_python() -> None:
    # The block check reads white space with str.isspace: it must hold for each of them.
    members = runs._WHITE_SPACE.replace("\u2000-\u200a", "".join(map(chr, range(0x2000, 0x200B))))
    assert all(char.isspace() for char in members)


@pytest.mark.parametrize("seed", range(4))
def test_the_block_check_changes_no_answer(seed: int) -> None:
    cleared = 0
    for text in _texts(seed, 2000):
        for limit in (1000, 7, 2, 1):
            cleared += runs._blocks_clear(text, limit)
            assert find_long_run(text, limit) == _unscreened(text, limit), (limit, text[:40])
    assert cleared > 0


def test_prose_is_cleared_and_a_long_run_is_still_found() -> None:
    prose = "The Danube flows east through Vienna and Budapest. " * 99 + "The end."
    assert runs._blocks_clear(prose, 1000)
    assert find_long_run(prose + "a" * 2500, 1000) == runs.LongRun(len(prose), 2500, "letter-like")
    assert find_long_run(prose + "\u00a0" * 1001 + "b", 1000) == runs.LongRun(
        len(prose), 1001, "white-space"
    )
