"""Estimated counts for models whose tokenizer is not public."""

from __future__ import annotations

import math

from ctxasm.tokens.base import GrowingCount, TokenCounter, Tokenizer

__all__ = ["MAX_FACTOR", "MIN_FACTOR", "EstimateTokenizer"]

# The factors an estimate may take: public tokenizers count from about 0.97 to 3.7 times what
# o200k counts, by script (docs/tokenizers.md), and ctxasm's own estimates use 1.2. Beyond these
# a factor is a mistake (0.001 let a passage of 3,000 tokens be counted as 5).
MIN_FACTOR = 0.5
MAX_FACTOR = 10.0


class EstimateTokenizer:
    """A proxy tokenizer's count scaled by a factor, rounded up.

    Used for models such as Claude and Gemini whose tokenizers are not published. The factor is
    chosen to over- rather than under-estimate; assemblies made with it report
    ``exact_count: false`` and keep a larger safety margin.
    """

    exact = False

    def __init__(self, proxy: Tokenizer, factor: float) -> None:
        if not (math.isfinite(factor) and MIN_FACTOR <= factor <= MAX_FACTOR):
            raise ValueError(
                f"the estimate factor must be a number from {MIN_FACTOR:g} to {MAX_FACTOR:g} "
                f"(public tokenizers count 0.97 to 3.7 times what o200k counts), got {factor!r}"
            )
        self.proxy = proxy
        self.factor = factor
        self.name = f"estimate:{proxy.name.split(':', 1)[-1]}*{factor:g}"
        # The proxy's counts of edited texts, by content: a text grown at its end (the
        # builder's context, a stitched passage) is recounted only where it changed.
        self._edits = TokenCounter(proxy)

    def count(self, text: str) -> int:
        return math.ceil(self.proxy.count(text) * self.factor)

    def count_edited(self, old: str, new: str) -> int:
        """``count(new)``, tokenizing only what differs from ``old`` where the proxy allows it
        (see :meth:`TokenCounter.count_edited`); ``old`` is counted once, then each ``new``
        is known as the next edit's ``old``."""
        self._edits.count(old)
        return math.ceil(self._edits.count_edited(old, new) * self.factor)

    def growing(self) -> GrowingCount:
        """A count of a growing text, kept on the proxy's counts and scaled."""
        return GrowingCount(self._edits, self.factor)

    def lower_bound(self, text: str) -> int:
        return math.ceil(self.proxy.lower_bound(text) * self.factor)
